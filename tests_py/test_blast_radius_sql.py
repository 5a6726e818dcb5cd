"""
Blast radius, the SQL half: one bad option, result or row harms only its own step.

Each test uses an input that once did harm: retry arithmetic that stopped every claim, a NaN
result in a batch with three healthy ones, a fail-fast cascade against a sibling's completion (on
real connections), unknown and malformed options (refused with 22023 naming the key), and a
poisoned row that a sweep ends alone.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    Conn,
    attempt,
    claim,
    claim_one,
    complete,
    fail,
    one,
    register,
    rows,
    scalar,
    set_clock,
    setup_engine,
    spawn,
    submit,
)


def _error(fn: Any) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as e:
        fn()
    return e.value


def _unrelated_work_still_flows(conn: Conn, w: int) -> None:
    """An unrelated submit -> claim -> complete and run_sweeps succeed."""
    s = submit(conn, "unrelated")
    c = claim_one(conn, w, 30, ["unrelated"])
    complete(conn, c, {"ok": True})
    assert attempt(conn, s.attempt_id)["status"] == "succeeded"
    conn.execute("select pgflight.run_sweeps()")


# --- arithmetic that cannot fail later --------------------------------------------------------


def test_backoff_saturates_after_1024_fast_retries_then_a_lapse(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    set_clock(conn, 0)
    s = submit(conn, "flaky", max_attempts=5000, lease_s=1)
    for _ in range(1024):
        c = claim_one(conn, w, 30, ["flaky"], start=False)
        assert fail(conn, c, {"message": "again"}, retry_after_s=0)["outcome"] == "retry"
    last = claim_one(conn, w, 30, ["flaky"], start=False)
    assert last.attempt_no == 1025
    set_clock(conn, 5)  # its 1 s lease lapsed: the default backoff of failure 1025 is computed now
    conn.execute("select pgflight.run_sweeps()")
    a = attempt(conn, last.attempt_id)
    assert (a["status"], a["reason"]) == ("lease_expired", "lease_expired")
    nxt = one(
        conn, "select * from pgflight.step_attempts where step_id = %s and status = 'queued'", [s.step_id]
    )
    delay = (nxt["available_after"] - nxt["created_at"]).total_seconds()
    assert 300 * 0.8 - 0.01 <= delay <= 300 * 1.2 + 0.01, delay  # saturated at max_s 300 (+/- jitter)
    # and fail_step without retry_after_s on attempt 1026 uses the same saturated backoff
    set_clock(conn, 400)
    c = claim_one(conn, w, 30, ["flaky"], start=False)
    assert fail(conn, c, {"message": "x"})["outcome"] == "retry"
    _unrelated_work_still_flows(conn, w)


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"backoff": {"base_s": "5"}}, "base_s"),
        ({"lease_s": 1e13}, "lease_s"),
        ({"backoff": {"base_s": 1e300, "max_s": 1e300}}, "_s of backoff"),
        ({"max_runtime_s": 1e300}, "max_runtime_s"),
    ],
)
def test_poison_options_refused_at_submit(conn: Conn, options: dict[str, Any], key: str) -> None:
    setup_engine(conn)
    e = _error(lambda: submit(conn, "r", **options))
    assert e.sqlstate == "22023"
    assert key in str(e.diag.message_primary)
    assert e.diag.message_detail and e.diag.message_hint


def test_child_with_tiny_lease_and_huge_backoff_refused_naming_child_and_key(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    submit(conn, "parent")
    p = claim_one(conn, w, 30, ["parent"])
    children = [
        {
            "key": "c",
            "recipe": "child",
            "options": {"lease_s": 0.001, "backoff": {"base_s": 1e300, "max_s": 1e300}},
        }
    ]
    e = _error(
        lambda: conn.execute(
            "select * from pgflight.spawn_children(%s, %s, %s)", [p.attempt_id, p.token, Jsonb(children)]
        )
    )
    assert e.sqlstate == "22023"
    assert "_s of backoff" in str(e.diag.message_primary) or "lease_s" in str(e.diag.message_primary)
    _unrelated_work_still_flows(conn, w)


def test_rows_stored_before_validation_cannot_stop_claims_or_sweeps(conn: Conn) -> None:
    """Steps written by an older version with the poison values: claims and sweeps clamp them."""
    setup_engine(conn)
    w = register(conn)
    set_clock(conn, 0)
    bad = submit(conn, "old")
    conn.execute(
        "update pgflight.steps set lease_s = 1e13, max_runtime_s = 1e300, max_attempts = 5000,"
        ' backoff = \'{"base_s": "5", "factor": 1e300, "max_s": 1e300}\' where id = %s',
        [bad.step_id],
    )
    c = claim(conn, w, 1, 30, ["old"])[0]  # lease clamped to 7 days, deadline to 365 days
    assert (c.lease_expires_at - c.deadline_at).total_seconds() < 0
    conn.execute("update pgflight.steps set failed_attempts = 2000 where id = %s", [bad.step_id])
    assert fail(conn, c, {"message": "x"})["outcome"] == "retry"  # backoff read clamped, never raises
    _unrelated_work_still_flows(conn, w)


def test_a_row_that_still_raises_in_a_sweep_ends_alone_with_its_error(conn: Conn) -> None:
    """A reclaimed row whose processing raises is dead-lettered with the real error; the rest goes on."""
    setup_engine(conn)
    w = register(conn)
    set_clock(conn, 0)
    poison = submit(conn, "poison", lease_s=1)
    healthy = submit(conn, "healthy", lease_s=1)
    cp = claim_one(conn, w, 30, ["poison"])
    ch = claim_one(conn, w, 30, ["healthy"])
    # a fault only this step meets when its retry is written
    conn.execute(
        f"""
        create function public.boom() returns trigger language plpgsql as $$
        begin
          if new.step_id = {poison.step_id} then
            raise exception 'disk quota of step {poison.step_id}';
          end if;
          return new;
        end $$;
        create trigger boom before insert on pgflight.step_attempts
          for each row execute function public.boom();
        """
    )
    set_clock(conn, 5)
    assert scalar(conn, "select pgflight.reclaim_expired(100)") == 2
    p = attempt(conn, cp.attempt_id)
    assert (p["status"], p["reason"]) == ("dead_letter", "engine_error")
    assert "disk quota" in p["error"]["message"] and p["error"]["sqlstate"] == "P0001"
    assert (
        scalar(
            conn,
            "select count(*) from pgflight.run_events where attempt_id = %s and reason = 'engine_error'",
            [cp.attempt_id],
        )
        == 1
    )
    assert attempt(conn, ch.attempt_id)["status"] == "lease_expired"  # reclaimed normally, retry queued
    assert scalar(conn, "select status from pgflight.runs where id = %s", [healthy.run_id]) == "running"
    conn.execute("drop trigger boom on pgflight.step_attempts")
    _unrelated_work_still_flows(conn, w)


# --- results that cannot poison a batch -------------------------------------------------------


def test_nan_result_fails_only_its_step(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    for i in range(4):
        submit(conn, "score", {"i": i})
    cs = claim(conn, w, 4, 30, ["score"])
    results = ['{"score": 1}', '{"score": NaN}', '{"score": 2}', '{"score": 3}']
    got = rows(
        conn,
        "select * from pgflight.complete_batch(%s::bigint[], %s::bigint[], %s::text[])",
        [[c.attempt_id for c in cs], [c.token for c in cs], results],
    )
    assert [r["outcome"] for r in got] == ["succeeded", "result_refused", "succeeded", "succeeded"]
    bad = attempt(conn, cs[1].attempt_id)
    assert (bad["status"], bad["reason"]) == ("dead_letter", "result_refused")
    assert bad["error"]["sqlstate"] == "22P02" and "json" in bad["error"]["message"]
    assert [attempt(conn, c.attempt_id)["result"] for c in (cs[0], cs[2], cs[3])] == [
        {"score": 1},
        {"score": 2},
        {"score": 3},
    ]


def test_nul_and_oversized_results_fail_only_their_own_step(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    # the one cap on results: settings.max_result_bytes, checked row by row
    conn.execute("update pgflight.settings set max_result_bytes = 1000")
    for i in range(3):
        submit(conn, "r", {"i": i})
    cs = claim(conn, w, 3, 30, ["r"])
    got = rows(
        conn,
        "select * from pgflight.complete_batch(%s::bigint[], %s::bigint[], %s::text[])",
        [
            [c.attempt_id for c in cs],
            [c.token for c in cs],
            ['{"a": "\\u0000"}', '{"ok": 1}', '{"big": "' + "x" * 2000 + '"}'],
        ],
    )
    assert [r["outcome"] for r in got] == ["result_refused", "succeeded", "result_refused"]
    assert attempt(conn, cs[0].attempt_id)["error"]["sqlstate"] == "22P05"
    big = attempt(conn, cs[2].attempt_id)
    assert (big["status"], big["reason"]) == ("dead_letter", "result_refused")
    assert big["error"]["sqlstate"] == "ZF005"
    assert "settings.max_result_bytes" in big["error"]["message"]
    # the jsonb[] signature (the Python worker's) isolates an oversized row the same way
    for i in range(2):
        submit(conn, "r2", {"i": i})
    cs = claim(conn, w, 2, 30, ["r2"])
    got = rows(
        conn,
        "select * from pgflight.complete_batch(%s::bigint[], %s::bigint[], %s::jsonb[])",
        [[c.attempt_id for c in cs], [c.token for c in cs], [Jsonb({"big": "x" * 2000}), Jsonb({"ok": 1})]],
    )
    assert [r["outcome"] for r in got] == ["result_refused", "succeeded"]


# --- lock order of the fail-fast cascade -------------------------------------------------------


def test_fail_fast_cascade_does_not_deadlock_with_a_sibling_completion(conn: Conn, connect: Any) -> None:
    setup_engine(conn)
    w = register(conn)
    a = connect(10)
    b = connect(10, autocommit=False)
    watch = connect(10)
    iterations = 15
    for i in range(iterations):
        submit(conn, f"parent{i}")
        p = claim_one(conn, w, 60, [f"parent{i}"])
        spawn(conn, p, ["c1", "c2"], recipe=f"child{i}", fail_fast=True)
        c1, c2 = sorted(claim(conn, w, 2, 60, [f"child{i}"]), key=lambda c: c.attempt_id)
        if i % 2:
            c1, c2 = c2, c1  # both id orders
        # B: a transaction that heartbeats child 2 (holds its attempt row)
        b.execute("select * from pgflight.heartbeat(%s, %s, %s)", [w, [c2.attempt_id], [c2.token]])
        errors: list[BaseException] = []

        def fail_child1(c1: Any = c1, errors: list[BaseException] = errors) -> None:
            try:
                a.execute(
                    "select * from pgflight.fail_step(%s, %s, %s, %s)",
                    [c1.attempt_id, c1.token, Jsonb({"message": "boom"}), Jsonb({"retryable": False})],
                )
            except BaseException as e:  # reported below
                errors.append(e)

        t = threading.Thread(target=fail_child1)
        t.start()
        # barrier: A is waiting on a lock (child 2's attempt) before B completes child 2
        a_pid = a.info.backend_pid
        for _ in range(500):
            if scalar(
                watch,
                "select wait_event_type is not distinct from 'Lock' from pg_stat_activity where pid = %s",
                [a_pid],
            ):
                break
            threading.Event().wait(0.01)
        try:
            b.execute("select * from pgflight.complete_step(%s, %s, '{}')", [c2.attempt_id, c2.token])
            b.commit()
        except psycopg.Error:
            b.rollback()
            raise
        t.join(20)
        assert not t.is_alive()
        assert not errors, f"iteration {i}: {errors[0]!r}"
        assert attempt(conn, p.attempt_id)["status"] == "dead_letter"
        assert attempt(conn, c2.attempt_id)["status"] == "succeeded"


# --- unknown and malformed options -----------------------------------------------------------


def test_unknown_and_malformed_options_are_22023_naming_the_key(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    submit(conn, "r", max_attempts=5)
    c = claim_one(conn, w, 30, ["r"])
    for fn, key in [
        (lambda: fail(conn, c, {"m": 1}, retry_after=5), "retry_after"),
        (lambda: submit(conn, "r", maxattempts=1), "maxattempts"),
        (lambda: fail(conn, c, {"m": 1}, retryable="maybe"), "retryable"),
        (lambda: submit(conn, "r", lease_s=1e300), "lease_s"),
        (lambda: submit(conn, "r", max_attempts=1e10), "max_attempts"),
        (lambda: submit(conn, "r", priority=1e10), "priority"),
        (lambda: submit(conn, "r", not_before="tomorrow-ish"), "not_before"),
        (lambda: submit(conn, "r", not_before="infinity"), "not_before"),
        (lambda: fail(conn, c, {"m": 1}, retry_after_s=1e300), "retry_after_s"),
    ]:
        e = _error(fn)
        assert e.sqlstate == "22023", (key, e.sqlstate, e)
        assert key in str(e.diag.message_primary), (key, e.diag.message_primary)
    assert attempt(conn, c.attempt_id)["status"] == "running"  # nothing was changed by the refusals


def test_integers_one_rule_on_submit_and_spawn(conn: Conn) -> None:
    """3.0 is 3 everywhere; 1.5 is refused everywhere (submit used to round it, spawn refused it)."""
    setup_engine(conn)
    w = register(conn)
    s = submit(conn, "parent", max_attempts=3.0, priority=2.0)
    assert (one(conn, "select max_attempts, priority from pgflight.steps where id = %s", [s.step_id])) == {
        "max_attempts": 3,
        "priority": 2,
    }
    assert _error(lambda: submit(conn, "r", priority=1.5)).sqlstate == "22023"
    p = claim_one(conn, w, 30, ["parent"])
    ok = [{"key": "a", "recipe": "c", "options": {"max_attempts": 3.0, "priority": 2.0}}]
    bad = [{"key": "b", "recipe": "c", "options": {"priority": 1.5}}]
    sql = "select * from pgflight.spawn_children(%s, %s, %s)"
    e = _error(lambda: conn.execute(sql, [p.attempt_id, p.token, Jsonb(bad)]))
    assert e.sqlstate == "22023" and "priority" in str(e.diag.message_primary)
    conn.execute(sql, [p.attempt_id, p.token, Jsonb(ok)])
    assert one(conn, "select max_attempts, priority from pgflight.steps where step_key = 'a'") == {
        "max_attempts": 3,
        "priority": 2,
    }


# --- one catalogue of options: docs/options.md and every COMMENT ------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_options_doc_is_generated_from_the_catalogue_and_current(dsn: str) -> None:
    spec = importlib.util.spec_from_file_location("options_doc", ROOT / "scripts" / "options_doc.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (ROOT / "docs" / "options.md").read_text() == mod.render(dsn), "run scripts/dump_schema"


def test_every_option_is_documented_in_its_functions_comment(conn: Conn) -> None:
    missing = rows(
        conn,
        r"""
        select f.fn, s.key
          from pgflight._option_spec() s
          cross join lateral unnest(case s.scope when 'step' then array['submit_run', 'spawn_children']
                                                 when 'backoff' then array['submit_run']
                                                 else array[s.scope] end) as f(fn)
         where not exists (select from pg_proc p
                            where p.pronamespace = 'pgflight'::regnamespace and p.proname = f.fn
                              and obj_description(p.oid, 'pg_proc') ~ ('\m' || s.key || '\M'))
         order by 1, 2
        """,
    )
    assert missing == []


# --- costs of paid calls whose lease was lost ---------------------------------------------------


def test_paid_call_of_a_lost_lease_is_in_costs_and_budgets(conn: Conn) -> None:
    """record_model_call refuses a lost lease (ZF001); record_orphan_cost keeps the spend (lease_lost)."""
    setup_engine(conn)
    w = register(conn)
    set_clock(conn, 0)
    s = submit(conn, "agent", lease_s=1, max_usd=10)
    c = claim_one(conn, w, 30, ["agent"])
    ar = scalar(
        conn,
        "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
        [c.attempt_id, c.token, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
    )
    set_clock(conn, 5)
    conn.execute("select pgflight.run_sweeps()")  # the lease lapsed while the model answered
    usage = Jsonb({"input_tokens": 1000000, "output_tokens": 0})
    blocks = Jsonb([{"type": "text", "text": "hi"}])
    e = _error(
        lambda: conn.execute(
            "select * from pgflight.record_model_call(%s, %s, %s, 1, %s, %s, 'claude-haiku-4-5')",
            [c.attempt_id, c.token, ar, blocks, usage],
        )
    )
    assert e.sqlstate == "ZF001"
    sql = "select * from pgflight.record_orphan_cost(%s, %s, %s, 1, %s, 'claude-haiku-4-5', %s)"
    first = one(conn, sql, [c.attempt_id, c.token, ar, usage, Jsonb({"why": "LeaseLost"})])
    assert first["recorded"] and first["usd"] > 0
    assert not one(conn, sql, [c.attempt_id, c.token, ar, usage, Jsonb({})])["recorded"]  # idempotent
    cost = one(conn, "select usd, lease_lost from pgflight.costs where agent_run_id = %s", [ar])
    assert cost == {"usd": first["usd"], "lease_lost": True}
    assert scalar(conn, "select usd from pgflight.agent_runs where id = %s", [ar]) == first["usd"]
    spent = scalar(conn, "select sum(spent_usd) from pgflight.budgets where run_id = %s", [s.run_id])
    assert spent == first["usd"]
    # the iteration is still open for the next holder: its own record_model_call is not "already recorded"
    set_clock(conn, 10)
    c2 = claim_one(conn, w, 30, ["agent"])
    conn.execute("select * from pgflight.begin_agent_run(%s, %s, '{}')", [c2.attempt_id, c2.token])
    rec = one(
        conn,
        "select * from pgflight.record_model_call(%s, %s, %s, 1, %s, %s, 'claude-haiku-4-5')",
        [c2.attempt_id, c2.token, ar, blocks, usage],
    )
    assert rec["recorded"]
    assert scalar(conn, "select count(*) from pgflight.agent_transcript(%s) where iteration = 1", [ar]) == 1
    # a token never issued to the attempt is refused
    e = _error(lambda: conn.execute(sql, [c.attempt_id, c.token + 999, ar, usage, Jsonb({})]))
    assert e.sqlstate == "ZF001"
