"""
One lock order for every path that ends or cancels steps (docs/locking.md): a fail-fast cascade
locks every live attempt it may cancel, including an attempt that was committed after the
cascade started (a sibling's retry), before any `steps` row, so it never waits for an attempt
while holding the parent's row, which a completion of that attempt needs next.

The bad interleavings are forced with row locks held by open transactions; which backend waits
for whom is observed with pg_blocking_pids, never a sleep. Every connection has a
statement_timeout and a lock_timeout (conftest `connect`); the deadlock detector (deadlock_timeout,
1 s) answers first, so a cycle shows as 40P01. A randomized stress of the same shapes ends with
zero 40P01.
"""

# ruff: noqa: B023  (each lambda runs within its own loop iteration)

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from core_helpers import (
    Claim,
    Conn,
    Outcome,
    _call,
    backend_pid,
    claim,
    complete,
    invariant_violations,
    register,
    scalar,
    set_clock,
    submit,
)

ConnectFactory = Callable[..., Conn]
_recipes = itertools.count()


@dataclass(frozen=True)
class Family:
    """A fail-fast parent parked on its children, each child claimed (or left queued)."""

    run_id: int
    parent_step: int
    parent_attempt: int
    children: dict[str, Claim | None]  # key -> its claim (None: left queued)
    recipe: str  # the children's recipe prefix: recipe + key


def _family(
    eng: Conn, worker: int, children: dict[str, int], *, claimed: tuple[str, ...] | None = None
) -> Family:
    """
    Submit a parent (max_attempts 1), claim it, spawn children (key -> max_attempts, backoff 0) with
    fail_fast, and claim the children named in `claimed` (all by default), each under a recipe of
    its own so a claim takes exactly that child.
    """
    n = next(_recipes)
    recipe = f"ff{n}_"
    sub = submit(eng, f"ffparent{n}", max_attempts=1)
    got = claim(eng, worker, 1, 60, [f"ffparent{n}"])
    assert len(got) == 1
    spawn = [
        {
            "key": k,
            "recipe": recipe + k,
            "input": {},
            "options": {"max_attempts": m, "backoff": {"base_s": 0, "jitter": 0}},
        }
        for k, m in children.items()
    ]
    eng.execute(
        "select * from pgflight.spawn_children(%s, %s, %s, %s)",
        [got[0].attempt_id, got[0].token, Jsonb(spawn), Jsonb({"fail_fast": True})],
    )
    held: dict[str, Claim | None] = {}
    for k in children:
        if claimed is None or k in claimed:
            c = claim(eng, worker, 1, 60, [recipe + k])
            assert len(c) == 1
            held[k] = c[0]
        else:
            held[k] = None
    return Family(sub.run_id, sub.step_id, got[0].attempt_id, held, recipe)


def _blocked_by(
    observer: Conn, pid: int, blockers: set[int], future: Future[Any] | None = None, timeout_s: float = 10
) -> bool:
    """Wait until backend `pid` waits for exactly these backends (or `future` is done first)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if future is not None and future.done():
            return False
        got = scalar(observer, "select pg_blocking_pids(%s)", [pid])
        if set(got) == blockers:
            return True
        time.sleep(0.005)
    raise AssertionError(f"backend {pid} did not wait for {blockers} within {timeout_s} s")


def _fail(conn: Conn, c: Claim, **options: Any) -> str:
    return str(
        scalar(
            conn,
            "select outcome from pgflight.fail_step(%s, %s, '{}', %s)",
            [c.attempt_id, c.token, Jsonb(options)],
        )
    )


def _status(conn: Conn, attempt_id: int) -> str:
    return str(scalar(conn, "select status from pgflight.step_attempts where id = %s", [attempt_id]))


def _next_attempt(conn: Conn, step_id: int) -> int:
    return int(scalar(conn, "select max(id) from pgflight.step_attempts where step_id = %s", [step_id]))


def _clocked(connect: ConnectFactory, n: int, timeout_s: float = 20) -> list[Conn]:
    out = []
    for _ in range(n):
        c = connect(timeout_s)
        set_clock(c, 0)
        out.append(c)
    return out


def test_fail_fast_cascade_locks_a_sibling_retry_committed_after_it_started(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    The forced interleaving: X fails C1 for good (its cascade will cancel C2) while B1 holds C2's
    attempt and B2 holds C1's steps row. B1 fails C2 with a retry and commits (C2' queued after the
    cascade began); Y claims what it can of C2' and holds it; B2 commits; Y completes what it holds.
    X dead-letters the parent without a deadlock: the cascade locked C2' before any steps row, so
    Y's claim found nothing to take (or, had it taken C2', X would have waited for Y before the
    parent's row), and C2' is cancelled with the parent.
    """
    w = register(eng)
    fam = _family(eng, w, {"c1": 1, "c2": 2})
    c1, c2 = fam.children["c1"], fam.children["c2"]
    assert c1 is not None and c2 is not None
    x, y, b1, b2 = _clocked(connect, 4)
    c1_step = int(scalar(eng, "select step_id from pgflight.step_attempts where id = %s", [c1.attempt_id]))
    c2_step = int(scalar(eng, "select step_id from pgflight.step_attempts where id = %s", [c2.attempt_id]))
    b2.execute("begin")
    b2.execute("select 1 from pgflight.steps where id = %s for update", [c1_step])
    b1.execute("begin")
    b1.execute("select 1 from pgflight.step_attempts where id = %s for update", [c2.attempt_id])
    with ThreadPoolExecutor(max_workers=2) as pool:
        fx = pool.submit(_call, lambda: _fail(x, c1))
        assert _blocked_by(eng, backend_pid(x), {backend_pid(b1)}, fx)
        assert _fail(b1, c2) == "retry"
        b1.execute("commit")
        assert _blocked_by(eng, backend_pid(x), {backend_pid(b2)}, fx)
        c2b = _next_attempt(eng, c2_step)
        got = claim(y, w, 1, 60, [fam.recipe + "c2"])
        y.execute("begin")
        for g in got:
            y.execute("select 1 from pgflight.step_attempts where id = %s for update", [g.attempt_id])
        b2.execute("commit")
        if got:
            # Y leased C2': the cascade must not wait for it while holding the parent's row
            _blocked_by(eng, backend_pid(x), {backend_pid(y)}, fx)

        def complete_got() -> int:
            for g in got:
                complete(y, g)
            return len(got)

        out_y = pool.submit(_call, complete_got).result(timeout=30)
        y.execute("rollback" if out_y.error else "commit")
        out_x = fx.result(timeout=30)
    assert out_x == Outcome(value="dead_letter"), out_x
    assert out_y.error is None, out_y
    assert got == []  # C2' was the cascade's before Y could lease it
    assert _status(eng, c2b) == "cancelled"
    assert _status(eng, fam.parent_attempt) == "dead_letter"
    assert scalar(eng, "select status from pgflight.runs where id = %s", [fam.run_id]) == "failed"
    assert c1_step != c2_step


def test_fail_fast_cascade_waits_for_a_leased_retry_before_the_parent_row(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    As above, but Y leases C2' and holds it before the cascade has finished its first locks (B3
    keeps the parent's attempt). The cascade then finds C2' held by Y: it gives back what it
    locked and waits for Y, never holding a steps row meanwhile. Y completes C2' (its completion
    takes the parent's steps row) and commits; X then dead-letters the parent. No 40P01.
    """
    w = register(eng)
    fam = _family(eng, w, {"c1": 1, "c2": 2})
    c1, c2 = fam.children["c1"], fam.children["c2"]
    assert c1 is not None and c2 is not None
    x, y, b1, b3 = _clocked(connect, 4)
    c2_step = int(scalar(eng, "select step_id from pgflight.step_attempts where id = %s", [c2.attempt_id]))
    b3.execute("begin")
    b3.execute("select 1 from pgflight.step_attempts where id = %s for update", [fam.parent_attempt])
    b1.execute("begin")
    b1.execute("select 1 from pgflight.step_attempts where id = %s for update", [c2.attempt_id])
    with ThreadPoolExecutor(max_workers=2) as pool:
        fx = pool.submit(_call, lambda: _fail(x, c1))
        assert _blocked_by(eng, backend_pid(x), {backend_pid(b1)}, fx)
        assert _fail(b1, c2) == "retry"
        b1.execute("commit")
        assert _blocked_by(eng, backend_pid(x), {backend_pid(b3)}, fx)
        got = claim(y, w, 1, 60, [fam.recipe + "c2"])
        assert len(got) == 1 and got[0].attempt_id == _next_attempt(eng, c2_step)
        y.execute("begin")
        y.execute("select 1 from pgflight.step_attempts where id = %s for update", [got[0].attempt_id])
        b3.execute("commit")
        assert _blocked_by(eng, backend_pid(x), {backend_pid(y)}, fx)
        out_y = _call(lambda: complete(y, got[0]))
        y.execute("rollback" if out_y.error else "commit")
        out_x = fx.result(timeout=30)
    assert out_y.error is None, out_y
    assert out_x == Outcome(value="dead_letter"), out_x
    assert _status(eng, got[0].attempt_id) == "succeeded"
    assert _status(eng, fam.parent_attempt) == "dead_letter"


def test_cancel_step_of_a_fail_fast_child_locks_the_siblings_before_the_parent_row(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    cancel_step of a queued child of a fail-fast parent dead-letters the parent and cancels the
    siblings. Y holds a sibling's attempt (a completion under way). The cancel waits for Y before
    it takes the parent's steps row; Y completes (taking the parent's row) and commits; the cancel
    then ends the parent. No 40P01 on either side.
    """
    w = register(eng)
    fam = _family(eng, w, {"c1": 1, "c2": 1}, claimed=("c2",))
    c2 = fam.children["c2"]
    assert c2 is not None
    c1_step = int(
        scalar(
            eng,
            "select s.id from pgflight.steps s where s.parent_id = %s and s.step_key = 'c1'",
            [fam.parent_step],
        )
    )
    op, y = _clocked(connect, 2)
    y.execute("begin")
    y.execute("select 1 from pgflight.step_attempts where id = %s for update", [c2.attempt_id])
    with ThreadPoolExecutor(max_workers=1) as pool:
        fo = pool.submit(
            _call, lambda: op.execute("select * from pgflight.cancel_step(%s, 'test')", [c1_step])
        )
        assert _blocked_by(eng, backend_pid(op), {backend_pid(y)}, fo)
        out_y = _call(lambda: complete(y, c2))
        y.execute("rollback" if out_y.error else "commit")
        out_o = fo.result(timeout=30)
    assert out_y.error is None, out_y
    assert out_o.error is None, out_o
    assert _status(eng, c2.attempt_id) == "succeeded"
    assert _status(eng, fam.parent_attempt) == "dead_letter"


def test_randomized_stress_of_cascades_retries_completions_cancels_and_reclaims_has_no_deadlock(
    eng: Conn, connect: ConnectFactory
) -> None:
    """
    Fail-fast families (a parent and 2-5 children, max_attempts 1-3, backoff 0, some with a 10 s
    max_runtime_s) made and raced by four workers that claim children and complete, fail with a
    retry, fail for good, send a result PostgreSQL refuses (complete_step_text) or release at
    random, and acknowledge a cancel (release_step) when a write answers ZF002 (a worker with
    nothing to claim makes a new family), an operator that cancels random children (now and then
    a whole run) and replays random children, and a sweeper that reclaims leases taken with a 1 s
    lease and deadlines past (its clock 30 s ahead), for about 15 s. Every call ends, none with
    40P01 or a timeout (only ZF001/ZF002/ZF003/ZF006 refusals of a stale, cancelled or running
    step), and the invariants hold.
    """
    errors: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    lock = threading.Lock()
    children: list[int] = []
    runs: list[int] = []
    stop = time.monotonic() + 15

    def note(kind: str, out: Outcome) -> None:
        with lock:
            calls[kind] += 1
            if out.error:
                errors[f"{kind}:{out.error}"] += 1

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        c = connect(20)
        set_clock(c, 0)
        wid = register(c, f"stress{seed}")
        while time.monotonic() < stop:
            got = claim(c, wid, rng.randint(1, 4), rng.choice([1, 60, 60]), ["sc"])
            if not got:
                n = next(_recipes)
                sub = submit(c, f"sp{n}", max_attempts=1)
                (p,) = claim(c, wid, 1, 60, [f"sp{n}"])
                spawn = [
                    {
                        "key": f"k{i}",
                        "recipe": "sc",
                        "input": {},
                        "options": {
                            "max_attempts": rng.randint(1, 3),
                            "backoff": {"base_s": 0, "jitter": 0},
                            **({"max_runtime_s": 10} if rng.random() < 0.3 else {}),
                        },
                    }
                    for i in range(rng.randint(2, 5))
                ]
                c.execute(
                    "select * from pgflight.spawn_children(%s, %s, %s, %s)",
                    [p.attempt_id, p.token, Jsonb(spawn), Jsonb({"fail_fast": True})],
                )
                ids = [
                    r[0]
                    for r in c.execute(
                        "select id from pgflight.steps where parent_id = %s", [sub.step_id]
                    ).fetchall()
                ]
                with lock:
                    children.extend(ids)
                    runs.append(sub.run_id)
                continue
            for g in got:
                r = rng.random()
                if r < 0.4:
                    out = _call(lambda: complete(c, g))
                    note("complete", out)
                elif r < 0.7:
                    out = _call(lambda: _fail(c, g))
                    note("fail_retry", out)
                elif r < 0.85:
                    out = _call(lambda: _fail(c, g, retryable=False))
                    note("fail_dead", out)
                elif r < 0.93:
                    out = _call(
                        lambda: c.execute(
                            "select * from pgflight.complete_step_text(%s, %s, %s)",
                            [g.attempt_id, g.token, '{"text": "a\\u0000b"}'],
                        )
                    )
                    note("refused", out)
                else:
                    out = _call(
                        lambda: c.execute(
                            "select * from pgflight.release_step(%s, %s)", [g.attempt_id, g.token]
                        )
                    )
                    note("release", out)
                if out.error == "ZF002":
                    # cancelled under the worker: it acknowledges the cancel, which ends the step
                    note(
                        "release_cancel",
                        _call(
                            lambda: c.execute(
                                "select * from pgflight.release_step(%s, %s)", [g.attempt_id, g.token]
                            )
                        ),
                    )

    def operator() -> None:
        rng = random.Random(99)
        c = connect(20)
        set_clock(c, 0)
        while time.monotonic() < stop:
            with lock:
                sid = rng.choice(children) if children else None
                rid = rng.choice(runs) if runs and rng.random() < 0.2 else None
            if rid is not None:
                note(
                    "cancel_run",
                    _call(lambda: c.execute("select * from pgflight.cancel_run(%s, 'stress')", [rid])),
                )
            elif sid is not None and rng.random() < 0.4:
                note("replay", _call(lambda: c.execute("select pgflight.replay_from(%s)", [sid])))
            elif sid is not None:
                note(
                    "cancel_step",
                    _call(lambda: c.execute("select * from pgflight.cancel_step(%s, 'stress')", [sid])),
                )
            time.sleep(0.03)

    def sweeper() -> None:
        c = connect(20)
        set_clock(c, 30)
        while time.monotonic() < stop:
            note("reclaim", _call(lambda: c.execute("select pgflight.reclaim_expired(50)")))
            time.sleep(0.01)

    fns: list[Callable[[], None]] = [lambda s=s: worker(s) for s in range(4)] + [operator, sweeper]
    with ThreadPoolExecutor(max_workers=len(fns)) as pool:
        for f in [pool.submit(fn) for fn in fns]:
            f.result(timeout=90)
    bad = {k: v for k, v in errors.items() if k.split(":")[1] not in ("ZF001", "ZF002", "ZF003", "ZF006")}
    assert bad == {}, (bad, calls)
    assert calls["fail_dead"] > 30 and calls["fail_retry"] > 50 and calls["complete"] > 50, calls
    assert calls["refused"] > 10 and calls["release"] > 10 and calls["replay"] > 10, calls
    assert calls["release_cancel"] > 0, calls
    assert invariant_violations(eng) == {}
