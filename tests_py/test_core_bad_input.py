"""
Bad input to the SQL API: NULLs, zero or negative lease and batch size, unknown recipe or
workspace, an input over the size cap, a string with a NUL character, malformed JSON sent by a
client. Each gets its documented error (docs/errors.md) and nothing is written: the row counts of
every engine table are the same before and after.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from psycopg.types.json import Jsonb

from core_helpers import Claim, Conn, claim, claim_one, register, setup_engine, sqlstate, submit, table_counts


@pytest.fixture
def ready(conn: Conn) -> Iterator[tuple[Conn, int, Claim]]:
    """A workspace, a worker, one running attempt and one queued step."""
    setup_engine(conn)
    w = register(conn)
    submit(conn, "busy")
    held = claim_one(conn, w, 30, ["busy"])
    submit(conn, "waiting")
    yield conn, w, held


CASES: dict[str, tuple[str, str, Any]] = {
    # name: (expected SQLSTATE, SQL, parameters; "W" is the worker id, "A"/"T" the held attempt and token)
    "submit_null_recipe": ("22023", "select * from pgflight.submit_run('core', null, '{}')", []),
    "submit_blank_recipe": ("22023", "select * from pgflight.submit_run('core', '  ', '{}')", []),
    "submit_null_input": ("22023", "select * from pgflight.submit_run('core', 'r', null)", []),
    "submit_null_workspace": ("ZF003", "select * from pgflight.submit_run(null, 'r', '{}')", []),
    "submit_unknown_workspace": ("ZF003", "select * from pgflight.submit_run('nowhere', 'r', '{}')", []),
    "submit_options_not_object": ("22023", "select * from pgflight.submit_run('core', 'r', '{}', '[1]')", []),
    "submit_zero_max_attempts": (
        "22023",
        "select * from pgflight.submit_run('core', 'r', '{}', '{\"max_attempts\": 0}')",
        [],
    ),
    "submit_negative_lease": (
        "22023",
        "select * from pgflight.submit_run('core', 'r', '{}', '{\"lease_s\": -1}')",
        [],
    ),
    "submit_nul_character": (
        "22P05",
        "select * from pgflight.submit_run('core', 'r', %s)",
        [Jsonb({"text": "a\u0000b"})],
    ),
    "submit_malformed_json": (
        "22P02",
        "select * from pgflight.submit_run('core', 'r', %s::text::jsonb)",
        ['{"a": 1,'],
    ),
    "claim_zero_batch": ("22023", "select * from pgflight.claim_batch(W, 0, 30)", []),
    "claim_negative_batch": ("22023", "select * from pgflight.claim_batch(W, -5, 30)", []),
    "claim_null_batch": ("22023", "select * from pgflight.claim_batch(W, null, 30)", []),
    "claim_zero_lease": ("22023", "select * from pgflight.claim_batch(W, 1, 0)", []),
    "claim_negative_lease": ("22023", "select * from pgflight.claim_batch(W, 1, -30)", []),
    "claim_null_lease": ("22023", "select * from pgflight.claim_batch(W, 1, null)", []),
    "claim_nan_lease": ("22023", "select * from pgflight.claim_batch(W, 1, 'NaN')", []),
    "claim_unknown_worker": ("ZF010", "select * from pgflight.claim_batch(987654, 1, 30)", []),
    "claim_null_worker": ("ZF010", "select * from pgflight.claim_batch(null, 1, 30)", []),
    "heartbeat_uneven_arrays": (
        "22023",
        "select * from pgflight.heartbeat(W, array[A], array[]::bigint[])",
        [],
    ),
    "heartbeat_unknown_worker": ("ZF010", "select * from pgflight.heartbeat(987654, array[A], array[T])", []),
    "complete_null_attempt": ("22023", "select * from pgflight.complete_step(null, T, '{}')", []),
    "complete_null_token": ("22023", "select * from pgflight.complete_step(A, null, '{}')", []),
    "complete_unknown_attempt": ("ZF003", "select * from pgflight.complete_step(987654, 1, '{}')", []),
    "complete_batch_uneven": (
        "22023",
        "select * from pgflight.complete_batch(array[A], array[T], array[]::jsonb[])",
        [],
    ),
    "fail_retryable_not_boolean": (
        "22023",
        "select * from pgflight.fail_step(A, T, '{}', '{\"retryable\": \"no\"}')",
        [],
    ),
    "fail_negative_retry_after": (
        "22023",
        "select * from pgflight.fail_step(A, T, '{}', '{\"retry_after_s\": -1}')",
        [],
    ),
    "start_null_token": ("22023", "select * from pgflight.start_step(A, null)", []),
    "release_null_attempt": ("22023", "select * from pgflight.release_step(null, T)", []),
    "spawn_not_an_array": ("22023", 'select * from pgflight.spawn_children(A, T, \'{"key": "x"}\')', []),
    "spawn_child_without_key": (
        "22023",
        'select * from pgflight.spawn_children(A, T, \'[{"recipe": "x"}]\')',
        [],
    ),
    "workspace_null_name": ("22023", "select pgflight.create_workspace(null)", []),
    "workspace_blank_name": ("22023", "select pgflight.create_workspace('   ')", []),
    "worker_null_name": ("22023", "select pgflight.register_worker(null)", []),
    "cancel_unknown_run": ("ZF003", "select * from pgflight.cancel_run(987654)", []),
    "retry_unknown_step": ("ZF003", "select pgflight.retry_step(987654)", []),
    "approve_null_decision": ("22023", "select * from pgflight.approve(1, null, 'x')", []),
    "approve_unknown_step": ("ZF003", "select * from pgflight.approve(987654, 'approve', 'x')", []),
    "run_status_unknown_run": ("ZF003", "select * from pgflight.run_status(987654)", []),
}


def test_bad_input_gets_its_documented_error_and_writes_nothing(ready: tuple[Conn, int, Claim]) -> None:
    """Every case of CASES, on one database (a clone per case would cost a second each)."""
    conn, w, held = ready
    wrong = {}
    for case, (code, query, params) in sorted(CASES.items()):
        query = query.replace("W", str(w)).replace("array[A]", f"array[{held.attempt_id}]::bigint[]")
        query = query.replace("array[T]", f"array[{held.token}]::bigint[]").replace(
            "(A,", f"({held.attempt_id},"
        )
        query = query.replace(", T,", f", {held.token},").replace(", T)", f", {held.token})")
        query = query.replace("(null, T", f"(null, {held.token}")
        before = table_counts(conn)
        got = sqlstate(lambda query=query, params=params: conn.execute(query, params))
        if got != code:
            wrong[case] = f"expected {code}, got {got}"
        elif table_counts(conn) != before:
            wrong[case] = f"wrote rows: {before} -> {table_counts(conn)}"
    assert wrong == {}


def test_input_over_the_size_cap_is_refused(ready: tuple[Conn, int, Claim]) -> None:
    """ZF005 from submit_run and spawn_children once settings.max_input_bytes is lowered; nothing written."""
    conn, _, held = ready
    conn.execute("update pgflight.settings set max_input_bytes = 100")
    before = table_counts(conn)
    big = {"text": "x" * 200}
    assert sqlstate(lambda: submit(conn, "r", big)) == "ZF005"
    assert (
        sqlstate(
            lambda: conn.execute(
                "select * from pgflight.spawn_children(%s, %s, %s)",
                [held.attempt_id, held.token, Jsonb([{"key": "k", "recipe": "r", "input": big}])],
            )
        )
        == "ZF005"
    )
    assert table_counts(conn) == before
    submit(conn, "r", {"text": "x" * 50})  # under the cap it is accepted


def test_unknown_recipe_claims_nothing(ready: tuple[Conn, int, Claim]) -> None:
    """A claim naming only recipes nobody submitted returns nothing and writes nothing."""
    conn, w, _ = ready
    before = table_counts(conn)
    assert claim(conn, w, 10, 30, ["no-such-recipe"]) == []
    assert claim(conn, w, 10, 30, []) == []
    assert table_counts(conn) == before
