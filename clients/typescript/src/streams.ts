/**
 * A step's stream writer (docs/streams.md): `ctx.stream("tokens").write("Hel")` in a recipe, the
 * same batching as the Python worker's `pgflight.streams`.
 *
 * Writes are batched, so a token stream is not one commit per token: the chunks written meanwhile
 * go to the database in one `stream_write` call (one transaction) when
 * - {@link flushMs} milliseconds (default 50, `PGFLIGHT_STREAM_FLUSH_MS`) have passed since the
 *   first chunk of the batch was written (a timer sends it), or
 * - the batch holds {@link flushBytes} bytes (default 16 KiB, `PGFLIGHT_STREAM_FLUSH_BYTES`) or
 *   the cap of chunks per call (sent at once), or
 * - the recipe awaits {@link StreamWriter.flush}, or the step ends (the worker closes every channel
 *   of the attempt after the recipe returns, fails or parks, before it completes the step).
 *
 * A failed batch (the lease lost, a cap) is thrown by the next `write` or `flush`; the chunks of
 * that batch are not written. Every batch carries the attempt's fencing token: a stale writer's
 * chunks are refused (LeaseLost) and change nothing.
 */
import type { StreamWritten } from "./client.js";

/** Chunks per stream_write call (settings.max_stream_chunks_per_call's default). */
export const MAX_CHUNKS_PER_CALL = 1000;

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new RangeError(`${name}=${raw}: a positive number is needed`);
  return v;
}

/** Milliseconds a written chunk may wait for its batch: `PGFLIGHT_STREAM_FLUSH_MS` (default 50). */
export function flushMs(): number {
  return envNumber("PGFLIGHT_STREAM_FLUSH_MS", 50);
}

/** Bytes that send a batch at once: `PGFLIGHT_STREAM_FLUSH_BYTES` (default 16,384). */
export function flushBytes(): number {
  return Math.floor(envNumber("PGFLIGHT_STREAM_FLUSH_BYTES", 16384));
}

/** Sends one batch of one channel (the context binds the attempt and its token). */
export type StreamSend = (channel: string, chunks: string[]) => Promise<StreamWritten>;

/** The writer of one channel of a step's run. `write` never waits on the database. */
export class StreamWriter {
  /** The last seq the database gave this writer's chunks. */
  lastSeq = 0n;
  chunksWritten = 0;
  private buf: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private closed = false;
  private readonly flushMs = flushMs();
  private readonly flushBytes = flushBytes();

  constructor(
    readonly channel: string,
    private readonly send: StreamSend,
    private readonly maxChunks = MAX_CHUNKS_PER_CALL,
  ) {}

  /**
   * Queue chunks: a string as it is, anything else as its JSON text.
   * @throws the error of the last batch that could not be written (LeaseLost, Cancelled, CapExceeded ...).
   */
  write(...chunks: unknown[]): void {
    this.throwFailure();
    if (this.closed) throw new Error(`stream ${JSON.stringify(this.channel)} is closed: the step has ended`);
    const texts = chunks.map((c) => (typeof c === "string" ? c : JSON.stringify(c)));
    if (texts.length === 0) return;
    this.buf.push(...texts);
    this.bytes += texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
    if (this.bytes >= this.flushBytes || this.buf.length >= this.maxChunks) {
      void this.sendBatch();
    } else if (this.timer === null) {
      this.timer = setTimeout(() => void this.sendBatch(), this.flushMs);
    }
  }

  /** Send what is queued now. @throws as {@link write}. */
  async flush(): Promise<void> {
    await this.sendBatch();
    this.throwFailure();
  }

  /** Send what is queued and stop; an error is kept ({@link error}), not thrown. */
  async close(): Promise<void> {
    this.closed = true;
    await this.sendBatch();
  }

  /** The error of the last failed batch, if any. */
  get error(): unknown {
    return this.failure;
  }

  private throwFailure(): void {
    if (this.failure !== null) {
      const e = this.failure;
      this.failure = null;
      throw e;
    }
  }

  /** Batches go out one at a time, in the order written. */
  private sendBatch(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.buf;
    this.buf = [];
    this.bytes = 0;
    this.sending = this.sending.then(async () => {
      if (batch.length === 0 || this.failure !== null) return;
      try {
        for (let i = 0; i < batch.length; i += this.maxChunks) {
          const part = batch.slice(i, i + this.maxChunks);
          const r = await this.send(this.channel, part);
          this.lastSeq = r.lastSeq ?? this.lastSeq;
          this.chunksWritten += part.length;
        }
      } catch (e) {
        this.failure = e;
      }
    });
    return this.sending;
  }
}
