"""
The main job at the seed's size: ``pgflight review --sample N`` with the offline model, on a
throwaway cluster (fsync and synchronous commit on).

    .venv/bin/python bench/review_scale.py [--n 10000] [--workers W] [--crash] [--json FILE]

Prints: wall time, documents/s, model calls, tokens, the database's size before the run, after it
and after retention (every finished run purged, then VACUUM FULL), the peak resident memory of
each worker process (VmHWM from /proc, sampled every half second; the worker that runs the
reconcile step writes the report) and of the report alone (the run's results read back from the
database and written again in a fresh process: seconds, peak RSS, the pages' weights), and the
sample check (recall / precision of the inserted clauses).

``--crash``: once half the documents are reviewed, SIGKILL the command and every worker it
started, restart the database server in immediate mode (a crash: recovery at start), then run the
same command again; it continues the same run. Asserted: the run succeeded, each of the N
documents has exactly one review step, which succeeded once (no step has two succeeded
attempts), and flags.csv holds each document's flags exactly once.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from benchlib import throwaway_cluster

from pgflight import db
from pgflight.db.audit import run_audit

ROOT = Path(__file__).resolve().parents[1]


def db_size(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute("select pg_database_size(current_database())").fetchone()
        assert row is not None
        return int(row[0])


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


class RssWatch:
    """Peak RSS (VmHWM) of every review worker process on `dsn` (its environment names it), sampled."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn.encode()
        self.peak: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> RssWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            for pid in workers():
                with contextlib.suppress(OSError, ValueError):
                    if b"PGFLIGHT_DSN=" + self.dsn + b"\0" not in Path(f"/proc/{pid}/environ").read_bytes():
                        continue  # another review's worker (a test, another checkout)
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak[pid] = max(self.peak.get(pid, 0), int(line.split()[1]) * 1024)


def workers(parent: int | None = None) -> list[int]:
    """Pids of `pgflight ... worker --recipes pgflight_review.recipes` processes (of `parent`)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"worker" in argv and b"pgflight_review.recipes" in argv and (parent is None or ppid == parent):
            found.append(int(entry))
    return found


def review_cmd(n: int, out: Path, workers_n: int | None, seed: int) -> list[str]:
    cmd = [sys.executable, "-m", "pgflight.cli", "review", "--sample", str(n), "--seed", str(seed)]
    cmd += ["--out", str(out)]
    return cmd + (["--workers", str(workers_n)] if workers_n else [])


def reviewed(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(
            "select count(*) from pgflight.step_status"
            " where recipe = 'review_document' and status = 'succeeded'"
        ).fetchone()
        assert row is not None
        return int(row[0])


def crash_in_the_middle(
    cmd: list[str], env: dict[str, str], dsn: str, cluster: Any, n: int, log: Path
) -> float:
    """Start the command; at n/2 reviewed, SIGKILL it and its workers, crash-restart the server."""
    with open(log, "ab") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
    t0 = time.monotonic()
    while reviewed(dsn) < n // 2:
        if proc.poll() is not None:
            raise SystemExit(f"the command ended (exit {proc.returncode}) before the crash; see {log}")
        time.sleep(0.5)
    victims = workers(proc.pid)
    proc.send_signal(signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # each worker leads its own process group
    proc.wait()
    at = reviewed(dsn)
    cluster.restart("immediate")
    print(
        f"crash: at {at:,}/{n:,} reviewed ({time.monotonic() - t0:.0f} s): SIGKILL of the command and "
        f"its {len(victims)} workers, database server restarted in immediate mode",
        flush=True,
    )
    return time.monotonic() - t0


def exactly_once(dsn: str, run_id: int, n: int, flags_csv: Path) -> dict[str, Any]:
    """Every document reviewed by exactly one step that succeeded once; flags.csv without repeats."""
    with psycopg.connect(dsn, autocommit=True) as c:
        root = c.execute("select root_step_id from pgflight.runs where id = %s", [run_id]).fetchone()
        assert root is not None
        children = [x for x in db.children_results(c, root[0]) if x.recipe == "review_document"]
        audit = run_audit(c, run_id)
    paths = [x.result["path"] for x in children if x.status == "succeeded"]
    assert len(children) == n, f"{len(children)} review steps for {n} documents"
    assert len(paths) == n == len(set(paths)), "a document not reviewed, or reviewed twice"
    assert audit.steps_succeeded_twice == 0, f"{audit.steps_succeeded_twice} steps succeeded twice"
    expected = {x.result["path"]: len(x.result.get("flags") or []) for x in children}
    rows: dict[str, int] = {}
    with open(flags_csv, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            rows[row["path"]] = rows.get(row["path"], 0) + 1
    assert rows == {p: k for p, k in expected.items() if k}, "flags.csv differs from the steps' results"
    return {"review_steps": len(children), "distinct_documents": len(set(paths)), "succeeded_twice": 0}


REPORT_AGAIN = """
import json, resource, sys, time
import psycopg
from pgflight import db
from pgflight_review.recipes import document_results
from pgflight_review.report import RunInfo, write_report
dsn, run_id, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with psycopg.connect(dsn) as c:
    root = c.execute("select root_step_id from pgflight.runs where id = %s", [run_id]).fetchone()[0]
    children = db.children_results(c, root)
paths = {}
t0 = time.monotonic()
results = document_results(children, paths)
files = write_report(out, results, {"steps": len(results)}, [], run=RunInfo.now(run_id, "offline"))
print(json.dumps({"seconds": time.monotonic() - t0,
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def page_weights(out: Path) -> dict[str, Any]:
    pages = [p for p in out.rglob("*.html")]
    sizes = sorted(p.stat().st_size for p in pages)
    return {
        "html_pages": len(pages),
        "index_bytes": (out / "report.html").stat().st_size,
        "largest_page_bytes": sizes[-1] if sizes else 0,
        "median_page_bytes": sizes[len(sizes) // 2] if sizes else 0,
        "md_files": len(list(out.rglob("*.md"))),
        "report_md_bytes": (out / "report.md").stat().st_size,
        "flags_csv_bytes": (out / "flags.csv").stat().st_size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--crash", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here as JSON")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pgflight-review-scale-"))
    out = work / "report"
    log = work / "command.log"
    figures: dict[str, Any] = {"n": args.n, "crash": args.crash, "load_before": os.getloadavg()[0]}
    with throwaway_cluster() as (cluster, dsn):
        figures["db_bytes_before"] = db_size(dsn)
        env = dict(os.environ, PGFLIGHT_DSN=dsn, COLUMNS="160")
        cmd = review_cmd(args.n, out, args.workers, args.seed)
        t0 = time.monotonic()
        with RssWatch(dsn) as watch:
            if args.crash:
                figures["crash_after_s"] = round(crash_in_the_middle(cmd, env, dsn, cluster, args.n, log), 1)
            with open(log, "ab") as fh:
                done = subprocess.run(
                    cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, check=False
                )
        wall = time.monotonic() - t0
        text = log.read_text(errors="replace")
        if done.returncode != 0:
            raise SystemExit(f"review exited {done.returncode}:\n{text[-3000:]}")
        with psycopg.connect(dsn, autocommit=True) as c:
            row = c.execute(
                "select id from pgflight.runs where recipe = 'review_library' order by id desc limit 1"
            ).fetchone()
            assert row is not None
            run_id = int(row[0])
            runs = c.execute("select count(*) from pgflight.runs").fetchone()
            audit = run_audit(c, run_id)
        assert runs is not None and runs[0] == 1, (
            f"{runs} runs: the second command did not continue the first"
        )
        figures["exactly_once"] = exactly_once(dsn, run_id, args.n, out / "flags.csv")
        figures |= {
            "wall_s": round(wall, 1),
            "docs_per_s": round(args.n / wall, 2),
            "model_calls": audit.model_calls,
            "tokens": audit.tokens,
            "steps": audit.steps,
            "attempts": audit.attempts,
            "reclaimed_attempts": audit.reclaimed_attempts,
            "worker_peak_rss_bytes": sorted(watch.peak.values(), reverse=True),
            "workers_seen": len(watch.peak),
            "db_bytes_after_run": db_size(dsn),
        }
        again = subprocess.run(
            [sys.executable, "-c", REPORT_AGAIN, dsn, str(run_id), str(work / "report-again")],
            capture_output=True,
            text=True,
            check=True,
        )
        figures["report_alone"] = json.loads(again.stdout)
        figures["report"] = page_weights(out)
        with psycopg.connect(dsn, autocommit=True) as c:
            # retention: every finished run purged, then the firehose partitions of its agent runs
            while db.purge_finished(c, older_than_s=0, limit=1000):
                pass
            for _ in range(10):
                if not c.execute("select count(*) from pgflight.maintain_partitions()").fetchone()[0]:
                    break
            figures["db_bytes_after_purge"] = db_size(dsn)
            c.execute("vacuum")
            figures["db_bytes_after_vacuum"] = db_size(dsn)
            c.execute("vacuum full")
            figures["db_bytes_after_vacuum_full"] = db_size(dsn)
            figures["largest_relations_after"] = c.execute(
                "select c.relname, pg_total_relation_size(c.oid) from pg_class c"
                " join pg_namespace n on n.oid = c.relnamespace"
                " where n.nspname = 'pgflight' and c.relkind in ('r', 'p')"
                " order by 2 desc limit 5"
            ).fetchall()
        check = json.loads((out / "sample-check.json").read_text())
        figures["sample_check"] = {k: check[k] for k in ("recall", "precision", "documents_all_found")}
    figures["load_after"] = os.getloadavg()[0]
    print(
        f"documents {args.n:,}{' with a crash in the middle' if args.crash else ''}: "
        f"{figures['wall_s']:,} s, {figures['docs_per_s']} documents/s, "
        f"{figures['model_calls']:,} model calls "
        f"({figures['tokens']:,} tokens), {figures['reclaimed_attempts']:,} reclaimed attempts"
    )
    print(
        f"database: {mb(figures['db_bytes_before'])} before, "
        f"{mb(figures['db_bytes_after_run'])} after the run, "
        f"{mb(figures['db_bytes_after_purge'])} after retention (purge_finished, maintain_partitions), "
        f"{mb(figures['db_bytes_after_vacuum'])} after VACUUM, "
        f"{mb(figures['db_bytes_after_vacuum_full'])} after VACUUM FULL; largest then: "
        + ", ".join(f"{name} {mb(size)}" for name, size in figures["largest_relations_after"])
    )
    rss = figures["worker_peak_rss_bytes"]
    print(f"workers: {figures['workers_seen']} processes, peak RSS {', '.join(mb(r) for r in rss[:8])}")
    ra = figures["report_alone"]
    rep = figures["report"]
    print(
        f"report alone: {ra['seconds']:.1f} s, peak RSS {mb(ra['peak_rss'])}; "
        f"{rep['html_pages']} HTML pages, "
        f"index {rep['index_bytes'] / 1e3:,.0f} kB, largest page {rep['largest_page_bytes'] / 1e3:,.0f} kB, "
        f"median {rep['median_page_bytes'] / 1e3:,.0f} kB; report.md {rep['report_md_bytes'] / 1e3:,.0f} kB, "
        f"flags.csv {rep['flags_csv_bytes'] / 1e6:,.1f} MB"
    )
    print(f"exactly once: {figures['exactly_once']}; sample check: {figures['sample_check']}")
    print(
        f"load average {figures['load_before']:.1f} before, {figures['load_after']:.1f} after; "
        f"files in {work}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
