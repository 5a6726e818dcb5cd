// The client against a real pgflight database, as a worker-lane login. Runs when the test suite
// sets PGFLIGHT_TEST_WORKER_DSN (a worker login with a grant on a workspace where one step of
// recipe `ts_unit`, input [1, "two", {"three": 3}], is queued) and PGFLIGHT_TEST_WORKSPACE.
import assert from "node:assert/strict";
import { test } from "node:test";

import pg from "pg";

import { LeaseLost, PgflightClient, pgConfigFromDsn, UnknownWorker } from "../src/index.js";

const dsn = process.env.PGFLIGHT_TEST_WORKER_DSN;

test("the worker-lane functions round-trip bigint ids, jsonb arrays and one outcome vocabulary", { skip: dsn ? false : "PGFLIGHT_TEST_WORKER_DSN is not set" }, async () => {
  const pool = new pg.Pool({ ...pgConfigFromDsn(dsn as string), max: 2 });
  try {
    const c = new PgflightClient(pool);
    const workerId = await c.registerWorker("ts-unit", { pid: process.pid, recipes: ["ts_unit"] });
    assert.equal(typeof workerId, "bigint");
    const [claim, ...rest] = await c.claimBatch(workerId, 5, 30, { recipes: ["ts_unit"], start: true });
    assert.ok(claim);
    assert.equal(rest.length, 0);
    for (const v of [claim.attemptId, claim.fencingToken, claim.stepId, claim.runId]) assert.equal(typeof v, "bigint");
    assert.deepEqual(claim.input, [1, "two", { three: 3 }]);
    assert.ok(claim.leaseExpiresAt instanceof Date);

    const beats = await c.heartbeat(workerId, [{ attemptId: claim.attemptId, token: claim.fencingToken }]);
    assert.deepEqual(beats.map((b) => [b.attemptId, b.outcome, b.raw]), [[claim.attemptId, "held", "held"]]);

    // a JS array as a jsonb result (node-postgres alone would send an array literal: 22P02)
    const receipt = await c.recordEffect(claim.attemptId, claim.fencingToken, "k", ["a", 1]);
    assert.deepEqual(receipt.result, ["a", 1]);
    assert.equal(receipt.leaseHeld, true);
    assert.deepEqual((await c.findEffect(claim.stepId, "k"))?.result, ["a", 1]);

    // a stale token: refused at the fence as LeaseLost, and in a batch reported as `lease_lost`
    await assert.rejects(c.completeStep(claim.attemptId, claim.fencingToken + 1000n, [1]), LeaseLost);
    const done = await c.completeBatch([{ attemptId: claim.attemptId, token: claim.fencingToken, result: [1, [2, 3]] }]);
    assert.deepEqual(done.map((d) => d.outcome), ["succeeded"]);
    const again = await c.completeBatch([{ attemptId: claim.attemptId, token: claim.fencingToken, result: null }]);
    assert.deepEqual(again.map((d) => d.outcome), ["lease_lost"]);

    assert.equal(typeof (await c.wakeTicketKey(42n)), "bigint");
    await c.deregisterWorker(workerId);
    await assert.rejects(c.claimBatch(workerId, 1, 30), UnknownWorker);
  } finally {
    await pool.end();
  }
});
