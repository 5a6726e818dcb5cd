// Pure parts of the library: JSON checks, outcome vocabulary, connection strings, ticket keys.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  BadPayload,
  outcomeOf,
  parseKeyValueDsn,
  pgConfigFromDsn,
  Registry,
  StreamWriter,
  toJsonText,
  wakeTicketKey,
  Worker,
} from "../src/index.js";

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

test("the SQL API's one outcome vocabulary is checked per family; an unknown or another family's word is an error", () => {
  assert.equal(outcomeOf("heartbeat", "held"), "held");
  assert.equal(outcomeOf("heartbeat", "lease_lost"), "lease_lost");
  assert.equal(outcomeOf("complete", "lease_lost"), "lease_lost");
  assert.equal(outcomeOf("complete", "result_refused"), "result_refused");
  assert.equal(outcomeOf("fail", "dead_letter"), "dead_letter");
  assert.equal(outcomeOf("release", "released"), "released");
  assert.throws(() => outcomeOf("release", "retry"), /does not know/);
  assert.throws(() => outcomeOf("heartbeat", "ok"), /does not know/);
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

test("the wake-ticket key is the shared derivation: docs/worker_protocol.md's test vectors", () => {
  assert.equal(wakeTicketKey(["noop"], "123"), -1071107197322973696n);
  assert.equal(wakeTicketKey(["b", "a", "\u00e9"], "relay.7.1"), 7485424639200065680n);
  assert.equal(wakeTicketKey(["fan_out", "child"], "99999999"), 7163396157066252055n);
  const w = new Worker({ registry: new Registry().add("noop", () => null), connectionString: "host=h", handleSignals: false });
  assert.equal(w.ticketKey("123"), -1071107197322973696n);
});

test("a recipe name is registered once", () => {
  const r = new Registry().add("a", () => null);
  assert.throws(() => r.add("a", () => null), /twice/);
  assert.throws(() => r.add(" b", () => null), /blank or padded/);
  assert.deepEqual(r.names(), ["a"]);
});

test("a stream writer batches chunks into one call, in order, and throws a failed batch's error on the next write", async () => {
  const sent: string[][] = [];
  let fail = false;
  const w = new StreamWriter("tokens", async (_ch, chunks) => {
    if (fail) throw new Error("lease lost");
    sent.push(chunks);
    return { firstSeq: 1n, lastSeq: BigInt(sent.flat().length), totalBytes: 0n };
  });
  w.write("Hel", "lo");
  w.write({ n: 1 });
  await w.flush();
  assert.deepEqual(sent, [["Hel", "lo", '{"n":1}']]);
  assert.equal(w.lastSeq, 3n);
  fail = true;
  w.write("x");
  await assert.rejects(w.flush(), /lease lost/);
  fail = false;
  w.write("after");
  await w.close();
  assert.deepEqual(sent.at(-1), ["after"]);
  assert.throws(() => w.write("late"), /closed/);
});
