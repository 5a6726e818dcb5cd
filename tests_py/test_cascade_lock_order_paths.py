"""
The rest of the paths that end a step under a fail-fast parent follow the one lock order
(docs/locking.md): every live attempt the end may cancel is locked, deepest first then id, before
any `steps` row. Each test forces the bad interleaving against a sibling's completion (its
attempt, then the parent's `steps` row) with real connections: the worker and operator calls are
made by login roles over scram, the held row locks and the observation (pg_blocking_pids) by the
superuser. A path that took the siblings' attempts after the parent's row deadlocked (40P01), or,
in the sweep's last resort, swallowed the 40P01 and left the parent waiting for ever.

- release_step acknowledging a cancel (cancel_requested -> cancelled ends the step);
- a result PostgreSQL refuses (complete_step_text, complete_batch's text form: _complete_refusing);
- the sweep's last resort for a row that raised (_dead_letter_poisoned);
- a reopen (replay_from, retry_step) racing a cascade of the same subtree: the reopen's new
  attempt was created under the cascade's locked subtree and cancelled after the parent's row.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import Logins
from core_helpers import (
    WORKSPACE,
    Claim,
    Conn,
    Outcome,
    _call,
    backend_pid,
    claim,
    complete,
    heartbeat,
    invariant_violations,
    register,
    scalar,
    set_clock,
    submit,
)
from security_support import grant, login_connect

_recipes = itertools.count()


@dataclass
class Lanes:
    """Connections as the worker and operator logins of the test workspace, on the fake clock."""

    worker: Callable[[], Conn]
    operator: Callable[[], Conn]


@pytest.fixture
def lanes(eng: Conn, dsn: str, logins: Logins) -> Iterator[Lanes]:
    grant(eng, "pgf_worker_a", WORKSPACE, "worker")
    grant(eng, "pgf_operator_a", WORKSPACE, "operator")
    opened: list[Conn] = []

    def open_as(login: str) -> Callable[[], Conn]:
        def one() -> Conn:
            c = login_connect(logins.dsn(login, dsn), timeout_s=30)
            set_clock(c, 0)
            opened.append(c)
            return c

        return one

    yield Lanes(worker=open_as("pgf_worker_a"), operator=open_as("pgf_operator_a"))
    for c in opened:
        c.close()


@dataclass(frozen=True)
class Family:
    run_id: int
    parent_step: int
    parent_attempt: int
    steps: dict[str, int]  # key -> step id
    held: dict[str, Claim]  # key -> its claim (the children claimed)
    recipe: str  # the children's recipe prefix: recipe + key


def family(
    eng: Conn,
    wk: Conn,
    worker: int,
    children: dict[str, int],
    *,
    lease_s: dict[str, float] | None = None,
    claimed: tuple[str, ...] | None = None,
    fail_fast: bool = True,
) -> Family:
    """
    A parent (max_attempts 1) that spawned `children` (key -> max_attempts, backoff 0) with
    fail_fast and is parked on them; the children named in `claimed` (all by default) claimed by
    `worker` (a worker of the login `wk` is), each under a recipe of its own.
    """
    n = next(_recipes)
    recipe = f"ffp{n}_"
    sub = submit(eng, f"ffpparent{n}", max_attempts=1)
    (p,) = claim(wk, worker, 1, 60, [f"ffpparent{n}"])
    spawn = [
        {
            "key": k,
            "recipe": recipe + k,
            "input": {},
            "options": {"max_attempts": m, "backoff": {"base_s": 0, "jitter": 0}},
        }
        for k, m in children.items()
    ]
    wk.execute(
        "select * from pgflight.spawn_children(%s, %s, %s, %s)",
        [p.attempt_id, p.token, Jsonb(spawn), Jsonb({"fail_fast": fail_fast})],
    )
    held: dict[str, Claim] = {}
    for k in children:
        if claimed is None or k in claimed:
            (c,) = claim(wk, worker, 1, (lease_s or {}).get(k, 60), [recipe + k])
            held[k] = c
    steps = {
        str(k): int(i)
        for k, i in eng.execute(
            "select step_key, id from pgflight.steps where parent_id = %s", [sub.step_id]
        ).fetchall()
    }
    return Family(sub.run_id, sub.step_id, p.attempt_id, steps, held, recipe)


def blocked_by(
    observer: Conn, pid: int, blockers: set[int], future: Future[Any] | None = None, timeout_s: float = 15
) -> bool:
    """True once backend `pid` waits for exactly these backends; False if `future` is done first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if future is not None and future.done():
            return False
        if set(scalar(observer, "select pg_blocking_pids(%s)", [pid])) == blockers:
            return True
        time.sleep(0.005)
    raise AssertionError(f"backend {pid} did not wait for {blockers} within {timeout_s} s")


def status(eng: Conn, attempt_id: int) -> str:
    return str(scalar(eng, "select status from pgflight.step_attempts where id = %s", [attempt_id]))


def run_status(eng: Conn, run_id: int) -> str:
    return str(scalar(eng, "select status from pgflight.runs where id = %s", [run_id]))


def hold(y: Conn, worker: int, c: Claim) -> dict[int, str]:
    """Open a transaction on `y` that holds the attempt's row lock (a heartbeat, as a worker would)."""
    y.execute("begin")
    return heartbeat(y, worker, [c])


def complete_and_commit(y: Conn, c: Claim) -> Outcome:
    out = _call(lambda: complete(y, c))
    y.execute("rollback" if out.error else "commit")
    return out


def test_release_of_a_cancelled_child_locks_its_siblings_before_the_fail_fast_parent_row(
    eng: Conn, lanes: Lanes
) -> None:
    """
    C1 and C2 are leased children of a fail-fast parent; an operator cancels C1 (cancel_requested).
    Y holds C2's attempt (a completion under way). C1's worker releases it: the acknowledged
    cancel ends C1, which dead-letters the parent and cancels C2. The release waits for Y before
    any steps row; Y completes C2 (taking the parent's row) and commits; the release then ends
    C1 and the parent. Before, the release took the parent's row and then waited for C2's attempt
    while Y waited for that row: 40P01.
    """
    wk, x, y = lanes.worker(), lanes.worker(), lanes.worker()
    w = register(wk, "paths")
    fam = family(eng, wk, w, {"c1": 1, "c2": 1})
    c1, c2 = fam.held["c1"], fam.held["c2"]
    lanes.operator().execute("select * from pgflight.cancel_step(%s, 'test')", [fam.steps["c1"]])
    assert status(eng, c1.attempt_id) == "cancel_requested"
    assert hold(y, w, c2) == {c2.attempt_id: "held"}
    with ThreadPoolExecutor(max_workers=1) as pool:
        fx = pool.submit(
            _call,
            lambda: scalar(x, "select status from pgflight.release_step(%s, %s)", [c1.attempt_id, c1.token]),
        )
        assert blocked_by(eng, backend_pid(x), {backend_pid(y)}, fx)
        out_y = complete_and_commit(y, c2)
        out_x = fx.result(timeout=60)
    assert out_y.error is None, out_y
    assert out_x == Outcome(value="cancelled"), out_x
    assert status(eng, c2.attempt_id) == "succeeded"
    assert status(eng, c1.attempt_id) == "cancelled"
    assert status(eng, fam.parent_attempt) == "dead_letter"
    assert run_status(eng, fam.run_id) == "failed"
    assert invariant_violations(eng) == {}


@pytest.mark.parametrize("form", ["complete_step_text", "complete_batch_text"])
def test_a_refused_result_locks_the_fail_fast_siblings_before_the_parent_row(
    eng: Conn, lanes: Lanes, form: str
) -> None:
    """
    C1's worker sends a result PostgreSQL refuses (a NUL): C1 fails for good (result_refused),
    which dead-letters the fail-fast parent and cancels C2, whose completion Y holds. The refusal
    waits for Y before any steps row; Y completes C2 and commits; the refusal ends C1 and the
    parent. Before, _complete_refusing took C1's and the parent's rows first and then waited for
    C2's attempt while Y waited for the parent's row: 40P01.
    """
    wk, x, y = lanes.worker(), lanes.worker(), lanes.worker()
    w = register(wk, "paths")
    fam = family(eng, wk, w, {"c1": 3, "c2": 1})
    c1, c2 = fam.held["c1"], fam.held["c2"]
    refused = '{"text": "a\\u0000b"}'
    if form == "complete_step_text":
        query = "select status from pgflight.complete_step_text(%s, %s, %s)"
        args: list[Any] = [c1.attempt_id, c1.token, refused]
    else:
        query = "select outcome from pgflight.complete_batch(%s::bigint[], %s::bigint[], %s::text[])"
        args = [[c1.attempt_id], [c1.token], [refused]]
    assert hold(y, w, c2) == {c2.attempt_id: "held"}
    with ThreadPoolExecutor(max_workers=1) as pool:
        fx = pool.submit(_call, lambda: scalar(x, query, args))
        assert blocked_by(eng, backend_pid(x), {backend_pid(y)}, fx)
        out_y = complete_and_commit(y, c2)
        out_x = fx.result(timeout=60)
    assert out_y.error is None, out_y
    assert out_x.error is None and out_x.value in ("result_refused", "dead_letter"), out_x
    assert status(eng, c1.attempt_id) == "dead_letter"
    assert status(eng, c2.attempt_id) == "succeeded"
    assert status(eng, fam.parent_attempt) == "dead_letter"
    assert run_status(eng, fam.run_id) == "failed"
    assert invariant_violations(eng) == {}


def test_the_sweeps_last_resort_locks_the_fail_fast_siblings_before_the_parent_row(
    eng: Conn, lanes: Lanes
) -> None:
    """
    C1's lease lapses (C2's does not) and ending it raises (a trigger stands for any error the
    engine does not expect), so the sweep dead-letters C1 with that error (_dead_letter_poisoned),
    which dead-letters the fail-fast parent and cancels C2. The same trigger makes the last
    resort's own write of C1 wait on a lock the test holds; meanwhile Y takes C2's attempt (a
    completion under way). Now the last resort holds C2's attempt already (its cascade's locks come
    first): Y waits, the sweep ends C1 and the parent, C2 is cancel_requested and Y's worker
    acknowledges it. Before, the last resort held no sibling: Y took C2, the cascade took the
    parent's row and waited for C2 while Y's completion waited for that row; the 40P01 was caught
    by the last resort and the parent was never told of C1's end, so it waited for ever.
    """
    grant(eng, "pgf_operator_a", None, "operator")  # the reclaim is a sweep of every workspace
    wk, y = lanes.worker(), lanes.worker()
    sweeper = lanes.operator()
    set_clock(sweeper, 120)
    w = register(wk, "paths")
    fam = family(eng, wk, w, {"c1": 1, "c2": 1}, lease_s={"c1": 60, "c2": 600})
    c1, c2 = fam.held["c1"], fam.held["c2"]
    eng.execute(
        f"""
        create function public.poison_c1() returns trigger language plpgsql security definer as $$
        begin
          if new.reason = 'lease_expired' then
            raise exception 'poisoned row' using errcode = 'XX001';
          end if;
          perform pg_advisory_xact_lock_shared(4242);  -- the last resort's write waits here
          return new;
        end $$;
        create trigger poison_c1 before update on pgflight.step_attempts for each row
          when (new.id = {c1.attempt_id} and new.reason in ('lease_expired', 'engine_error'))
          execute function public.poison_c1();
        """
    )
    gate = psycopg.connect(eng.info.dsn, autocommit=True)
    try:
        gate.execute("select pg_advisory_lock(4242)")
        with ThreadPoolExecutor(max_workers=2) as pool:
            fs = pool.submit(_call, lambda: scalar(sweeper, "select pgflight.reclaim_expired(100)"))
            assert blocked_by(eng, backend_pid(sweeper), {backend_pid(gate)}, fs), fs.result()
            fy = pool.submit(_call, lambda: hold(y, w, c2))
            y_waits = blocked_by(eng, backend_pid(y), {backend_pid(sweeper)}, fy)
            if not y_waits:
                # Y holds C2 while the last resort has not locked it: its cascade will wait for Y
                assert fy.result(timeout=30) == Outcome(value={c2.attempt_id: "held"})
                gate.execute("select pg_advisory_unlock(4242)")
                blocked_by(eng, backend_pid(sweeper), {backend_pid(y)}, fs)
                out_y = complete_and_commit(y, c2)
                assert out_y.error is None, out_y
            else:
                gate.execute("select pg_advisory_unlock(4242)")
            out_s = fs.result(timeout=60)
            out_hold = fy.result(timeout=60)
    finally:
        gate.close()
    if y_waits:
        y.execute("commit")
    eng.execute("drop trigger poison_c1 on pgflight.step_attempts")  # (after Y's transaction)
    assert out_s == Outcome(value=1), out_s
    if y_waits:
        # the cascade cancelled C2 under Y: Y's heartbeat says so and its worker acknowledges it
        assert out_hold == Outcome(value={c2.attempt_id: "cancelled"}), out_hold
        assert (
            scalar(y, "select status from pgflight.release_step(%s, %s)", [c2.attempt_id, c2.token])
            == "cancelled"
        )
    assert status(eng, c1.attempt_id) == "dead_letter"
    assert (
        scalar(eng, "select reason from pgflight.step_attempts where id = %s", [c1.attempt_id])
        == "engine_error"
    )
    assert status(eng, fam.parent_attempt) == "dead_letter"
    assert run_status(eng, fam.run_id) == "failed"
    assert invariant_violations(eng) == {}


def test_a_replay_under_a_fail_fast_cascade_waits_for_it_or_is_seen_by_it(eng: Conn, lanes: Lanes) -> None:
    """
    C2 succeeded; C1 is leased. X fails C1 for good: its cascade locks the subtree (C1 and the
    parent's attempt), then waits for C1's steps row, which B holds. An operator replays C2 now.
    The replay waits for the cascade before any steps row (it takes the parked parent's attempt
    FOR KEY SHARE); B commits, the cascade dead-letters the parent and the run fails; the replay
    then reopens C2, the parent and the run; C2's new attempt is claimed and completed and the
    parent wakes. Before, the replay committed C2's new attempt under the cascade's locked
    subtree; Y leased it and held it; the cascade, holding the parent's row, waited for it while
    Y's completion waited for that row: 40P01.
    """
    wk, x, y = lanes.worker(), lanes.worker(), lanes.worker()
    op = lanes.operator()
    w = register(wk, "paths")
    fam = family(eng, wk, w, {"c1": 1, "c2": 1})
    c1, c2 = fam.held["c1"], fam.held["c2"]
    complete(wk, c2)
    b = psycopg.connect(eng.info.dsn)
    try:
        b.execute("select 1 from pgflight.steps where id = %s for update", [fam.steps["c1"]])
        with ThreadPoolExecutor(max_workers=2) as pool:
            fx = pool.submit(
                _call,
                lambda: scalar(
                    x,
                    "select outcome from pgflight.fail_step(%s, %s, '{}', '{\"retryable\": false}')",
                    [c1.attempt_id, c1.token],
                ),
            )
            assert blocked_by(eng, backend_pid(x), {backend_pid(b)}, fx)
            fr = pool.submit(_call, lambda: scalar(op, "select pgflight.replay_from(%s)", [fam.steps["c2"]]))
            if not blocked_by(eng, backend_pid(op), {backend_pid(x)}, fr):
                # the replay committed inside the cascade's subtree: Y leases the new attempt and
                # holds it while the cascade goes on to the parent's row
                (c2b,) = claim(y, w, 1, 60, [fam.recipe + "c2"])
                assert hold(y, w, c2b) == {c2b.attempt_id: "held"}
                b.commit()
                blocked_by(eng, backend_pid(x), {backend_pid(y)}, fx)
                out_y = complete_and_commit(y, c2b)
                assert out_y.error is None, out_y
            else:
                b.commit()
            out_x = fx.result(timeout=60)
            out_r = fr.result(timeout=60)
    finally:
        b.close()
    assert out_x == Outcome(value="dead_letter"), out_x
    assert out_r.error is None, out_r
    # the replay came after the cascade: C2 runs again, then the parent, and the run succeeds
    (c2b,) = claim(y, w, 1, 60, [fam.recipe + "c2"])
    complete(y, c2b)
    assert run_status(eng, fam.run_id) == "running"
    got = claim(
        y, w, 1, 60, [str(scalar(eng, "select recipe from pgflight.steps where id = %s", [fam.parent_step]))]
    )
    assert len(got) == 1
    complete(y, got[0])
    assert run_status(eng, fam.run_id) == "succeeded"
    assert status(eng, fam.parent_attempt) == "dead_letter"
    assert invariant_violations(eng) == {}
