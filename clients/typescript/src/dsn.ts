/**
 * Connection strings in either libpq form: a URL (`postgresql://user@host/db`, which
 * node-postgres reads itself) or key=value pairs (`host=127.0.0.1 port=5432 dbname=app`, what
 * psql, psycopg and pgflight's own tools print), which node-postgres does not read.
 */
import type pg from "pg";

const KEYS: Readonly<Record<string, keyof pg.ClientConfig | null>> = {
  host: "host",
  hostaddr: "host",
  port: "port",
  user: "user",
  password: "password",
  dbname: "database",
  application_name: "application_name",
  options: "options",
  connect_timeout: "connectionTimeoutMillis",
  sslmode: null, // see pgConfigFromDsn
};

/** Parse libpq key=value text (values may be single-quoted with backslash escapes). */
export function parseKeyValueDsn(dsn: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /\s*([A-Za-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S*))/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(dsn)) !== null) {
    const key = m[1] as string;
    out[key] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "");
    end = re.lastIndex;
  }
  if (dsn.slice(end).trim() !== "") throw new Error(`cannot read the connection string at: ${dsn.slice(end, end + 20)}`);
  return out;
}

/** node-postgres settings for a libpq connection string of either form. */
export function pgConfigFromDsn(dsn: string): pg.ClientConfig {
  if (/^postgres(ql)?:\/\//.test(dsn)) return { connectionString: dsn };
  const kv = parseKeyValueDsn(dsn);
  const config: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(kv)) {
    const target = KEYS[k];
    if (target === undefined) continue; // libpq settings node-postgres has no use for
    if (target === null) {
      if (v === "require" || v === "verify-ca" || v === "verify-full") config.ssl = { rejectUnauthorized: v !== "require" };
      continue;
    }
    config[target] = target === "port" ? Number(v) : target === "connectionTimeoutMillis" ? Number(v) * 1000 : v;
  }
  return config as pg.ClientConfig;
}
