"""
Shared pieces of the benchmarks in bench/: a throwaway PostgreSQL cluster with realistic
durability (fsync on, synchronous_commit on: every commit waits for its WAL flush), deployed with
sqitch; counters read from pg_stat_database and the WAL position; percentiles.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgflight import migrate
from pgflight.embedded import Cluster

Conn = psycopg.Connection[Any]
# Durable like production; WAL sized like a production server so the 1-million-row bulk load of
# core_bench does not spend its time in forced checkpoints.
CONNECTIONS = (1, 4, 16)
REALISTIC = {
    "fsync": "on",
    "synchronous_commit": "on",
    "max_wal_size": "4GB",
    "checkpoint_timeout": "15min",
    "log_min_messages": "warning",
}


@contextlib.contextmanager
def throwaway_cluster(
    database: str = "pgflight", settings: dict[str, str] | None = None
) -> Iterator[tuple[Cluster, str]]:
    """
    Start a new cluster in /tmp with fsync and synchronous commit on (and `settings` on top),
    deploy pgflight into `database`, create workspace `bench`; yield (cluster, superuser DSN);
    destroy it afterwards.
    """
    folder = Path(tempfile.mkdtemp(prefix="pgflight-bench-"))
    os.chmod(folder, 0o755)
    cluster = Cluster(folder, settings={**REALISTIC, **(settings or {})}, database=database)
    try:
        dsn = cluster.up()
        migrate.deploy(dsn, verify=False)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("select pgflight.create_workspace('bench')")
        yield cluster, dsn
    finally:
        cluster.destroy()
        shutil.rmtree(folder, ignore_errors=True)


def deploy_ref(cluster: Cluster, ref: str) -> str:
    """
    A second database of the same cluster at schema `ref`, with workspace `bench`; return its
    superuser DSN. For side-by-side figures (`--compare`): the same server, the same moment, the
    same load.

    `ref` is a point of sqitch.plan (a tag such as `@v1.0.0`: sqitch deploys each reworked change
    from its `<change>@<tag>.sql` copy); a tag of the plan before the 1.0 re-baseline (`@v0.9.0`)
    is deployed from that plan, read from git at the commit sql/upgrade/from-0.9/source_commit
    names. When `ref` does not start with `@` it is a git commit or branch (`main`, `HEAD~3`): its
    sqitch.plan and sql/ are deployed whole, so a change edited in place since the last tag is
    measured against its previous text.
    """
    name = "pgflight_" + re.sub(r"[^a-z0-9]+", "_", ref.lower()).strip("_")
    cluster.create_database(name)
    dsn = cluster.dsn(name)
    root = migrate.project_root()
    if not ref.startswith("@"):
        _deploy_from_git(dsn, root, ref, to=None)
    elif re.search(rf"^{re.escape(ref)} ", (root / "sqitch.plan").read_text(), re.M):
        migrate.deploy(dsn, to=ref, verify=False)
    else:
        commit = (migrate.bridge_root(root) / "source_commit").read_text().strip()
        _deploy_from_git(dsn, root, commit, to=ref)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select pgflight.create_workspace('bench')")
    return dsn


def _deploy_from_git(dsn: str, root: Path, commit: str, to: str | None) -> None:
    """Deploy the sqitch project as it was at git `commit` (up to plan point `to`) into `dsn`."""
    old = Path(tempfile.mkdtemp(prefix="pgflight-ref-"))
    try:
        os.chmod(old, 0o755)
        tree = subprocess.run(
            ["git", "-C", str(root), "archive", commit, "sqitch.conf", "sqitch.plan", "sql"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=tree, check=True)
        migrate.deploy(dsn, to=to, verify=False, root=old)
    finally:
        shutil.rmtree(old, ignore_errors=True)


def side_by_side(base: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    """Both reports and, for every number both have at the top level, head / base."""
    ratios = {
        k: round(head[k] / base[k], 3)
        for k, v in base.items()
        if isinstance(v, (int, float)) and isinstance(head.get(k), (int, float)) and v
    }
    return {"base": base, "head": head, "head_over_base": ratios}


@dataclass
class Counters:
    """Committed transactions (less the observer's own reads) and the WAL position."""

    commits: int
    wal_lsn: int

    _own_reads = 0  # each read commits two transactions of the observer

    @classmethod
    def read(cls, conn: Conn, *, cluster: bool = False) -> Counters:
        """Of the connection's database, or with `cluster` summed over every database."""
        conn.execute("set stats_fetch_consistency = none")  # every read sees the current counters
        where = "" if cluster else " where datname = current_database()"
        row = conn.execute(
            "select sum(xact_commit)::bigint, pg_current_wal_lsn() - '0/0'::pg_lsn"
            f" from pg_stat_database{where}"
        ).fetchone()
        assert row is not None
        cls._own_reads += 2  # the SET and the SELECT
        return Counters(int(row[0]) - cls._own_reads, int(row[1]))


def stats_settled(conn: Conn, *, cluster: bool = False, max_s: float = 30.0) -> Counters:
    """
    Counters once the statistics caught up. A backend reports its commits to pg_stat_database when
    it exits, or when idle at most once a second and up to 10 s late (PG 15, pgstat_report_stat):
    read until two reads a second apart agree, at most `max_s` seconds, then take the last read.
    """
    prev = Counters.read(conn, cluster=cluster)
    deadline = time.monotonic() + max_s
    while True:
        time.sleep(1.1)
        cur = Counters.read(conn, cluster=cluster)
        if cur.commits == prev.commits or time.monotonic() > deadline:
            return cur
        prev = cur


def process_cpu_s(pid: int) -> float:
    """
    CPU seconds (utime + stime, /proc/<pid>/stat) of a process on this machine: a server backend
    (we run as root or as its owner) or a worker.

    :raises OSError: no such process here, or not readable.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def run_threads(n: int, body: Callable[[int], int]) -> tuple[int, float]:
    """Run body(i) on n threads after a common barrier; return (sum of their results, wall seconds)."""
    barrier = threading.Barrier(n + 1)
    results = [0] * n

    def go(i: int) -> None:
        barrier.wait()
        results[i] = body(i)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    return sum(results), time.perf_counter() - started


def register(conn: Conn, name: str) -> int:
    row = conn.execute("select pgflight.register_worker(%s)", [name]).fetchone()
    assert row is not None
    return int(row[0])


def load_expired_leases(c: Conn, n: int) -> None:
    """
    `n` runs with one running step whose lease lapsed an hour ago, straight into the tables, in
    chunks of 200,000 (perf_bench --reclaim, reclaim_bench). It sets the attempts' workspace_id,
    as the engine's own bulk paths do: up to @v0.4.0 the fill trigger it would otherwise run turned
    quadratic in a session loading into tables analyzed while empty (the bench's second load after
    a TRUNCATE), and this bench measures the reclaim, not that (tested in test_sweeps_scale).
    """
    ws = c.execute("select id from pgflight.workspaces where name = 'bench'").fetchone()
    w = register(c, "crashed")
    assert ws is not None
    for lo in range(0, n, 200_000):
        c.execute(
            """
            with r as (
              insert into pgflight.runs (workspace_id, recipe, status, input_hash, created_at)
              select %s, 'crash', 'running', 'x', now() - interval '2 hours' from generate_series(1, %s)
              returning id
            ), s as (
              insert into pgflight.steps (run_id, step_key, recipe, input, max_attempts)
              select r.id, 'root', 'crash', '{}', 3 from r returning id, run_id
            )
            insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, status, available_after,
                                                worker_id, fencing_token, claimed_at, started_at,
                                                lease_expires_at, lease_s, workspace_id)
            select s.id, s.run_id, 1, 'crash', 'running', now() - interval '2 hours', %s,
                   nextval('pgflight.fencing_tokens'), now() - interval '2 hours', now() - interval '2 hours',
                   now() - interval '1 hour', 60, %s
              from s
            """,
            [ws[0], min(200_000, n - lo), w, ws[0]],
        )
    c.execute("vacuum analyze pgflight.runs, pgflight.steps, pgflight.step_attempts")


def claim_complete_loop(
    dsn: str, name: str, recipes: list[str] | None, batch: int, *, until_empty: bool = True
) -> int:
    """
    Claim `batch` at a time and complete them with complete_batch until nothing is left; return the count.
    """
    done = 0
    with psycopg.connect(dsn, autocommit=True) as c:
        w = register(c, name)
        idle = 0
        while True:
            got = c.execute(
                "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s)",
                [w, batch, recipes],
            ).fetchall()
            if not got:
                idle += 1
                if until_empty and idle >= 3:
                    return done
                continue
            idle = 0
            c.execute(
                "select count(*) from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
                [[a for a, _ in got], [t for _, t in got], len(got)],
            )
            done += len(got)


def pgbench_ceiling(
    cluster: Cluster,
    dsn: str,
    seconds: int,
    *,
    insert: bool = False,
    connections: Sequence[int] = CONNECTIONS,
) -> dict[int, float]:
    """
    Single-row-commit transactions per second at each connection count (pgbench -n -c C -j 2 -T
    seconds -f script): one UPDATE of a random row of 100,000 per transaction, or with `insert`
    one INSERT of a row into an append-only table.
    """
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "create table if not exists public.ceiling (id int primary key, v bigint not null default 0)"
        )
        c.execute(
            "create table if not exists public.ceiling_log"
            " (id bigint generated always as identity primary key, v bigint not null)"
        )
        c.execute(
            "insert into public.ceiling (id) select g from generate_series(1, 100000) g"
            " on conflict do nothing"
        )
        c.execute("vacuum analyze public.ceiling")
    script = Path(tempfile.mkdtemp(prefix="pgflight-pgbench-")) / "one_row.sql"
    script.write_text(
        "insert into public.ceiling_log (v) values (1);\n"
        if insert
        else "\\set id random(1, 100000)\nupdate public.ceiling set v = v + 1 where id = :id;\n"
    )
    script.parent.chmod(0o755)
    script.chmod(0o644)
    params = conninfo_to_dict(dsn)
    out = {}
    for n in connections:
        proc = subprocess.run(
            [
                cluster.program("pgbench"),
                "-n",
                "-c",
                str(n),
                "-j",
                str(min(n, 2)),
                "-T",
                str(seconds),
                "-f",
                str(script),
                "-h",
                str(params["host"]),
                "-p",
                str(params["port"]),
                "-U",
                str(params["user"]),
                str(params["dbname"]),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        found = re.search(r"tps = ([\d.]+)", proc.stdout)
        assert found, proc.stdout + proc.stderr
        out[n] = float(found.group(1))
    return out
