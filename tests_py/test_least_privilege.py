"""
Least privilege for the deploy login (a member of pgflight_owner, logging in over scram): it
inherits neither pg_read_all_stats nor the cluster-wide SET on session_replication_role. Those
belong to pgflight_privileged (NOLOGIN, no member), which owns the four definer functions that
need them; the engine's functions call them, the lanes may not. And the sweeps that need them
still see other roles' backends.

Before, pgflight_owner held both, so the deploy login read every database's query text (a
superuser's included) and could switch off the triggers and foreign keys of any table it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from security_support import Conn
from test_security_attacks import as_login  # noqa: F401  (fixture)

PRIVILEGED = (
    "_vacuum_horizon()",
    "_backend_started_at(integer)",
    "_row_triggers_off()",
    "_row_triggers_on(text)",
)
SECRET = "select 'a superuser''s secret query text' as s"


def test_the_deploy_login_reads_no_other_sessions_query_and_may_not_set_the_replication_role(
    conn: Conn, server: Any, as_login: Callable[[str], Conn]
) -> None:
    """
    As the deploy login: a superuser's query in another database shows '<insufficient privilege>',
    and `set session_replication_role = replica` is refused (42501).
    """
    deploy = as_login("pgf_deploy")
    assert deploy.execute("select pg_has_role('pgflight_owner', 'member')").fetchone() == (True,)
    with psycopg.connect(server.dsn, autocommit=True) as other_db:  # the postgres database, a superuser
        other_db.execute(SECRET)
        pid = other_db.info.backend_pid
        got = deploy.execute("select query from pg_stat_activity where pid = %s", [pid]).fetchone()
        assert got == ("<insufficient privilege>",)
    assert deploy.execute("select pg_has_role('pg_read_all_stats', 'usage')").fetchone() == (False,)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        deploy.execute("set session_replication_role = replica")
    assert deploy.execute("show session_replication_role").fetchone() == ("origin",)


def test_only_the_engine_may_call_the_privileged_functions(conn: Conn) -> None:
    """They are owned by pgflight_privileged, which no login is a member of; no lane may call the
    ones that set the parameter or read backend start times."""
    for fn in PRIVILEGED:
        row = conn.execute(
            "select pg_get_userbyid(p.proowner), p.prosecdef from pg_proc p where p.oid = %s::regprocedure",
            [f"pgflight.{fn}"],
        ).fetchone()
        assert row == ("pgflight_privileged", True), fn
    members = conn.execute(
        "select count(*) from pg_auth_members where roleid = 'pgflight_privileged'::regrole"
    ).fetchone()
    assert members == (0,)
    assert conn.execute(
        "select rolcanlogin from pg_roles where rolname = 'pgflight_privileged'"
    ).fetchone() == (False,)
    for fn in PRIVILEGED[1:]:
        for role in ("public", "pgflight_worker", "pgflight_operator", "pgflight_reader", "pgflight_cron"):
            if role == "public":
                q = (
                    "select exists (select from aclexplode((select proacl from pg_proc"
                    " where oid = %s::regprocedure)) where grantee = 0)"
                )
                assert conn.execute(q, [f"pgflight.{fn}"]).fetchone() == (False,), fn
            else:
                got = conn.execute(
                    "select has_function_privilege(%s, %s, 'EXECUTE')", [role, f"pgflight.{fn}"]
                ).fetchone()
                assert got == (False,), (role, fn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("select pgflight._row_triggers_on('replica')")


def test_the_horizon_and_the_sweep_loop_lease_still_see_other_roles_backends(
    conn: Conn, as_login: Callable[[str], Conn]
) -> None:
    """
    engine_health's vacuum horizon (as a reader) finds another login's open snapshot, and the sweep
    loop's lease is not taken from a live holder of another role (both need pg_read_all_stats,
    which only pgflight_privileged holds).
    """
    holder = as_login("pgf_worker_b")
    holder.autocommit = False
    holder.execute("set transaction isolation level repeatable read")
    holder.execute("select 1")  # a snapshot held: this backend's xmin
    reader = as_login("pgf_reader_a")
    # the oldest xmin of the cluster (another test's may be older): a backend of another role is
    # seen at all only with pg_read_all_stats (without it, only the owner's own, of which there
    # are none, and the horizon has no pid)
    got = reader.execute("select pid from pgflight._vacuum_horizon()").fetchone()
    assert got is not None and got[0] is not None
    holder.rollback()

    # the lease, held by this superuser's backend; a backend of another role (the deploy login's,
    # through the same definer function) finds it alive and does not take it
    assert conn.execute("select pgflight._sweep_loop_lease(true)").fetchone() == (True,)
    deploy = as_login("pgf_deploy")
    assert deploy.execute("select pgflight._sweep_loop_lease(true)").fetchone() == (False,)
    assert conn.execute("select pgflight._sweep_loop_lease(false)").fetchone() == (True,)
