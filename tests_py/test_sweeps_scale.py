"""
Sweeps that scale: the set-based reclaim and the events log's day partitions.

- A mass crash: thousands of lapsed leases of every kind (retry, the ceiling, cancel requested,
  the children of one parent, a fail-fast family) drained by two sweepers racing: every expired
  attempt is ended exactly once, with the events rows and fan-in the row-by-row path wrote.
- A row whose processing raises is dead-lettered alone; the rest of its batch is reclaimed.
- A held step row does not make the reclaim wait (SKIP LOCKED on every row it touches).
- Retention by partition with the fake clock: days created ahead, rows of a day without a
  partition kept in events_default and moved into their day, days past events_keep_s dropped.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from conftest import ConnectFactory
from core_helpers import (
    WORKSPACE,
    Conn,
    attempt,
    cancel_run,
    claim,
    claim_one,
    invariant_violations,
    parked_parent,
    register,
    rows,
    run_parallel,
    scalar,
    set_clock,
    setup_engine,
    sqlstate,
    submit,
    submit_many,
)

LIVE = ("claimed", "running", "cancel_requested")


def _claim_all(c: Conn, w: int, n: int, recipe: str) -> list[int]:
    got: list[int] = []
    while len(got) < n:
        batch = claim(c, w, min(500, n - len(got)), 1, [recipe])
        assert batch, f"only {len(got)} of {n} {recipe} claimable"
        got += [b.attempt_id for b in batch]
    return got


def test_a_mass_crash_is_reclaimed_once_per_attempt_by_racing_sweepers(connect: ConnectFactory) -> None:
    c = connect(timeout_s=60)
    setup_engine(c)
    w = register(c)
    set_clock(c, 0)
    submit_many(c, 2000, "bulk", max_attempts=3)
    submit_many(c, 300, "last", max_attempts=1)
    crashed = _claim_all(c, w, 2000, "bulk") + _claim_all(c, w, 300, "last")
    parent, _ = parked_parent(c, w, 200)
    c.execute("update pgflight.steps set max_attempts = 1 where parent_id = %s", [parent.step_id])
    children = _claim_all(c, w, 200, "child")
    _, ff_claim = parked_parent(c, w, 2, child_recipe="ffchild", fail_fast=True)
    c.execute("update pgflight.steps set max_attempts = 1 where recipe = 'ffchild'")
    ff_children = _claim_all(c, w, 2, "ffchild")
    cancelled = submit(c, "cancelme")
    cancelled_attempt = claim_one(c, w, 1, ["cancelme"]).attempt_id
    cancel_run(c, cancelled.run_id)
    expired = crashed + children + ff_children + [cancelled_attempt]
    assert scalar(
        c, "select count(*) from pgflight.step_attempts where status = any(%s)", [list(LIVE)]
    ) == len(expired)

    sweepers = [connect(timeout_s=60) for _ in range(2)]
    for s in sweepers:
        set_clock(s, 3600)

    def drain(s: Conn) -> int:
        total = 0
        while (n := int(scalar(s, "select pgflight.reclaim_expired(1500)"))) > 0:
            total += n
        return total

    t0 = time.monotonic()
    got = run_parallel([lambda s=s: drain(s) for s in sweepers])  # type: ignore[misc]
    took = time.monotonic() - t0
    assert sum(got) == len(expired), (got, len(expired))
    assert scalar(c, "select count(*) from pgflight.step_attempts where status = any(%s)", [list(LIVE)]) == 0

    # each expired attempt left its leased states exactly once (a fail-fast sibling goes through
    # cancel_requested first)
    ended = dict(
        (r["attempt_id"], r["n"])
        for r in rows(
            c,
            "select attempt_id, count(*) as n from pgflight.events where attempt_id = any(%s)"
            " and from_status = any(%s) and not to_status = any(%s) group by attempt_id",
            [expired, list(LIVE), list(LIVE)],
        )
    )
    assert set(ended) == set(expired) and set(ended.values()) == {1}
    by_status = dict(
        (r["recipe"] + ":" + r["status"], r["n"])
        for r in rows(
            c,
            "select recipe, status, count(*) as n from pgflight.step_attempts group by recipe, status",
        )
    )
    assert by_status["bulk:lease_expired"] == 2000 and by_status["bulk:queued"] == 2000  # one retry each
    assert by_status["last:dead_letter"] == 300 and by_status["child:dead_letter"] == 200
    assert by_status["cancelme:cancelled"] == 1
    assert scalar(c, "select count(*) from pgflight.run_events where reason = 'retry_scheduled'") == 2000
    assert scalar(c, "select count(*) from pgflight.runs where recipe = 'last' and status = 'failed'") == 300
    # the parent of 200 children that all ended was woken once; the fail-fast parent dead-lettered
    assert (
        scalar(
            c,
            "select count(*) from pgflight.events where step_id = %s and reason = 'parent_resumed'",
            [parent.step_id],
        )
        == 1
    )
    assert scalar(c, "select children_pending from pgflight.steps where id = %s", [parent.step_id]) == 0
    assert attempt(c, ff_claim.attempt_id)["status"] == "dead_letter"
    assert invariant_violations(c) == {}
    print(f"2,503 expired leases drained by two sweepers in {took:.1f} s")


def test_a_row_that_raises_is_dead_lettered_alone_and_its_batch_is_reclaimed(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    set_clock(conn, 0)
    submit_many(conn, 200, "bulk", max_attempts=3)
    leased = _claim_all(conn, w, 200, "bulk")
    poison = attempt(conn, leased[77])
    conn.execute(
        f"""
        create function public.boom() returns trigger language plpgsql as $$
        begin
          if new.step_id = {poison["step_id"]} then raise exception 'disk quota'; end if;
          return new;
        end $$;
        create trigger boom before insert on pgflight.step_attempts
          for each row execute function public.boom();
        """
    )
    set_clock(conn, 3600)
    # the row-by-row fallback of a poisoned batch is slow on a loaded machine: this test is about
    # isolation, not the pass's time budget, so the budget is lifted for the session
    conn.execute("select set_config('pgflight.reclaim_budget_ms', '600000', false)")
    assert scalar(conn, "select pgflight.reclaim_expired(1000)") == 200
    p = attempt(conn, leased[77])
    assert (p["status"], p["reason"]) == ("dead_letter", "engine_error")
    statuses = rows(
        conn,
        "select status, count(*) as n from pgflight.step_attempts where id = any(%s) group by status",
        [leased],
    )
    assert {r["status"]: r["n"] for r in statuses} == {"lease_expired": 199, "dead_letter": 1}
    assert scalar(conn, "select count(*) from pgflight.step_attempts where status = 'queued'") == 199


def test_a_held_step_row_is_skipped_not_waited_for(connect: ConnectFactory) -> None:
    c = connect(timeout_s=20)
    setup_engine(c)
    w = register(c)
    set_clock(c, 0)
    held = submit(c, "held")
    submit(c, "free")
    claim_one(c, w, 1, ["held"])
    claim_one(c, w, 1, ["free"])
    holder = connect(autocommit=False)
    holder.execute("select 1 from pgflight.steps where id = %s for update", [held.step_id])
    sweeper = connect(timeout_s=20)
    sweeper.execute("set lock_timeout = 0")  # no timeout at all: only SKIP LOCKED can keep it from waiting
    set_clock(sweeper, 3600)
    t0 = time.monotonic()
    assert scalar(sweeper, "select pgflight.reclaim_expired(100)") == 1
    assert time.monotonic() - t0 < 3
    assert attempt(c, held.attempt_id)["status"] == "running"
    holder.commit()
    assert scalar(sweeper, "select pgflight.reclaim_expired(100)") == 1
    assert attempt(c, held.attempt_id)["status"] == "lease_expired"


def _days(c: Conn) -> list[str]:
    return [
        str(r[0])
        for r in c.execute(
            "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid"
            " where i.inhparent = 'pgflight.events'::regclass order by 1"
        ).fetchall()
    ]


def _logged(conn: Conn, recipe: str) -> Any:
    """A run submitted and cancelled: two events rows (cancelled, run_cancelled) at the clock's time.
    (A submit's own queued is on its attempt, queue_event_id, not an events row.)"""
    run = submit(conn, recipe)
    cancel_run(conn, run.run_id)
    return run


def test_events_retention_drops_whole_days_with_the_fake_clock(conn: Conn) -> None:
    setup_engine(conn)
    day0 = datetime(2031, 3, 10, 12, 0, tzinfo=UTC)
    set_clock(conn, day0 - timedelta(days=2))
    early = _logged(conn, "early")  # no partition for 2031-03-08 yet: events_default keeps them
    assert scalar(conn, "select count(*) from pgflight.events_default where run_id = %s", [early.run_id]) == 2

    set_clock(conn, day0 - timedelta(days=2, hours=1))
    acts = rows(conn, "select * from pgflight.maintain_partitions()")
    made = {r["partition_name"]: r["moved_rows"] for r in acts if r["action"] == "created"}
    assert made == {
        f"events_{d}": (2 if d == "20310308" else 0) for d in ("20310308", "20310309", "20310310", "20310311")
    }
    assert (
        scalar(conn, "select count(*) from pgflight.events_20310308 where run_id = %s", [early.run_id]) == 2
    )
    assert scalar(conn, "select count(*) from pgflight.events_default") == 0

    set_clock(conn, day0)
    late = _logged(conn, "late")
    assert scalar(conn, "select count(*) from pgflight.events_20310310 where run_id = %s", [late.run_id]) == 2
    # the two rows and the submit's queued, derived from the attempt
    assert len(rows(conn, "select * from pgflight.run_events where run_id = %s", [late.run_id])) == 3

    conn.execute("update pgflight.settings set events_keep_s = 86400 * 2")
    set_clock(conn, day0 + timedelta(days=1))  # 2031-03-08 ended 3 days before: past retention
    acts = rows(conn, "select * from pgflight.maintain_partitions()")
    assert {r["partition_name"] for r in acts if r["action"] == "dropped"} == {"events_20310308"}
    assert "events_20310308" not in _days(conn) and "events_20310313" in _days(conn)
    assert scalar(conn, "select count(*) from pgflight.events where run_id = %s", [early.run_id]) == 0
    assert scalar(conn, "select count(*) from pgflight.events where run_id = %s", [late.run_id]) == 2
    assert rows(conn, "select * from pgflight.maintain_partitions()") == [], "a second call has nothing to do"


def test_stray_rows_of_the_default_partition_are_purged_in_batches(conn: Conn) -> None:
    setup_engine(conn)
    set_clock(conn, datetime(2001, 1, 1, tzinfo=UTC))
    for _ in range(15):
        _logged(conn, "ancient")  # 2001: never a partition, stays in events_default
    set_clock(conn, None)
    assert scalar(conn, "select count(*) from pgflight.events_default") == 30
    got = rows(conn, "select * from pgflight.maintain_partitions(20)")
    assert [(r["action"], r["moved_rows"]) for r in got if r["partition_name"] == "events_default"] == [
        ("purged", 20)
    ]
    rows(conn, "select * from pgflight.maintain_partitions(20)")
    assert scalar(conn, "select count(*) from pgflight.events_default") == 0


def test_maintain_partitions_is_an_operator_sweep(conn: Conn) -> None:
    assert scalar(
        conn,
        "select has_function_privilege('pgflight_operator', %s, 'execute')",
        ["pgflight.maintain_partitions(integer)"],
    )
    assert not scalar(
        conn,
        "select has_function_privilege('pgflight_worker', %s, 'execute')",
        ["pgflight.maintain_partitions(integer)"],
    )
    err = sqlstate(lambda: conn.execute("select * from pgflight.maintain_partitions(-1)"))
    assert err == "22023"


def _bulk_load_crashed(c: Conn, n: int, worker: int) -> None:
    """`n` runs with one running attempt each, inserted straight into the tables without
    workspace_id (the attempts' fill trigger supplies it), as a loader or bench/perf_bench.py does."""
    ws = scalar(c, "select id from pgflight.workspaces where name = %s", [WORKSPACE])
    c.execute(
        """
        with r as (
          insert into pgflight.runs (workspace_id, recipe, status, input_hash)
          select %s, 'crash', 'running', 'x' from generate_series(1, %s) returning id
        ), s as (
          insert into pgflight.steps (run_id, step_key, recipe, input, max_attempts)
          select r.id, 'root', 'crash', '{}', 3 from r returning id, run_id
        )
        insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, status, available_after,
                                            worker_id, fencing_token, claimed_at, started_at,
                                            lease_expires_at, lease_s)
        select s.id, s.run_id, 1, 'crash', 'running', now(), %s, nextval('pgflight.fencing_tokens'),
               now(), now(), now() - interval '1 hour', 60
          from s
        """,
        [ws, n, worker],
    )


def test_a_bulk_load_of_attempts_into_tables_analyzed_empty_looks_each_flow_up_by_key(
    conn: Conn, connect: ConnectFactory
) -> None:
    """After an ANALYZE of the empty tables (autovacuum after a TRUNCATE), a bulk INSERT
    of attempts without workspace_id made the fill trigger seq-scan runs and steps once per row
    (its plan was cached while they held one page): quadratic, over 18 minutes for 1,000,000 rows.
    Now each row is two primary-key lookups, and every attempt gets its workspace."""
    setup_engine(conn)
    w = register(conn)
    conn.execute("analyze pgflight.runs, pgflight.steps, pgflight.step_attempts")  # analyzed while empty
    loader = connect(timeout_s=120)  # a new session: the trigger's plans are made during the load
    n = 3000

    def seq_scans() -> int:
        conn.execute("select pg_stat_force_next_flush()")
        loader.execute("select pg_stat_force_next_flush()")
        return int(
            scalar(
                conn,
                "select coalesce(sum(seq_scan), 0) from pg_stat_user_tables"
                " where schemaname = 'pgflight' and relname in ('runs', 'steps')",
            )
        )

    conn.execute("set stats_fetch_consistency = none")
    before = seq_scans()
    _bulk_load_crashed(loader, n, w)
    assert seq_scans() - before < 20, "the fill trigger scanned runs/steps row by row"
    assert scalar(conn, "select count(*) from pgflight.step_attempts where workspace_id is null") == 0
    set_clock(conn, 7200)
    assert scalar(conn, "select pgflight.reclaim_expired(5000)") == n  # and the load reclaims
