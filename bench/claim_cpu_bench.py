"""
Claim CPU benchmark: backend CPU per claim_batch(10) with caps and keys on versus off,
read from /proc (utime + stime of the claiming backend), which a loaded machine inflates far less
than wall-clock latency. Prints one line per configuration; not a test.

One claimer drains N no-op steps over four workspaces (claims on one connection, completes on
another), in fresh databases of one throwaway cluster: `off` (nothing set), `caps` (each
workspace max_in_flight 1,000), `keys` (500 keys, limit 5), `on_local` (both), `on` (both and a
global cap of 100,000), `tight` (both and a global cap of 20, shared by the four workspaces: the
claim counts each workspace's leases against its share of the cap on every call). With a tag
(e.g. @v0.3.0) each is also deployed at that tag, interleaved.

Usage: python bench/claim_cpu_bench.py [TAG] [N]   (N default 3,000: about 8 minutes with a tag
on two loaded cores)
"""

from __future__ import annotations

import sys
from typing import Any

import psycopg
from benchlib import process_cpu_s, register, throwaway_cluster
from psycopg.types.json import Jsonb

from pgflight import migrate

CONFIGS: list[tuple[str, bool, bool, int | None]] = [  # name, workspace caps, keys, global cap
    ("off", False, False, None),
    ("caps", True, False, None),
    ("keys", False, True, None),
    ("on_local", True, True, None),
    ("on", True, True, 100_000),
    ("tight", True, True, 20),
]


def setup(db: str, caps: bool, keys: bool, glob: int | None, n: int) -> None:
    with psycopg.connect(db, autocommit=True) as c:
        for i in range(4):
            c.execute("select pgflight.create_workspace(%s)", [f"w{i}"])
            if caps:
                c.execute(
                    "select pgflight.set_workspace_limits(%s, %s)", [f"w{i}", Jsonb({"max_in_flight": 1000})]
                )
            c.execute(
                "select pgflight.submit_run(%s, 'noop', '{}', case when %s then jsonb_build_object("
                "'concurrency_key', 'k' || (g %% 500), 'concurrency_limit', 5) else '{}'::jsonb end)"
                " from generate_series(1, %s) g",
                [f"w{i}", keys, n // 4],
            )
        if glob is not None:
            c.execute("select pgflight.set_global_limits(%s)", [Jsonb({"max_in_flight": glob})])
        c.execute("vacuum analyze")


def drain(db: str) -> dict[str, Any]:
    """Claim(10) until empty, completing on a second connection; CPU per claim of each backend."""
    with psycopg.connect(db, autocommit=True) as a, psycopg.connect(db, autocommit=True) as b:
        w = register(a, "cpu")
        a.execute("select pgflight.claim_batch(%s, 1, 60)", [w]).fetchall()  # warm the caches
        a0, b0, k = process_cpu_s(a.info.backend_pid), process_cpu_s(b.info.backend_pid), 0
        while got := a.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, 10, 60)", [w]
        ).fetchall():
            k += 1
            b.execute(
                "select count(*) from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
                [[x for x, _ in got], [t for _, t in got], len(got)],
            )
        return {
            "claims": k,
            "claim_cpu_ms": round(1000 * (process_cpu_s(a.info.backend_pid) - a0) / k, 2),
            "complete_cpu_ms": round(1000 * (process_cpu_s(b.info.backend_pid) - b0) / k, 2),
        }


def main() -> None:
    tag = sys.argv[1] if len(sys.argv) > 1 else None
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    with throwaway_cluster() as (cluster, dsn):
        for name, caps, keys, glob in CONFIGS:
            for to in [None, tag] if tag else [None]:
                db_name = f"cpu_{name}_{'tag' if to else 'head'}"
                with psycopg.connect(dsn, autocommit=True) as c:
                    c.execute(f"create database {db_name}")
                db = cluster.dsn(db_name)
                migrate.deploy(db, verify=False, to=to)
                setup(db, caps, keys, glob, n)
                print(to or "HEAD", name, drain(db), flush=True)


if __name__ == "__main__":
    main()
