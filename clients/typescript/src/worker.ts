/**
 * The worker runtime: claim, run, heartbeat, complete, with no transaction held while a step runs.
 *
 * Moving parts (one Node.js process):
 * - the claim loop: claims in batches (claim_batch, started on claim, only the registered recipes)
 *   whenever a slot is free and it was woken (a notification, a finished step, or the poll timer);
 * - the listener: LISTEN `pgflight_ready` on a connection of its own, self-probed at start (a
 *   pooler or a standby drops notifications: then it polls at `fallbackPollS`), re-established
 *   when it drops, LISTEN first and then a catch-up claim. A notification's payload is a wake
 *   ticket: of the idle processes with the same recipes, the one that takes the ticket's session
 *   advisory lock (on `pgflight.wake_ticket_key`) claims, in the same statement; the others stay
 *   asleep and put their poll off. A winner whose claim fills its batch passes a fresh ticket on.
 *   An empty payload wakes every listener;
 * - the heartbeat: its own connection and timer, one `heartbeat` call for every held attempt;
 *   `lease_lost` aborts the attempt and nothing more is written for it, `cancelled` aborts it and
 *   the release acknowledges the cancel. (Node runs one thread: a recipe that computes for longer
 *   than the lease without awaiting starves the timer; put such work in a worker_thread.)
 * - the completer: results of steps that finish together go out in one `complete_batch`; a batch
 *   the server refuses is retried row by row so one bad row cannot take its neighbours down;
 * - SIGTERM / SIGINT: stop claiming, let running steps finish for `graceS` seconds, release the
 *   rest (no attempt spent), deregister. SIGKILL loses nothing: the leases lapse and the steps are
 *   reclaimed elsewhere.
 */
import { createHash } from "node:crypto";
import os from "node:os";

import pg from "pg";

import { type ClaimedStep, PgflightClient, type RowOutcome } from "./client.js";
import { Cancelled, LeaseLost, PgflightError, UnknownWorker } from "./errors.js";
import { pgConfigFromDsn } from "./dsn.js";
import { BadPayload, type Json, toJsonText } from "./json.js";
import { Fatal, Parked, Registry, Release, Retry, StepContext } from "./recipes.js";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type Logger = (level: LogLevel, message: string) => void;

export interface WorkerOptions {
  /** Where to connect: a libpq URL or key=value string (or give `pgConfig`). */
  connectionString?: string;
  /** Extra node-postgres settings for every connection the worker opens. */
  pgConfig?: pg.ClientConfig;
  /** Recipes this worker runs. */
  registry: Registry;
  /** The worker's name in `workers` (default `ts-<host>-<pid>`). */
  name?: string;
  /** Steps run at once (default 8). */
  concurrency?: number;
  /** Most steps per claim (default: concurrency). */
  batchSize?: number;
  /** Lease in seconds (default 30); a step's own lease_s wins. */
  leaseS?: number;
  /** Heartbeat interval in seconds (default lease/3, at most lease/3). */
  heartbeatS?: number;
  /** Poll interval in seconds while LISTEN works (default 2). */
  pollS?: number;
  /** Poll interval in seconds when LISTEN does not (default 0.5). */
  fallbackPollS?: number;
  /** Seconds running steps may finish in after SIGTERM before they are released (default 10). */
  graceS?: number;
  /** false: poll only (default true). */
  listen?: boolean;
  /** Connections of the worker's pool for claims, completions and context calls (default 4). */
  poolSize?: number;
  /** Install SIGTERM / SIGINT handlers that stop the worker (default true). */
  handleSignals?: boolean;
  /** Where log lines go (default: stderr). */
  logger?: Logger;
}

/** An attempt's runtime state. */
type State = "running" | "finishing" | "parked" | "lost" | "cancelled" | "released";

interface Task {
  claim: ClaimedStep;
  state: State;
  abort: AbortController;
  done: Promise<void>;
}

/** The attempt ran past its deadline_at (the step's max_runtime_s). */
export class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}

/** A deadline further away than this (seconds) arms no timer; the server's sweep still applies it. */
const FAR_DEADLINE_S = 7 * 86400;
const CHANNEL = "pgflight_ready";
const TICKET_HOLD_S = 2;
/** Under a backlog, how long a freed slot waits for others before claiming (ms). */
const CLAIM_COALESCE_MS = 5;

const CLAIM_WITH_TICKET = `
with t as materialized (
  select coalesce(pg_catalog.pg_try_advisory_lock(pgflight.wake_ticket_key($1)), false) as won)
select t.won, case when t.won then (
         select coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(c) operator(pg_catalog.||) pg_catalog.jsonb_build_object(
                  'attempt_id', c.attempt_id::text, 'fencing_token', c.fencing_token::text, 'step_id', c.step_id::text,
                  'run_id', c.run_id::text, 'parent_id', c.parent_id::text)), '[]')
           from pgflight.claim_batch($2, $3, $4, $5::text[], '{"start": true}'::jsonb) c) end as claims
  from t`;

/** Connection-level failures worth retrying on a new connection (never an API refusal). */
export function isTransient(e: unknown): boolean {
  if (e instanceof PgflightError) return false;
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err?.code === "string" ? err.code : "";
  if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return true;
  if (["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND"].includes(code)) return true;
  const msg = typeof err?.message === "string" ? err.message : "";
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(msg);
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "";
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function defaultLogger(level: LogLevel, message: string): void {
  if (level === "debug" && !process.env.PGFLIGHT_DEBUG) return;
  process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} pgflight.worker: ${message}\n`);
}

/** One worker process's runtime. `await new Worker({...}).run()` returns after a clean stop. */
export class Worker {
  readonly concurrency: number;
  readonly batchSize: number;
  readonly leaseS: number;
  readonly heartbeatS: number;
  readonly pollS: number;
  readonly fallbackPollS: number;
  readonly graceS: number;
  readonly name: string;
  /** The id register_worker gave (0n before run). */
  workerId = 0n;
  /** True while notifications are known to arrive. */
  listening = false;
  /** Counters, for tests and logs. */
  readonly stats = { claimed: 0, completed: 0, failed: 0, released: 0, lost: 0, ticketsWon: 0, ticketsLost: 0, relays: 0 };

  private readonly opts: WorkerOptions;
  private readonly registry: Registry;
  private readonly log: Logger;
  private readonly pool: pg.Pool;
  private readonly client: PgflightClient;
  private readonly tasks = new Map<bigint, Task>();
  private stopping = false;
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private claimLock: Promise<void> = Promise.resolve();
  private hbConn: pg.Client | null = null;
  private hbTimer: NodeJS.Timeout | null = null;
  private hbBusy = false;
  private listenConn: pg.Client | null = null;
  private listenClient: PgflightClient | null = null;
  private ticketTimer: NodeJS.Timeout | null = null;
  private heldTickets: { at: number; key: bigint }[] = [];
  private ticketLostAt = 0;
  /** The last claim came back full: more is ready. Completions then claim in the same statement. */
  private backlog = false;
  private completions: { task: Task; text: string | null; resolve: () => void }[] = [];
  private flushing: Promise<void> | null = null;
  private signalHandler: (() => void) | null = null;

  constructor(opts: WorkerOptions) {
    this.opts = opts;
    this.registry = opts.registry;
    if (this.registry.names().length === 0) throw new Error("a worker needs at least one recipe");
    this.concurrency = opts.concurrency ?? 8;
    this.batchSize = Math.min(opts.batchSize ?? this.concurrency, this.concurrency);
    this.leaseS = opts.leaseS ?? 30;
    this.heartbeatS = Math.min(opts.heartbeatS ?? this.leaseS / 3, this.leaseS / 3);
    this.pollS = opts.pollS ?? 2;
    this.fallbackPollS = opts.fallbackPollS ?? 0.5;
    this.graceS = opts.graceS ?? 10;
    this.name = opts.name ?? `ts-${os.hostname()}-${process.pid}`;
    this.log = opts.logger ?? defaultLogger;
    for (const [what, v] of Object.entries({ concurrency: this.concurrency, leaseS: this.leaseS, pollS: this.pollS })) {
      if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`${what} must be a positive number, not ${v}`);
    }
    this.pool = new pg.Pool({ ...this.connConfig("pgflight-ts-worker"), max: opts.poolSize ?? 4 });
    this.pool.on("error", (e) => this.log("warn", `pool connection error: ${firstLine(e)}`));
    this.client = new PgflightClient(this.pool);
  }

  private connConfig(applicationName: string): pg.ClientConfig {
    const c: pg.ClientConfig = { ...this.opts.pgConfig, application_name: applicationName };
    if (this.opts.connectionString !== undefined) Object.assign(c, pgConfigFromDsn(this.opts.connectionString));
    return c;
  }

  // --- lifecycle -------------------------------------------------------------------------------

  /** Register, then claim and run steps until {@link stop} (or SIGTERM / SIGINT). */
  async run(): Promise<void> {
    this.workerId = await this.retrying("register_worker", () =>
      this.client.registerWorker(this.name, { hostname: os.hostname(), pid: process.pid, recipes: this.registry.names() }),
    );
    this.log("info", `worker ${this.workerId} (${this.name}) serving ${this.registry.names().join(", ")}`);
    if (this.opts.handleSignals ?? true) {
      this.signalHandler = () => this.stop();
      process.on("SIGTERM", this.signalHandler);
      process.on("SIGINT", this.signalHandler);
    }
    this.hbTimer = setInterval(() => void this.beat(), this.heartbeatS * 1000);
    if (this.opts.listen ?? true) void this.listenLoop();
    this.ticketTimer = setInterval(() => void this.expireTickets(false), 500);
    try {
      await this.claimLoop();
    } finally {
      await this.shutdown();
    }
  }

  /** Stop claiming; running steps get `graceS` seconds, then are released. */
  stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.log("info", "stopping: no new claims");
    this.wake();
  }

  private wake(): void {
    this.woken = true;
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  private async waitForWake(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.woken = false;
  }

  private pollMs(): number {
    return (this.listening ? this.pollS : this.fallbackPollS) * 1000;
  }

  private free(): number {
    return this.concurrency - this.tasks.size;
  }

  /** Claims run one at a time (the loop's or the listener's). */
  private async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const prev = this.claimLock;
    let release!: () => void;
    this.claimLock = new Promise<void>((r) => (release = r));
    await prev;
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private async claimLoop(): Promise<void> {
    let lastClaim = 0;
    while (!this.stopping) {
      const dueAt = Math.max(lastClaim, this.ticketLostAt) + this.pollMs();
      // a slot freed or a poll is due: claim; after a ticket another process won, put the poll off
      if (this.free() > 0 && (this.woken || Date.now() >= dueAt)) {
        // under a backlog, a freed slot waits a moment for others, so one claim takes a whole batch
        if (this.backlog && this.free() < this.batchSize) await sleep(CLAIM_COALESCE_MS);
        this.woken = false;
        lastClaim = Date.now();
        const { got, asked } = await this.exclusive(() => this.claim());
        if (got > 0 && got === asked && this.free() > 0) continue; // a backlog: claim again at once
        if (got > 0) continue;
      }
      await this.waitForWake(Math.max(1, Math.max(lastClaim, this.ticketLostAt) + this.pollMs() - Date.now()));
    }
  }

  private async claim(): Promise<{ got: number; asked: number }> {
    const want = Math.min(this.free(), this.batchSize);
    if (want <= 0 || this.stopping) return { got: 0, asked: want };
    try {
      const claims = await this.client.claimBatch(this.workerId, want, this.leaseS, { recipes: this.registry.names(), start: true });
      for (const c of claims) this.startTask(c);
      this.backlog = claims.length === want;
      return { got: claims.length, asked: want };
    } catch (e) {
      if (e instanceof UnknownWorker) {
        this.log("error", `the engine does not know this worker any more: ${firstLine(e)}; stopping`);
        this.stop();
      } else {
        this.log("warn", `claim failed: ${firstLine(e)}`);
        await sleep(500);
      }
      return { got: 0, asked: want };
    }
  }

  // --- running a step --------------------------------------------------------------------------

  private startTask(claim: ClaimedStep): void {
    this.stats.claimed++;
    const task: Task = { claim, state: "running", abort: new AbortController(), done: Promise.resolve() };
    this.tasks.set(claim.attemptId, task);
    task.done = this.runTask(task).finally(() => {
      this.tasks.delete(claim.attemptId);
      this.wake();
    });
  }

  private async runTask(task: Task): Promise<void> {
    const { claim } = task;
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      const recipe = this.registry.get(claim.recipe);
      if (recipe === undefined) throw new Release(`recipe ${claim.recipe} is not served by this worker`, { afterS: 30 });
      let input: unknown = claim.input;
      if (recipe.validate) {
        try {
          input = recipe.validate(claim.input);
        } catch (e) {
          throw new Fatal(`input of recipe ${claim.recipe} does not match: ${firstLine(e)}`);
        }
      }
      const ctx = new StepContext(claim, input, this.client, task.abort.signal, {
        parking: () => {
          if (task.state === "running") task.state = "finishing";
        },
        unparked: () => {
          if (task.state === "finishing") task.state = "running";
        },
        parked: () => {
          if (task.state === "finishing") task.state = "parked";
        },
        stopped: () => (task.state === "lost" ? "lost" : task.state === "cancelled" ? "cancelled" : null),
        log: (level, message) => this.log(level, message),
      });
      try {
        const value = await this.guarded(task, Promise.resolve().then(() => recipe.fn(ctx)));
        outcome = { ok: true, value };
      } finally {
        await ctx.closeStreams(); // the last batches go before the step ends (or parks)
      }
    } catch (e) {
      outcome = { ok: false, error: e };
    }
    await this.finish(task, outcome);
  }

  /** The recipe's promise, raced against the attempt's abort and its deadline. */
  private guarded<T>(task: Task, work: Promise<T>): Promise<T> {
    work.catch(() => undefined); // a recipe abandoned after an abort may still reject later
    const { deadlineAt } = task.claim;
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => reject(task.abort.signal.reason);
      if (deadlineAt !== null) {
        const ms = deadlineAt.getTime() - Date.now();
        if (ms < FAR_DEADLINE_S * 1000) {
          timer = setTimeout(() => task.abort.abort(new DeadlineExceeded(`attempt ${task.claim.attemptId} ran past its deadline ${deadlineAt.toISOString()}`)), Math.max(0, ms));
        }
      }
      task.abort.signal.addEventListener("abort", onAbort, { once: true });
      work.then(
        (v) => {
          clearTimeout(timer);
          task.abort.signal.removeEventListener("abort", onAbort);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          task.abort.signal.removeEventListener("abort", onAbort);
          reject(e);
        },
      );
    });
  }

  private async finish(task: Task, outcome: { ok: true; value: unknown } | { ok: false; error: unknown }): Promise<void> {
    const { claim } = task;
    const id = claim.attemptId;
    if (task.state === "lost" || task.state === "released" || task.state === "parked") return;
    if (task.state === "cancelled") {
      await this.release(task, "cancelled");
      return;
    }
    if (outcome.ok) {
      let text: string | null;
      try {
        text = toJsonText(outcome.value, "the result");
      } catch (e) {
        await this.fail(task, e, false);
        return;
      }
      task.state = "finishing";
      await new Promise<void>((resolve) => {
        this.completions.push({ task, text, resolve });
        this.scheduleFlush();
      });
      return;
    }
    const e = outcome.error;
    if (e instanceof Parked) return;
    if (e instanceof LeaseLost) return this.lost(task, "the step", e);
    if (e instanceof Cancelled) {
      task.state = "cancelled";
      await this.release(task, "cancelled");
      return;
    }
    if (e instanceof Release) {
      await this.release(task, e.message, e.afterS);
      return;
    }
    if (e instanceof Fatal || e instanceof BadPayload) return this.fail(task, e, false);
    if (e instanceof Retry) return this.fail(task, e, true, e.afterS);
    this.log("info", `attempt ${id} of ${claim.recipe} failed: ${firstLine(e)}`);
    return this.fail(task, e, true);
  }

  private errorJson(e: unknown): Json {
    if (e instanceof Error) {
      return { type: e.name, message: e.message.slice(0, 4000), stack: (e.stack ?? "").slice(0, 4000) };
    }
    return { type: typeof e, message: String(e).slice(0, 4000) };
  }

  private async fail(task: Task, e: unknown, retryable: boolean, retryAfterS?: number): Promise<void> {
    const { attemptId, fencingToken } = task.claim;
    task.state = "finishing";
    const text = JSON.stringify(this.errorJson(e));
    try {
      const r = await this.retrying("fail_step", () =>
        this.client.failStepText(attemptId, fencingToken, text, retryAfterS === undefined ? { retryable } : { retryable, retryAfterS }),
      );
      this.stats.failed++;
      this.log(r.outcome === "dead_letter" ? "warn" : "info", `attempt ${attemptId} failed: ${r.outcome} (${firstLine(e)})`);
    } catch (err) {
      await this.refused(task, "fail_step", err);
    }
  }

  private async release(task: Task, reason: string, retryAfterS?: number): Promise<void> {
    const { attemptId, fencingToken } = task.claim;
    try {
      await this.retrying("release_step", () =>
        this.client.releaseStep(attemptId, fencingToken, retryAfterS === undefined ? { reason } : { reason, retryAfterS }),
      );
      this.stats.released++;
    } catch (err) {
      await this.refused(task, "release_step", err);
    }
  }

  /** A fenced write was refused: ZF001 is logged as a stale write; ZF002 is acknowledged. */
  private async refused(task: Task, operation: string, err: unknown): Promise<void> {
    if (err instanceof LeaseLost) return this.lost(task, operation, err);
    if (err instanceof Cancelled && operation !== "release_step") {
      task.state = "cancelled";
      return this.release(task, "cancelled");
    }
    this.log("warn", `${operation} of attempt ${task.claim.attemptId} failed: ${firstLine(err)}`);
  }

  private async lost(task: Task, operation: string, err: unknown): Promise<void> {
    const { attemptId, stepId, fencingToken } = task.claim;
    task.state = "lost";
    this.stats.lost++;
    this.log("warn", `lease lost on attempt ${attemptId} (step ${stepId}) in ${operation}: abandoning it, writing nothing (${firstLine(err)})`);
    try {
      await this.client.recordStaleWrite(attemptId, fencingToken, operation);
    } catch {
      // the refusal is logged by the engine when it can be; nothing else to do
    }
  }

  // --- completions in batches -----------------------------------------------------------------

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.flush())
      .finally(() => {
        this.flushing = null;
        if (this.completions.length) this.scheduleFlush();
      });
  }

  private async flush(): Promise<void> {
    while (this.completions.length) {
      const batch = this.completions.splice(0, 1000);
      let rows: RowOutcome[] | null = null;
      const items = batch.map((c) => ({ attemptId: c.task.claim.attemptId, token: c.task.claim.fencingToken, resultText: c.text }));
      try {
        if (this.backlog && !this.stopping) {
          // one statement and one commit: these completions and the claim of the slots they free
          ({ done: rows } = await this.exclusive(async () => {
            const want = Math.min(this.batchSize, this.concurrency - this.tasks.size + batch.length);
            const r = await this.client.completeAndClaim(this.workerId, items, want, this.leaseS, { recipes: this.registry.names() });
            this.backlog = r.claimed.length === want;
            // started at once, inside the claim lock: no other claim can count their slots as free
            for (const c of r.claimed) this.startTask(c);
            return r;
          }));
        } else {
          rows = await this.retrying("complete_batch", () => this.client.completeBatch(items));
        }
      } catch (e) {
        this.log("warn", `complete_batch of ${batch.length} refused (${firstLine(e)}): completing row by row`);
      }
      const byId = new Map<bigint, RowOutcome>((rows ?? []).map((r) => [r.attemptId, r]));
      for (const c of batch) {
        let r = byId.get(c.task.claim.attemptId);
        if (rows === null) {
          try {
            r = await this.client.completeStepText(c.task.claim.attemptId, c.task.claim.fencingToken, c.text);
          } catch (e) {
            if (e instanceof LeaseLost) await this.lost(c.task, "complete_step", e);
            else this.log("warn", `complete_step of attempt ${c.task.claim.attemptId} failed: ${firstLine(e)}`);
          }
        }
        if (r?.outcome === "succeeded") this.stats.completed++;
        else if (r?.outcome === "lease_lost") {
          // complete_batch logged the stale write itself
          c.task.state = "lost";
          this.stats.lost++;
          this.log("warn", `lease lost on attempt ${c.task.claim.attemptId} (step ${c.task.claim.stepId}) in complete_batch: its result was not written`);
        } else if (r?.outcome === "result_refused") this.log("warn", `attempt ${c.task.claim.attemptId}: its result was refused; the step is dead-lettered`);
        else if (r?.outcome === "cancelled") this.log("info", `attempt ${c.task.claim.attemptId} was cancelled before its result was written`);
        c.resolve();
      }
    }
  }

  // --- heartbeat ------------------------------------------------------------------------------

  private async beat(): Promise<void> {
    if (this.hbBusy || this.stopped) return;
    const held = [...this.tasks.values()].filter((t) => t.state === "running" || t.state === "finishing");
    if (held.length === 0) return;
    this.hbBusy = true;
    try {
      if (this.hbConn === null) {
        const c = new pg.Client(this.connConfig("pgflight-ts-heartbeat"));
        c.on("error", () => {
          if (this.hbConn === c) this.hbConn = null;
        });
        await c.connect();
        this.hbConn = c;
      }
      const rows = await new PgflightClient(this.hbConn).heartbeat(
        this.workerId,
        held.map((t) => ({ attemptId: t.claim.attemptId, token: t.claim.fencingToken })),
      );
      for (const r of rows) {
        const t = this.tasks.get(r.attemptId);
        if (t === undefined || t.state !== "running") continue; // a final write in flight reports for itself
        if (r.outcome === "lease_lost") {
          t.state = "lost";
          this.stats.lost++;
          this.log("warn", `lease lost on attempt ${r.attemptId} (step ${t.claim.stepId}): abandoning it, writing nothing`);
          t.abort.abort(new LeaseLost(`lease lost on attempt ${r.attemptId}`, { sqlstate: "ZF001" }));
        } else if (r.outcome === "cancelled") {
          t.state = "cancelled";
          this.log("info", `attempt ${r.attemptId} (step ${t.claim.stepId}) cancelled: stopping it`);
          t.abort.abort(new Cancelled(`attempt ${r.attemptId} was cancelled`, { sqlstate: "ZF002" }));
        }
      }
    } catch (e) {
      this.log("warn", `heartbeat failed: ${firstLine(e)}`);
      if (isTransient(e)) {
        const c = this.hbConn;
        this.hbConn = null;
        void c?.end().catch(() => undefined);
      }
    } finally {
      this.hbBusy = false;
    }
  }

  // --- LISTEN and wake tickets ----------------------------------------------------------------

  /** The advisory lock key of `ticket` for this process's recipe group (signed 64 bits). */
  ticketKey(ticket: string): bigint {
    return wakeTicketKey(this.registry.names(), ticket);
  }

  private async listenLoop(): Promise<void> {
    let first = true;
    while (!this.stopping) {
      const conn = new pg.Client(this.connConfig("pgflight-ts-listen"));
      const ended = new Promise<void>((resolve) => {
        conn.on("error", (e) => {
          this.log("warn", `LISTEN connection lost: ${firstLine(e)}`);
          resolve();
        });
        conn.on("end", () => resolve());
      });
      try {
        await conn.connect();
        conn.on("notification", (n) => {
          if (n.channel === CHANNEL) void this.onNotification(n.payload ?? "");
        });
        await conn.query(`listen ${CHANNEL}`);
        const direct = await this.probe(conn);
        this.listenConn = conn;
        this.listenClient = new PgflightClient(conn);
        this.heldTickets = [];
        this.listening = direct;
        if (!direct && first) {
          this.log("error", `LISTEN does not work on this connection (a transaction pooler?): polling every ${this.fallbackPollS}s instead`);
        } else if (!first) this.log("info", "LISTEN connection re-established");
        first = false;
        this.wake(); // LISTEN first, then the catch-up claim
        await ended;
      } catch (e) {
        if (first) this.log("warn", `LISTEN unavailable (${firstLine(e)}): polling every ${this.fallbackPollS}s`);
        first = false;
      }
      this.listening = false;
      this.listenConn = null;
      this.listenClient = null;
      void conn.end().catch(() => undefined);
      if (!this.stopping) await sleep(1000);
    }
  }

  /** Do notifications really arrive on `conn`? A self-NOTIFY on a unique channel, 2 s at most. */
  private async probe(conn: pg.Client): Promise<boolean> {
    const channel = `pgflight_probe_${process.pid}_${Date.now().toString(36)}`;
    let got!: () => void;
    const arrived = new Promise<void>((r) => (got = r));
    const on = (n: pg.Notification) => {
      if (n.channel === channel) got();
    };
    conn.on("notification", on);
    try {
      await conn.query(`listen ${channel}`);
      await this.pool.query(`notify ${channel}`);
      const timeout = sleep(2000).then(() => false);
      return await Promise.race([arrived.then(() => true), timeout]);
    } catch {
      return false;
    } finally {
      conn.removeListener("notification", on);
      await conn.query(`unlisten ${channel}`).catch(() => undefined);
    }
  }

  private async onNotification(payload: string): Promise<void> {
    if (this.stopping || this.free() <= 0) return;
    if (payload === "") {
      this.wake();
      return;
    }
    const conn = this.listenClient;
    if (conn === null) return;
    await this.exclusive(async () => {
      const want = Math.min(this.free(), this.batchSize);
      if (want <= 0 || this.stopping) return;
      const key = this.ticketKey(payload);
      try {
        const [row] = await conn.query<{ won: boolean; claims: Record<string, unknown>[] | null }>(CLAIM_WITH_TICKET, [
          key,
          this.workerId,
          want,
          this.leaseS,
          this.registry.names(),
        ]);
        if (!row?.won) {
          this.stats.ticketsLost++;
          this.ticketLostAt = Date.now();
          return;
        }
        this.stats.ticketsWon++;
        this.heldTickets.push({ at: Date.now(), key });
        const claims = (row.claims ?? []).map(claimFromJson);
        for (const c of claims) this.startTask(c);
        if (claims.length === want) {
          // more may be ready: wake one more idle process of this group
          this.stats.relays++;
          await this.pool.query("select pg_catalog.pg_notify($1, $2)", [CHANNEL, `relay.${this.workerId}.${this.stats.relays}`]).catch(() => undefined);
        }
      } catch (e) {
        this.log("warn", `claim on a wake ticket failed: ${firstLine(e)}`);
        this.wake();
      }
    });
  }

  private async expireTickets(all: boolean): Promise<void> {
    const conn = this.listenConn;
    if (conn === null || this.heldTickets.length === 0) return;
    const now = Date.now();
    const done: bigint[] = [];
    while (this.heldTickets.length && (all || now - this.heldTickets[0]!.at >= TICKET_HOLD_S * 1000 || this.heldTickets.length > 64)) {
      done.push(this.heldTickets.shift()!.key);
    }
    if (done.length) {
      await conn
        .query("select pg_catalog.pg_advisory_unlock(pgflight.wake_ticket_key(k)) from unnest($1::bigint[]) k", [done])
        .catch(() => undefined);
    }
  }

  // --- shutdown ------------------------------------------------------------------------------

  private async shutdown(): Promise<void> {
    await this.exclusive(async () => undefined); // a claim in flight has landed
    const pending = [...this.tasks.values()];
    if (pending.length) {
      this.log("info", `waiting up to ${this.graceS}s for ${pending.length} running step(s)`);
      await Promise.race([Promise.all(pending.map((t) => t.done)), sleep(this.graceS * 1000)]);
    }
    let released = 0;
    await Promise.all(
      [...this.tasks.values()].map(async (t) => {
        if (t.state !== "running") return;
        t.state = "released";
        t.abort.abort(new Release("worker shutdown"));
        try {
          await this.client.releaseStep(t.claim.attemptId, t.claim.fencingToken, { reason: "worker shutdown" });
          released++;
        } catch (e) {
          this.log("warn", `could not release attempt ${t.claim.attemptId}: ${firstLine(e)}`);
        }
      }),
    );
    if (released) this.log("info", `released ${released} step(s) still running after the grace period`);
    await Promise.race([Promise.all([...this.tasks.values()].map((t) => t.done)), sleep(2000)]);
    while (this.flushing) await this.flushing;
    this.stopped = true;
    if (this.hbTimer) clearInterval(this.hbTimer);
    if (this.ticketTimer) clearInterval(this.ticketTimer);
    try {
      await this.client.deregisterWorker(this.workerId);
    } catch (e) {
      this.log("warn", `deregister_worker failed: ${firstLine(e)}`);
    }
    if (this.signalHandler) {
      process.removeListener("SIGTERM", this.signalHandler);
      process.removeListener("SIGINT", this.signalHandler);
    }
    await this.expireTickets(true);
    await Promise.allSettled([this.listenConn?.end(), this.hbConn?.end(), this.pool.end()]);
    this.log("info", `worker ${this.workerId} stopped (claimed ${this.stats.claimed}, completed ${this.stats.completed})`);
  }

  /** Retry a call on a lost connection or a restarting server for up to 30 s; refusals are thrown at once. */
  private async retrying<T>(what: string, fn: () => Promise<T>, forS = 30): Promise<T> {
    const until = Date.now() + forS * 1000;
    let delay = 100;
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (!isTransient(e) || Date.now() + delay > until) throw e;
        this.log("warn", `${what}: ${firstLine(e)}; retrying in ${delay} ms`);
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }
}

/**
 * The wake-ticket key every pgflight worker library derives (docs/worker_protocol.md §3), so
 * processes of different languages serving the same recipes meet on one lock: the first 8 bytes
 * of SHA-256 over the UTF-8 of `"pgflight-wake" US <recipe names sorted, joined by US> US ticket`
 * (US = U+001F; names sorted by code point), read as a big-endian signed 64-bit integer. The engine then mixes in its secret
 * and the login's lanes (`pgflight.wake_ticket_key`).
 */
export function wakeTicketKey(recipes: readonly string[], ticket: string): bigint {
  const byCodePoint = (a: string, b: string) => {
    const x = [...a].map((c) => c.codePointAt(0)!);
    const y = [...b].map((c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  };
  const group = [...recipes].sort(byCodePoint).join("\x1f");
  return createHash("sha256").update(`pgflight-wake\x1f${group}\x1f${ticket}`, "utf8").digest().readBigInt64BE(0);
}

/** A claim row as jsonb (the ticket statement aggregates them, ids as text so none loses digits). */
function claimFromJson(r: Record<string, unknown>): ClaimedStep {
  const big = (v: unknown) => (v === null || v === undefined ? null : BigInt(v as string | number));
  return {
    attemptId: big(r.attempt_id)!,
    fencingToken: big(r.fencing_token)!,
    stepId: big(r.step_id)!,
    runId: big(r.run_id)!,
    parentId: big(r.parent_id),
    stepKey: (r.step_key as string | null) ?? null,
    attemptNo: Number(r.attempt_no),
    recipe: String(r.recipe),
    input: (r.input ?? null) as Json,
    leaseExpiresAt: new Date(String(r.lease_expires_at)),
    deadlineAt: r.deadline_at == null ? null : new Date(String(r.deadline_at)),
  };
}
