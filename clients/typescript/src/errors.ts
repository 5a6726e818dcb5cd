/**
 * pgflight's SQLSTATEs as error classes: one class per code of docs/errors.md, with the same
 * names as the Python client's exceptions, so both libraries branch on the same vocabulary.
 * `test/errors.test.ts` checks this map against the table in docs/errors.md.
 */

/** An error raised by a pgflight SQL function (or a refusal the library reports the same way). */
export class PgflightError extends Error {
  /** The SQLSTATE, e.g. `ZF001`. */
  readonly sqlstate: string;
  /** The server's DETAIL, when it sent one. */
  readonly detail: string | undefined;
  /** The server's HINT: what the caller should do. */
  readonly hint: string | undefined;

  constructor(message: string, opts: { sqlstate?: string; detail?: string; hint?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.sqlstate = opts.sqlstate ?? (new.target as unknown as { code?: string }).code ?? "";
    this.detail = opts.detail;
    this.hint = opts.hint;
  }
}

/** ZF001: the attempt is not leased to the caller with this token any more; abandon it, write nothing. */
export class LeaseLost extends PgflightError {
  static readonly code = "ZF001";
}
/** ZF002: the attempt's run or step was cancelled; stop, and acknowledge with release_step. */
export class Cancelled extends PgflightError {
  static readonly code = "ZF002";
}
/** ZF003: unknown workspace, run, step or attempt (or one outside the login's lanes). */
export class NotFound extends PgflightError {
  static readonly code = "ZF003";
}
/** ZF004: an idempotency key (or event id) reused with another input. */
export class IdempotencyConflict extends PgflightError {
  static readonly code = "ZF004";
}
/** ZF005: a size or count over its cap in pgflight.settings. */
export class CapExceeded extends PgflightError {
  static readonly code = "ZF005";
}
/** ZF006: the step is not in a state the operation applies to. */
export class InvalidState extends PgflightError {
  static readonly code = "ZF006";
}
/** ZF007: a per-run, per-tree or per-workspace budget would be crossed. */
export class BudgetExceeded extends PgflightError {
  static readonly code = "ZF007";
}
/** ZF008: the approval gate already has the other decision. */
export class AlreadyDecided extends PgflightError {
  static readonly code = "ZF008";
}
/** ZF009: the session set pgflight.fake_now while the fake clock is disabled. */
export class FakeClockDisabled extends PgflightError {
  static readonly code = "ZF009";
}
/** ZF010: the worker id is unknown, stopped, or another login's. */
export class UnknownWorker extends PgflightError {
  static readonly code = "ZF010";
}
/** ZF011: pg_cron is not installed in this database. */
export class CronMissing extends PgflightError {
  static readonly code = "ZF011";
}
/** ZF012: the login has no grant for this workspace, or the attempt is another login's. */
export class Forbidden extends PgflightError {
  static readonly code = "ZF012";
}
/** ZF013: the workspace's model tokens per minute are used; wait retry_after_s. */
export class TokenRateLimited extends PgflightError {
  static readonly code = "ZF013";
}
/** ZF014: through a cells' proxy, the workspace is being moved to another cell; retry in a moment. */
export class WorkspaceMoving extends PgflightError {
  static readonly code = "ZF014";
}
/** 22023: a NULL, blank, out-of-range or wrongly typed argument or option. */
export class BadArgument extends PgflightError {
  static readonly code = "22023";
}

type ErrorClass = new (message: string, opts?: { sqlstate?: string; detail?: string; hint?: string; cause?: unknown }) => PgflightError;

/** SQLSTATE -> error class: every code of docs/errors.md. */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = Object.freeze({
  ZF001: LeaseLost,
  ZF002: Cancelled,
  ZF003: NotFound,
  ZF004: IdempotencyConflict,
  ZF005: CapExceeded,
  ZF006: InvalidState,
  ZF007: BudgetExceeded,
  ZF008: AlreadyDecided,
  ZF009: FakeClockDisabled,
  ZF010: UnknownWorker,
  ZF011: CronMissing,
  ZF012: Forbidden,
  ZF013: TokenRateLimited,
  ZF014: WorkspaceMoving,
  "22023": BadArgument,
});

/**
 * The pgflight error for a driver error: an instance of the class of its SQLSTATE (message,
 * DETAIL and HINT kept, the driver's error as `cause`), or the error itself when its code is not
 * one of pgflight's.
 */
export function translate(err: unknown): unknown {
  if (err instanceof PgflightError || typeof err !== "object" || err === null) return err;
  const e = err as { code?: unknown; message?: unknown; detail?: unknown; hint?: unknown };
  if (typeof e.code !== "string") return err;
  const cls = ERROR_CLASSES[e.code];
  if (cls === undefined) return err;
  return new cls(String(e.message ?? e.code), {
    sqlstate: e.code,
    detail: typeof e.detail === "string" ? e.detail : undefined,
    hint: typeof e.hint === "string" ? e.hint : undefined,
    cause: err,
  });
}
