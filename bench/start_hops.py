"""
Where the steady state's time from enqueue to handler start goes, hop by hop. Prints one JSON
document; not a test.

On a throwaway cluster (fsync and synchronous_commit on), as bench/peers runs its steady state:
--procs `work` processes of bench/peers' pgflight adapter (the real Worker, batch = concurrency),
then the adapter's open-loop producer (`submit_run`, one job per call, --rate jobs/s for
--seconds). A probe connection in this process LISTENs on the wake-up channel and stamps each
notification as it arrives. Per job, from the producer's enqueue stamp (`enq`), the run's
`created_at` and the attempt's `claimed_at` (both the engine clock, `clock_timestamp()` inside the
statement), the first notification the probe saw after `created_at`, and the handler's start (the
adapter's recorder):

- enqueue -> run row: the client's call reaching the server's insert;
- run row -> notification seen: the rest of submit_run, its commit (WAL flush) and the delivery
  to an idle listener in another process;
- notification -> claimed_at: the worker's wake-up (its listener, the wake ticket, the event
  loop) and the claim statement up to its lease;
- claimed_at -> rows back: the rest of the claim, its commit (WAL flush) and the rows back in the
  worker process (stamped by bench/start_hops_work.py, which wraps the worker's two claim calls);
- rows back -> handler start: the worker's hand-off of the step (listener thread or db thread, event
  loop, step thread).

p50 / p90 / p99 / max in ms per hop and end to end, and which hop the slowest 1 % spent most in.
--setting NAME=VALUE sets a server setting; --worker-env NAME=VALUE is passed to the workers'
environment (e.g. to try a change behind a variable).

Usage: python bench/start_hops.py [--rate 100] [--seconds 20] [--procs 2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from benchlib import throwaway_cluster

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = ROOT / "bench" / "peers" / "adapters" / "pgflight_adapter.py"
PY = sys.executable
HOPS = ("enqueue_to_row", "row_to_notify", "notify_to_claimed", "claimed_to_back", "back_to_handler")
WORK = ROOT / "bench" / "start_hops_work.py"


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def _summary(xs: list[float]) -> dict[str, float]:
    return {
        "p50": round(_pct(xs, 50), 2),
        "p90": round(_pct(xs, 90), 2),
        "p99": round(_pct(xs, 99), 2),
        "max": round(max(xs), 2),
        "mean": round(statistics.fmean(xs), 2),
    }


def _probe(dsn: str, stamps: list[float], stop: threading.Event) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("listen pgflight_ready")
        fd = c.pgconn.socket
        while not stop.is_set():
            if not select.select([fd], [], [], 0.1)[0]:
                continue
            now = time.time()
            c.pgconn.consume_input()
            while c.pgconn.notifies() is not None:
                stamps.append(now)


def run(dsn: str, a: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="pgflight-hops-"))
    workers = []
    for i in range(a.procs):
        out_file = str(folder / f"w{i}.json")
        args = [
            PY,
            str(WORK),
            "work",
            "--dsn",
            dsn,
            "--concurrency",
            str(a.concurrency),
            "--out",
            out_file,
        ]
        p = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        workers.append(p)
    for p in workers:
        assert p.stdout
        while (line := p.stdout.readline()) and line.strip() != "ready":
            pass
    stamps: list[float] = []
    stop = threading.Event()
    probe = threading.Thread(target=_probe, args=(dsn, stamps, stop), daemon=True)
    probe.start()
    time.sleep(0.5)
    produce = [PY, str(ADAPTER), "produce", "--dsn", dsn, "--rate", str(a.rate), "--seconds", str(a.seconds)]
    out = subprocess.run(
        [*produce, "--first-id", "0"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    sent = json.loads(out.stdout.strip().splitlines()[-1])["sent"]
    with psycopg.connect(dsn, autocommit=True) as c:
        deadline = time.time() + 30
        while time.time() < deadline:
            left = c.execute(
                "select count(*) from pgflight.step_attempts where status not in ('succeeded')"
            ).fetchone()
            if left == (0,):
                break
            time.sleep(0.1)
        rows = c.execute(
            "select (s.input->>'id')::int, extract(epoch from r.created_at)::float8,"
            " extract(epoch from a.claimed_at)::float8"
            " from pgflight.runs r join pgflight.steps s on s.run_id = r.id"
            " join pgflight.step_attempts a on a.step_id = s.id and a.status = 'succeeded'"
        ).fetchall()
    stop.set()
    for p in workers:
        p.terminate()
    for p in workers:
        p.wait(timeout=60)
    starts: dict[int, tuple[float, float]] = {}
    back: dict[int, float] = {}
    for i in range(a.procs):
        dumped = json.loads((folder / f"w{i}.json").read_text())
        for jid, enq, start, _end in dumped["jobs"]:
            starts[jid] = (enq, start)
        back.update({int(k): v for k, v in dumped["claims_back"].items()})
    stamps.sort()
    hops: dict[str, list[float]] = {k: [] for k in (*HOPS, "total")}
    for jid, created, claimed in rows:
        if jid not in starts or jid not in back:
            continue
        enq, start = starts[jid]
        k = bisect.bisect_left(stamps, created)
        note = stamps[k] if k < len(stamps) else claimed
        note = min(note, claimed)
        hops["enqueue_to_row"].append((created - enq) * 1000)
        hops["row_to_notify"].append((note - created) * 1000)
        hops["notify_to_claimed"].append((claimed - note) * 1000)
        hops["claimed_to_back"].append((back[jid] - claimed) * 1000)
        hops["back_to_handler"].append((start - back[jid]) * 1000)
        hops["total"].append((start - enq) * 1000)
    n = len(hops["total"])
    slow = sorted(range(n), key=lambda i: hops["total"][i])[-max(1, n // 100) :]
    worst: dict[str, int] = {}
    for i in slow:
        h = max(HOPS, key=lambda k: hops[k][i])
        worst[h] = worst.get(h, 0) + 1
    return {
        "sent": sent,
        "jobs": n,
        "notifications": len(stamps),
        "hops_ms": {k: _summary(v) for k, v in hops.items()},
        "slowest_1pct_mostly_in": worst,
        "slowest_1pct_mean_ms": {k: round(statistics.fmean(hops[k][i] for i in slow), 2) for k in hops},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--setting", action="append", default=[])
    ap.add_argument("--worker-env", action="append", default=[])
    a = ap.parse_args()
    settings = dict(s.split("=", 1) for s in a.setting)
    env = {**os.environ, **dict(s.split("=", 1) for s in a.worker_env)}
    report: dict[str, Any] = {"load_avg_before": round(os.getloadavg()[0], 1)}
    report.update(rate=a.rate, seconds=a.seconds)
    with throwaway_cluster(settings=settings) as (_, dsn):
        report.update(run(dsn, a, env))
    report["load_avg_after"] = round(os.getloadavg()[0], 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
