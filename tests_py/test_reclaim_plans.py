"""
A reclaim pass reads its batch by index, whatever the statistics say.

The set-based reclaim (`_reclaim_picked`) plans each statement of a pass for the batch it has
(EXECUTE, the arrays as constants). Sized for a batch that is a good part of the table, such a
plan hash-joined a sequential scan of step_attempts (and of steps, for the parents), so a pass
read all of both tables, on every pass of a drain (as auto_explain of a reclaim at 26,000
attempts showed). The test reclaims a batch of 1,000 out of 3,000 lapsed leases and reads every plan the
pass ran, nested statements included, through auto_explain sent to the client as notices.
"""

from __future__ import annotations

import re

import psycopg

from conftest import ConnectFactory
from core_helpers import Conn, claim, register, scalar, set_clock, setup_engine, submit_many

HOT_TABLES = ("runs", "steps", "step_attempts")


def _plans(conn: Conn, sql: str) -> tuple[list[str], object]:
    """The plans of every statement `sql` runs on `conn`, nested ones included, and its result."""
    seen: list[str] = []

    def keep(d: psycopg.errors.Diagnostic) -> None:
        if d.message_primary and "plan:" in d.message_primary:
            seen.append(d.message_primary)

    conn.execute("load 'auto_explain'")
    conn.execute("set auto_explain.log_min_duration = 0")
    conn.execute("set auto_explain.log_nested_statements = on")
    conn.execute("set auto_explain.log_level = notice")
    conn.execute("set client_min_messages = notice")
    conn.add_notice_handler(keep)
    try:
        result = scalar(conn, sql)
    finally:
        conn.remove_notice_handler(keep)
        conn.execute("set auto_explain.log_min_duration = -1")
    return seen, result


def test_a_reclaim_pass_reads_no_hot_table_sequentially(connect: ConnectFactory) -> None:
    """A pass of 1,000 of 3,000 lapsed leases reads runs, steps and attempts by key, not whole."""
    c = connect(timeout_s=60)
    setup_engine(c)
    w = register(c)
    set_clock(c, 0)
    submit_many(c, 3000, "bulk", max_attempts=3)
    got = 0
    while got < 3000:
        got += len(claim(c, w, 500, 1, ["bulk"]))
    c.execute("analyze pgflight.runs, pgflight.steps, pgflight.step_attempts")
    set_clock(c, 3600)

    plans, reclaimed = _plans(c, "select pgflight.reclaim_expired(1000)")

    assert reclaimed == 1000
    assert plans, "auto_explain reported no plan"
    scans = [
        f"{table}: {p.split('Query Text:', 1)[-1].strip().splitlines()[0][:120]}"
        for p in plans
        for table in HOT_TABLES
        if re.search(rf"Seq Scan on {table}\b", p)
    ]
    assert not scans, "sequential scans in a reclaim pass:\n" + "\n".join(scans)
    # nor whole by its primary key: with seq scans off, a batch of a third of the table was
    # hash-joined to a full index scan instead (to 0.8.0); each key is probed (Index Cond)
    whole = [
        f"{m.group(1)}: {p.split('Query Text:', 1)[-1].strip().splitlines()[0][:120]}"
        for p in plans
        for m in re.finditer(
            rf"Index (?:Only )?Scan using (({'|'.join(HOT_TABLES)})_pkey) on .*\n(?!\s*Index Cond)", p
        )
    ]
    assert not whole, "full primary-key scans in a reclaim pass:\n" + "\n".join(whole)
    # and the pass did its work: each reclaimed attempt has its queued successor
    assert scalar(c, "select count(*) from pgflight.step_attempts where status = 'queued'") == 1000
