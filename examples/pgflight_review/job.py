"""
The `pgflight review` job: discover, submit one run, run worker processes, show progress, report.

::

    job = ReviewJob(paths=[], out_dir=Path("pgflight-review"), workers=2)
    outcome = job.run(console)          # blocks until the run ends; workers stopped afterwards

Steps: the database (`PGFLIGHT_DSN`, else the embedded cluster of `pgflight db up`), the schema
(sqitch deploy), the pg_cron schedules when the server has pg_cron (else this process runs the
reclaim and wake sweeps itself every few seconds), discovery, one run of ``review_library``, N
``pgflight worker --recipes pgflight_review.recipes`` processes, a live progress display until the
run ends, then the workers are stopped (SIGTERM, then SIGKILL after a grace period).

Idempotency: the run's key is a hash of its whole input (every document's path and content hash,
the skipped list, the out dir and the model). Re-running the same command while that run is
still unfinished (the previous command was interrupted or crashed) continues it rather than
starting another; once it has finished, the same command starts a new generation of the key
(``…#2``, ``#3``), i.e. a fresh review.

``chaos``: every `chaos_interval_s` seconds (±50 %) one random worker gets SIGKILL and a new one is
started; leases are short (`CHAOS_LEASE_S`) so the killed worker's steps are reclaimed quickly,
and attempts are plentiful so no document runs out of them. The audit counts the reclaims.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import psycopg
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column

from pgflight import db, fmt, migrate
from pgflight.db.audit import RunAudit, run_audit
from pgflight.embedded import Cluster
from pgflight_review.discovery import Discovery, discover
from pgflight_review.recipes import CHAOS_LOG, DocumentRef, LibraryInput, SkippedRef

RECIPES_MODULE: Final = "pgflight_review.recipes"
WORKSPACE: Final = "default"
#: Lease in seconds of the review's workers; a dead worker's steps run again after about this long.
LEASE_S: Final = 10.0
#: Lease in seconds under --chaos, where workers die every few seconds.
CHAOS_LEASE_S: Final = 3.0
#: Attempts per step (a reclaim spends one); generous under --chaos, where deaths are frequent.
MAX_ATTEMPTS: Final = 5
CHAOS_MAX_ATTEMPTS: Final = 50
#: Retry backoff of the run's steps: short, since a retry here follows a dead worker, not an overload.
BACKOFF: Final = {"base_s": 0.2, "factor": 2, "max_s": 5}
#: Steps each worker process runs at once.
CONCURRENCY: Final = 4
#: Seconds between this process's own sweeps when pg_cron is not there to run them.
SWEEP_EVERY_S: Final = 2.0
#: Seconds between progress polls.
POLL_S: Final = 0.5


def progress_display(console: Console) -> Progress:
    """
    The live progress line. The figures (done/total, rate, ETA, elapsed) keep their width at any
    terminal width; the bar takes what is left, and the worker counts come last, cut first.
    """

    def whole(width: int) -> Column:
        return Column(no_wrap=True, min_width=width)

    return Progress(
        TextColumn("reviewing", table_column=whole(9)),
        # the bar gets what the line leaves at this width (the rest is about 110 columns)
        BarColumn(bar_width=max(5, console.width - 110), table_column=whole(5)),
        TextColumn("{task.fields[of]}", table_column=whole(13)),
        TextColumn("{task.fields[rate]}", table_column=whole(12)),
        TextColumn("ETA {task.fields[eta]}", table_column=whole(10)),
        TimeElapsedColumn(table_column=whole(7)),
        TextColumn(
            "workers {task.fields[alive]} · retries {task.fields[retries]} · "
            "reclaimed {task.fields[reclaimed]}{task.fields[kills]}",
            table_column=Column(no_wrap=True, overflow="ellipsis"),
        ),
        console=console,
        transient=False,
        disable=not console.is_terminal,  # a log or a pipe gets plain lines instead
    )


class ReviewError(RuntimeError):
    """The job cannot go on (database, schema, discovery, workers); the message says why."""


class NothingToReview(ReviewError):
    """Discovery found no document to review (nothing is submitted); `found` says what was skipped."""

    def __init__(self, found: Discovery) -> None:
        reasons: dict[str, int] = {}
        for s in found.skipped:
            reasons[s.reason.split(":")[0]] = reasons.get(s.reason.split(":")[0], 0) + 1
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        super().__init__(
            "no document to review" + (f": {len(found.skipped)} skipped ({why})" if found.skipped else "")
        )
        self.found = found


@dataclass
class Outcome:
    """How the run ended."""

    run_id: int
    status: str
    result: Any
    error: Any
    audit: RunAudit
    documents: int
    skipped: int
    wall_s: float  # seconds this command waited
    kills: int  # workers killed by --chaos
    resumed: bool  # the run existed already (an interrupted earlier command)


def default_workers() -> int:
    """Worker processes by default: the CPU count, at least 2 and at most 8."""
    return max(2, min(os.cpu_count() or 2, 8))


# --- the database ---------------------------------------------------------------------------------


def database(console: Console) -> str:
    """
    The DSN to use: `PGFLIGHT_DSN`, else the embedded cluster (created and started if needed).

    :raises EmbeddedError: the embedded cluster cannot be started.
    """
    external = os.environ.get("PGFLIGHT_DSN")
    if external:
        return external
    cluster = Cluster()
    was_running = cluster.running()
    dsn = cluster.up()
    if not was_running:
        where = str(cluster.folder)
        if cluster.server_folder != cluster.folder:  # as root, in a folder the server's OS user cannot enter
            where += f" (its data in {cluster.server_folder})"
        console.print(f"started the embedded database in {where}", soft_wrap=True)
    return dsn


def prepare_schema(dsn: str, console: Console) -> bool:
    """
    Deploy the schema (sqitch) and install the pg_cron schedules when the server has pg_cron.

    :return: True when pg_cron runs the sweeps; False when this process must (ZF011).
    :raises MigrationError: sqitch failed.
    """
    migrate.deploy(dsn)
    why_not = migrate.install_schedules(dsn)
    if why_not is not None:
        console.print(f"[dim]no pg_cron schedules ({why_not}): this command runs the sweeps itself[/]")
        return False
    return True


# --- the run ------------------------------------------------------------------------------------


def library_input(found: Discovery, out_dir: Path, provider: str, model: str) -> LibraryInput:
    """The root step's input for the documents discovery found."""
    return LibraryInput(
        provider=provider,
        model=model,
        documents=[
            DocumentRef(key=d.key, path=d.path, sha256=d.sha256, line_count=d.line_count)
            for d in found.documents
        ],
        skipped=[SkippedRef(path=s.path, reason=s.reason) for s in found.skipped],
        out_dir=str(out_dir.resolve()),
    )


def run_key(inp: LibraryInput) -> str:
    """The idempotency key: ``review:<hash of the whole input>``."""
    digest = hashlib.sha256(json.dumps(inp.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
    return f"review:{digest[:32]}"


def submit(conn: db.Connection, inp: LibraryInput, *, max_attempts: int, lease_s: float) -> tuple[int, bool]:
    """
    Submit the run, or find the unfinished run of an earlier identical command.

    :return: (run id, whether it already existed and is being continued).
    """
    db.create_workspace(conn, WORKSPACE)
    base = run_key(inp)
    for generation in range(1, 10_000):
        key = base if generation == 1 else f"{base}#{generation}"
        sub = db.submit_run(
            conn,
            WORKSPACE,
            "review_library",
            inp.model_dump(mode="json"),
            idempotency_key=key,
            max_attempts=max_attempts,
            backoff=BACKOFF,
            lease_s=lease_s,
            submitted_by="pgflight review",
        )
        if sub.created:
            return sub.run_id, False
        if db.run_status(conn, sub.run_id).status == "running":
            return sub.run_id, True
    raise ReviewError(f"too many finished runs with the key {base}")


# --- worker processes -----------------------------------------------------------------------------


@dataclass
class WorkerPool:
    """`pgflight worker` subprocesses, each in its own process group, logging into `log_dir`."""

    dsn: str
    log_dir: Path
    lease_s: float
    concurrency: int = CONCURRENCY
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    started: int = 0
    kills: int = 0

    def start(self) -> subprocess.Popen[bytes]:
        """Start one worker process."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.started += 1
        env = dict(os.environ, PGFLIGHT_DSN=self.dsn)
        env.pop("PGFLIGHT_LISTEN_DSN", None)
        with open(self.log_dir / f"worker-{self.started}.log", "wb") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pgflight.cli",
                    "worker",
                    "--recipes",
                    RECIPES_MODULE,
                    "--concurrency",
                    str(self.concurrency),
                    "--lease",
                    str(self.lease_s),
                    "--grace",
                    "5",
                    "--name",
                    f"review-{os.getpid()}-{self.started}",
                    "--log-level",
                    "WARNING",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # Ctrl-C reaches this process only; it stops the workers
            )
        self.procs.append(proc)
        return proc

    def alive(self) -> int:
        """Worker processes still running."""
        return sum(1 for p in self.procs if p.poll() is None)

    def replace_exited(self) -> int:
        """Start a new worker for each that exited on its own. :return: how many."""
        gone = [p for p in self.procs if p.poll() is not None]
        for p in gone:
            self.procs.remove(p)
            self.start()
        return len(gone)

    def kill_random(self) -> int | None:
        """SIGKILL one random live worker (its process group) and start a new one. :return: its pid."""
        live = [p for p in self.procs if p.poll() is None]
        if not live:
            return None
        victim = random.choice(live)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(10)
        self.procs.remove(victim)
        self.kills += 1
        with open(self.log_dir / CHAOS_LOG, "a", encoding="utf-8") as log:  # the report counts these
            log.write(json.dumps({"pid": victim.pid, "at": time.time(), "kill": self.kills}) + "\n")
        self.start()
        return victim.pid

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM every worker; SIGKILL those still running after `grace_s` seconds."""
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.0, deadline - time.monotonic()))
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)


# --- the job ------------------------------------------------------------------------------------


@dataclass
class PlainLines:
    """
    When a log or a pipe gets a plain progress line: every `every_s` seconds and when the run ends,
    and only when its figures changed since the line before (the last documents done and the run's
    end often fall in one interval: the line was printed twice).
    """

    every_s: float = 10.0
    _next: float = float("-inf")
    _printed: tuple[int, ...] | None = None

    def due(self, now: float, figures: tuple[int, ...], *, ended: bool) -> bool:
        """
        Whether to print a line now, and if so count it as printed.

        :param figures: what the line says, but for the rate (documents done, workers, retries, ...).
        :param ended: the run has ended: a line is due if it says something new.
        """
        if figures == self._printed or not (ended or now >= self._next):
            return False
        self._printed, self._next = figures, now + self.every_s
        return True


@dataclass
class ReviewJob:
    """
    One `pgflight review` invocation.

    :param paths: files and directories; empty for the machine's own legal documents.
    :param out_dir: where the report goes.
    :param workers: worker processes.
    :param chaos: SIGKILL a random worker every `chaos_interval_s` seconds (±50 %) and start another.
    :param provider: ``offline`` or ``anthropic``; :param model: the model name.
    """

    paths: Sequence[str]
    out_dir: Path
    workers: int = field(default_factory=default_workers)
    chaos: bool = False
    chaos_interval_s: float = 3.0
    provider: str = "offline"
    model: str = "offline"
    #: The run, once submitted (or found again): what an interrupted command left behind.
    run_id: int | None = field(default=None, init=False)

    def run(self, console: Console) -> Outcome:
        """
        Run the whole job and wait for the run to end.

        :raises ReviewError, EmbeddedError, MigrationError, psycopg.Error: the job could not run.
        """
        dsn = database(console)
        cron = prepare_schema(dsn, console)
        started = time.monotonic()
        found = discover(list(self.paths) or None)
        console.print(
            f"found {fmt.count(len(found.documents), 'document')} to review, "
            f"{fmt.number(len(found.skipped))} skipped "
            f"({fmt.duration(time.monotonic() - started)})"
        )
        if not found.documents:
            raise NothingToReview(found)
        inp = library_input(found, self.out_dir, self.provider, self.model)
        lease_s = CHAOS_LEASE_S if self.chaos else LEASE_S
        with psycopg.connect(dsn, autocommit=True) as conn:
            run_id, resumed = submit(
                conn, inp, max_attempts=CHAOS_MAX_ATTEMPTS if self.chaos else MAX_ATTEMPTS, lease_s=lease_s
            )
            self.run_id = run_id
            chaos = f", chaos: a worker is killed every ~{self.chaos_interval_s:g}s" if self.chaos else ""
            console.print(
                f"run {run_id} {'continued (same documents, unfinished)' if resumed else 'submitted'}; "
                f"{self.workers} workers{chaos}"
            )
            pool = WorkerPool(dsn, self.out_dir / "logs", lease_s)
            if self.chaos:  # a fresh count for this command's kills
                pool.log_dir.mkdir(parents=True, exist_ok=True)
                (pool.log_dir / CHAOS_LOG).write_text("", encoding="utf-8")
            try:
                for _ in range(self.workers):
                    pool.start()
                status = self._watch(conn, run_id, pool, len(found.documents), cron, console)
            finally:
                pool.stop()
            audit = run_audit(conn, run_id)
        return Outcome(
            run_id=run_id,
            status=status.status,
            result=status.result,
            error=status.error,
            audit=audit,
            documents=len(found.documents),
            skipped=len(found.skipped),
            wall_s=time.monotonic() - started,
            kills=pool.kills,
            resumed=resumed,
        )

    def _watch(
        self, conn: db.Connection, run_id: int, pool: WorkerPool, total: int, cron: bool, console: Console
    ) -> Any:
        """Show progress until the run ends; kill workers under chaos; sweep without pg_cron."""
        t0 = time.monotonic()
        next_kill = t0 + self._chaos_delay()
        next_sweep = t0 + SWEEP_EVERY_S
        next_audit = t0
        plain = PlainLines()
        audit: RunAudit | None = None
        first_done: int | None = None
        with progress_display(console) as progress:
            task = progress.add_task(
                "run", total=max(total, 1), of="", rate="", eta="?", alive=0, retries=0, reclaimed=0, kills=""
            )
            while True:
                now = time.monotonic()
                st = db.run_status(conn, run_id)
                if now >= next_audit:
                    audit = run_audit(conn, run_id)
                    next_audit = now + 1.0
                done = min(total, st.steps_succeeded + st.steps_dead_letter + st.steps_cancelled)
                if first_done is None:
                    first_done = done  # documents a previous command already finished
                elapsed = max(now - t0, 1e-6)
                rate = (done - first_done) / elapsed
                eta = (total - done) / rate if rate > 0 else None
                alive = pool.alive()
                retries = audit.retries if audit else 0
                reclaimed = audit.reclaimed_attempts if audit else 0
                kills = f" · killed {fmt.number(pool.kills)}" if self.chaos else ""
                progress.update(
                    task,
                    completed=done,
                    of=f"{fmt.number(done)}/{fmt.number(total)}",
                    rate=f"{rate:.1f} docs/s",
                    eta="?" if eta is None else f"{eta:.0f}s",
                    alive=alive,
                    retries=fmt.number(retries),
                    reclaimed=fmt.number(reclaimed),
                    kills=kills,
                )
                figures = (done, alive, retries, reclaimed, pool.kills)
                if not console.is_terminal and plain.due(now, figures, ended=st.status != "running"):
                    console.print(
                        f"reviewed {fmt.number(done)}/{fmt.number(total)} · {rate:.1f} docs/s · "
                        f"workers {alive} · retries {fmt.number(retries)} · reclaimed {fmt.number(reclaimed)}"
                        + kills,
                        highlight=False,
                        soft_wrap=True,
                    )
                if st.status != "running":
                    return st
                if self.chaos and now >= next_kill:
                    pool.kill_random()
                    next_kill = now + self._chaos_delay()
                elif pool.replace_exited():
                    console.print("[yellow]a worker exited unexpectedly; started another (see its log)[/]")
                if not cron and now >= next_sweep:
                    db.reclaim_expired(conn)
                    db.wake_parents(conn)
                    next_sweep = now + SWEEP_EVERY_S
                time.sleep(POLL_S)

    def _chaos_delay(self) -> float:
        return self.chaos_interval_s * random.uniform(0.5, 1.5)


def _number(value: Any) -> str:
    """A count from the run's result, grouped by thousands ('7,470'); '?' when the result lacks it."""
    return fmt.number(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def summary_lines(outcome: Outcome) -> list[str]:
    """What the command prints when the run has ended: report, counts, audit, timing."""
    a = outcome.audit
    res = outcome.result if isinstance(outcome.result, dict) else {}
    lines = [
        f"run {outcome.run_id} {outcome.status} in {fmt.duration(outcome.wall_s)}"
        + (f" (continued; run wall time {fmt.duration(a.wall_time_s)})" if outcome.resumed else ""),
    ]
    if res:
        lines += [
            f"report: {res.get('html')}  (also report.md, flags.csv"
            + (f"; {fmt.number(res['pages'] // 2)} pages in pages/)" if res.get("pages") else ")"),
            f"documents: {_number(res.get('documents'))} submitted, {_number(res.get('reviewed'))} reviewed, "
            f"{_number(res.get('not_reviewed'))} not reviewed, {_number(res.get('skipped'))} skipped; "
            f"{_number(res.get('findings'))} findings",
        ]
    elif outcome.error:
        message = outcome.error.get("message") if isinstance(outcome.error, dict) else outcome.error
        lines.append(f"error: {message}")
    steps_per_s = a.steps / a.wall_time_s if a.wall_time_s > 0 else 0.0
    lines.append(
        f"audit: {fmt.count(a.steps, 'step')} ({steps_per_s:,.1f}/s), {fmt.count(a.attempts, 'attempt')}, "
        f"{fmt.count(a.retries, 'retry', 'retries')}, {fmt.number(a.reclaimed_attempts)} reclaimed, "
        f"{fmt.count(a.stale_writes_rejected, 'stale write')} rejected, "
        f"{fmt.count(a.dead_letters, 'dead letter')}, {fmt.count(a.model_calls, 'model call')}, "
        f"{fmt.count(a.tokens, 'token')}, {fmt.money(a.usd)}"
        + (f"; {outcome.kills} workers killed" if outcome.kills else "")
    )
    return lines
