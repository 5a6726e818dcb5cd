"""
Recurring runs: cron expressions evaluated in SQL, fired by the engine's sweep once per
(schedule, fire time), across daylight-saving changes in the schedule's zone, after downtime, and
under each overlap policy. Time moves with the fake clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from psycopg.types.json import Jsonb

from core_helpers import (
    Conn,
    claim,
    complete_batch,
    register,
    rows,
    run_parallel,
    scalar,
    set_clock,
    sqlstate,
)
from test_fairness import workspace

NY = "America/New_York"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def next_fire(conn: Conn, expr: str, after: datetime, tz: str = "UTC") -> datetime | None:
    """The first firing of `expr` after `after`, as the sweep computes it."""
    return scalar(  # type: ignore[no-any-return]
        conn,
        "select pgflight._cron_next(c.seconds, c.minutes, c.hours, c.days, c.months, c.weekdays,"
        " c.any_day, c.any_weekday, %s, %s) from pgflight._cron_parse(%s) c",
        [tz, after, expr],
    )


def schedule(conn: Conn, name: str, expr: str, **options: Any) -> None:
    conn.execute(
        "select pgflight.schedule_run('s', %s, %s, 'tick', %s, %s)",
        [name, expr, Jsonb({"n": name}), Jsonb(options)],
    )


def sweep_at(conn: Conn, when: datetime) -> int:
    set_clock(conn, when)
    return int(scalar(conn, "select pgflight.fire_schedules()"))


def fired_runs(conn: Conn) -> list[datetime]:
    """The fire times of submitted runs, in order."""
    return [
        r["fire_at"]
        for r in rows(
            conn, "select fire_at from pgflight.schedule_fires where outcome = 'submitted' order by fire_at"
        )
    ]


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        ("*/15 * * * *", utc(2030, 1, 1, 10, 7), utc(2030, 1, 1, 10, 15)),
        ("*/10 * * * * *", utc(2030, 1, 1, 10, 7, 5), utc(2030, 1, 1, 10, 7, 10)),
        ("0 30 9 * * MON-FRI", utc(2030, 1, 4, 10), utc(2030, 1, 7, 9, 30)),  # Friday after 9:30 -> Monday
        ("0 0 1 jan,jul *", utc(2030, 2, 1), utc(2030, 7, 1)),
        ("0 0 29 2 *", utc(2030, 3, 1), utc(2032, 2, 29)),
        ("0 0 13 * 5", utc(2030, 1, 1), utc(2030, 1, 4)),  # day 13 OR Friday (Vixie)
        ("@hourly", utc(2030, 1, 1, 10, 0), utc(2030, 1, 1, 11, 0)),
        ("0 12 * * 7", utc(2030, 1, 1), utc(2030, 1, 6, 12)),  # 7 is Sunday
        ("5-10/5 0 * * *", utc(2030, 1, 1, 0, 6), utc(2030, 1, 1, 0, 10)),
    ],
)
def test_cron_next_field_by_field(conn: Conn, expr: str, after: datetime, expected: datetime) -> None:
    assert next_fire(conn, expr, after) == expected


@pytest.mark.parametrize(
    "expr", ["* * * *", "60 * * * *", "* * 0 * *", "* * * 13 *", "*/0 * * * *", "x * * * *", "0 0 30 2 *"]
)
def test_bad_cron_expressions_are_refused(conn: Conn, expr: str) -> None:
    workspace(conn, "s")
    assert sqlstate(lambda: schedule(conn, "bad", expr)) == "22023"


def test_bad_schedule_options_are_refused(conn: Conn) -> None:
    workspace(conn, "s")
    assert sqlstate(lambda: schedule(conn, "a", "* * * * *", time_zone="Mars/Olympus")) == "22023"
    assert sqlstate(lambda: schedule(conn, "a", "* * * * *", overlap="sometimes")) == "22023"
    assert sqlstate(lambda: schedule(conn, "a", "* * * * *", run_options={"priority": "high"})) == "22023"
    assert sqlstate(lambda: schedule(conn, "a", "* * * * *", run_options={"idempotency_key": "x"})) == "22023"
    assert scalar(conn, "select count(*) from pgflight.runs") == 0


def test_a_daily_schedule_across_both_dst_changes_fires_once_a_day(conn: Conn) -> None:
    """02:30 does not exist on 10 March 2030 in New York; 01:30 happens twice on 3 November."""
    workspace(conn, "s")
    set_clock(conn, utc(2030, 3, 8))
    schedule(conn, "gap", "0 30 2 * * *", time_zone=NY, overlap="allow")
    schedule(conn, "twice", "0 30 1 * * *", time_zone=NY, overlap="allow")
    for start in (utc(2030, 3, 8), utc(2030, 11, 1)):
        t = start
        while t < start + timedelta(days=4):
            sweep_at(conn, t)
            t += timedelta(minutes=10)
    by = {
        name: [
            r["fire_at"]
            for r in rows(
                conn,
                "select f.fire_at from pgflight.schedule_fires f join pgflight.schedules s"
                " on s.id = f.schedule_id where s.name = %s order by 1",
                [name],
            )
        ]
        for name in ("gap", "twice")
    }
    # spring: one firing each day; the missing 02:30 fires at 03:30 EDT (07:30 UTC)
    assert [t for t in by["gap"] if t < utc(2030, 3, 12)] == [
        utc(2030, 3, 8, 7, 30),
        utc(2030, 3, 9, 7, 30),
        utc(2030, 3, 10, 7, 30),
        utc(2030, 3, 11, 6, 30),
    ]
    # autumn: 01:30 fires once on the day it happens twice
    assert [t for t in by["twice"] if t > utc(2030, 10, 1)] == [
        utc(2030, 11, 1, 5, 30),
        utc(2030, 11, 2, 5, 30),
        utc(2030, 11, 3, 5, 30),
        utc(2030, 11, 4, 6, 30),
    ]
    assert scalar(conn, "select count(*) from pgflight.runs") == len(by["gap"]) + len(by["twice"])


def test_an_hourly_schedule_counts_wall_clock_hours_across_dst(conn: Conn) -> None:
    workspace(conn, "s")
    set_clock(conn, utc(2030, 11, 2, 12))
    schedule(conn, "hourly", "0 15 * * * *", time_zone=NY, overlap="allow")
    t = utc(2030, 11, 2, 12)
    while t < utc(2030, 11, 3, 12):
        sweep_at(conn, t)
        t += timedelta(minutes=5)
    fires = fired_runs(conn)
    # these 24 hours hold 23 distinct wall-clock quarter-past times (01:15 happens twice): each
    # fires once, at its first occurrence, and firings strictly increase
    assert len(fires) == 23 and fires == sorted(set(fires))
    assert all(f.minute == 15 for f in fires)
    assert utc(2030, 11, 3, 5, 15) in fires  # 01:15 EDT
    assert utc(2030, 11, 3, 6, 15) not in fires  # 01:15 EST, the same wall-clock time again


def test_after_an_hour_of_downtime_missed_firings_are_one_run(conn: Conn) -> None:
    workspace(conn, "s")
    t0 = utc(2030, 1, 1, 12)
    set_clock(conn, t0)
    schedule(conn, "every_minute", "* * * * *", overlap="allow")
    assert sweep_at(conn, t0 + timedelta(minutes=1)) == 1
    # the sweep stops for an hour
    assert sweep_at(conn, t0 + timedelta(minutes=61, seconds=20)) == 1
    fires = rows(conn, "select fire_at, missed_until, outcome from pgflight.schedule_fires order by fire_at")
    assert [f["fire_at"] for f in fires] == [t0 + timedelta(minutes=1), t0 + timedelta(minutes=2)]
    assert fires[1]["missed_until"] == t0 + timedelta(minutes=61, seconds=20)
    # and it goes on from the next minute after now
    assert scalar(conn, "select next_fire_at from pgflight.schedules") == t0 + timedelta(minutes=62)
    assert scalar(conn, "select count(*) from pgflight.runs") == 2


def test_a_sweep_run_twice_at_one_instant_fires_once(conn: Conn, connect: Any) -> None:
    workspace(conn, "s")
    t0 = utc(2030, 1, 1, 12)
    set_clock(conn, t0)
    conn.execute(
        "update pgflight.settings set min_schedule_interval_s = 1"
    )  # the floor is a minute by default
    schedule(conn, "every_second", "* * * * * *", overlap="allow")
    when = t0 + timedelta(seconds=5)
    assert sweep_at(conn, when) == 1
    assert sweep_at(conn, when) == 0
    # and two sweeps at once, on two connections
    conns = [connect() for _ in range(2)]
    later = t0 + timedelta(seconds=9)
    for c in conns:
        set_clock(c, later)
    fired = run_parallel([lambda c=c: scalar(c, "select pgflight.fire_schedules()") for c in conns])
    assert sorted(fired) == [0, 1]
    assert scalar(conn, "select count(*) from pgflight.runs") == 2


@pytest.mark.parametrize(("overlap", "runs_while_busy"), [("skip", 0), ("queue_one", 1), ("allow", 3)])
def test_overlap_policies(conn: Conn, overlap: str, runs_while_busy: int) -> None:
    workspace(conn, "s")
    t0 = utc(2030, 1, 1, 12)
    set_clock(conn, t0)
    schedule(conn, "o", "* * * * *", overlap=overlap)
    sweep_at(conn, t0 + timedelta(minutes=1))
    assert scalar(conn, "select count(*) from pgflight.runs") == 1
    # the first run is still running over three more firings
    for m in (2, 3, 4):
        sweep_at(conn, t0 + timedelta(minutes=m))
    assert scalar(conn, "select count(*) from pgflight.runs") == 1 + (3 if overlap == "allow" else 0)
    worker = register(conn)
    set_clock(conn, t0 + timedelta(minutes=4, seconds=30))
    got = claim(conn, worker, 10)
    complete_batch(conn, got)
    sweep_at(conn, t0 + timedelta(minutes=4, seconds=31))
    assert scalar(conn, "select count(*) from pgflight.runs") == 1 + runs_while_busy
    outcomes = [
        r["outcome"] for r in rows(conn, "select outcome from pgflight.schedule_fires order by fire_at")
    ]
    expected = {
        "skip": ["submitted", "skipped", "skipped", "skipped"],
        "queue_one": ["submitted", "queued", "queued", "submitted"],
        "allow": ["submitted"] * 4,
    }[overlap]
    assert outcomes == expected


def test_unschedule_stops_the_firings(conn: Conn) -> None:
    workspace(conn, "s")
    t0 = utc(2030, 1, 1, 12)
    set_clock(conn, t0)
    schedule(conn, "gone", "* * * * *")
    assert scalar(conn, "select pgflight.unschedule_run('s', 'gone')") is True
    assert sweep_at(conn, t0 + timedelta(minutes=5)) == 0
    assert scalar(conn, "select count(*) from pgflight.runs") == 0
