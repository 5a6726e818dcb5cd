// What every Node adapter of bench/peers shares: the command line, the job recorder of `work`
// and `fanout`, and the open-loop producer of `produce`; the twin of common.py. The protocol is in
// bench/peers/PROTOCOL.md.
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";

export const COMMANDS = ["setup", "enqueue", "work", "produce", "completions", "fanout"];
export const QUEUE = "noop";

export function parse(argv = process.argv.slice(2)) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dsn: { type: "string" },
      jobs: { type: "string", default: "0" },
      "first-id": { type: "string", default: "0" },
      concurrency: { type: "string", default: "8" },
      rate: { type: "string", default: "0" },
      seconds: { type: "string", default: "0" },
      children: { type: "string", default: "0" },
      out: { type: "string" },
    },
  });
  const command = positionals[0];
  if (!COMMANDS.includes(command) || !values.dsn) {
    console.error(`usage: <adapter> {${COMMANDS.join(",")}} --dsn URL [options]`);
    process.exit(2);
  }
  return {
    command,
    dsn: values.dsn,
    jobs: Number(values.jobs),
    firstId: Number(values["first-id"]),
    concurrency: Number(values.concurrency),
    rate: Number(values.rate),
    seconds: Number(values.seconds),
    children: Number(values.children),
    out: values.out,
  };
}

/** Print the command's result: one JSON object, the last line of stdout. */
export function emit(result) {
  process.stdout.write(JSON.stringify(result) + "\n");
}

export const now = () => Date.now() / 1000;

/** The payload of job `id`; `enq` is the wall-clock time (epoch seconds) of its enqueue call. */
export function payload(id, enq = null) {
  return { id, enq };
}

/** Records each handler execution as [id, enq, start, end] (epoch seconds); prints `count N`. */
export class Recorder {
  constructor() {
    this.rows = [];
    this.extra = {};
    this.printed = -1;
    this.timer = setInterval(() => this.printCount(), 100);
  }
  add(body, start, end = now()) {
    this.rows.push([body.id, body.enq ?? null, start, end]);
  }
  ready() {
    process.stdout.write("ready\n");
  }
  printCount() {
    if (this.rows.length !== this.printed) {
      this.printed = this.rows.length;
      process.stdout.write(`count ${this.printed}\n`);
    }
  }
  dump(path, config, extra = {}) {
    clearInterval(this.timer);
    this.printCount();
    writeFileSync(path, JSON.stringify({ jobs: this.rows, config, ...this.extra, ...extra }));
  }
}

const sleep = (s) => new Promise((r) => setTimeout(r, s * 1000));

/** Open loop: job i at start + i / rate whatever happened to the ones before. */
export async function openLoop(rate, seconds, firstId, send) {
  if (!(rate > 0 && seconds > 0)) throw new Error("produce needs --rate > 0 and --seconds > 0");
  const n = Math.round(rate * seconds);
  const t0 = now();
  let late = 0;
  for (let i = 0; i < n; i++) {
    const due = t0 + i / rate;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    const t = now();
    late = Math.max(late, t - due);
    await send(payload(firstId + i, t));
  }
  return { sent: n, seconds: now() - t0, max_late_s: late };
}
