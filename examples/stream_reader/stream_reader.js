// Follow a pgflight stream from Node.js with plain SQL (docs/streams.md): print every chunk of
// channel CHANNEL of run RUN as it is written, marking a switch to another attempt, until the
// run has ended and the stream is read to the end. Resuming is the last seq seen: pass it as
// the third argument to start after it (a reconnect loses and repeats nothing).
//
//   npm install            # pg
//   PGFLIGHT_DSN=postgresql://reader@localhost/app node stream_reader.js RUN [CHANNEL] [AFTER_SEQ]
"use strict";
const { Client } = require("pg");

async function main() {
  const [runId, channel = "text", after = "0"] = process.argv.slice(2);
  if (!runId) {
    console.error("usage: node stream_reader.js RUN [CHANNEL] [AFTER_SEQ]");
    process.exit(2);
  }
  const client = new Client({ connectionString: process.env.PGFLIGHT_DSN });
  await client.connect();
  let seq = BigInt(after);
  let attempt = null;
  try {
    for (;;) {
      // waits up to 5 s for the next chunk; bigint seq travels as text
      const { rows } = await client.query(
        "select seq::text, attempt_no, chunk from pgflight.stream_read($1, $2, $3, 1000, 5)",
        [runId, channel, seq.toString()],
      );
      for (const r of rows) {
        if (attempt !== null && r.attempt_no !== attempt) {
          process.stderr.write(`\n[attempt ${r.attempt_no} follows]\n`);
        }
        attempt = r.attempt_no;
        process.stdout.write(r.chunk);
        seq = BigInt(r.seq);
      }
      if (rows.length === 0) {
        const st = await client.query("select status from pgflight.run_status($1)", [runId]);
        if (st.rows[0].status !== "running") break;
      }
    }
  } catch (e) {
    // ZF003: no such run (or one of a workspace this login may not read)
    console.error(`${e.code || ""} ${e.message}`);
    process.exitCode = e.code === "ZF003" ? 4 : 1;
  } finally {
    process.stdout.write("\n");
    await client.end();
  }
}

main();
