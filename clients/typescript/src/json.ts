/**
 * JSON values as pgflight stores them (jsonb), and the check that a value can be stored at all.
 *
 * `JSON.stringify` silently turns NaN and ±Infinity into `null` and writes lone surrogates and
 * NUL characters as escapes that jsonb refuses (22P02 / 22P05): {@link toJsonText} refuses
 * them instead, naming the JSON path, so a bad result fails its own step with a clear error.
 */

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A value that cannot be stored as jsonb (the path says where). */
export class BadPayload extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = "BadPayload";
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function textProblem(s: string): string | null {
  if (s.includes("\u0000")) return "a NUL character (\\u0000), which PostgreSQL text cannot hold";
  if (LONE_SURROGATE.test(s)) return "a lone UTF-16 surrogate, which is not valid Unicode";
  return null;
}

function walk(value: unknown, path: string, what: string, depth: number): void {
  if (depth > 10000) throw new BadPayload(`${what} is nested deeper than 10000 at ${path}`, path);
  switch (typeof value) {
    case "string": {
      const p = textProblem(value);
      if (p) throw new BadPayload(`${what} holds ${p} at ${path}`, path);
      return;
    }
    case "number":
      if (!Number.isFinite(value)) throw new BadPayload(`${what} holds ${value} at ${path}, which JSON cannot carry`, path);
      return;
    case "boolean":
      return;
    case "object": {
      if (value === null) return;
      if (Array.isArray(value)) {
        value.forEach((v, i) => walk(v === undefined ? null : v, `${path}[${i}]`, what, depth + 1));
        return;
      }
      const withJson = value as { toJSON?: unknown };
      if (typeof withJson.toJSON === "function") return; // Date and friends: their own JSON text
      for (const [k, v] of Object.entries(value)) {
        const p = textProblem(k);
        if (p) throw new BadPayload(`${what} holds ${p} in a key at ${path}`, path);
        if (v !== undefined) walk(v, `${path}.${k}`, what, depth + 1);
      }
      return;
    }
    case "bigint":
      throw new BadPayload(`${what} holds a bigint at ${path}; send it as a string or a number`, path);
    default:
      throw new BadPayload(`${what} holds a ${typeof value} at ${path}, which is not JSON`, path);
  }
}

/**
 * The JSON text of `value` for a jsonb parameter, or null for `undefined` / `null` (SQL NULL).
 *
 * @throws BadPayload a non-finite number, a bigint, a function, a NUL character or a lone
 *   surrogate anywhere in the value, or text over `maxBytes` UTF-8 bytes.
 */
export function toJsonText(value: unknown, what = "value", maxBytes?: number): string | null {
  if (value === undefined || value === null) return null;
  walk(value, "$", what, 0);
  const text = JSON.stringify(value);
  if (maxBytes !== undefined && Buffer.byteLength(text, "utf8") > maxBytes) {
    throw new BadPayload(`${what} is ${Buffer.byteLength(text, "utf8")} bytes of JSON, over ${maxBytes}`, "$");
  }
  return text;
}
