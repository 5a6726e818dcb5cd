// Pure parts of the library: JSON checks, outcome vocabulary, connection strings, ticket keys.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BadPayload, outcomeOf, parseKeyValueDsn, pgConfigFromDsn, Registry, toJsonText, Worker } from "../src/index.js";

test("JSON the database would refuse is refused here, naming the path", () => {
  assert.equal(toJsonText([1, { a: "x" }]), '[1,{"a":"x"}]');
  assert.equal(toJsonText(undefined), null);
  assert.equal(toJsonText(null), null);
  for (const [bad, path] of [
    [{ a: [1, Number.NaN] }, "$.a[1]"],
    [{ a: Infinity }, "$.a"],
    [{ a: 1n }, "$.a"],
    [{ s: "nul\u0000" }, "$.s"],
    [["\uD800"], "$[0]"],
  ] as const) {
    assert.throws(() => toJsonText(bad), (e: unknown) => e instanceof BadPayload && e.path === path, JSON.stringify(path));
  }
  assert.throws(() => toJsonText("x".repeat(100), "r", 50), BadPayload);
});

test("every outcome word of the SQL API maps into the one vocabulary; an unknown word is an error", () => {
  assert.equal(outcomeOf("heartbeat", "ok"), "held");
  assert.equal(outcomeOf("heartbeat", "lost"), "lease_lost");
  assert.equal(outcomeOf("complete", "lease_lost"), "lease_lost");
  assert.equal(outcomeOf("complete", "failed"), "result_refused");
  assert.equal(outcomeOf("fail", "dead_letter"), "dead_letter");
  assert.equal(outcomeOf("release", "queued"), "released");
  for (const family of ["heartbeat", "complete", "fail", "release"] as const) {
    assert.equal(outcomeOf(family, "cancelled"), "cancelled");
  }
  assert.throws(() => outcomeOf("heartbeat", "maybe"), /does not know/);
});

test("libpq key=value connection strings are read, quotes and escapes included", () => {
  assert.deepEqual(parseKeyValueDsn("host=127.0.0.1 port=5432 dbname=t_1 user=w password='a b\\'c'"), {
    host: "127.0.0.1",
    port: "5432",
    dbname: "t_1",
    user: "w",
    password: "a b'c",
  });
  assert.deepEqual(pgConfigFromDsn("host=h port=6 dbname=d"), { host: "h", port: 6, database: "d" });
  assert.deepEqual(pgConfigFromDsn("postgresql://u@h/d"), { connectionString: "postgresql://u@h/d" });
  assert.throws(() => parseKeyValueDsn("host=h 'oops"), /cannot read/);
});

test("a wake ticket's key depends on the recipe group and the ticket, as a signed 64-bit value", () => {
  const a = new Worker({ registry: new Registry().add("x", () => null), connectionString: "host=h", handleSignals: false });
  const b = new Worker({ registry: new Registry().add("y", () => null), connectionString: "host=h", handleSignals: false });
  const k = a.ticketKey("123");
  assert.equal(typeof k, "bigint");
  assert.ok(k >= -(2n ** 63n) && k < 2n ** 63n);
  assert.equal(k, a.ticketKey("123"));
  assert.notEqual(k, a.ticketKey("124"));
  assert.notEqual(k, b.ticketKey("123"));
});

test("a recipe name is registered once", () => {
  const r = new Registry().add("a", () => null);
  assert.throws(() => r.add("a", () => null), /twice/);
  assert.throws(() => r.add(" b", () => null), /blank or padded/);
  assert.deepEqual(r.names(), ["a"]);
});
