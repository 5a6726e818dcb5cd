"""
What every Python adapter of bench/peers shares: the command line, the job recorder of `work`
and `fanout`, and the open-loop producer of `produce`. The protocol itself is in
bench/peers/PROTOCOL.md. Standard library only: this module runs in the peers' virtualenv and in
pgflight's.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

COMMANDS = ("setup", "enqueue", "work", "produce", "completions", "fanout")
QUEUE = "noop"  # the queue / task / recipe name every adapter uses


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="a bench/peers adapter (see bench/peers/PROTOCOL.md)")
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("--dsn", required=True, help="libpq URL of this system's database (superuser)")
    p.add_argument("--jobs", type=int, default=0, help="enqueue: how many jobs")
    p.add_argument("--first-id", type=int, default=0, help="enqueue/produce: id of the first job")
    p.add_argument("--concurrency", type=int, default=8, help="work/fanout: jobs in flight per process")
    p.add_argument("--rate", type=float, default=0.0, help="produce: jobs per second")
    p.add_argument("--seconds", type=float, default=0.0, help="produce: for how long")
    p.add_argument("--children", type=int, default=0, help="fanout: how many children")
    p.add_argument("--out", help="work/fanout: where to write the JSON record")
    return p.parse_args(argv)


def _call(commands: Mapping[str, Any]) -> Any:
    """Parse the command line and call the adapter's function named after the command, passing the
    options its parameters name (`dsn`, `jobs`, `first_id`, `concurrency`, `out`, ...)."""
    logging.basicConfig(level=logging.WARNING)
    args = parse()
    fn = commands[args.command]
    return fn(**{name: getattr(args, name) for name in inspect.signature(fn).parameters})


def main(commands: Mapping[str, Any]) -> None:
    """Run an adapter whose command functions are plain functions: ``common.main(globals())``."""
    emit(_call(commands))


async def main_async(commands: Mapping[str, Any]) -> None:
    """`main` for an adapter whose command functions are (mostly) coroutines."""
    result = _call(commands)
    emit(await result if inspect.isawaitable(result) else result)


def emit(result: dict[str, Any]) -> None:
    """Print the command's result: one JSON object, the last line of stdout."""
    print(json.dumps(result), flush=True)


def payload(job_id: int, enq: float | None = None) -> dict[str, Any]:
    """The payload of job `job_id`; `enq` is the wall-clock time (epoch seconds) of its enqueue call."""
    return {"id": job_id, "enq": enq}


class Recorder:
    """
    Records each execution of a job handler as [id, enq, start, end] (epoch seconds) and prints
    `count N` on stdout at most every 0.1 s while N changes, so the harness can tell when the
    expected number of jobs has run. list.append is atomic, so handlers on threads or tasks may
    call `add` freely.
    """

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.extra: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._report, daemon=True)
        self._thread.start()

    def add(self, body: dict[str, Any], start: float, end: float | None = None) -> None:
        self.rows.append([body["id"], body.get("enq"), start, time.time() if end is None else end])

    def ready(self) -> None:
        """Say that the worker is started and able to take jobs."""
        print("ready", flush=True)

    def dump(self, path: str, config: dict[str, Any], **extra: Any) -> None:
        """Write the record; stops the count reporter."""
        self._stop.set()
        self._thread.join()
        self._print_count()
        with open(path, "w") as f:
            json.dump({"jobs": self.rows, "config": config, **self.extra, **extra}, f)

    _printed = -1

    def _print_count(self) -> None:
        n = len(self.rows)
        if n != self._printed:
            print(f"count {n}", flush=True)
            self._printed = n

    def _report(self) -> None:
        while not self._stop.wait(0.1):
            self._print_count()


class OpenLoop:
    """An open-loop producer's schedule: job i is due at start + i / rate, whatever became of the others."""

    def __init__(self, rate: float, seconds: float, first_id: int) -> None:
        if rate <= 0 or seconds <= 0:
            sys.exit("produce needs --rate > 0 and --seconds > 0")
        self.rate, self.first_id = rate, first_id
        self.n = round(rate * seconds)
        self.t0 = time.time()
        self.late = 0.0

    def wait_s(self, i: int) -> float:
        """Seconds until job i is due (negative: overdue)."""
        return self.t0 + i / self.rate - time.time()

    def body(self, i: int) -> dict[str, Any]:
        """Job i's payload, stamped now; notes how late it is."""
        now = time.time()
        self.late = max(self.late, now - (self.t0 + i / self.rate))
        return payload(self.first_id + i, now)

    def result(self) -> dict[str, Any]:
        return {"sent": self.n, "seconds": time.time() - self.t0, "max_late_s": self.late}


def open_loop(
    rate: float, seconds: float, first_id: int, send: Callable[[dict[str, Any]], Any]
) -> dict[str, Any]:
    """Enqueue round(rate * seconds) jobs on the OpenLoop schedule; return the producer's figures."""
    s = OpenLoop(rate, seconds, first_id)
    for i in range(s.n):
        if (wait := s.wait_s(i)) > 0:
            time.sleep(wait)
        send(s.body(i))
    return s.result()


async def open_loop_async(
    rate: float, seconds: float, first_id: int, send: Callable[[dict[str, Any]], Awaitable[Any]]
) -> dict[str, Any]:
    """`open_loop` for an asyncio client."""
    s = OpenLoop(rate, seconds, first_id)
    for i in range(s.n):
        if (wait := s.wait_s(i)) > 0:
            await asyncio.sleep(wait)
        await send(s.body(i))
    return s.result()
