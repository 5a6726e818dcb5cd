"""
Helpers for the worker tests: worker processes (real `pgflight worker` subprocesses, each in its
own process group, always killed at teardown) and polling of the database.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

HERE = Path(__file__).resolve().parent
T = TypeVar("T")


class WorkerProc:
    """One `pgflight worker` subprocess and its log."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.log = log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL the whole process group (idempotent)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def wait(self, timeout_s: float) -> int:
        return self.proc.wait(timeout_s)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start_worker(
    dsn: str,
    tmp: Path,
    *args: str,
    recipes: str = "pgflight_demo:worker_recipes",
    env: dict[str, str] | None = None,
) -> WorkerProc:
    """Start `python -m pgflight.cli worker` against `dsn` in a new session (own process group)."""
    n = len(list(tmp.glob("worker-*.log")))
    log = tmp / f"worker-{n}.log"
    full_env = dict(
        os.environ,
        PGFLIGHT_DSN=dsn,
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    )
    full_env.pop("PGFLIGHT_LISTEN_DSN", None)
    full_env.update(env or {})
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgflight.cli", "worker", "--recipes", recipes, *args],
            stdout=f,
            stderr=subprocess.STDOUT,
            env=full_env,
            start_new_session=True,
        )
    return WorkerProc(proc, log)


@contextlib.contextmanager
def sweeping(dsn: str | list[str], every_s: float = 0.2) -> Iterator[None]:
    """run_sweeps every ``every_s`` seconds on a connection of its own while the block runs, as
    pg_cron's sweep_loop would run them. Several DSNs (the cells of a proxy): each database's
    sweeps in turn, on a connection per pass, and a database that is down is tried again later."""
    stop = threading.Event()

    def loop() -> None:
        if isinstance(dsn, str):
            with psycopg.connect(dsn, autocommit=True) as c:
                while not stop.is_set():
                    c.execute("select * from pgflight.run_sweeps()")
                    stop.wait(every_s)
            return
        while not stop.is_set():
            for d in dsn:
                with (
                    contextlib.suppress(psycopg.Error),
                    psycopg.connect(d, autocommit=True, connect_timeout=1) as c,
                ):
                    c.execute("select * from pgflight.run_sweeps()")
            stop.wait(every_s)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(10)


def worker_factory(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """
    Body of a `workers` fixture: workers(dsn, *cli_args) -> WorkerProc; every worker is SIGKILLed
    at teardown. Test modules wrap it: ``workers = pytest.fixture(worker_factory)`` style.
    """
    started: list[WorkerProc] = []

    def _start(dsn: str, *args: str, **kwargs: Any) -> WorkerProc:
        w = start_worker(dsn, tmp_path, *args, **kwargs)
        started.append(w)
        return w

    yield _start
    for w in started:
        w.kill()


def wait_for(fn: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll `fn` until it returns something truthy; fail the test after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)


def one(conn: psycopg.Connection[Any], query: str, *params: Any) -> Any:
    """The single value of a query."""
    row = conn.execute(query, params).fetchone()  # type: ignore[arg-type]
    return None if row is None else row[0]


def attempts(conn: psycopg.Connection[Any], step_id: int) -> list[tuple[int, str, int | None]]:
    """(attempt_no, status, worker_id) of each attempt of a step."""
    return [
        (r[0], r[1], r[2])
        for r in conn.execute(
            "select attempt_no, status, worker_id from pgflight.step_attempts where step_id = %s"
            " order by attempt_no",
            [step_id],
        ).fetchall()
    ]


def step_status(conn: psycopg.Connection[Any], step_id: int) -> str:
    return str(one(conn, "select status from pgflight.step_status where step_id = %s", step_id))


def worker_ready(conn: psycopg.Connection[Any], w: WorkerProc) -> bool:
    """The worker process has registered (it is about to claim)."""
    if w.proc.poll() is not None:
        pytest.fail(f"worker exited with {w.proc.returncode}:\n{w.output()[-3000:]}")
    return bool(
        one(conn, "select count(*) from pgflight.workers where pid = %s and stopped_at is null", w.pid)
    )


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """Fixture for modules that import it: worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


class ChargeCounter:
    """An external HTTP service that counts the charges (POSTs) it receives; answers {"charge_no": n}."""

    def __init__(self) -> None:
        self.calls = 0
        counter = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                counter.calls += 1
                data = json.dumps({"charge_no": counter.calls}).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/charge"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def undecodable_json_depth(start: int = 3000) -> int:
    """The least nesting (doubling from `start`) that this Python's json decoder refuses with
    RecursionError: past 1,000 on Python 3.11, past 10,000 on 3.13, whose C code keeps its own
    recursion limit."""
    depth = start
    while depth <= 1_000_000:
        try:
            json.loads("[" * depth + "]" * depth)
        except RecursionError:
            return depth
        depth *= 2
    raise AssertionError("this Python decodes JSON nested a million levels deep")
