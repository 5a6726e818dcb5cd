// The bench/peers adapter of graphile-worker 0.17.3 (pinned in ../node/package.json; 0.18 needs
// Node 22). Protocol: ../PROTOCOL.md. Sources of the settings: worker.graphile.org/docs
// (website/docs/performance.md "Batching", library/add-jobs.md, library/run.md) and the option
// docs in dist/index.d.ts (GraphileConfig.WorkerOptions) of this version.
//
// setup        runMigrations() installs the graphile_worker schema.
// enqueue      WorkerUtils.addJobs([{identifier, payload}, ...]): the add_jobs SQL function, one
//              call per chunk.
// work         run() with a taskList {noop}: one worker pool with concurrentJobs = C and the
//              batching starting point of the performance docs: localQueue.size = C + 1 (the pool
//              locks and fetches jobs in batches and hands them to its C workers),
//              completeJobBatchDelay = failJobBatchDelay = 25 ms (completions of that window
//              leave in one statement). maxPoolSize = max(10, C + 2) (the maxPoolSize doc).
//              New jobs arrive by LISTEN/NOTIFY; pollInterval keeps its default (2000 ms, for
//              future/retried jobs). Cron is off (no crontab read from the cwd) and only
//              warnings/errors are logged: the default info line per completed job halved
//              throughput here.
// shutdown     noHandleSignals: graphile's own SIGTERM handler re-raises the signal after its
//              graceful shutdown, so the adapter handles SIGTERM: runner.stop() (gracefulShutdown:
//              returns the local queue's unstarted jobs, waits for running ones, flushes the
//              batched completions, releases the pool), then dump and exit 0.
// completions  a successful job is deleted (no completion time kept anywhere); pending = the
//              bench's jobs still in graphile_worker.jobs (queued, locked, retrying, failed).
// fanout       unsupported: no job dependencies or parent/child continuation in 0.17.
import { createRequire } from "node:module";
import { EventEmitter } from "node:events";
import { Recorder, QUEUE, emit, now, openLoop, parse, payload } from "./common.mjs";

const require = createRequire(new URL("../node/package.json", import.meta.url));
const { Logger, makeWorkerUtils, parseCronItems, run, runMigrations } = require("graphile-worker");
const pg = require("pg");
const VERSION = require("graphile-worker/package.json").version;

const SCHEMA = "graphile_worker";
const BATCH_DELAY_MS = 25; // performance docs, "Batching" starting point
const ADD_CHUNK = 10_000;

/** graphile's warnings and errors go to stderr (stdout carries the protocol); its info lines
 * (one per completed job) and debug lines are dropped. */
const logger = new Logger((scope) => (level, message) => {
  if (level === "error" || level === "warning") {
    console.error(`[graphile ${scope.label || "core"}] ${level}: ${message}`);
  }
});

function workerConfig(C) {
  return {
    concurrency: C,
    maxPoolSize: Math.max(10, C + 2),
    preset: {
      worker: {
        localQueue: { size: C + 1 },
        completeJobBatchDelay: BATCH_DELAY_MS,
        failJobBatchDelay: BATCH_DELAY_MS,
      },
    },
  };
}

async function setup(args) {
  await runMigrations({ connectionString: args.dsn, logger });
  emit({ version: VERSION });
}

async function enqueue(args) {
  const utils = await makeWorkerUtils({ connectionString: args.dsn, logger });
  const t0 = now();
  for (let i = 0; i < args.jobs; i += ADD_CHUNK) {
    const n = Math.min(ADD_CHUNK, args.jobs - i);
    const specs = Array.from({ length: n }, (_, k) => ({
      identifier: QUEUE,
      payload: payload(args.firstId + i + k),
    }));
    await utils.addJobs(specs);
  }
  const seconds = now() - t0;
  await utils.release();
  emit({ seconds, config: { api: "WorkerUtils.addJobs([{identifier, payload}])", chunk: ADD_CHUNK } });
}

async function work(args) {
  const C = args.concurrency;
  const options = workerConfig(C);
  const recorder = new Recorder();
  const events = new EventEmitter();
  const listening = new Promise((resolve) => events.once("pool:listen:success", resolve));
  const config = {
    library: `graphile-worker ${VERSION}`,
    concurrentJobs: C,
    maxPoolSize: options.maxPoolSize,
    ...options.preset.worker,
    pollInterval: "default (2000 ms)",
    notify: true,
    logging: "warnings and errors only",
    shutdown: "runner.stop() (gracefulShutdown)",
  };

  const started = (async () => {
    const runner = await run({
      connectionString: args.dsn,
      logger,
      events,
      noHandleSignals: true,
      parsedCronItems: parseCronItems([]), // no cron: never read a crontab file from the cwd
      taskList: {
        [QUEUE]: async (body) => {
          recorder.add(body, now());
        },
      },
      ...options,
    });
    await listening;
    recorder.ready();
    return runner;
  })();

  process.once("SIGTERM", async () => {
    try {
      const runner = await started;
      await runner.stop();
      await runner.promise;
      recorder.dump(args.out, config);
      emit({});
      process.exit(0);
    } catch (err) {
      console.error(err);
      process.exit(1);
    }
  });
  await started;
}

async function produce(args) {
  const utils = await makeWorkerUtils({ connectionString: args.dsn, logger });
  const result = await openLoop(args.rate, args.seconds, args.firstId, (body) =>
    utils.addJob(QUEUE, body),
  );
  await utils.release();
  emit(result);
}

async function completions(args) {
  const client = new pg.Client({ connectionString: args.dsn });
  await client.connect();
  const { rows } = await client.query(
    `SELECT count(*)::int AS pending FROM ${SCHEMA}.jobs WHERE task_identifier = $1`,
    [QUEUE],
  );
  await client.end();
  emit({
    pending: rows[0].pending,
    completed_at: null,
    source: `graphile-worker deletes a job when it succeeds and records no completion time; pending = rows left in ${SCHEMA}.jobs`,
  });
}

async function fanout() {
  emit({
    unsupported:
      "graphile-worker 0.17 has no job dependencies or parent/child continuation: jobs are independent",
  });
}

const COMMANDS = { setup, enqueue, work, produce, completions, fanout };
const args = parse();
COMMANDS[args.command](args).catch((err) => {
  console.error(err);
  process.exit(1);
});
