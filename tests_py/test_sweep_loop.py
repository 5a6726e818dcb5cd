"""
sweep_loop: a pass ends in bounded time whatever another session holds, a failing pass
warns and the loop goes on, and two loops never sweep together (the second waits, then takes over).

The loop runs in the test's session (no pg_cron needed): CALL pgflight.sweep_loop(duration, interval).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg

from conftest import ConnectFactory
from core_helpers import (
    at,
    attempt,
    claim,
    claim_one,
    complete_batch,
    register,
    scalar,
    set_clock,
    setup_engine,
    submit,
    submit_many,
)


def _warnings(c: psycopg.Connection[tuple[object, ...]]) -> list[tuple[str | None, str | None]]:
    """Collect (SQLSTATE, message) of every notice the connection receives."""
    got: list[tuple[str | None, str | None]] = []
    c.add_notice_handler(lambda d: got.append((d.sqlstate, d.message_primary)))
    return got


def test_a_pass_blocked_by_a_held_row_lock_times_out_warns_and_the_next_pass_reclaims(
    connect: ConnectFactory,
) -> None:
    """C16 under a client that holds the step's row: the pass gives up after lock_timeout, not stalls."""
    c = connect(timeout_s=20)
    setup_engine(c)
    w = register(c)
    sub = submit(c, "victim", max_attempts=3)
    claim_one(c, w, lease_s=1, recipes=["victim"])
    holder = connect(autocommit=False)
    holder.execute("select 1 from pgflight.steps where id = %s for update", [sub.step_id])
    holder.execute("select 1 from pgflight.runs where id = %s for update", [sub.run_id])

    sweeper = connect(timeout_s=20)
    set_clock(sweeper, 3600)  # every lease has lapsed for this session's sweeps
    sweeper.execute("set pgflight.sweep_lock_timeout = '300ms'")
    notices = _warnings(sweeper)
    threading.Timer(1.5, holder.commit).start()
    t0 = time.monotonic()
    sweeper.execute("call pgflight.sweep_loop(3, 0.2)")
    took = time.monotonic() - t0

    # The reclaim handles each row in a block of its own: a row whose lock times out
    # (55P03) is left for the next pass inside _reclaim, so the pass itself may end without the
    # loop's warning; any warning there is must still be that lock timeout, never a hang.
    failed = [n for n in notices if n[1] and "sweep pass failed" in n[1]]
    assert all("55P03" in (m or "") for _, m in failed), failed  # lock_not_available, not a hang
    assert took < 8, f"the loop of 3 s must end in bounded time, took {took:.1f} s"
    assert attempt(c, sub.attempt_id)["status"] == "lease_expired", (
        "a later pass reclaims once the lock is gone"
    )


def test_a_second_loop_waits_for_the_first_and_gives_up_when_its_own_time_is_over(
    connect: ConnectFactory,
) -> None:
    first, second, third = connect(timeout_s=20), connect(timeout_s=20), connect(timeout_s=20)
    short = _warnings(second)
    t_first = threading.Thread(target=first.execute, args=("call pgflight.sweep_loop(2.5, 0.2)",))
    t_first.start()
    time.sleep(0.5)  # the first loop holds the lock
    t0 = time.monotonic()
    second.execute("call pgflight.sweep_loop(0.5, 0.2)")  # ends before the first: never sweeps
    assert any(m and "another sweep loop" in m for _, m in short), short
    third.execute("call pgflight.sweep_loop(6, 5)")  # waits, takes over, one pass, ends at its end
    took_third = time.monotonic() - t0
    t_first.join(10)
    assert not t_first.is_alive()
    held = third.execute(
        "select count(*) from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()"
    ).fetchone()
    assert held == (0,), "the loop releases its lock when it ends"
    assert took_third >= 1.5, "the third loop must not start sweeping while the first still runs"


def test_the_loop_purges_finished_runs_past_retention_in_batches_without_waiting_between_them(
    connect: ConnectFactory,
) -> None:
    """Retention with the fake clock: nothing younger than settings.purge_after_s, then every batch."""
    c = connect(timeout_s=20)
    setup_engine(c)
    w = register(c)
    submit_many(c, 120)
    complete_batch(c, claim(c, w, 120, recipes=["noop"]))
    sweeper = connect(timeout_s=20)
    sweeper.execute("set pgflight.sweep_purge_batch = 50")

    set_clock(sweeper, datetime.now(UTC) + timedelta(days=1))  # retention is 7 days
    sweeper.execute("call pgflight.sweep_loop(0.5, 5)")
    assert scalar(c, "select count(*) from pgflight.runs") == 120

    set_clock(sweeper, at(0))  # 2030: every run is past retention
    t0 = time.monotonic()
    sweeper.execute("call pgflight.sweep_loop(0.5, 5)")  # batches of 50, 50, 20 in one call
    took = time.monotonic() - t0
    assert scalar(c, "select count(*) from pgflight.runs") == 0
    assert scalar(c, "select count(*) from pgflight.step_attempts") == 0
    assert scalar(c, "select count(*) from pgflight.run_events") == 0
    assert took < 5, "a full batch means a backlog: the next pass must not sleep the interval"


def test_the_loop_survives_a_pass_that_raises_and_the_next_pass_does_the_work(
    connect: ConnectFactory,
) -> None:
    """An error injected into the first pass rolls that pass back; the loop goes on."""
    c = connect(timeout_s=20)
    setup_engine(c)
    w = register(c)
    sub = submit(c, "victim", max_attempts=3)
    claim_one(c, w, lease_s=1, recipes=["victim"])
    # fails the first pass only: a sequence is not rolled back with the pass
    c.execute(
        """
        create sequence public.passes;
        grant usage on sequence public.passes to public;
        create function public.fail_first_pass() returns trigger language plpgsql as $$
        begin
          if nextval('public.passes') = 1 then raise exception 'injected fault'; end if;
          return new;
        end $$;
        create trigger fail_first_pass before update on pgflight.sweep_state
          for each row execute function public.fail_first_pass();
        """
    )
    sweeper = connect(timeout_s=20)
    set_clock(sweeper, 3600)
    notices = _warnings(sweeper)
    sweeper.execute("call pgflight.sweep_loop(1.2, 0.5)")
    assert any(m and "sweep pass failed" in m and "injected fault" in m for _, m in notices), notices
    assert attempt(c, sub.attempt_id)["status"] == "lease_expired", "a later pass of the same loop reclaims"
    assert scalar(c, "select last_pass_at is not null from pgflight.sweep_state")


def test_passes_keep_a_fixed_beat_up_to_the_end_of_the_loop(connect: ConnectFactory) -> None:
    """No gap at the loop's end: the last pass is the last beat before p_duration_s."""
    sweeper = connect(timeout_s=20)
    t0 = time.monotonic()
    sweeper.execute("call pgflight.sweep_loop(2, 0.5)")
    took = time.monotonic() - t0
    last = scalar(
        sweeper, "select extract(epoch from clock_timestamp() - last_pass_at) from pgflight.sweep_state"
    )
    assert 1.4 <= took < 4, took  # beats at 0, 0.5, 1, 1.5: it ends after the 1.5 s pass
    assert float(last) < 1.0, "the last pass ran at the last beat, not a whole interval before the end"
