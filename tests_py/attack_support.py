"""
Helpers for test_scenarios_attack.py: an in-process worker on a thread (so a test can read its
heartbeat lags and patch its client), a recipe registry built per test, and the invariant-10
audit queries run after a chaotic mixed workload.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from pgflight.recipes import Registry, StepContext
from pgflight.worker import Worker

Conn = psycopg.Connection[Any]


def registry(**recipes: Callable[[StepContext], Any]) -> Registry:
    """A fresh registry holding `recipes` by name (the process-wide one stays untouched)."""
    reg = Registry()
    for name, fn in recipes.items():
        reg.add(name, fn)
    return reg


@contextlib.contextmanager
def running_worker(dsn: str, reg: Registry, **options: Any) -> Iterator[Worker]:
    """
    Run a :class:`Worker` on a thread for the duration of the block, then stop it gracefully.

    :param options: Worker keyword arguments (concurrency, lease_s, pool_size, ...).
    """
    options.setdefault("poll_s", 0.2)
    options.setdefault("grace_s", 2.0)
    w = Worker(dsn, reg, **options)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            w.run()
        except BaseException as e:  # surfaced after the block
            errors.append(e)

    t = threading.Thread(target=run, name="attack-worker", daemon=True)
    t.start()
    try:
        yield w
    finally:
        w.stop()
        t.join(20)
    assert not t.is_alive(), "the worker did not stop within 20 s"
    assert not errors, errors


def wait_until(fn: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.05) -> Any:
    """Poll `fn` until truthy; AssertionError after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(interval_s)


def p99(values: list[float]) -> float:
    """The 99th percentile (nearest rank) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


# Invariant 10 (docs/state_machine.md): what an audit of a finished workload must show. Each query
# returns offending ids.
AUDIT = {
    "a step of a finished run is not terminal": """
        select st.step_id from pgflight.step_status st join pgflight.runs r on r.id = st.run_id
         where r.status <> 'running' and st.status not in ('succeeded', 'dead_letter', 'cancelled')""",
    "a live attempt under a terminal run": """
        select a.id from pgflight.step_attempts a join pgflight.runs r on r.id = a.run_id
         where r.status <> 'running'
           and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')""",
    "a queued attempt at the ceiling": """
        select a.id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
         where a.status = 'queued' and s.failed_attempts >= s.max_attempts""",
    "an ended attempt without exactly one terminal event": """
        select a.id from pgflight.step_attempts a
          left join pgflight.run_events e on e.attempt_id = a.id and e.reason <> 'stale_result_rejected'
               and e.to_status in ('succeeded', 'failed', 'lease_expired', 'timed_out', 'dead_letter',
                                   'cancelled')
         where a.status in ('succeeded', 'failed', 'lease_expired', 'timed_out', 'dead_letter', 'cancelled')
         group by a.id having count(e.id) <> 1""",
    "an attempt whose last status event disagrees with its status": """
        select a.id from pgflight.step_attempts a
          join lateral (select e.to_status from pgflight.run_events e
                         where e.attempt_id = a.id and e.reason <> 'stale_result_rejected'
                           and e.to_status is not null
                         order by e.id desc limit 1) last on true
         where last.to_status <> a.status""",
    "succeeded after cancelled for one attempt": """
        select c.attempt_id from pgflight.run_events c join pgflight.run_events s
            on s.attempt_id = c.attempt_id and s.id > c.id and s.reason = 'succeeded'
         where c.to_status in ('cancelled', 'cancel_requested')""",
    # A replay, or a retry of a dead-lettered descendant, reopens the step and its ancestors
    # (_reopen_step writes its reason, 'replayed' or 'retried', on each): an ancestor that had
    # succeeded may then succeed once more.
    "a step that succeeded twice without a replay between": """
        select a.step_id from pgflight.step_attempts a where a.status = 'succeeded'
         group by a.step_id
        having count(*) > 1 + (select count(*) from pgflight.run_events e
                                where e.step_id = a.step_id and e.reason in ('replayed', 'retried'))""",
    "a finished run whose root is not terminal, or a running run whose steps are all terminal": """
        select r.id from pgflight.runs r join pgflight.step_status st on st.step_id = r.root_step_id
         where (r.status <> 'running') <> (st.status in ('succeeded', 'dead_letter', 'cancelled'))""",
}


def audit(conn: Conn) -> dict[str, list[Any]]:
    """Each audit query that finds something, with up to 20 offending ids (empty: all hold)."""
    bad = {}
    for name, query in AUDIT.items():
        found = [r[0] for r in conn.execute(query).fetchall()]
        if found:
            bad[name] = found[:20]
    return bad
