/**
 * Recipes registered by name, the step context a recipe sees, and the exceptions a recipe throws
 * to steer the worker (the same words as the Python worker's `pgflight.recipes`).
 */
import type { ChildResult, ClaimedStep, PgflightClient, SpawnResult, Child } from "./client.js";
import { Cancelled, LeaseLost } from "./errors.js";
import { type Json, toJsonText } from "./json.js";
import { StreamWriter } from "./streams.js";

/** Throw from a recipe to fail the step for good: dead letter, no retry. */
export class Fatal extends Error {
  override name = "Fatal";
}

/** Throw from a recipe to retry after `afterS` seconds instead of the backoff (an attempt is spent). */
export class Retry extends Error {
  override name = "Retry";
  readonly afterS: number | undefined;
  constructor(message = "retry requested", o: { afterS?: number } = {}) {
    super(message);
    if (o.afterS !== undefined && !(Number.isFinite(o.afterS) && o.afterS >= 0)) {
      throw new RangeError(`Retry afterS=${o.afterS}: a delay must be a finite number of seconds >= 0`);
    }
    this.afterS = o.afterS;
  }
}

/** Throw from a recipe to give the step back without spending an attempt (claimable `afterS` later). */
export class Release extends Error {
  override name = "Release";
  static readonly MAX_AFTER_S = 2592000;
  readonly afterS: number | undefined;
  constructor(message = "released", o: { afterS?: number } = {}) {
    super(message);
    const a = o.afterS;
    this.afterS = a !== undefined && a > 0 && Number.isFinite(a) ? Math.min(a, Release.MAX_AFTER_S) : undefined;
  }
}

/**
 * Thrown by the context when the attempt now waits (children, a timer, an event, a decision) and
 * gave up its lease: the recipe stops here and runs again from the top when the wait is over.
 * A recipe that catches errors must rethrow it (`if (e instanceof Parked) throw e`).
 */
export class Parked extends Error {
  override name = "Parked";
}

/** What a recipe returns: a JSON value (undefined is stored as null). */
export type RecipeResult = Json | undefined | void;

export type RecipeFn<I = Json> = (ctx: StepContext<I>) => Promise<RecipeResult> | RecipeResult;

export interface Recipe<I = Json> {
  name: string;
  fn: RecipeFn<I>;
  /** Turns the step's JSON input into the recipe's input; a throw fails the step fatally. */
  validate?: (input: Json) => I;
}

/** Recipes by name. */
export class Registry {
  private readonly recipes = new Map<string, Recipe<unknown>>();

  /**
   * Register `fn` under `name`.
   *
   * @param o.validate checks the input (e.g. a zod schema's `parse`); a throw dead-letters the step
   *   with the message: a retry cannot fix an input.
   */
  add<I = Json>(name: string, fn: RecipeFn<I>, o: { validate?: (input: Json) => I } = {}): this {
    if (!name || name.trim() !== name) throw new Error(`recipe name ${JSON.stringify(name)} is blank or padded`);
    if (this.recipes.has(name)) throw new Error(`recipe ${name} is registered twice`);
    const r: Recipe<I> = { name, fn };
    if (o.validate) r.validate = o.validate;
    this.recipes.set(name, r as unknown as Recipe<unknown>);
    return this;
  }

  get(name: string): Recipe<unknown> | undefined {
    return this.recipes.get(name);
  }

  names(): string[] {
    return [...this.recipes.keys()].sort();
  }
}

/** The hooks a context calls back into its worker (one attempt). */
export interface AttemptHooks {
  /** The attempt is about to make a call that may park it: the heartbeat must not take it for lost. */
  parking(): void;
  /** The call did not park. */
  unparked(): void;
  /** The call parked the attempt: it holds nothing any more. */
  parked(): void;
  /** "lost" or "cancelled" once the heartbeat said so, else null. */
  stopped(): "lost" | "cancelled" | null;
  log(level: "info" | "warn" | "error", message: string): void;
}

/**
 * What a running step sees: its input and identity, fan-out, waits, approvals, effects and an
 * AbortSignal that fires when the lease is lost, the run is cancelled or the worker shuts down.
 * Every write carries the claim's fencing token.
 */
export class StepContext<I = Json> {
  readonly attemptId: bigint;
  readonly token: bigint;
  readonly stepId: bigint;
  readonly runId: bigint;
  readonly attemptNo: number;
  readonly stepKey: string | null;
  readonly recipe: string;
  private streams: Map<string, StreamWriter> | null = null;

  constructor(
    readonly claim: ClaimedStep,
    readonly input: I,
    /** The worker-lane client (on the worker's pool), for calls the context does not wrap. */
    readonly client: PgflightClient,
    /** Aborted when the attempt must stop: lease lost, cancelled, deadline, shutdown. */
    readonly signal: AbortSignal,
    private readonly hooks: AttemptHooks,
  ) {
    this.attemptId = claim.attemptId;
    this.token = claim.fencingToken;
    this.stepId = claim.stepId;
    this.runId = claim.runId;
    this.attemptNo = claim.attemptNo;
    this.stepKey = claim.stepKey;
    this.recipe = claim.recipe;
  }

  log(message: string): void {
    this.hooks.log("info", `[${this.recipe} step ${this.stepId} attempt ${this.attemptNo}] ${message}`);
  }

  /** Stop here if the lease was lost or the run cancelled. @throws LeaseLost, Cancelled */
  checkCancelled(): void {
    const s = this.hooks.stopped();
    if (s === "lost") throw new LeaseLost(`lease lost on attempt ${this.attemptId}`, { sqlstate: "ZF001" });
    if (s === "cancelled") throw new Cancelled(`attempt ${this.attemptId} was cancelled`, { sqlstate: "ZF002" });
  }

  private async parking<T extends { parked?: boolean; waiting?: boolean }>(call: () => Promise<T>): Promise<T> {
    this.checkCancelled();
    this.hooks.parking();
    let res: T;
    try {
      res = await call();
    } catch (e) {
      this.hooks.unparked();
      throw e;
    }
    if (res.parked || res.waiting) {
      this.hooks.parked();
      throw new Parked(`attempt ${this.attemptId} parked`);
    }
    this.hooks.unparked();
    return res;
  }

  /**
   * Create child steps (idempotent by key) and wait for them: the first call parks the step
   * (throws {@link Parked}); when every child is terminal the recipe runs again from the top and
   * this call returns. Read the children's results with {@link children}.
   */
  async spawn(children: readonly Child[], o: { failFast?: boolean } = {}): Promise<SpawnResult> {
    return this.parking(() => this.client.spawnChildren(this.attemptId, this.token, children, o));
  }

  /** The children's status, result and error, in key order. */
  async children(): Promise<ChildResult[]> {
    return this.client.childrenResults(this.stepId);
  }

  /**
   * Sleep `seconds` without a lease or an attempt spent: parks now, runs again from the top when
   * due, and then this call (same key) returns at once.
   */
  async sleep(key: string, seconds: number): Promise<void> {
    await this.parking(() => this.client.waitTimer(this.attemptId, this.token, `sleep:${key}`, seconds));
  }

  /** Wait for event `name`/`key` of this workspace; its payload, or `default` after `timeoutS`. */
  async waitEvent(name: string, key: string, o: { timeoutS?: number; default?: Json; waitKey?: string } = {}): Promise<Json> {
    const res = await this.parking(() =>
      this.client.waitEvent(this.attemptId, this.token, o.waitKey ?? `event:${name}:${key}`, name, key, {
        timeoutS: o.timeoutS,
        default: o.default,
      }),
    );
    return res.payload;
  }

  /** Ask for a decision at gate `key`; parks until decided, then returns 'approve' or 'reject'. */
  async requestApproval(
    key = "approval",
    o: { request?: Json; expiresInS?: number; default?: "approve" | "reject" } = {},
  ): Promise<"approve" | "reject"> {
    const res = await this.parking(() =>
      this.client.requestApproval(this.attemptId, this.token, key, { default: "reject", ...o }),
    );
    if (res.decision === null) throw new Error(`gate ${key} answered without a decision`);
    return res.decision;
  }

  /**
   * The writer of stream `channel` of this run (docs/streams.md): `ctx.stream("tokens").write("Hel")`.
   * Chunks are batched (every `PGFLIGHT_STREAM_FLUSH_MS` ms, default 50, or 16 KiB) and written
   * with this attempt's fencing token; the worker closes every channel when the recipe returns,
   * fails or parks. Readers follow them with `stream_read` from any language.
   *
   * @return the same writer for the same channel.
   */
  stream(channel: string): StreamWriter {
    this.streams ??= new Map();
    let w = this.streams.get(channel);
    if (w === undefined) {
      w = new StreamWriter(channel, (ch, chunks) => this.client.streamWrite(this.attemptId, this.token, ch, chunks));
      this.streams.set(channel, w);
    }
    return w;
  }

  /** Send every channel's queued chunks (the worker calls this when the recipe ends); never throws. */
  async closeStreams(): Promise<void> {
    for (const w of this.streams?.values() ?? []) {
      await w.close();
      if (w.error !== null) this.hooks.log("warn", `stream ${JSON.stringify(w.channel)}: last chunks not written: ${String(w.error)}`);
    }
  }

  /**
   * Run an external side effect at most once per step and key: look for the receipt (an earlier
   * attempt may have acted and crashed), else call `fn` and record its JSON result the instant
   * it returns.
   *
   * @return the receipt: `fn`'s result now, or the one the acting attempt recorded.
   * @throws LeaseLost the lease lapsed (the receipt is still recorded when `fn` ran).
   * @throws Fatal `fn` acted but its receipt cannot be stored: a retry would act again.
   */
  async effect<T extends Json>(key: string, fn: () => Promise<T> | T): Promise<Json> {
    const found = await this.client.findEffect(this.stepId, key);
    if (found !== null) {
      this.log(`effect ${JSON.stringify(key)} already happened (attempt ${found.attemptId}): not repeating it`);
      return found.result;
    }
    this.checkCancelled();
    const value = await fn();
    let rec;
    try {
      toJsonText(value, `the receipt of effect ${JSON.stringify(key)}`);
      rec = await this.client.recordEffect(this.attemptId, this.token, key, value);
    } catch (e) {
      if (e instanceof LeaseLost) throw e;
      const reason = e instanceof Error ? e.message : String(e);
      try {
        await this.client.recordEffect(this.attemptId, this.token, key, { pgflight_unstorable_receipt: reason.slice(0, 2000) });
      } catch (e2) {
        this.hooks.log("error", `effect ${key} acted, and not even a stand-in receipt was stored: ${String(e2)}`);
      }
      throw new Fatal(`effect ${JSON.stringify(key)} acted but its receipt cannot be stored, so the step stops rather than act again on a retry: ${reason}`);
    }
    if (!rec.leaseHeld) {
      throw new LeaseLost(`lease lost on attempt ${this.attemptId} (effect ${JSON.stringify(key)} recorded)`, { sqlstate: "ZF001" });
    }
    return rec.result;
  }
}
