"""
The worker process against connection faults: an immediate PostgreSQL restart in the middle of a
2,000-step run, a terminated LISTEN backend (C33), PgBouncer in transaction mode (C30, C31, C32),
and server timeouts on the worker role with terminated backends mid-step (C37).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgflight import db
from pgflight.db.connection import PREPARE_THRESHOLD, call, is_transient, make_pool
from pgflight.embedded import free_port
from pgflight.recipes import Registry
from pgflight.worker import Worker
from test_worker_combined import running  # noqa: F401  (fixture)
from worker_support import attempts, one, step_status, wait_for, worker_factory


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Worker subprocesses, SIGKILLed at teardown."""
    yield from worker_factory(tmp_path)


def _workspace(conn: psycopg.Connection[Any]) -> None:
    db.create_workspace(conn, "w")


def _submit_many(conn: psycopg.Connection[Any], recipe: str, n: int, input: str = "{}") -> None:
    _workspace(conn)
    conn.execute(
        "select pgflight.submit_run('w', %s, %s::jsonb) from generate_series(1, %s)", [recipe, input, n]
    )


def _succeeded(conn: psycopg.Connection[Any]) -> int:
    return int(one(conn, "select count(*) from pgflight.step_status where status = 'succeeded'"))


def _listen_pids(conn: psycopg.Connection[Any]) -> set[int]:
    return {
        r[0]
        for r in conn.execute(
            "select pid from pg_stat_activity where application_name = 'pgflight-listen'"
            " and datname = current_database()"
        ).fetchall()
    }


def test_immediate_postgres_restart_mid_run_every_step_succeeds_once(server, dsn, workers) -> None:
    if server.cluster is None:
        pytest.skip("needs the throwaway cluster (PGFLIGHT_TEST_DSN points at a server we may not restart)")
    n = 2000
    with psycopg.connect(dsn, autocommit=True) as c:
        _submit_many(c, "noop", n)
        w = workers(dsn, "--concurrency", "8", "--lease", "2", "--poll", "0.3")
        wait_for(lambda: _succeeded(c) >= 300, 60, "300 steps done before the restart")
    server.cluster.restart(mode="immediate")
    with psycopg.connect(dsn, autocommit=True) as c:
        wait_for(lambda: _succeeded(c) >= n, 120, "every step to succeed after the restart", interval_s=0.25)
        assert one(c, "select count(*) from pgflight.step_status where status <> 'succeeded'") == 0
        # none twice: one succeeded attempt and one 'succeeded' event per step
        assert (
            one(
                c,
                "select count(*) from (select step_id from pgflight.step_attempts where status = 'succeeded'"
                " group by step_id having count(*) > 1) x",
            )
            == 0
        )
        assert (
            one(
                c,
                "select count(*) from (select step_id from pgflight.run_events where reason = 'succeeded'"
                " group by step_id having count(*) <> 1) x",
            )
            == 0
        )
        assert one(c, "select count(*) from pgflight.run_events where reason = 'succeeded'") == n
    assert w.proc.poll() is None, "the worker rides through the restart"
    wait_for(lambda: "listener reconnected" in w.output(), 10, "the listener to reconnect (C33)")


def test_c33_terminated_listener_is_reestablished_and_notify_pickup_resumes(conn, dsn, workers) -> None:
    _workspace(conn)
    w = workers(dsn, "--poll", "30")  # only a NOTIFY can make pickup fast
    wait_for(lambda: _listen_pids(conn), 10, "the listener")
    wait_for(lambda: "listening on pgflight_ready" in w.output(), 10, "the LISTEN probe to pass")
    for i in range(3):
        old = _listen_pids(conn)
        conn.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where application_name ="
            " 'pgflight-listen' and datname = current_database()"
        )
        wait_for(lambda old=old: _listen_pids(conn) - old, 5, "a new listening backend within 5 s")
        time.sleep(0.2)
        t0 = time.monotonic()
        run = db.submit_run(conn, "w", "noop", {"i": i})
        wait_for(lambda run=run: step_status(conn, run.step_id) == "succeeded", 5, "pickup by NOTIFY")
        assert time.monotonic() - t0 < 1.0, "claim after recovery comes from NOTIFY, not the 30 s poll"
    assert w.output().count("listener reconnected") >= 3


@pytest.fixture
def pgbouncer(server) -> Iterator[str]:
    """A transaction-mode PgBouncer in front of the test server; yields its host:port DSN template."""
    exe = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not os.path.exists(exe):
        pytest.skip("pgbouncer is not installed")
    folder = Path(tempfile.mkdtemp(prefix="pgflight-bouncer-"))
    port = free_port()
    (folder / "users.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(f"""[databases]
* = host={server.host} port={server.port}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/users.txt
pool_mode = transaction
default_pool_size = 3
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = {folder}/pgbouncer.log
{_no_prepared_statements(exe)}""")
    argv = [exe, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        os.chmod(folder, 0o777)
        for f in folder.iterdir():
            os.chmod(f, 0o666)
        argv = ["runuser", "-u", "postgres", "--", *argv]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_for(
            lambda: _can_connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres"),
            10,
            "pgbouncer to accept connections",
        )
        yield f"host=127.0.0.1 port={port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


def _no_prepared_statements(exe: str) -> str:
    """
    The setting that makes PgBouncer >= 1.21 pass no prepared statement between clients, as every
    older one does: 1.22 and later default to max_prepared_statements = 200 (they track them), and
    these tests are about a pooler that does not; older versions refuse the unknown setting.
    """
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    version = re.search(r"PgBouncer (\d+)\.(\d+)", out)
    if version and (int(version.group(1)), int(version.group(2))) >= (1, 21):
        return "max_prepared_statements = 0\n"
    return ""


def _can_connect(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, connect_timeout=1, prepare_threshold=None):
            return True
    except psycopg.OperationalError:
        return False


def test_c30_c31_c32_worker_behind_transaction_pgbouncer(conn, dsn, workers, pgbouncer) -> None:
    bounced = make_conninfo(dsn, host="127.0.0.1", port=int(pgbouncer.split("port=")[1]))
    _submit_many(conn, "noop", 300)
    fan = db.submit_run(conn, "w", "fanout", {"n": 20})
    ws = [workers(bounced, "--concurrency", "8", "--lease", "3") for _ in range(2)]
    wait_for(lambda: _succeeded(conn) >= 300 + 21, 60, "every step through PgBouncer", interval_s=0.2)
    assert db.run_status(conn, fan.run_id).result == {
        "children": 20,
        "sum": float(sum(i * i for i in range(20))),
    }
    for w in ws:
        # the probe detects the pooler and says so, once (C32)
        wait_for(lambda w=w: "LISTEN does not work" in w.output(), 5, "the LISTEN probe to report the pooler")
        assert w.proc.poll() is None
        out = w.output()
        assert out.count("LISTEN does not work") == 1
        assert "DuplicatePreparedStatement" not in out and "ProtocolViolation" not in out
        assert "Traceback" not in out
        # C31: the default (--prepared-statements auto) prepares nothing behind the pooler
        assert "prepared statements on" not in out
    assert (
        one(conn, "select count(*) from pg_stat_activity where state = 'idle in transaction (aborted)'") == 0
    )
    # advisory locks of this database only: the server is shared, and a pg_cron sweep_loop of
    # another test's database holds its session lock (one loop at a time) while it runs
    advisory = "select count(*) from pg_locks l join pg_database d on d.oid = l.database"
    assert one(conn, advisory + " where l.locktype = 'advisory' and d.datname = current_database()") == 0
    # C32: pickup latency bounded by the short poll interval
    t0 = time.monotonic()
    run = db.submit_run(conn, "w", "noop", {"late": True})
    wait_for(lambda: step_status(conn, run.step_id) == "succeeded", 5, "pickup by fast polling")
    assert time.monotonic() - t0 < 1.5


def test_c31_prepared_statements_on_behind_a_transaction_pooler_is_an_error_in_the_log(
    conn, dsn, workers, pgbouncer
) -> None:
    """
    --prepared-statements on through a transaction pooler that the LISTEN self-probe detects:
    the worker says at once, as an error, that this is safe only behind PgBouncer >= 1.21 with
    max_prepared_statements (C31: warn loudly when a pooler is detected and prepared statements
    are enabled).
    """
    bounced = make_conninfo(dsn, host="127.0.0.1", port=int(pgbouncer.split("port=")[1]))
    _workspace(conn)
    w = workers(bounced, "--prepared-statements", "on", "--lease", "3")
    wait_for(lambda: "prepared statements are on" in w.output(), 10, "the error about the pooler")
    assert "max_prepared_statements" in w.output()
    assert w.output().count("prepared statements are on") == 1


def _prepared_on_pool(w: Worker) -> list[str]:
    """The statements prepared on the server in each of the worker's control connections (up to 2)."""
    pool = w._control_pool
    with pool.connection() as a, pool.connection() as b:
        return [
            r[0]
            for c in (a, b)
            for r in c.execute("select statement from pg_catalog.pg_prepared_statements").fetchall()
        ]


def _noop_registry() -> Registry:
    reg = Registry()
    reg.add("noop", lambda ctx: ctx.input)
    return reg


@pytest.mark.parametrize("mode", ["auto", "off"])
def test_c31_a_direct_connection_prepares_the_hot_calls_unless_off(conn, dsn, running, mode: str) -> None:
    """
    On a direct connection (LISTEN works on the DSN) the default, --prepared-statements auto,
    prepares the worker's hot calls on the server (parsed and planned once per connection, not
    at every call); off prepares nothing.
    """
    _workspace(conn)
    w = running(Worker(dsn, _noop_registry(), concurrency=4, poll_s=0.2, prepared_statements=mode))
    wait_for(lambda: w.listening or None, 10, "the LISTEN probe to pass")
    db.submit_many(conn, "w", [{"recipe": "noop", "input": {"i": i}} for i in range(300)])
    wait_for(lambda: w.steps_done >= 300 or None, 60, "the 300 steps")
    prepared = _prepared_on_pool(w)
    w.stop()
    # its LISTEN session (with the wake tickets' session advisory locks) ends before the next test
    wait_for(lambda: not _listen_pids(conn), 30, "the worker's LISTEN backend to exit")
    if mode == "off":
        assert not w.prepared
        assert prepared == []
    else:
        assert w.prepared
        assert any("pgflight.complete_and_claim" in s or "pgflight.complete_batch" in s for s in prepared), (
            prepared
        )


def test_c31_a_schema_change_under_prepared_statements_is_retried_on_a_new_connection(conn, dsn) -> None:
    """
    With prepared statements on, a migration that changes a function's result columns makes the
    statement prepared on a pool connection fail (0A000, cached plan must not change result type)
    at every later call on that connection: psycopg keeps it. The error counts as transient and
    the connection is replaced, so the retry every worker call makes succeeds.
    """
    conn.execute("drop schema if exists stale_plan cascade")
    conn.execute("create schema stale_plan")
    conn.execute("create function stale_plan.f() returns table (a int) language sql as 'select 1'")
    pool = make_pool(dsn, max_size=1, name="stale-plan-test", prepare=lambda: True)
    try:

        def read(c: psycopg.Connection[Any]) -> list[Any]:
            return c.execute("select * from stale_plan.f()").fetchall()

        for _ in range(PREPARE_THRESHOLD + 1):  # prepared on the server from here on
            assert call(pool, read) == [(1,)]
        conn.execute("drop function stale_plan.f()")
        conn.execute(
            "create function stale_plan.f() returns table (a int, b int) language sql as 'select 1, 2'"
        )
        with pytest.raises(psycopg.errors.FeatureNotSupported) as failed:
            call(pool, read)
        assert is_transient(failed.value)
        assert call(pool, read) == [(1, 2)]  # the retry, on a new connection
    finally:
        pool.close()
        conn.execute("drop schema stale_plan cascade")


def test_c37_server_timeouts_and_killed_backends_do_not_stop_10s_steps(server, conn, dsn, workers) -> None:
    role = "pgflight_c37_worker"
    with psycopg.connect(server.dsn, autocommit=True) as su:
        if not one(su, "select count(*) from pg_roles where rolname = %s", role):
            su.execute(f"create role {role} login in role pgflight_worker")
        su.execute(f"alter role {role} set idle_in_transaction_session_timeout = '2s'")
        # 3 s: far below the 10 s steps, above a claim on a loaded 2-core machine (the claim now
        # also checks lanes and fairness; at 1 s it timed out on every try under the full suite)
        su.execute(f"alter role {role} set statement_timeout = '3s'")
    conn.execute("select pgflight.grant_workspace(%s, null, 'worker')", [role])  # its lane
    _submit_many(conn, "not_served_here", 5000)  # load: queued rows the worker does not claim
    runs = [db.submit_run(conn, "w", "sleep", {"seconds": 10}) for _ in range(3)]
    w = workers(make_conninfo(dsn, user=role), "--concurrency", "3", "--lease", "3", "--poll", "0.3")
    wait_for(lambda: all(step_status(conn, r.step_id) == "running" for r in runs), 30, "the 3 steps running")
    time.sleep(3.5)  # well past idle_in_transaction_session_timeout and statement_timeout
    killed = conn.execute(
        "select count(pg_terminate_backend(pid)) from pg_stat_activity where usename = %s"
        " and application_name in ('pgflight-control', 'pgflight-heartbeat', 'pgflight-claim')",
        [role],
    ).fetchone()
    assert killed and killed[0] >= 2
    wait_for(lambda: all(step_status(conn, r.step_id) == "succeeded" for r in runs), 20, "the 10 s steps")
    for r in runs:
        assert [t[1] for t in attempts(conn, r.step_id)] == ["succeeded"]
    assert w.proc.poll() is None, "a terminated backend does not stop the worker"
    assert (
        one(
            conn,
            "select count(*) from pg_stat_activity where usename = %s and state like 'idle in transaction%%'",
            role,
        )
        == 0
    )
