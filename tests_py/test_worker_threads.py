"""
How results cross from the worker's threads to its event loop (the worker's CPU per
step): a burst of results wakes the loop once (:class:`~pgflight.worker.Inbox`), a sync recipe the
worker gave up on before a thread took it never runs (:class:`~pgflight.worker.StepThreads`), a
step's cancelled event wakes its waiters as a threading.Event does, and ``complete_batch`` stores
JSON text made beforehand exactly as it stores the values themselves.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

import psycopg
from psycopg.types.json import Jsonb

from pgflight import db
from pgflight.heartbeat import Held
from pgflight.worker import Inbox, StepThreads, Wake

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """
    asyncio.run in a thread of its own: in a pytest process that already ran a browser test,
    Playwright's sync API keeps an event loop running in the main thread, where asyncio.run refuses.
    """
    out: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(asyncio.run(coro))
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return out[0]


Conn = psycopg.Connection[Any]


def test_a_burst_of_results_from_threads_wakes_the_loop_once() -> None:
    async def main() -> tuple[int, list[Any]]:
        loop = asyncio.get_running_loop()
        wakes = 0
        real = loop.call_soon_threadsafe

        def counting(*args: Any) -> Any:
            nonlocal wakes
            wakes += 1
            return real(*args)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
        inbox = Inbox(loop)
        futs = [loop.create_future() for _ in range(4)]
        futs[2].cancel()  # its waiter gave up: the result is dropped, the others still arrive

        def post() -> None:
            inbox.put(futs[0], None, "a")
            inbox.put(futs[1], ValueError("bad"), None)
            inbox.put(futs[2], None, "late")
            inbox.put(futs[3], None, None)

        t = threading.Thread(target=post)
        t.start()
        t.join()  # every put happens before the loop runs again: one delivery takes them all
        got = await asyncio.gather(*futs, return_exceptions=True)
        return wakes, got

    wakes, got = _run(main())
    assert wakes == 1
    assert got[0] == "a" and isinstance(got[1], ValueError) and got[3] is None
    assert isinstance(got[2], asyncio.CancelledError)


def test_a_stop_iteration_from_a_thread_fails_its_own_future_and_not_the_ones_after_it() -> None:
    """A future refuses StopIteration; passed on as it is, the step (and the rest of the burst) hung."""

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        inbox = Inbox(loop)
        futs = [loop.create_future() for _ in range(2)]

        def post() -> None:
            inbox.put(futs[0], StopIteration("from a recipe"), None)
            inbox.put(futs[1], None, "next")

        t = threading.Thread(target=post)
        t.start()
        t.join()
        return await asyncio.wait_for(asyncio.gather(*futs, return_exceptions=True), 30)

    got = _run(main())
    assert isinstance(got[0], RuntimeError) and isinstance(got[0].__cause__, StopIteration)
    assert got[1] == "next"


def test_the_claim_loops_wake_flag_returns_at_once_when_set_and_after_the_timeout_when_not() -> None:
    async def main() -> tuple[bool, bool, bool]:
        wake = Wake(asyncio.get_running_loop())
        timed_out = await wake.wait(0.01)
        asyncio.get_running_loop().call_soon(wake.set)
        woken = await wake.wait(60)
        already = await wake.wait(60)  # still set: no wait at all
        return timed_out, woken, already

    assert _run(main()) == (False, True, True)


class _Recorder:
    """Stands in for the Inbox: records what the step threads hand back."""

    def __init__(self) -> None:
        self.got: list[tuple[Any, BaseException | None, Any]] = []
        self.any = threading.Event()

    def put(self, fut: Any, exc: BaseException | None, value: Any) -> None:
        self.got.append((fut, exc, value))
        self.any.set()


def test_a_sync_recipe_given_up_before_a_thread_took_it_never_runs() -> None:
    threads = StepThreads(1, "test-step")
    inbox = _Recorder()
    release, ran = threading.Event(), list[str]()
    try:
        busy = threads.submit(release.wait, (30,), "busy", inbox)  # type: ignore[arg-type]
        queued = threads.submit(ran.append, ("queued ran",), "queued", inbox)  # type: ignore[arg-type]
        other = threads.submit(ran.append, ("other ran",), "other", inbox)  # type: ignore[arg-type]
        threads.give_up(queued)  # e.g. its task was cancelled (lease lost, shutdown)
        # and one the worker abandons before it started: nothing to abandon, no thread replaced
        assert threads.abandon(other) is None
        assert threads.abandoned_total == 0
        release.set()
        assert inbox.any.wait(10)
        end = threading.Event()
        threads.submit(end.set, (), "end", inbox)  # type: ignore[arg-type]
        assert end.wait(10)
    finally:
        release.set()
        threads.shutdown()
    assert ran == []
    assert [fut for fut, _, _ in inbox.got] == ["busy", "end"]
    assert busy.finished and not queued.started and not other.started


def test_an_abandoned_running_recipe_is_replaced_and_its_late_result_still_handed_back() -> None:
    threads = StepThreads(1, "test-step")
    inbox = _Recorder()
    release = threading.Event()
    try:
        stuck = threads.submit(release.wait, (30,), "stuck", inbox)  # type: ignore[arg-type]
        while not stuck.started:
            threading.Event().wait(0.001)
        assert threads.abandon(stuck) == 1
        assert threads.abandon(stuck) is None  # once
        done = threading.Event()
        threads.submit(done.set, (), "next", inbox)  # type: ignore[arg-type]
        assert done.wait(10)  # the replacement thread serves while the stuck one still runs
        release.set()
        while threads.abandoned_alive:
            threading.Event().wait(0.001)
    finally:
        release.set()
        threads.shutdown()
    assert threads.abandoned_total == 1
    assert sorted(str(fut) for fut, _, _ in inbox.got) == ["next", "stuck"]


TRICKY: list[Any] = [
    None,
    {"quote": 'a"b', "backslash": "c\\d", "both": '\\"', "braces": "{x,y}", "comma": "1,2"},
    ["é", "☃", "\U0001f600", " leading and trailing ", "NULL", ""],
    "\\u0000 as six characters",
    {"nested": {"deep": [1, 2.5, -3, True, False, None]}},
    "",
    0,
]


def test_complete_batch_stores_json_text_made_beforehand_as_it_stores_the_values(conn: Conn) -> None:
    db.create_workspace(conn, "prejson")
    subs = [db.submit_run(conn, "prejson", "noop", {"i": i}) for i in range(2 * len(TRICKY))]
    wid = db.register_worker(conn, "prejson-worker", hostname="h", pid=1, recipes=["noop"])
    claims = db.claim_batch(conn, wid, batch_size=len(subs), lease_s=30, recipes=["noop"], start=True)
    by_step = {c.step_id: c for c in claims}
    as_values = [by_step[s.step_id] for s in subs[: len(TRICKY)]]
    as_text = [by_step[s.step_id] for s in subs[len(TRICKY) :]]
    texts = [None if v is None else Jsonb(json.dumps(v, ensure_ascii=False), dumps=str) for v in TRICKY]
    for group, results in ((as_values, TRICKY), (as_text, texts)):
        out = db.complete_batch(
            conn, [c.attempt_id for c in group], [c.fencing_token for c in group], results
        )
        assert {o.outcome for o in out} == {"succeeded"}
    rows = conn.execute(
        "select id, result is null, result from pgflight.step_attempts where id = any(%s)",
        [[c.attempt_id for c in claims]],
    ).fetchall()
    stored = {r[0]: (r[1], r[2]) for r in rows}
    for value, a, b in zip(TRICKY, as_values, as_text, strict=True):
        assert stored[a.attempt_id] == stored[b.attempt_id] == (value is None, value)


def _wait_into(ev: threading.Event, woke: list[bool]) -> None:
    woke.append(ev.wait(30))


def test_a_steps_cancelled_event_wakes_every_waiter_whichever_comes_first() -> None:
    """
    Held.cancelled (a recipe's ``ctx.cancelled``) makes its condition variable on the first wait
    only; it must still behave as a threading.Event when the heartbeat thread sets it
    while recipe threads are just starting to wait, before or after, and after a clear.
    """
    for _ in range(200):
        ev = Held(cast(Any, None)).cancelled
        assert isinstance(ev, threading.Event) and not ev.is_set()
        woke: list[bool] = []
        waiters = [threading.Thread(target=_wait_into, args=(ev, woke)) for _ in range(3)]
        for t in waiters:
            t.start()
        setter = threading.Thread(target=ev.set)
        setter.start()
        late = ev.wait(30)  # this thread's wait races the set too
        for t in [setter, *waiters]:
            t.join(30)
        assert late and woke == [True, True, True] and ev.is_set()
    ev.clear()
    assert not ev.is_set() and ev.wait(0.01) is False
    threading.Timer(0.05, ev.set).start()
    assert ev.wait(30) is True
