// The SQLSTATE map against docs/errors.md: every code of the table has a class with the Python
// client's name, and the library has no class the table lacks.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ERROR_CLASSES, LeaseLost, PgflightError, translate } from "../src/index.js";

const docs = new URL("../../../../docs/errors.md", import.meta.url);

function documented(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of readFileSync(docs, "utf8").split("\n")) {
    const m = /^\| `([0-9A-Z]{5})` \| `([A-Za-z]+)`/.exec(line);
    if (m) rows.set(m[1] as string, m[2] as string);
  }
  return rows;
}

test("every SQLSTATE of docs/errors.md has its class, named as in the table", () => {
  const rows = documented();
  assert.ok(rows.size >= 14, `docs/errors.md lists ${rows.size} codes`);
  for (const [code, name] of rows) {
    const cls = ERROR_CLASSES[code];
    assert.ok(cls, `no class for ${code} (${name})`);
    assert.equal(cls.name, name, `${code}`);
    assert.equal((cls as unknown as { code: string }).code, code);
  }
  assert.deepEqual([...Object.keys(ERROR_CLASSES)].sort(), [...rows.keys()].sort());
});

test("a driver error with a pgflight SQLSTATE becomes its class with DETAIL and HINT", () => {
  const e = translate({ code: "ZF001", message: "lease lost on attempt 7", detail: "d", hint: "h" });
  assert.ok(e instanceof LeaseLost && e instanceof PgflightError);
  assert.equal(e.sqlstate, "ZF001");
  assert.equal(e.detail, "d");
  assert.equal(e.hint, "h");
  assert.equal(e.name, "LeaseLost");
  const other = { code: "40001", message: "serialization failure" };
  assert.equal(translate(other), other);
});
