"""
A run's completion is a HOT update (WAL per step; tables/runs_fillfactor_80).

A run is written twice: at submit, in bulk, and when its root step ends (status, finished_at).
Its pages keep room for the wider finished rows, so the completion's update stays on the page
and writes no index entry (runs_pkey, runs_created_idx) even when completions come in batches
faster than pruning frees the old versions. Counted from the table's statistics
(n_tup_hot_upd / n_tup_upd) after a burn-down of bulk-submitted no-op runs, each claim and each
completion of a batch its own transaction, as a worker does. Autovacuum is off for the tables of
the test, so no other snapshot holds pruning back.

Not every completion: pruning a page needs its cleanup lock, and a buffer pinned at that instant
(the checkpointer or background writer writing it out, as on a busy CI machine) is left unpruned,
so its next update moves off the page. CI saw 13 of 800 so; with the table's default fillfactor
(100) the same burn-down leaves 173 of 800 non-HOT, so the bound below tells the two apart.
"""

from __future__ import annotations

from psycopg.types.json import Jsonb

from core_helpers import WORKSPACE, Conn, one, register, scalar, setup_engine

RUNS = 800
BATCH = 8
MIN_HOT_SHARE = 0.97


def test_completions_of_bulk_submitted_runs_are_hot_updates(conn: Conn) -> None:
    setup_engine(conn)
    for table in ("runs", "steps", "step_attempts", "workers"):
        conn.execute(f"alter table pgflight.{table} set (autovacuum_enabled = false)")
    conn.execute(
        "select count(*) from pgflight.submit_runs(%s,"
        " (select jsonb_agg(jsonb_build_object('recipe', 'noop')) from generate_series(1, %s)))",
        [WORKSPACE, RUNS],
    )
    worker = register(conn)
    done = 0
    while True:
        got = conn.execute(
            "select attempt_id, fencing_token from pgflight.claim_batch(%s, %s, 60, null, %s)",
            [worker, BATCH, Jsonb({"start": True})],
        ).fetchall()
        if not got:
            break
        outcomes = conn.execute(
            "select outcome from pgflight.complete_batch(%s, %s, array_fill(null::jsonb, array[%s]))",
            [[a for a, _ in got], [t for _, t in got], len(got)],
        ).fetchall()
        assert {o for (o,) in outcomes} == {"succeeded"}
        done += len(got)
    assert done == RUNS
    assert scalar(conn, "select count(*) from pgflight.runs where status = 'succeeded'") == RUNS
    conn.execute("select pg_stat_force_next_flush()")
    stats = one(
        conn,
        "select n_tup_upd, n_tup_hot_upd from pg_stat_user_tables where relid = 'pgflight.runs'::regclass",
    )
    assert stats["n_tup_upd"] == RUNS
    assert stats["n_tup_hot_upd"] >= MIN_HOT_SHARE * RUNS, (
        f"{RUNS - stats['n_tup_hot_upd']} of {RUNS} completions were not HOT"
    )
