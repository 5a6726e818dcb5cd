"""
A graceful stop: no more claims; running steps get ``grace_s`` seconds to finish, the rest are
released (no attempt spent, C39); the completions already queued go out; the worker deregisters.
SIGKILL loses nothing either: the leases lapse and the steps are reclaimed elsewhere.
"""

from __future__ import annotations

import asyncio

from pgflight import db
from pgflight.heartbeat import RELEASED, Heartbeat
from pgflight.worker.calls import Lane
from pgflight.worker.common import first_line, log
from pgflight.worker.completer import Completer
from pgflight.worker.executor import Executor
from pgflight.worker.producer import Producer


async def shut_down(
    *,
    name: str,
    worker_id: int | None,
    grace_s: float,
    producer: Producer,
    executor: Executor,
    completer: Completer,
    heartbeat: Heartbeat | None,
    control: Lane,
) -> None:
    """Stop the worker's work (the claim loop has ended): see the module."""
    await producer.settled(max(grace_s, 5.0))
    tasks = list(executor.tasks.values())
    if tasks:
        log.info("waiting up to %.1fs for %d running step(s)", grace_s, len(tasks))
        _done, pending = await asyncio.wait(tasks, timeout=grace_s)
        released = 0
        briefly = control.within(2.0)
        for h in executor.held.snapshot():
            if not executor.held.transition(h, RELEASED):
                continue
            released += await completer.release(h, "worker shutdown", lane=briefly)
            executor.cancel_async(h)
        if released:
            log.info("released %d step(s) still running after the grace period", released)
        # completions already queued (steps that finished in time) go out before we leave
        finishing = [t for t in pending if not t.done()]
        if finishing:
            await asyncio.wait(finishing, timeout=2.0)
    await completer.drain(5.0)
    await asyncio.sleep(0)
    if heartbeat is not None:
        heartbeat.stop()
    try:
        if worker_id is not None:
            await control.within(2.0).run(db.deregister_worker, worker_id)
    except Exception as e:
        log.warning("could not deregister: %s", first_line(e))
    log.info("worker %s stopped", name)
