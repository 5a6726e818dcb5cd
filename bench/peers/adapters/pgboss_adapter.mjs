// The bench/peers adapter of pg-boss 10.4.2 (pinned in ../node/package.json; 11+ needs Node 22).
// Protocol: ../PROTOCOL.md. Sources of the settings: the v10 docs (docs/readme.md of the 10.x
// line: "work()", "insert()", "stop(options)", "new(options)" > db) and the maintainer's advice
// on concurrency after v10 removed teamSize (timgit/pg-boss#483, #542).
//
// setup        new PgBoss().start() installs the schema (its migrations), then createQueue(noop)
//              (v10 needs a queue before send/insert/work).
// enqueue      boss.insert([{name, data}, ...]): one statement per chunk of jobs.
// work         C work() calls on one instance, the v10 way to run C workers in a process ("each
//              call to work() adds a new polling worker"): pg-boss 10 has no teamSize /
//              localConcurrency. Each worker polls every pollingIntervalSeconds = 0.5 s (the floor
//              the library allows; it waits that long after each fetch even when jobs are left)
//              and takes up to batchSize jobs (the work() option, its only throughput knob: see
//              BATCH_SIZE). The handler runs a batch's jobs one after another, so at most C
//              handlers run at a time while up to C * batchSize jobs are `active`; pg-boss marks
//              the whole batch completed when the handler returns. Maintenance and cron keep
//              their defaults. No LISTEN/NOTIFY in v10: new jobs are found by polling only.
// shutdown     SIGTERM: boss.stop({ graceful: true }) waits for handlers, then the adapter drains
//              its own pool before closing it. pg-boss fires complete() without awaiting it and,
//              with its own pool, pool.end() drops queries still waiting for a connection; passing
//              our pool through the documented `db` option (executeSql) lets every completion
//              commit before exit.
// completions  pgboss.job ∪ pgboss.archive (completed jobs move there after 12 h by default):
//              completed_on is the completion time; pending = every other state.
// fanout       unsupported: v10 has no parent/child dependencies or continuation.
import { createRequire } from "node:module";
import { Recorder, QUEUE, emit, now, openLoop, parse, payload } from "./common.mjs";

const require = createRequire(new URL("../node/package.json", import.meta.url));
const PgBoss = require("pg-boss");
const pg = require("pg");
const VERSION = require("pg-boss/package.json").version;

const SCHEMA = "pgboss";
const POLLING_INTERVAL_SECONDS = 0.5; // the minimum v10 accepts (attorney.js, MIN_POLLING_INTERVAL_MS)
// pg-boss documents no batch size for throughput. 50 is the one it uses for its own internal
// worker (timekeeper.js); PGBOSS_BATCH_SIZE overrides it. A process tops out near
// C * BATCH_SIZE / POLLING_INTERVAL_SECONDS jobs/s, whatever the database can do.
const BATCH_SIZE = Number(process.env.PGBOSS_BATCH_SIZE || 50);
const INSERT_CHUNK = 10_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const logError = (err) => console.error(`pg-boss: ${err?.stack || err?.message || err}`);

/** A pool sized as pg-boss's default (max 10) or C + 2 when C workers need more. */
function makePool(dsn, concurrency = 0) {
  const pool = new pg.Pool({
    connectionString: dsn,
    max: Math.max(10, concurrency + 2),
    application_name: "pgboss",
  });
  pool.on("error", logError);
  return pool;
}

/** A pg-boss instance on our pool (the `db` option). Client-side commands skip the background
 * maintenance and cron of a worker instance; only `setup` migrates. */
function makeBoss(pool, { worker = false, migrate = false } = {}) {
  const boss = new PgBoss({
    db: { executeSql: (text, values) => pool.query(text, values) },
    schema: SCHEMA,
    migrate,
    supervise: worker,
    schedule: worker,
  });
  boss.on("error", logError);
  return boss;
}

/** Wait until no query runs or waits in the pool (twice in a row, 20 ms apart). */
async function drain(pool, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (quiet < 2 && Date.now() < deadline) {
    await sleep(20);
    const idle = pool.waitingCount === 0 && pool.idleCount === pool.totalCount;
    quiet = idle ? quiet + 1 : 0;
  }
}

async function setup(args) {
  const pool = makePool(args.dsn);
  const boss = makeBoss(pool, { migrate: true });
  await boss.start();
  await boss.createQueue(QUEUE);
  await boss.stop({ graceful: false });
  await pool.end();
  emit({ version: VERSION });
}

async function enqueue(args) {
  const pool = makePool(args.dsn);
  const boss = makeBoss(pool);
  await boss.start();
  const t0 = now();
  for (let i = 0; i < args.jobs; i += INSERT_CHUNK) {
    const n = Math.min(INSERT_CHUNK, args.jobs - i);
    const jobs = Array.from({ length: n }, (_, k) => ({
      name: QUEUE,
      data: payload(args.firstId + i + k),
    }));
    await boss.insert(jobs);
  }
  const seconds = now() - t0;
  await boss.stop({ graceful: false });
  await pool.end();
  emit({ seconds, config: { api: "insert([{name, data}])", chunk: INSERT_CHUNK } });
}

async function work(args) {
  const C = args.concurrency;
  const pool = makePool(args.dsn, C);
  const boss = makeBoss(pool, { worker: true });
  const recorder = new Recorder();
  const config = {
    library: `pg-boss ${VERSION}`,
    workers: C,
    batchSize: BATCH_SIZE,
    pollingIntervalSeconds: POLLING_INTERVAL_SECONDS,
    handler: "batch jobs run one after another: <= C handlers at once, <= C*batchSize active",
    notify: false,
    shutdown: "stop({graceful: true}), then drain the adapter's pool (db option)",
    poolMax: pool.options.max,
    supervise: true,
    schedule: true,
  };

  const handler = async (jobs) => {
    for (const job of jobs) recorder.add(job.data, now());
  };
  const started = (async () => {
    await boss.start();
    const options = { batchSize: BATCH_SIZE, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS };
    for (let i = 0; i < C; i++) await boss.work(QUEUE, options, handler);
    recorder.ready();
  })();

  process.once("SIGTERM", async () => {
    try {
      await started;
      await boss.stop({ graceful: true, wait: true, timeout: 30_000 });
      await drain(pool); // completions pg-boss sent without awaiting them
      await pool.end();
      recorder.dump(args.out, config);
      emit({});
      process.exit(0);
    } catch (err) {
      logError(err);
      process.exit(1);
    }
  });
  await started;
}

async function produce(args) {
  const pool = makePool(args.dsn);
  const boss = makeBoss(pool);
  await boss.start();
  const result = await openLoop(args.rate, args.seconds, args.firstId, (body) =>
    boss.send(QUEUE, body),
  );
  await boss.stop({ graceful: false });
  await pool.end();
  emit(result);
}

async function completions(args) {
  const client = new pg.Client({ connectionString: args.dsn });
  await client.connect();
  const { rows } = await client.query(
    `SELECT (data->>'id')::bigint AS id, state::text AS state,
            extract(epoch FROM completed_on)::float8 AS completed
       FROM ${SCHEMA}.job WHERE name = $1
     UNION ALL
     SELECT (data->>'id')::bigint, state::text, extract(epoch FROM completed_on)::float8
       FROM ${SCHEMA}.archive WHERE name = $1`,
    [QUEUE],
  );
  await client.end();
  let pending = 0;
  const completedAt = {};
  for (const row of rows) {
    if (row.state === "completed") completedAt[row.id] = row.completed;
    else pending++;
  }
  emit({
    pending,
    completed_at: completedAt,
    source: `${SCHEMA}.job/.archive completed_on (state 'completed'); pending = other states`,
  });
}

async function fanout() {
  emit({
    unsupported:
      "pg-boss 10 has no parent/child dependencies or continuation: jobs are independent",
  });
}

const COMMANDS = { setup, enqueue, work, produce, completions, fanout };
const args = parse();
COMMANDS[args.command](args).catch((err) => {
  logError(err);
  process.exit(1);
});
