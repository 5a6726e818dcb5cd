"""
Flow control in the claim: rate limits per recipe and per workspace, pause and resume,
and time without the client's clock (delay_s, not_before with a UTC offset).

Rate limits are measured over 30 simulated seconds with the fake clock: four claimers on their
own connections claim at every 50 ms tick, so the test takes seconds, not half a minute.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    Conn,
    claim,
    complete_batch,
    register,
    rows,
    scalar,
    set_clock,
    sqlstate,
    submit,
)
from test_fairness import bulk_submit, workspace


def _claim_over_simulated_time(dsn: str, seconds: float, tick_s: float = 0.05, claimers: int = 4) -> None:
    """`claimers` threads claim (batch 10) and complete at every tick of the fake clock."""
    ticks = int(seconds / tick_s)
    barrier = threading.Barrier(claimers)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True, options="-c statement_timeout=10000") as c:
                w = register(c, "rate")
                for tick in range(ticks):
                    barrier.wait(timeout=30)
                    set_clock(c, tick * tick_s)
                    got = claim(c, w, 10)
                    if got:
                        complete_batch(c, got)
        except BaseException as e:  # surfaced below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work) for _ in range(claimers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _started(conn: Conn, where: str, params: list[Any]) -> int:
    return int(
        scalar(
            conn,
            f"select count(*) from pgflight.step_attempts a where a.claimed_at is not null and {where}",
            params,
        )
    )


def test_rate_limits_hold_within_ten_percent_over_30_seconds(conn: Conn, dsn: str) -> None:
    set_clock(conn, 0)
    workspace(conn, "metered", starts_per_s=10, burst=1)
    workspace(conn, "other")
    bulk_submit(conn, "metered", 1_000, recipe="plain")
    bulk_submit(conn, "other", 1_000, recipe="limited")
    bulk_submit(conn, "other", 3_000, recipe="plain")
    conn.execute(
        "select pgflight.set_recipe_limits('limited', %s)", [Jsonb({"starts_per_s": 20, "burst": 1})]
    )
    _claim_over_simulated_time(dsn, 30)

    metered = _started(
        conn, "a.workspace_id = (select id from pgflight.workspaces where name = 'metered')", []
    )
    limited = _started(conn, "a.recipe = 'limited'", [])
    free = _started(
        conn,
        "a.recipe = 'plain' and a.workspace_id = (select id from pgflight.workspaces where name = 'other')",
        [],
    )
    assert abs(metered - 300) <= 30, metered
    assert abs(limited - 600) <= 60, limited
    # the limits slow only what they name
    assert free > 2_000, free


def test_a_paused_workspace_is_not_claimed_and_its_leased_work_finishes(conn: Conn) -> None:
    workspace(conn, "a")
    workspace(conn, "b")
    bulk_submit(conn, "a", 3)
    bulk_submit(conn, "b", 3)
    worker = register(conn)
    (held,) = [
        c
        for c in claim(conn, worker, 2)
        if scalar(conn, "select workspace_id from pgflight.step_attempts where id = %s", [c.attempt_id]) == 1
    ][:1]
    assert scalar(conn, "select pgflight.pause_workspace('a', 'maintenance window')") is True
    assert scalar(conn, "select pgflight.pause_workspace('a')") is False  # idempotent
    got = claim(conn, worker, 10)
    assert {
        scalar(conn, "select workspace_id from pgflight.step_attempts where id = %s", [g.attempt_id])
        for g in got
    } == {2}
    # the attempt leased before the pause completes normally
    assert complete_batch(conn, [held]) == ["succeeded"]
    ev = rows(
        conn,
        "select reason, actor, detail from pgflight.run_events where reason like 'workspace_%' order by id",
    )
    assert [e["reason"] for e in ev] == ["workspace_paused"]
    assert ev[0]["actor"] == "postgres" and ev[0]["detail"]["note"] == "maintenance window"
    assert scalar(conn, "select pgflight.resume_workspace('a')") is True
    assert len(claim(conn, worker, 10)) == 2
    assert [
        r["reason"]
        for r in rows(
            conn, "select reason from pgflight.run_events where reason like 'workspace_%' order by id"
        )
    ] == [
        "workspace_paused",
        "workspace_resumed",
    ]


def test_a_paused_recipe_is_not_claimed_in_any_workspace(conn: Conn) -> None:
    workspace(conn, "a")
    workspace(conn, "b")
    for ws in ("a", "b"):
        bulk_submit(conn, ws, 5, recipe="send_email")
        bulk_submit(conn, ws, 2, recipe="resize")
    conn.execute("select pgflight.pause_recipe('send_email', 'provider outage')")
    worker = register(conn)
    got = claim(conn, worker, 20)
    assert len(got) == 4
    assert claim(conn, worker, 20, recipes=["send_email"]) == []
    conn.execute("select pgflight.resume_recipe('send_email')")
    assert len(claim(conn, worker, 20, recipes=["send_email"])) == 10
    assert [
        r["reason"]
        for r in rows(conn, "select reason from pgflight.run_events where reason like 'recipe_%' order by id")
    ] == [
        "recipe_paused",
        "recipe_resumed",
    ]


def test_delay_s_counts_on_the_server_clock(conn: Conn) -> None:
    workspace(conn, "d")
    set_clock(conn, 100)
    submit(conn, "later", workspace="d", delay_s=30)
    worker = register(conn)
    set_clock(conn, 129)
    assert claim(conn, worker, 1) == []
    set_clock(conn, 130)
    assert len(claim(conn, worker, 1)) == 1


@pytest.mark.parametrize(
    "value",
    ["2030-01-01 00:00:30", "2030-01-01T00:00:30", "tomorrow", 1700000000, "2030-01-01T00:00:30+99"],
)
def test_not_before_without_a_utc_offset_is_refused(conn: Conn, value: Any) -> None:
    workspace(conn, "d")
    assert sqlstate(lambda: submit(conn, "later", workspace="d", not_before=value)) == "22023"
    assert scalar(conn, "select count(*) from pgflight.runs") == 0


def test_not_before_with_an_offset_is_the_instant_it_names(conn: Conn) -> None:
    workspace(conn, "d")
    set_clock(conn, 0)
    submit(conn, "later", workspace="d", not_before="2030-01-01T02:00:30+02:00")  # = T0 + 30 s
    worker = register(conn)
    set_clock(conn, 29)
    assert claim(conn, worker, 1) == []
    set_clock(conn, 30)
    assert len(claim(conn, worker, 1)) == 1


def test_bad_flow_options_are_refused_naming_the_key(conn: Conn) -> None:
    workspace(conn, "d")
    for options in (
        {"max_in_flight": -1},
        {"share": 0},
        {"starts_per_s": "fast"},
        {"bogus": 1},
        {"share": 1.5},
    ):
        assert (
            sqlstate(
                lambda o=options: conn.execute("select pgflight.set_workspace_limits('d', %s)", [Jsonb(o)])
            )
            == "22023"
        )
    assert sqlstate(lambda: conn.execute("select pgflight.set_workspace_limits('nope', '{}')")) == "ZF003"
    assert sqlstate(lambda: submit(conn, "x", workspace="d", concurrency_limit=2)) == "22023"
    assert (
        sqlstate(lambda: submit(conn, "x", workspace="d", concurrency_key="k", concurrency_limit=0))
        == "22023"
    )
    assert sqlstate(lambda: submit(conn, "x", workspace="d", delay_s=-1)) == "22023"
    assert (
        sqlstate(lambda: submit(conn, "x", workspace="d", delay_s=1, not_before="2030-01-01T00:00:00Z"))
        == "22023"
    )
