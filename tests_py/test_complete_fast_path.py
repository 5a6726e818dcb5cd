"""
complete_batch's hot path.

A batch of roots only (no step with a parent: the burn-down's shape) is completed in one statement,
its runs ended in it, without _steps_finished, which has nothing to do for it (a success cancels
nothing below it and pokes no parent). A batch with a child goes through _steps_finished whole.
Which path a call took is read from the function statistics of its own transaction
(`pg_stat_xact_user_functions`, track_functions = pl).
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from core_helpers import (
    Conn,
    claim,
    claim_one,
    complete_batch,
    parked_parent,
    register,
    rows,
    scalar,
    start_step,
    submit_many,
)


def _finished_calls(conn: Conn, work: Any) -> tuple[Any, int]:
    """Run work() in one transaction: (its value, how often _steps_finished was called in it)."""
    conn.execute("set track_functions = 'pl'")
    with conn.transaction():
        got = work()
        n = scalar(
            conn,
            "select coalesce(sum(calls), 0) from pg_stat_xact_user_functions"
            " where schemaname = 'pgflight' and funcname = '_steps_finished'",
        )
    return got, int(n)


def test_a_batch_of_roots_ends_their_runs_without_steps_finished(eng: Conn) -> None:
    w = register(eng)
    submit_many(eng, 4, "a")
    got = claim(eng, w, 4, 30)
    for c in got[:2]:
        start_step(eng, c)  # two from running, two straight from claimed
    outcomes, calls = _finished_calls(eng, lambda: complete_batch(eng, got, {"ok": 1}))
    assert outcomes == ["succeeded"] * 4
    assert calls == 0
    runs = rows(
        eng,
        "select r.status, r.finished_at is not null as ended, a.result, a.finished_at = r.finished_at as same"
        " from pgflight.step_attempts a join pgflight.runs r on r.id = a.run_id where a.id = any (%s)",
        [[c.attempt_id for c in got]],
    )
    assert runs == [{"status": "succeeded", "ended": True, "result": {"ok": 1}, "same": True}] * 4
    # the events keep their meaning: one succeeded row per attempt, from running or from claimed
    seen = rows(
        eng,
        "select attempt_id, from_status, to_status from pgflight.run_events"
        " where attempt_id = any (%s) and to_status = 'succeeded' order by attempt_id",
        [[c.attempt_id for c in got]],
    )
    assert [(r["attempt_id"], r["from_status"]) for r in seen] == sorted(
        [(c.attempt_id, "running") for c in got[:2]] + [(c.attempt_id, "claimed") for c in got[2:]]
    )


def test_a_batch_with_a_child_and_a_root_wakes_the_parent_and_ends_the_root(eng: Conn) -> None:
    """Parity: a child in the batch sends it through _steps_finished, which pokes and ends runs as before."""
    w = register(eng)
    parent, _ = parked_parent(eng, w, 1)
    submit_many(eng, 1, "root")
    child = claim_one(eng, w, recipes=["child"])
    root = claim_one(eng, w, recipes=["root"])
    outcomes, calls = _finished_calls(eng, lambda: complete_batch(eng, [child, root]))
    assert outcomes == ["succeeded", "succeeded"]
    assert calls >= 1
    assert scalar(eng, "select status from pgflight.runs where id = %s", [root.run_id]) == "succeeded"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [parent.run_id]) == "running"
    assert (
        scalar(
            eng,
            "select status from pgflight.step_attempts where step_id = %s and status = 'queued'",
            [parent.step_id],
        )
        == "queued"
    )  # woken once, its last child done


def test_an_attempt_given_twice_or_stale_gets_the_same_outcomes(eng: Conn) -> None:
    """Parity: an attempt given twice keeps its first result; a stale token is lease_lost, logged."""
    w = register(eng)
    submit_many(eng, 2, "a")
    a, b = claim(eng, w, 2, 30)
    got = eng.execute(
        "select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s)",
        [
            [a.attempt_id, a.attempt_id, b.attempt_id],
            [a.token, a.token, b.token + 1000],
            [Jsonb({"n": 1}), Jsonb({"n": 2}), Jsonb({"n": 3})],
        ],
    ).fetchall()
    assert got == [(a.attempt_id, "succeeded"), (a.attempt_id, "succeeded"), (b.attempt_id, "lease_lost")]
    assert scalar(eng, "select result from pgflight.step_attempts where id = %s", [a.attempt_id]) == {"n": 1}
    assert scalar(eng, "select status from pgflight.step_attempts where id = %s", [b.attempt_id]) == "claimed"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [a.run_id]) == "succeeded"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [b.run_id]) == "running"
    assert (
        scalar(
            eng,
            "select count(*) from pgflight.events where attempt_id = %s and reason = 'stale_result_rejected'",
            [b.attempt_id],
        )
        == 1
    )
