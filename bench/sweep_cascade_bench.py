"""
Sweep passes against a blocked fail-fast cascade: how long each run_sweeps pass takes.

One throwaway cluster (fsync on, benchlib.throwaway_cluster), deployed at HEAD. A fail-fast parent
spawns N children (max_attempts 1, default 3,000), all claimed with a 60 s lease; another
workspace has one claimed step too. An open transaction holds one sibling's attempt FOR SHARE.
With the sweeper's clock two minutes ahead (the fake clock), every lease has lapsed: the script
runs run_sweeps() passes while the share lock is held (--held, default 3), then releases it and
runs passes until nothing of the family is leased. Prints one JSON document: each pass's seconds
and reclaim count, whether the other workspace's lease was reclaimed on the first pass, and how
many passes after the release the family took.

Usage: python bench/sweep_cascade_bench.py [--children 3000] [--held 3]
About a minute on 2 loaded cores. Measured at load 14 on 2 cores: passes of 0.35-1.42 s (three
while held, three after), the other workspace's lease reclaimed on the first pass, the family
resolved 3 passes after the release. Again with every end of a step on the one lock order, at
load 10.4-11.5 on 2 shared cores: passes of 0.56-1.35 s (0.88-1.21 s while held), the other
workspace's lease reclaimed on the first pass, the family resolved 3 passes after the release.
Before (@v0.9.0, tests_py/test_sweep_progress.py) the first pass ran past a 60 s
statement_timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import psycopg
from benchlib import throwaway_cluster
from psycopg.types.json import Jsonb


def claim(c: psycopg.Connection[Any], worker: int, n: int, recipe: str) -> list[tuple[int, int]]:
    got = c.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, %s)", [worker, n, [recipe]]
    ).fetchall()
    return [(int(a), int(t)) for a, t in got]


def lapsed(c: psycopg.Connection[Any], parent: int) -> int:
    row = c.execute(
        "select count(*) from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id"
        " where s.parent_id = %s and a.status in ('claimed', 'running', 'cancel_requested')",
        [parent],
    ).fetchone()
    assert row is not None
    return int(row[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--children", type=int, default=3000)
    ap.add_argument("--held", type=int, default=3, help="passes run while the sibling is held FOR SHARE")
    a = ap.parse_args()
    with throwaway_cluster() as (_, dsn), psycopg.connect(dsn, autocommit=True) as c:
        c.execute("update pgflight.settings set allow_fake_clock = true")
        c.execute("select set_config('pgflight.fake_now', '2030-01-01T00:00:00Z', false)")
        c.execute("select pgflight.create_workspace('other')")
        w = int(c.execute("select pgflight.register_worker('bench')").fetchone()[0])  # type: ignore[index]
        row = c.execute(
            "select run_id, step_id from pgflight.submit_run('bench', 'mom', '{}', %s)",
            [Jsonb({"max_attempts": 1})],
        ).fetchone()
        assert row is not None
        parent = int(row[1])
        (p,) = claim(c, w, 1, "mom")
        kids = [
            {"key": f"k{i:05d}", "recipe": "kid", "input": {}, "options": {"max_attempts": 1}}
            for i in range(a.children)
        ]
        c.execute(
            "select * from pgflight.spawn_children(%s, %s, %s, %s)",
            [p[0], p[1], Jsonb(kids), Jsonb({"fail_fast": True})],
        )
        got = 0
        while got < a.children:
            got += len(claim(c, w, 1000, "kid"))
        c.execute("select pgflight.submit_run('other', 'solo', '{}', '{}')")
        ((other, _),) = claim(c, w, 1, "solo")
        held = c.execute(
            "select max(a.id) from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id"
            " where s.parent_id = %s",
            [parent],
        ).fetchone()
        assert held is not None
        with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as sweeper:
            holder.execute("select 1 from pgflight.step_attempts where id = %s for share", [held[0]])
            sweeper.execute("select set_config('pgflight.fake_now', '2030-01-01T00:02:00Z', false)")
            passes: list[dict[str, Any]] = []

            def one_pass(phase: str) -> None:
                t0 = time.perf_counter()
                out = dict(sweeper.execute("select * from pgflight.run_sweeps()").fetchall())
                passes.append(
                    {
                        "phase": phase,
                        "s": round(time.perf_counter() - t0, 3),
                        "reclaimed": out["reclaim_expired"],
                    }
                )

            one_pass("held")
            st = sweeper.execute(
                "select status from pgflight.step_attempts where id = %s", [other]
            ).fetchone()
            other_first = st is not None and st[0] == "lease_expired"
            for _ in range(a.held - 1):
                one_pass("held")
            holder.rollback()
            after = 0
            while lapsed(c, parent) and after < 20:
                one_pass("released")
                after += 1
        print(
            json.dumps(
                {
                    "children": a.children,
                    "passes": passes,
                    "longest_pass_s": max(p["s"] for p in passes),
                    "other_workspace_reclaimed_on_first_pass": other_first,
                    "passes_after_release": after,
                    "family_left_leased": lapsed(c, parent),
                    "loadavg": os.getloadavg()[0],
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
