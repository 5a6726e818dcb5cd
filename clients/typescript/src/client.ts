/**
 * A typed client of pgflight's worker-lane SQL API: one method per SQL function the
 * `pgflight_worker` role may execute (listed in {@link WORKER_FUNCTIONS}; a test compares that
 * list with the catalogue). Nothing else in this library sends SQL that changes engine state.
 *
 * Conventions, the same for every method:
 * - ids and fencing tokens are `bigint` (int8 columns are parsed with {@link pgflightTypes});
 * - JSON arguments are any JSON value, sent as JSON text with an explicit `::jsonb` cast
 *   (a JS array given straight to node-postgres becomes a PostgreSQL array literal, which jsonb
 *   refuses with 22P02);
 * - batch functions take one array of `{attemptId, token, ...}` items; the SQL API's parallel
 *   arrays are built here;
 * - per-row outcomes are the SQL API's one vocabulary, {@link Outcome} (docs/worker_protocol.md),
 *   checked against the words each function may answer; the SQL word is kept as `raw`;
 * - errors with a pgflight SQLSTATE are thrown as the class of that code (src/errors.ts).
 */
import pg from "pg";

import { translate } from "./errors.js";
import { type Json, toJsonText } from "./json.js";

/** Anything that runs a query: a `pg.Pool`, a `pg.Client` or a pool's client. */
export interface Queryable {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
}

const INT8 = 20;
const INT8_ARRAY = 1016;

/**
 * Type parsers for pgflight's results: `int8` as `bigint` and `int8[]` as `bigint[]` (the driver
 * gives strings by default: ids past 2^53 would lose digits as numbers). `numeric` (USD amounts)
 * stays a string. Passed with every query, so the caller's pool needs no global setting.
 */
export const pgflightTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === INT8) return (v: string) => BigInt(v);
    if (oid === INT8_ARRAY) {
      // a one-dimensional int8[] in text form: {1,2,NULL}
      return (v: string) =>
        v === "{}" ? [] : v.slice(1, -1).split(",").map((x) => (x === "NULL" ? null : BigInt(x)));
    }
    return pg.types.getTypeParser(oid, format ?? "text");
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/**
 * What happened to an attempt: the one vocabulary of per-row outcomes every SQL function of the
 * worker lane answers in (heartbeat, complete_step, complete_step_text, complete_batch,
 * complete_and_claim, fail_step, fail_step_text, release_step; docs/worker_protocol.md §5).
 */
export type Outcome =
  /** heartbeat: the lease was renewed */
  | "held"
  /** complete: the step succeeded */
  | "succeeded"
  /** complete: the result could not be stored; the step is dead-lettered, not retried */
  | "result_refused"
  /** fail: a new attempt is queued after the backoff */
  | "retry"
  /** fail: no attempt left, or a fatal error */
  | "dead_letter"
  /** release: the step is queued again, no attempt spent */
  | "released"
  /** the attempt is not the caller's any more: write nothing more for it */
  | "lease_lost"
  /** the run or step was cancelled */
  | "cancelled";

/** The outcomes each family of functions may answer. */
const OUTCOMES = {
  heartbeat: ["held", "lease_lost", "cancelled"],
  complete: ["succeeded", "result_refused", "lease_lost", "cancelled"],
  fail: ["retry", "dead_letter", "cancelled"],
  release: ["released", "cancelled"],
} as const satisfies Record<string, readonly Outcome[]>;

/** The SQL word `raw` as an {@link Outcome}, checked against what function family `family` may answer. */
export function outcomeOf(family: keyof typeof OUTCOMES, raw: string): Outcome {
  if (!(OUTCOMES[family] as readonly string[]).includes(raw)) {
    throw new Error(`pgflight answered an outcome this library does not know: ${family} ${raw}`);
  }
  return raw as Outcome;
}

/** A step leased to this worker by a claim. */
export interface ClaimedStep {
  attemptId: bigint;
  /** The capability every later write for this attempt carries. */
  fencingToken: bigint;
  stepId: bigint;
  runId: bigint;
  parentId: bigint | null;
  stepKey: string | null;
  /** 1 for the first try. */
  attemptNo: number;
  recipe: string;
  input: Json;
  leaseExpiresAt: Date;
  deadlineAt: Date | null;
}

/** One attempt of a batch write. */
export interface Held {
  attemptId: bigint;
  token: bigint;
}

/** A row's outcome in a batch call. */
export interface RowOutcome {
  attemptId: bigint;
  outcome: Outcome;
  /** the SQL function's own word */
  raw: string;
}

export interface HeartbeatRow extends RowOutcome {
  leaseExpiresAt: Date | null;
}

export interface FailResult extends RowOutcome {
  nextAttemptId: bigint | null;
  availableAfter: Date | null;
}

export interface SpawnResult {
  childrenTotal: number;
  created: number;
  /** true: the attempt now waits for its children (it gave up its lease) */
  parked: boolean;
}

export interface Child {
  key: string;
  recipe: string;
  input?: Json;
  options?: Record<string, Json>;
}

export interface ChildResult {
  stepKey: string;
  stepId: bigint;
  recipe: string;
  status: string;
  attemptNo: number;
  result: Json;
  error: Json;
}

export interface ApprovalResult {
  decision: "approve" | "reject" | null;
  actor: string | null;
  note: string | null;
  waiting: boolean;
}

export interface TimerWait {
  outcome: string;
  dueAt: Date | null;
  waiting: boolean;
}

/** stream_write's answer: the sequence numbers this batch took and the stream's size so far. */
export interface StreamWritten {
  firstSeq: bigint | null;
  lastSeq: bigint;
  totalBytes: bigint;
}

export interface EventWait {
  outcome: string;
  payload: Json;
  eventId: string | null;
  waiting: boolean;
}

export interface EmittedEvent {
  eventId: string;
  emitted: boolean;
  woken: number;
}

export interface RecordedEffect {
  effectId: bigint;
  /** the stored receipt: the first one recorded for the key wins */
  result: Json;
  recorded: boolean;
  /** false: the receipt was stored but the lease lapsed meanwhile; stop */
  leaseHeld: boolean;
}

export interface EffectReceipt {
  effectId: bigint;
  result: Json;
  attemptId: bigint;
  recordedAt: Date;
}

/** snake_case row -> camelCase object (the SQL API's named columns). */
function camel<T>(row: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = v;
  return out as T;
}

/** A JSON value as a parameter (null and undefined: SQL NULL). */
function j(value: unknown, what: string): string | null {
  return toJsonText(value, what);
}

/** An options object without its undefined members, as JSON text. */
function opts(o: Record<string, unknown> = {}): string {
  const clean: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) clean[k] = v;
  return toJsonText(clean, "options") ?? "{}";
}

/**
 * The SQL function each method calls: every function the worker lane may execute (internal
 * `_`-prefixed helpers aside). Kept in step with the catalogue by a test.
 */
export const WORKER_FUNCTIONS = {
  register_worker: "registerWorker",
  deregister_worker: "deregisterWorker",
  claim_batch: "claimBatch",
  start_step: "startStep",
  heartbeat: "heartbeat",
  complete_step: "completeStep",
  complete_step_text: "completeStepText",
  complete_batch: "completeBatch",
  complete_and_claim: "completeAndClaim",
  fail_step: "failStep",
  fail_step_text: "failStepText",
  release_step: "releaseStep",
  record_stale_write: "recordStaleWrite",
  spawn_children: "spawnChildren",
  children_results: "childrenResults",
  request_approval: "requestApproval",
  wait_timer: "waitTimer",
  wait_event: "waitEvent",
  emit_event: "emitEvent",
  stream_write: "streamWrite",
  record_effect: "recordEffect",
  find_effect: "findEffect",
  wake_ticket_key: "wakeTicketKey",
  run_status: "runStatus",
  run_audit: "runAudit",
  run_trace_context: "runTraceContext",
  begin_agent_run: "beginAgentRun",
  reserve_budget: "reserveBudget",
  record_model_call: "recordModelCall",
  record_orphan_cost: "recordOrphanCost",
  record_trace: "recordTrace",
  mark_tool_call: "markToolCall",
  complete_tool_call: "completeToolCall",
  complete_tool_calls: "completeToolCalls",
  load_transcript: "loadTranscript",
  price_usd: "priceUsd",
} as const;

const CLAIM_COLUMNS =
  "attempt_id, fencing_token, step_id, run_id, parent_id, step_key, attempt_no, recipe, input, lease_expires_at, deadline_at";

/** The worker-lane SQL API over one pool or connection. */
export class PgflightClient {
  constructor(readonly db: Queryable) {}

  /** Run one statement with pgflight's type parsers; pgflight SQLSTATEs become their classes. */
  async query<R = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
    try {
      const r = await this.db.query({ text, values, types: pgflightTypes });
      return r.rows as R[];
    } catch (e) {
      throw translate(e);
    }
  }

  private async rows<T>(text: string, values: unknown[]): Promise<T[]> {
    return (await this.query<Record<string, unknown>>(text, values)).map((r) => camel<T>(r));
  }

  private async one<T>(text: string, values: unknown[]): Promise<T> {
    const rows = await this.rows<T>(text, values);
    if (rows.length !== 1) throw new Error(`expected one row from ${text}, got ${rows.length}`);
    return rows[0] as T;
  }

  private async scalar<T>(text: string, values: unknown[]): Promise<T> {
    const rows = await this.query<Record<string, unknown>>(text, values);
    return Object.values(rows[0] ?? {})[0] as T;
  }

  // --- workers ---------------------------------------------------------------------------------

  /** register_worker: a worker id for claims and heartbeats. */
  async registerWorker(
    name: string,
    o: { hostname?: string; pid?: number; recipes?: string[]; options?: Record<string, Json> } = {},
  ): Promise<bigint> {
    return this.scalar<bigint>("select pgflight.register_worker($1, $2::jsonb)", [
      name,
      opts({ ...o.options, hostname: o.hostname, pid: o.pid, recipes: o.recipes }),
    ]);
  }

  /** deregister_worker: mark the worker stopped (release its attempts first). */
  async deregisterWorker(workerId: bigint): Promise<void> {
    await this.query("select pgflight.deregister_worker($1)", [workerId]);
  }

  /**
   * claim_batch: lease up to `batchSize` ready steps.
   *
   * @param leaseS lease in seconds (a step's own lease_s wins); renewed by heartbeat.
   * @param o.recipes only these recipes (default: any); o.start: claim straight into running.
   * @throws UnknownWorker ZF010. BadArgument 22023.
   */
  async claimBatch(
    workerId: bigint,
    batchSize: number,
    leaseS: number,
    o: { recipes?: string[] | null; start?: boolean } = {},
  ): Promise<ClaimedStep[]> {
    return this.rows<ClaimedStep>(
      `select ${CLAIM_COLUMNS} from pgflight.claim_batch($1, $2, $3, $4::text[], $5::jsonb)`,
      [workerId, batchSize, leaseS, o.recipes ?? null, opts({ start: o.start ? true : undefined })],
    );
  }

  /** start_step: claimed -> running (idempotent for the holder). @throws LeaseLost, Cancelled, NotFound */
  async startStep(attemptId: bigint, token: bigint): Promise<{ attemptId: bigint; startedAt: Date; leaseExpiresAt: Date }> {
    return this.one("select * from pgflight.start_step($1, $2)", [attemptId, token]);
  }

  /**
   * heartbeat: renew the leases of the worker's attempts in one call.
   *
   * @return per attempt `held`, `lease_lost` (write nothing more) or `cancelled` (stop; release_step).
   * @throws UnknownWorker ZF010.
   */
  async heartbeat(workerId: bigint, held: readonly Held[]): Promise<HeartbeatRow[]> {
    const rows = await this.query<{ attempt_id: bigint; status: string; lease_expires_at: Date | null }>(
      "select * from pgflight.heartbeat($1, $2::bigint[], $3::bigint[])",
      [workerId, held.map((h) => h.attemptId), held.map((h) => h.token)],
    );
    return rows.map((r) => ({
      attemptId: r.attempt_id,
      outcome: outcomeOf("heartbeat", r.status),
      raw: r.status,
      leaseExpiresAt: r.lease_expires_at,
    }));
  }

  /** complete_step: complete a held attempt with a JSON result. @throws LeaseLost, Cancelled */
  async completeStep(attemptId: bigint, token: bigint, result?: Json): Promise<RowOutcome> {
    const r = await this.one<{ attemptId: bigint; status: string }>("select * from pgflight.complete_step($1, $2, $3::jsonb)", [
      attemptId,
      token,
      j(result, "result"),
    ]);
    return { attemptId: r.attemptId, outcome: outcomeOf("complete", r.status), raw: r.status };
  }

  /**
   * complete_step_text: the result as JSON text; a result PostgreSQL refuses fails the step alone
   * (`result_refused`) instead of the call. @throws LeaseLost, Cancelled
   */
  async completeStepText(attemptId: bigint, token: bigint, resultText: string | null): Promise<RowOutcome> {
    const r = await this.one<{ attemptId: bigint; status: string }>(
      "select * from pgflight.complete_step_text($1, $2, $3::text)",
      [attemptId, token, resultText],
    );
    return { attemptId: r.attemptId, outcome: outcomeOf("complete", r.status), raw: r.status };
  }

  /**
   * complete_batch: complete many attempts in one transaction; a stale row is reported
   * (`lease_lost`), never thrown. Rows are sent in ascending attempt order (the function's lock order).
   *
   * @param items results as JSON values, or as JSON text already made (`resultText`).
   */
  async completeBatch(items: readonly (Held & { result?: Json; resultText?: string | null })[]): Promise<RowOutcome[]> {
    const sorted = [...items].sort((a, b) => (a.attemptId < b.attemptId ? -1 : a.attemptId > b.attemptId ? 1 : 0));
    const rows = await this.query<{ attempt_id: bigint; outcome: string }>(
      "select * from pgflight.complete_batch($1::bigint[], $2::bigint[], $3::jsonb[])",
      [
        sorted.map((i) => i.attemptId),
        sorted.map((i) => i.token),
        sorted.map((i) => (i.resultText !== undefined ? i.resultText : j(i.result, "result"))),
      ],
    );
    return rows.map((r) => ({ attemptId: r.attempt_id, outcome: outcomeOf("complete", r.outcome), raw: r.outcome }));
  }

  /**
   * complete_and_claim: complete_batch and claim_batch (started on claim) in one call and one
   * commit. Atomic: when either part raises, nothing of the other is kept.
   */
  async completeAndClaim(
    workerId: bigint,
    items: readonly (Held & { result?: Json; resultText?: string | null })[],
    batchSize: number,
    leaseS: number,
    o: { recipes?: string[] | null } = {},
  ): Promise<{ done: RowOutcome[]; claimed: ClaimedStep[] }> {
    const sorted = [...items].sort((a, b) => (a.attemptId < b.attemptId ? -1 : a.attemptId > b.attemptId ? 1 : 0));
    const rows = await this.query<Record<string, unknown>>(
      `select ${CLAIM_COLUMNS}, outcome from pgflight.complete_and_claim($1, $2::bigint[], $3::bigint[], $4::jsonb[], $5, $6, $7::text[], $8::jsonb)`,
      [
        workerId,
        sorted.map((i) => i.attemptId),
        sorted.map((i) => i.token),
        sorted.map((i) => (i.resultText !== undefined ? i.resultText : j(i.result, "result"))),
        batchSize,
        leaseS,
        o.recipes ?? null,
        '{"start": true}',
      ],
    );
    const done: RowOutcome[] = [];
    const claimed: ClaimedStep[] = [];
    for (const r of rows) {
      if (r.outcome === null) {
        const { outcome: _ignored, ...claim } = r;
        claimed.push(camel<ClaimedStep>(claim));
      } else {
        const raw = String(r.outcome);
        done.push({ attemptId: r.attempt_id as bigint, outcome: outcomeOf("complete", raw), raw });
      }
    }
    return { done, claimed };
  }

  /**
   * fail_step: fail a held attempt.
   *
   * @param o.retryable false dead-letters at once; o.retryAfterS replaces the backoff.
   * @return `retry`, `dead_letter` or `cancelled`. @throws LeaseLost, Cancelled
   */
  async failStep(attemptId: bigint, token: bigint, error: Json, o: { retryable?: boolean; retryAfterS?: number } = {}): Promise<FailResult> {
    return this.failRow(
      "select * from pgflight.fail_step($1, $2, $3::jsonb, $4::jsonb)",
      [attemptId, token, j(error, "error") ?? "null", opts({ retryable: o.retryable, retry_after_s: o.retryAfterS })],
    );
  }

  /** fail_step_text: the error as JSON text; an error PostgreSQL refuses is stored as a message. */
  async failStepText(
    attemptId: bigint,
    token: bigint,
    errorText: string | null,
    o: { retryable?: boolean; retryAfterS?: number } = {},
  ): Promise<FailResult> {
    return this.failRow("select * from pgflight.fail_step_text($1, $2, $3::text, $4::jsonb)", [
      attemptId,
      token,
      errorText,
      opts({ retryable: o.retryable, retry_after_s: o.retryAfterS }),
    ]);
  }

  private async failRow(text: string, values: unknown[]): Promise<FailResult> {
    const r = await this.one<{ attemptId: bigint; outcome: string; nextAttemptId: bigint | null; availableAfter: Date | null }>(
      text,
      values,
    );
    return { ...r, outcome: outcomeOf("fail", r.outcome), raw: r.outcome };
  }

  /**
   * release_step: give a held attempt back without spending an attempt, or acknowledge a cancel.
   *
   * @return `released` or `cancelled`. @throws LeaseLost, BadArgument (retryAfterS out of range)
   */
  async releaseStep(attemptId: bigint, token: bigint, o: { reason?: string; retryAfterS?: number } = {}): Promise<RowOutcome> {
    const r = await this.one<{ attemptId: bigint; status: string }>("select * from pgflight.release_step($1, $2, $3, $4::jsonb)", [
      attemptId,
      token,
      o.reason ?? "released",
      opts({ retry_after_s: o.retryAfterS }),
    ]);
    return { attemptId: r.attemptId, outcome: outcomeOf("release", r.status), raw: r.status };
  }

  /** record_stale_write: log a refused write as a stale_result_rejected event. */
  async recordStaleWrite(attemptId: bigint, token: bigint, operation: string): Promise<boolean> {
    return this.scalar<boolean>("select pgflight.record_stale_write($1, $2, $3)", [attemptId, token, operation]);
  }

  // --- fan-out, approvals, waits ------------------------------------------------------------------

  /** spawn_children: create child steps (idempotent by key) and park until they are terminal. */
  async spawnChildren(attemptId: bigint, token: bigint, children: readonly Child[], o: { failFast?: boolean } = {}): Promise<SpawnResult> {
    return this.one("select * from pgflight.spawn_children($1, $2, $3::jsonb, $4::jsonb)", [
      attemptId,
      token,
      j(children, "children"),
      opts({ fail_fast: o.failFast }),
    ]);
  }

  /** children_results: a step's children in key order with their latest attempt's status, result, error. */
  async childrenResults(stepId: bigint): Promise<ChildResult[]> {
    return this.rows("select * from pgflight.children_results($1)", [stepId]);
  }

  /** request_approval: the decision if known, else the attempt parks (`waiting`). */
  async requestApproval(
    attemptId: bigint,
    token: bigint,
    gateKey: string,
    o: { request?: Json; expiresInS?: number; default?: "approve" | "reject" } = {},
  ): Promise<ApprovalResult> {
    return this.one("select * from pgflight.request_approval($1, $2, $3, $4::jsonb, $5::jsonb)", [
      attemptId,
      token,
      gateKey,
      j(o.request, "request"),
      opts({ expires_in_s: o.expiresInS, default_decision: o.default }),
    ]);
  }

  /** wait_timer: park the attempt until `seconds` after the first call with `waitKey`. */
  async waitTimer(attemptId: bigint, token: bigint, waitKey: string, seconds: number): Promise<TimerWait> {
    return this.one("select * from pgflight.wait_timer($1, $2, $3, $4, '{}'::jsonb)", [attemptId, token, waitKey, seconds]);
  }

  /** wait_event: the event's payload if emitted, else park until it comes or the timeout passes. */
  async waitEvent(
    attemptId: bigint,
    token: bigint,
    waitKey: string,
    name: string,
    key: string,
    o: { timeoutS?: number; default?: Json } = {},
  ): Promise<EventWait> {
    return this.one("select * from pgflight.wait_event($1, $2, $3, $4, $5, $6::jsonb)", [
      attemptId,
      token,
      waitKey,
      name,
      key,
      opts({ timeout_s: o.timeoutS, default: o.default }),
    ]);
  }

  /**
   * stream_write: append a batch of text chunks to a named stream of the attempt's run (fenced:
   * a stale token is LeaseLost). One call is one commit: batch the chunks of a few tens of ms.
   */
  async streamWrite(attemptId: bigint, token: bigint, channel: string, chunks: string[]): Promise<StreamWritten> {
    return this.one("select * from pgflight.stream_write($1, $2, $3, $4::text[], '{}'::jsonb)", [
      attemptId,
      token,
      channel,
      chunks,
    ]);
  }

  /** emit_event: wake the steps waiting for `name`/`key` in `workspace` (idempotent by eventId). */
  async emitEvent(workspace: string, name: string, key: string, payload?: Json, o: { eventId?: string } = {}): Promise<EmittedEvent> {
    return this.one("select * from pgflight.emit_event($1, $2, $3, $4::jsonb, $5::jsonb)", [
      workspace,
      name,
      key,
      j(payload, "payload"),
      opts({ event_id: o.eventId }),
    ]);
  }

  // --- effects ---------------------------------------------------------------------------------

  /** record_effect: store the receipt of an external effect the instant it succeeded. */
  async recordEffect(attemptId: bigint, token: bigint, key: string, result: Json): Promise<RecordedEffect> {
    return this.one("select * from pgflight.record_effect($1, $2, $3, $4::jsonb)", [attemptId, token, key, j(result, "receipt")]);
  }

  /** find_effect: the receipt of effect `key` of a step, or null when it has not happened. */
  async findEffect(stepId: bigint, key: string): Promise<EffectReceipt | null> {
    const rows = await this.rows<EffectReceipt>("select * from pgflight.find_effect($1, $2)", [stepId, key]);
    return rows[0] ?? null;
  }

  /** wake_ticket_key: the advisory lock key of a wake ticket for this login's worker lanes (null without one). */
  async wakeTicketKey(key: bigint): Promise<bigint | null> {
    return this.scalar<bigint | null>("select pgflight.wake_ticket_key($1)", [key]);
  }

  // --- reads -----------------------------------------------------------------------------------

  /** run_status: a run's status, step counts, and its root step's result or error. */
  async runStatus(runId: bigint): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.run_status($1)", [runId]);
  }

  /** run_audit: a run's attempts, retries, reclaims, stale writes and steps succeeded twice (none). */
  async runAudit(runId: bigint): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.run_audit($1)", [runId]);
  }

  /** run_trace_context: the W3C traceparent a run's attempts join. */
  async runTraceContext(runId: bigint): Promise<string | null> {
    return this.scalar<string | null>("select pgflight.run_trace_context($1)", [runId]);
  }

  // --- agents (the flight recorder; see the Python agent loop for the protocol) ----------------

  /** begin_agent_run: the agent's identity across attempts of this step. */
  async beginAgentRun(attemptId: bigint, token: bigint, options: Record<string, Json> = {}): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.begin_agent_run($1, $2, $3::jsonb)", [attemptId, token, opts(options)]);
  }

  /** reserve_budget: reserve an iteration's estimated USD before the model call. @throws BudgetExceeded, TokenRateLimited */
  async reserveBudget(attemptId: bigint, token: bigint, agentRunId: bigint, iteration: number, estUsd: string | number): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.reserve_budget($1, $2, $3, $4, $5::numeric)", [attemptId, token, agentRunId, iteration, String(estUsd)]);
  }

  /** record_model_call: the response blocks, usage and cost of one model call in one transaction. */
  async recordModelCall(
    attemptId: bigint,
    token: bigint,
    agentRunId: bigint,
    iteration: number,
    blocks: Json,
    usage: Json,
    model: string,
    options: Record<string, Json> = {},
    nextEstUsd: string | number | null = null,
  ): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.record_model_call($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8::jsonb, $9::numeric)", [
      attemptId,
      token,
      agentRunId,
      iteration,
      j(blocks, "blocks"),
      j(usage, "usage"),
      model,
      opts(options),
      nextEstUsd === null ? null : String(nextEstUsd),
    ]);
  }

  /** record_orphan_cost: charge a model call whose response was lost. */
  async recordOrphanCost(
    attemptId: bigint,
    token: bigint,
    agentRunId: bigint,
    iteration: number,
    usage: Json,
    model: string,
    options: Record<string, Json> = {},
  ): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.record_orphan_cost($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb)", [
      attemptId,
      token,
      agentRunId,
      iteration,
      j(usage, "usage"),
      model,
      opts(options),
    ]);
  }

  /** record_trace: one block of the flight recorder. */
  async recordTrace(
    attemptId: bigint,
    token: bigint,
    agentRunId: bigint,
    iteration: number,
    role: string,
    blockType: string,
    content: Json,
    options: Record<string, Json> = {},
  ): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.record_trace($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)", [
      attemptId,
      token,
      agentRunId,
      iteration,
      role,
      blockType,
      j(content, "content"),
      opts(options),
    ]);
  }

  /** mark_tool_call: mark a tool call in flight (an interrupted one is found by the next attempt). */
  async markToolCall(attemptId: bigint, token: bigint, agentRunId: bigint, toolUseId: string): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.mark_tool_call($1, $2, $3, $4)", [attemptId, token, agentRunId, toolUseId]);
  }

  /** complete_tool_call: store one tool call's result. */
  async completeToolCall(attemptId: bigint, token: bigint, agentRunId: bigint, toolUseId: string, result: Json): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.complete_tool_call($1, $2, $3, $4, $5::jsonb)", [attemptId, token, agentRunId, toolUseId, j(result, "result")]);
  }

  /** complete_tool_calls: store an iteration's tool results and reserve the next iteration's budget. */
  async completeToolCalls(
    attemptId: bigint,
    token: bigint,
    agentRunId: bigint,
    results: Json,
    nextIteration: number | null = null,
    estUsd: string | number | null = null,
  ): Promise<Record<string, unknown>> {
    return this.one("select * from pgflight.complete_tool_calls($1, $2, $3, $4::jsonb, $5, $6::numeric)", [
      attemptId,
      token,
      agentRunId,
      j(results, "results"),
      nextIteration,
      estUsd === null ? null : String(estUsd),
    ]);
  }

  /** load_transcript: the agent's recorded blocks, to rebuild its transcript after a crash. */
  async loadTranscript(attemptId: bigint, token: bigint, agentRunId: bigint): Promise<Record<string, unknown>[]> {
    return this.rows("select * from pgflight.load_transcript($1, $2, $3)", [attemptId, token, agentRunId]);
  }

  /** price_usd: the USD price of a model call's usage (numeric, as a string). */
  async priceUsd(model: string, usage: Json): Promise<string | null> {
    return this.scalar<string | null>("select pgflight.price_usd($1, $2::jsonb)::text", [model, j(usage, "usage")]);
  }
}
