#!/usr/bin/env python3
"""
pgflight beside its peers, on one PostgreSQL server in one run. Not a test: it prints figures.

Starts a throwaway cluster (fsync and synchronous_commit on, as bench/benchlib.py), measures the
machine's ceiling with pgbench (single-row INSERT transactions at 1, 4 and 16 clients), then for
each system, in a fresh database of its own, through its adapter (bench/peers/PROTOCOL.md):

1. burn-down: enqueue N no-op jobs, then drain them with P worker processes of C jobs in flight
   each; jobs/s from the first handler start to the last handler end;
2. steady state: P workers running, an open-loop producer enqueues R jobs/s for T seconds, one
   job per call; latency enqueue -> handler start and enqueue -> completion recorded by the
   system (p50/p95/p99);
3. fan-out: one parent spawns N children and continues once when they are all done (systems
   that have it).

Between phases, with no adapter process alive, it reads the cluster's committed transactions
(pg_stat_database, all databases) and WAL position, so commits and WAL bytes per job include
everything the system did for the job: enqueue, claim, completion, its own bookkeeping and
polling. Each phase checks that every job ran exactly once (ids in the handlers' records) and
that the system holds none as unfinished afterwards.

Writes bench/peers/results.json and bench/peers/results.md, and replaces the table between the
markers in bench/README.md (unless --no-readme). Usage: bench/peers/run [--quick] [--systems a,b]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python_worker"))

import psycopg  # noqa: E402
from benchlib import REALISTIC, Counters, percentile, pgbench_ceiling, stats_settled  # noqa: E402

from pgflight.embedded import Cluster  # noqa: E402

PEERS_PYTHON = HERE / ".venv" / "bin" / "python"
OWN_PYTHON = ROOT / ".venv" / "bin" / "python"
ADAPTERS = HERE / "adapters"


@dataclass(frozen=True)
class System:
    name: str  # adapters/<name>_adapter.py or .mjs
    label: str
    package: str  # where it comes from, pinned
    runtime: str  # "python-own" | "python-peers" | "node"

    def argv(self, command: str, dsn: str, **options: Any) -> list[str]:
        if self.runtime == "node":
            head = ["node", str(ADAPTERS / f"{self.name}_adapter.mjs")]
        else:
            python = OWN_PYTHON if self.runtime == "python-own" else PEERS_PYTHON
            head = [str(python), str(ADAPTERS / f"{self.name}_adapter.py")]
        tail = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
        return [*head, command, f"--dsn={dsn}", *tail]


SYSTEMS = [
    System("pgflight", "pgflight", "this repository", "python-own"),
    System("pgqueuer", "PgQueuer", "PyPI pgqueuer==1.6.0", "python-peers"),
    System("procrastinate", "Procrastinate", "PyPI procrastinate==3.10.0", "python-peers"),
    System("dbos", "DBOS Transact", "PyPI dbos==3.4.0", "python-peers"),
    System("absurd", "Absurd", "PyPI absurd-sdk==0.5.1", "python-peers"),
    System("pgboss", "pg-boss", "npm pg-boss@10.4.2", "node"),
    System("graphile", "Graphile Worker", "npm graphile-worker@0.17.3", "node"),
]


class AdapterError(RuntimeError):
    pass


# --- adapter processes ---------------------------------------------------------------------------


def run_once(system: System, command: str, dsn: str, timeout: float, **options: Any) -> dict[str, Any]:
    """Run one adapter command to its end; return the JSON of its last stdout line."""
    proc = subprocess.run(
        system.argv(command, dsn, **options), capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise AdapterError(f"{system.name} {command} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    try:
        return dict(json.loads(lines[-1]))
    except (IndexError, ValueError) as e:
        raise AdapterError(f"{system.name} {command}: no JSON result: {proc.stdout[-2000:]}") from e


class WorkerProc:
    """A `work` process; a thread reads its `ready` / `count N` lines."""

    def __init__(self, system: System, dsn: str, concurrency: int, out: Path, log: Path) -> None:
        self.out = out
        self.count = 0
        self.ready = threading.Event()
        self._log = open(log, "w")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            system.argv("work", dsn, concurrency=concurrency, out=out),
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("count "):
                self.count = int(line.split()[1])
            elif line.strip() == "ready":
                self.ready.set()

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            code = -9
        self._reader.join(5)
        self._log.close()
        return code


@contextlib.contextmanager
def workers(
    system: System, dsn: str, procs: int, concurrency: int, scratch: Path, phase: str
) -> Iterator[list[WorkerProc]]:
    started = [
        WorkerProc(
            system,
            dsn,
            concurrency,
            scratch / f"{system.name}-{phase}-{i}.json",
            scratch / f"{system.name}-{phase}-{i}.log",
        )
        for i in range(procs)
    ]
    try:
        yield started
    finally:
        for w in started:
            w.terminate()
        for w in started:
            w.wait(60)


def wait_for_count(ws: list[WorkerProc], expected: int, timeout: float) -> bool:
    """Until the workers' counts add up to `expected`, then one more second (to catch a duplicate)."""
    deadline = time.monotonic() + timeout
    while sum(w.count for w in ws) < expected:
        if time.monotonic() > deadline or all(w.proc.poll() is not None for w in ws):
            return False
        time.sleep(0.05)
    time.sleep(1.0)
    return True


def stop_and_collect(ws: list[WorkerProc]) -> tuple[list[list[Any]], list[dict[str, Any]], list[int]]:
    for w in ws:
        w.terminate()
    codes = [w.wait(60) for w in ws]
    rows: list[list[Any]] = []
    configs: list[dict[str, Any]] = []
    for w in ws:
        if w.out.exists():
            record = json.loads(w.out.read_text())
            rows += record["jobs"]
            configs.append(record.get("config", {}))
    return rows, configs, codes


# --- counters ------------------------------------------------------------------------------------


class Observer:
    """Cluster-wide counters (every system's databases), read with no adapter process alive."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)

    def settled(self) -> Counters:
        return stats_settled(self.conn, cluster=True)


def per_job(before: Counters, after: Counters, jobs: int) -> dict[str, float]:
    return {
        "commits_per_job": (after.commits - before.commits) / jobs,
        "wal_bytes_per_job": (after.wal_lsn - before.wal_lsn) / jobs,
    }


# --- checks and figures --------------------------------------------------------------------------


def once_check(rows: list[list[Any]], expected: range) -> dict[str, Any]:
    seen: dict[int, int] = {}
    for r in rows:
        seen[int(r[0])] = seen.get(int(r[0]), 0) + 1
    missing = sum(1 for i in expected if i not in seen)
    twice = sum(1 for i, n in seen.items() if n > 1)
    unknown = sum(1 for i in seen if i not in expected)
    return {
        "ran": len(rows),
        "missing": missing,
        "ran_twice": twice,
        "unknown": unknown,
        "exactly_once": missing == 0 and twice == 0 and unknown == 0,
    }


def pcts(values: list[float]) -> dict[str, float]:
    return {f"p{p}_ms": percentile(values, p) * 1000 for p in (50, 95, 99)}


# --- phases --------------------------------------------------------------------------------------


@dataclass
class Plan:
    jobs: int
    procs: int
    concurrency: int
    rate: float
    steady_s: float
    children: int
    ceiling_s: int


@dataclass
class Context:
    cluster: Cluster
    observer: Observer
    scratch: Path
    plan: Plan


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def burn_down(ctx: Context, system: System, dsn: str) -> dict[str, Any]:
    plan = ctx.plan
    c0 = ctx.observer.settled()
    enq = run_once(system, "enqueue", dsn, 600, jobs=plan.jobs, first_id=0)
    c1 = ctx.observer.settled()
    with workers(system, dsn, plan.procs, plan.concurrency, ctx.scratch, "burn") as ws:
        finished = wait_for_count(ws, plan.jobs, timeout=max(300.0, plan.jobs / 20))
        rows, configs, codes = stop_and_collect(ws)
    c2 = ctx.observer.settled()
    done = run_once(system, "completions", dsn, 300)
    result: dict[str, Any] = {
        "jobs": plan.jobs,
        "finished_in_time": finished,
        "worker_exit_codes": codes,
        "enqueue_s": enq["seconds"],
        "enqueue_jobs_per_s": plan.jobs / enq["seconds"] if enq["seconds"] else None,
        "enqueue_config": enq.get("config", {}),
        "worker_config": configs[0] if configs else {},
        "pending_after": done["pending"],
        **once_check(rows, range(plan.jobs)),
        "enqueue": per_job(c0, c1, plan.jobs),
        "drain": per_job(c1, c2, plan.jobs),
        **per_job(c0, c2, plan.jobs),
    }
    if rows:
        span = max(r[3] for r in rows) - min(r[2] for r in rows)
        result["drain_s"] = span
        result["jobs_per_s"] = len(rows) / span if span > 0 else None
    return result


STEADY_FIRST_ID = 1_000_000


def steady(ctx: Context, system: System, dsn: str) -> dict[str, Any]:
    plan = ctx.plan
    expected = round(plan.rate * plan.steady_s)
    ids = range(STEADY_FIRST_ID, STEADY_FIRST_ID + expected)
    # counters only settle with no worker alive: the window includes starting and stopping them
    c0 = ctx.observer.settled()
    with workers(system, dsn, plan.procs, plan.concurrency, ctx.scratch, "steady") as ws:
        for w in ws:
            if not w.ready.wait(120):
                raise AdapterError(f"{system.name}: a worker did not say ready in 120 s")
        produced = run_once(
            system,
            "produce",
            dsn,
            plan.steady_s + 600,
            rate=plan.rate,
            seconds=plan.steady_s,
            first_id=ids.start,
        )
        finished = wait_for_count(ws, expected, timeout=120)
        rows, _, codes = stop_and_collect(ws)
    c1 = ctx.observer.settled()
    done = run_once(system, "completions", dsn, 300)
    mine = [r for r in rows if r[0] in ids]
    to_start = [r[2] - r[1] for r in mine if r[1] is not None]
    recorded = done.get("completed_at")
    if recorded:
        to_complete = [recorded[str(r[0])] - r[1] for r in mine if str(r[0]) in recorded and r[1] is not None]
        complete_source = done.get("source", "")
    else:
        to_complete = [r[3] - r[1] for r in mine if r[1] is not None]
        complete_source = "handler end (the system records no completion time): " + done.get("source", "")
    return {
        "rate": plan.rate,
        "seconds": plan.steady_s,
        "producer": produced,
        "finished_in_time": finished,
        "worker_exit_codes": codes,
        "pending_after": done["pending"],
        **once_check(rows, ids),
        "enqueue_to_start": pcts(to_start),
        "enqueue_to_complete": pcts(to_complete),
        "completions_timed": len(to_complete),
        # what the system kept up with: jobs run over first enqueue -> last handler end
        "jobs_per_s": len(mine) / (max(r[3] for r in mine) - min(r[1] for r in mine)) if mine else None,
        "complete_source": complete_source,
        **per_job(c0, c1, expected),
    }


def fan_out(ctx: Context, system: System, dsn: str) -> dict[str, Any]:
    plan = ctx.plan
    c0 = ctx.observer.settled()
    out = ctx.scratch / f"{system.name}-fanout.json"
    res = run_once(
        system, "fanout", dsn, 900, children=plan.children, concurrency=plan.procs * plan.concurrency, out=out
    )
    if "unsupported" in res:
        return {"unsupported": res["unsupported"]}
    c1 = ctx.observer.settled()
    record = json.loads(out.read_text())
    seconds = record.get("seconds")
    return {
        "children": plan.children,
        "concurrency": plan.procs * plan.concurrency,
        "seconds": seconds,
        "children_per_s": plan.children / seconds if seconds else None,
        "continuations": record.get("continuations"),
        "config": record.get("config", {}),
        **once_check(record["jobs"], range(plan.children)),
        **per_job(c0, c1, plan.children),
    }


PHASES = ("burn_down", "steady", "fanout")


def bench_system(ctx: Context, system: System) -> dict[str, Any]:
    database = f"bench_{system.name}"
    ctx.cluster.create_database(database)
    dsn = ctx.cluster.dsn(database)
    result: dict[str, Any] = {"system": system.name, "label": system.label, "package": system.package}
    t0 = time.perf_counter()
    try:
        result["version"] = run_once(system, "setup", dsn, 600).get("version")
        for name, phase in zip(PHASES, (burn_down, steady, fan_out), strict=True):
            say(f"{system.label}: {name}")
            try:
                result[name] = phase(ctx, system, dsn)
            except (AdapterError, subprocess.TimeoutExpired) as e:
                result[name] = {"error": str(e)[-1500:]}
                say(f"{system.label}: {name} failed: {str(e)[-300:]}")
    except (AdapterError, subprocess.TimeoutExpired) as e:
        result["error"] = str(e)[-1500:]
        say(f"{system.label}: setup failed: {str(e)[-300:]}")
    result["wall_s"] = time.perf_counter() - t0
    return result


# --- report --------------------------------------------------------------------------------------


NA = "n/a"


def fmt(v: Any, digits: int = 0) -> str:
    if v is None:
        return NA
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, int | float):
        return f"{v:,.{digits}f}"
    return str(v)


def ratio(v: Any, base: Any) -> str:
    if not isinstance(v, int | float) or not isinstance(base, int | float) or not base:
        return NA
    return f"{v / base:.2f}"


def row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


Cells = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], list[str]]


def table(rows: list[dict[str, Any]], phase: str, columns: list[str], cells: Cells) -> list[str]:
    """
    One phase's table: a row per system, `cells(system, its phase result, pgflight's)` giving the
    cells after the system's label; a failed or unsupported phase says so in one wide cell.
    """
    base = next((r.get(phase, {}) for r in rows if r["system"] == "pgflight"), {})
    out = [row("system", *columns), row(*["---"] * (len(columns) + 1))]
    for r in rows:
        result = r.get(phase, {})
        if "unsupported" in result:
            why = f"no equivalent: {result['unsupported']}"
        elif not result or "error" in result:
            why = f"failed: {str(result.get('error') or r.get('error') or 'not run')[:160]}"
        else:
            out.append(row(r["label"], *cells(r, result, base)))
            continue
        out.append(row(r["label"], why, *[""] * (len(columns) - 1)))
    return out


def burn_cells(r: dict[str, Any], b: dict[str, Any], b0: dict[str, Any]) -> list[str]:
    return [
        fmt(r.get("version")),
        fmt(b.get("jobs_per_s")),
        ratio(b.get("jobs_per_s"), b0.get("jobs_per_s")),
        fmt(b.get("enqueue_jobs_per_s")),
        fmt(b.get("commits_per_job"), 2),
        fmt(b.get("wal_bytes_per_job")),
        fmt(b.get("exactly_once") and b.get("pending_after") == 0),
        config_text(b),
    ]


def steady_cells(_: dict[str, Any], s: dict[str, Any], s0: dict[str, Any]) -> list[str]:
    st, co = s["enqueue_to_start"], s["enqueue_to_complete"]
    mark = " *" if s["complete_source"].startswith("handler end") else ""
    return [
        fmt(s.get("jobs_per_s")),
        *(fmt(st[p], 1) for p in ("p50_ms", "p95_ms", "p99_ms")),
        *(fmt(co[p], 1) + mark for p in ("p50_ms", "p95_ms", "p99_ms")),
        ratio(co["p99_ms"], s0.get("enqueue_to_complete", {}).get("p99_ms")),
        fmt(s.get("commits_per_job"), 2),
        fmt(s.get("wal_bytes_per_job")),
        fmt(s.get("exactly_once") and s.get("pending_after") == 0),
    ]


def fanout_cells(_: dict[str, Any], f: dict[str, Any], f0: dict[str, Any]) -> list[str]:
    return [
        fmt(f.get("seconds"), 1),
        fmt(f.get("children_per_s")),
        ratio(f.get("children_per_s"), f0.get("children_per_s")),
        fmt(f.get("continuations")),
        fmt(f.get("commits_per_job"), 2),
        fmt(f.get("wal_bytes_per_job")),
        fmt(f.get("exactly_once")),
    ]


def markdown(report: dict[str, Any]) -> str:
    rows = report["systems"]
    plan = report["plan"]
    flight = f"{plan['procs']} worker processes x {plan['concurrency']} jobs in flight"
    ceiling = ", ".join(f"{fmt(v)} tps at {k} client(s)" for k, v in report["ceiling_tps"].items())
    burn_columns = ["version", "jobs/s", "vs pgflight", "enqueue jobs/s", "commits/job", "WAL bytes/job"]
    steady_columns = ["jobs/s", "start p50", "p95", "p99", "complete p50", "p95", "p99", "p99 vs pgflight"]
    fanout_columns = ["seconds", "children/s", "vs pgflight", "continuation ran", "commits/child"]
    lines = [
        f"Measured {report['date']} on {report['machine']}; PostgreSQL {report['server']} "
        f"({report['durability']}); one server, one run of {report['wall_s'] / 60:.1f} min.",
        "",
        f"Ceiling (pgbench, one single-row INSERT per transaction, {plan['ceiling_s']} s each): {ceiling}.",
        "",
        f"**Burn-down**: {fmt(plan['jobs'])} no-op jobs enqueued, then drained by {flight}. jobs/s from "
        "the first handler start to the last handler end; commits and WAL per job cover enqueue and drain.",
        "",
        *table(rows, "burn_down", [*burn_columns, "each job once", "config"], burn_cells),
        "",
        f"**Steady state**: an open-loop producer enqueues {fmt(plan['rate'])} jobs/s for "
        f"{fmt(plan['steady_s'])} s, one job per call, while {flight} run. Latency in ms from the enqueue "
        "call to the handler's start, and to the completion the system recorded in its tables (marked *"
        " where it records none: to the handler's end).",
        "",
        *table(
            rows,
            "steady",
            [*steady_columns, "commits/job", "WAL bytes/job", "each job once"],
            steady_cells,
        ),
        "",
        f"**Fan-out**: one parent spawns {fmt(plan['children'])} no-op children and continues once when "
        f"all are done; {plan['procs'] * plan['concurrency']} jobs in flight in one process. Seconds from"
        " the parent's submit to the continuation's end.",
        "",
        *table(rows, "fanout", [*fanout_columns, "WAL bytes/child", "each child once"], fanout_cells),
        "",
        "Packages: " + "; ".join(f"{r['label']}: {r['package']}" for r in rows) + ".",
    ]
    return "\n".join(lines) + "\n"


def config_text(b: dict[str, Any]) -> str:
    cfg = {**b.get("enqueue_config", {}), **b.get("worker_config", {})}
    return ", ".join(f"{k}={v}" for k, v in cfg.items()).replace("|", "/")


BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"


def update_readme(table: str) -> None:
    readme = ROOT / "bench" / "README.md"
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        say(f"{readme}: markers {BEGIN} / {END} not found; not updated")
        return
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")


# --- main ----------------------------------------------------------------------------------------


def machine() -> str:
    cores = os.cpu_count()
    mem = ""
    with contextlib.suppress(OSError):
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 1024 / 1024:.0f} GB"
    debian = ""
    with contextlib.suppress(OSError):
        debian = f", Debian {Path('/etc/debian_version').read_text().strip()}"
    node = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        node = (
            ", Node.js "
            + subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        )
    python = f", Python {platform.python_version()}"
    return f"{cores} cores{mem}{debian}, {platform.machine()}{python}{node}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run of a few minutes")
    parser.add_argument("--systems", help="comma-separated subset of: " + ", ".join(s.name for s in SYSTEMS))
    parser.add_argument("--jobs", type=int, help="burn-down jobs (default 10,000; quick 1,000)")
    parser.add_argument("--procs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--concurrency", type=int, default=8, help="jobs in flight per process (default 8)")
    parser.add_argument("--rate", type=float, help="steady-state jobs/s (default 100; quick 50)")
    parser.add_argument("--steady-s", type=float, help="steady-state seconds (default 30; quick 4)")
    parser.add_argument("--children", type=int, help="fan-out children (default 2,000; quick 200)")
    parser.add_argument(
        "--out",
        help="folder for results.json and results.md (default: bench/peers for a full run of every"
        " system, whose results are kept in git; bench/peers/work otherwise)",
    )
    parser.add_argument("--no-readme", action="store_true", help="do not update bench/README.md")
    args = parser.parse_args()
    q = args.quick
    plan = Plan(
        jobs=args.jobs or (1_000 if q else 10_000),
        procs=args.procs,
        concurrency=args.concurrency,
        rate=args.rate or (50 if q else 100),
        steady_s=args.steady_s or (4 if q else 30),
        children=args.children or (200 if q else 2_000),
        ceiling_s=2 if q else 10,
    )
    chosen = SYSTEMS
    if args.systems:
        wanted = [w.strip().lower() for w in args.systems.split(",") if w.strip()]
        unknown = set(wanted) - {s.name for s in SYSTEMS}
        if unknown or not wanted:
            parser.error(
                f"unknown systems: {', '.join(sorted(unknown)) or '(none named)'};"
                f" choose from {', '.join(s.name for s in SYSTEMS)}"
            )
        chosen = [s for s in SYSTEMS if s.name in wanted]
    # The committed results and bench/README.md change only after a run of the documented plan
    # over every system; any other run writes to bench/peers/work.
    counts = (args.jobs, args.rate, args.steady_s, args.children)
    full = not args.quick and chosen == SYSTEMS and all(c is None for c in counts)
    full = full and (args.procs, args.concurrency) == (2, 8)
    final = Path(args.out) if args.out else HERE if full else HERE / "work"
    out = HERE / "work" if full and not args.out else final  # where partial results go meanwhile

    # SIGTERM unwinds like Ctrl-C, so the cluster below is always destroyed
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="pgflight-peers-"))
    folder.chmod(0o755)
    scratch = folder / "scratch"
    scratch.mkdir()
    cluster = Cluster(
        folder / "cluster", settings={**REALISTIC, "max_connections": "300"}, database="postgres"
    )
    report: dict[str, Any] = {
        "bench": "peers",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine(),
        "plan": plan.__dict__,
        "durability": "fsync=on, synchronous_commit=on",
    }
    try:
        dsn = cluster.up()
        with psycopg.connect(dsn, autocommit=True) as c:
            report["server"] = str(c.execute("show server_version").fetchone()[0])  # type: ignore[index]
        say("ceiling: pgbench")
        cluster.create_database("ceiling")
        ceiling = pgbench_ceiling(cluster, cluster.dsn("ceiling"), plan.ceiling_s, insert=True)
        report["ceiling_tps"] = {str(k): v for k, v in ceiling.items()}
        ctx = Context(cluster, Observer(dsn), scratch, plan)
        report["systems"] = []
        for system in chosen:
            say(f"{system.label}: setup")
            report["systems"].append(bench_system(ctx, system))
            write(report, out, started)
    finally:
        cluster.destroy()
        shutil.rmtree(folder, ignore_errors=True)
    failures = [
        r["label"] for r in report["systems"] if any("error" in r.get(k, {}) for k in PHASES) or "error" in r
    ]
    table = write(report, final if not failures else out, started)
    say(f"results: {(final if not failures else out) / 'results.json'} and results.md")
    if failures:
        say(f"failed: {', '.join(failures)}; the committed results and bench/README.md are left as they were")
    elif full and not args.no_readme:
        update_readme(table)
        say("bench/README.md: tables replaced")
    print(table)


def write(report: dict[str, Any], out: Path, started: float) -> str:
    report["wall_s"] = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(report) if report.get("systems") else ""
    (out / "results.md").write_text(table)
    return table


if __name__ == "__main__":
    main()
