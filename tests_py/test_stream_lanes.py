"""
Streams across tenants, as real logins over scram: a stream written in workspace B is invisible to
a reader of A (stream_read and stream_channels answer exactly as for a run that does not exist,
ZF003, and read nothing), while B's reader reads it; a worker of A cannot write to B's attempt
(the fence: ZF003) nor read streams at all (42501: no reader function is granted to workers).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from security_support import Conn, World, grant
from test_security_attacks import as_login, su  # noqa: F401  (fixtures)


def _error(conn: Conn, query: str, params: list[object]) -> tuple[str | None, str]:
    try:
        conn.execute(query, params).fetchall()
    except psycopg.Error as e:
        return e.sqlstate, e.diag.message_primary or ""
    return None, ""


READ = "select * from pgflight.stream_read(%s, 'tokens', 0, 10, 0)"
CHANNELS = "select * from pgflight.stream_channels(%s)"


def test_a_stream_in_workspace_b_is_invisible_to_a_reader_of_a(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    grant(su, "pgf_worker_b", "B", "worker")
    grant(su, "pgf_reader_a", "A", "reader")
    grant(su, "pgf_reader_b", "B", "reader")
    grant(su, "pgf_worker_a", "A", "worker")
    wb = as_login("pgf_worker_b")
    world = World(su=su, me=wb, workspace="B")
    world.worker_id = int(wb.execute("select pgflight.register_worker('writer')").fetchone()[0])  # type: ignore[index]
    held = world.held()
    wb.execute(
        "select * from pgflight.stream_write(%s, %s, 'tokens', '{secret-1,secret-2}')",
        [held["attempt_id"], held["token"]],
    )
    run_b = held["run_id"]
    missing = int(su.execute("select coalesce(max(id), 0) + 1000 from pgflight.runs").fetchone()[0])  # type: ignore[index]

    ra = as_login("pgf_reader_a")
    for query in (READ, CHANNELS):
        assert _error(ra, query, [run_b]) == ("ZF003", f"unknown run {run_b}")
        assert _error(ra, query, [missing]) == ("ZF003", f"unknown run {missing}")  # the same answer
    rb = as_login("pgf_reader_b")
    assert [r[4] for r in rb.execute(READ, [run_b]).fetchall()] == ["secret-1", "secret-2"]
    assert [r[0] for r in rb.execute(CHANNELS, [run_b]).fetchall()] == ["tokens"]

    wa = as_login("pgf_worker_a")
    state, _ = _error(
        wa,
        "select * from pgflight.stream_write(%s, %s, 'tokens', '{forged}')",
        [held["attempt_id"], held["token"]],
    )
    assert state == "ZF003"  # B's attempt reads as unknown to A's worker, even with its token
    assert _error(wa, READ, [run_b])[0] == "42501"
    assert su.execute(
        "select count(*) from pgflight.stream_chunks where run_id = %s", [run_b]
    ).fetchone() == (2,)
