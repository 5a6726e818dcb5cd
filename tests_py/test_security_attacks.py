"""
The trust boundary, attacked (docs/security.md): real login roles with scram passwords over TCP
try every attack of the threat table in docs/security.md. Each must be refused with its documented
SQLSTATE
(docs/errors.md) and leave every engine table as it was.

    A  privilege escalation through the caller's session (temporary domains, views, functions,
       operators named like what the definer functions use)          -> no tripwire runs as owner
    B  pg_cron runs the sweeps as a superuser                          -> a non-superuser role
    C  another worker's attempt: token from an error DETAIL, foreign worker ids, deregistering
       others                                                          -> ZF012 / ZF010, unchanged
    D  tenants: reading and acting on another workspace                -> ZF012, no row shown
    E  resource caps: oversized writes, huge batch and lease, floods   -> ZF005 naming the cap
    F  engine_health and _now() for operator and reader                -> no 42501
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from core_helpers import sqlstate as sqlstate_of
from security_support import (
    CALLS,
    LANES,
    Conn,
    ShadowKit,
    Tripwires,
    World,
    api_functions,
    error_of,
    grant,
    login_connect,
    readable_views,
    snapshot,
)

LOGIN_OF = {"worker": "pgf_worker_a", "operator": "pgf_operator_a", "reader": "pgf_reader_a"}


@pytest.fixture
def su(conn: Conn) -> Conn:
    """The superuser connection of the test database, with workspaces A and B."""
    conn.execute("select pgflight.create_workspace('A'), pgflight.create_workspace('B')")
    # logins that existed when the schema was deployed keep every workspace (the upgrade rule);
    # these tests grant exactly what each attack needs
    conn.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
    # Tokens far from every other id, so a test can tell whether one leaked into a message.
    conn.execute("select setval('pgflight.fencing_tokens', 987654321000)")
    return conn


@pytest.fixture
def as_login(dsn: str, logins: Any) -> Iterator[Callable[[str], Conn]]:
    """Open a connection to the test database as a login, over TCP with its password."""
    opened: list[Conn] = []

    def _open(login: str) -> Conn:
        c = login_connect(logins.dsn(login, dsn))
        opened.append(c)
        return c

    yield _open
    for c in opened:
        c.close()


def _worker_world(su: Conn, me: Conn, workspace: str = "A") -> World:
    w = World(su=su, me=me, workspace=workspace)
    w.worker_id = int(me.execute("select pgflight.register_worker('attacker')").fetchone()[0])  # type: ignore[index]
    return w


def test_logins_authenticate_with_scram_over_tcp(
    su: Conn, as_login: Callable[[str], Conn], logins: Any
) -> None:
    """The suite's premise: the logins reach the server over TCP and must give their scram password."""
    if not logins.scram:
        pytest.skip("PGFLIGHT_TEST_DSN: the server's own pg_hba decides")
    me = as_login("pgf_worker_a")
    assert me.execute("select session_user, inet_client_addr() is not null").fetchone() == (
        "pgf_worker_a",
        True,
    )
    stored = su.execute("select rolpassword from pg_authid where rolname = 'pgf_worker_a'").fetchone()
    assert stored is not None and stored[0].startswith("SCRAM-SHA-256$")
    wrong = logins.dsn("pgf_worker_a", su.info.dsn).replace(logins.password, "wrong-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong)


# --- A: nothing the caller's session creates runs as the owner ----------------------------------------


def test_every_definer_function_puts_pg_temp_last(conn: Conn) -> None:
    """Over the catalogue: every SECURITY DEFINER function in pgflight pins search_path, pg_temp last."""
    bad = conn.execute(
        "select p.oid::regprocedure::text, p.proconfig from pg_proc p"
        " where p.pronamespace = 'pgflight'::regnamespace and p.prosecdef"
        "   and not exists (select from unnest(p.proconfig) c"
        "                   where c ~ '^search_path=' and c ~ 'pg_temp\"?$')"
    ).fetchall()
    definers = conn.execute(
        "select count(*) from pg_proc where pronamespace = 'pgflight'::regnamespace and prosecdef"
    ).fetchone()
    assert definers is not None and definers[0] > 20
    assert bad == []


@pytest.mark.parametrize("lane", LANES)
def test_a_shadowing_session_never_runs_code_as_the_owner(
    su: Conn, as_login: Callable[[str], Conn], lane: str
) -> None:
    """
    As each lane's login: shadow every type, relation, function and operator name the definer
    functions use, then call every API function the lane may execute (from the catalogue) and read
    every view it may read, with valid arguments. Every call works, and no tripwire runs as anyone
    but the login itself.
    """
    login = LOGIN_OF[lane]
    # the operator on every workspace: the sweeps and create_workspace act on all of them
    grant(su, login, None if lane == "operator" else "A", lane)
    me = as_login(login)
    world = _worker_world(su, me) if lane == "worker" else World(su=su, me=me, workspace="A")
    if lane != "worker":  # the read functions need a held attempt to exist: the superuser's
        world.worker_id = None
    kit = ShadowKit.build(su)
    assert kit.install(me) > 200, "the shadowing kit should take in a login's own session"
    trip = Tripwires(me, login)

    functions = api_functions(su, f"pgflight_{lane}")
    missing = sorted(set(functions) - set(CALLS))
    assert not missing, f"no valid call known for {missing}: add one to security_support.CALLS"
    failures: dict[str, str] = {}
    for name in sorted(functions):
        if lane != "worker" and name not in _READ_OR_OPERATE:
            continue
        try:
            query, params = CALLS[name](world)
            me.execute(query, params).fetchall()
        except psycopg.Error as e:
            failures[name] = f"{e.sqlstate}: {e}"
    for view in readable_views(su, f"pgflight_{lane}"):
        try:
            me.execute(f"select * from pgflight.{view} limit 5").fetchall()
        except psycopg.Error as e:
            failures[view] = f"{e.sqlstate}: {e}"
    report = [f"a tripwire ran as {r}" for r in trip.foreign()] + [f"{n}: {m}" for n, m in failures.items()]
    assert not report, "\n".join(report)


# Operator and reader calls: the same valid calls, set up by the superuser where they need a worker.
_READ_OR_OPERATE = {
    n
    for n in CALLS
    if n
    not in {
        "register_worker",
        "deregister_worker",
        "claim_batch",
        "start_step",
        "heartbeat",
        "complete_step",
        "complete_batch",
        "fail_step",
        "release_step",
        "spawn_children",
        "request_approval",
        "record_effect",
        "find_effect",
        "record_stale_write",
        "begin_agent_run",
        "reserve_budget",
        "record_model_call",
        "record_trace",
        "mark_tool_call",
        "complete_tool_call",
        "complete_tool_calls",
        "load_transcript",
    }
}


# --- B: pg_cron ---------------------------------------------------------------------------------


@pytest.mark.xdist_group("cron")  # the cron database's jobs, shared with test_cron.py
def test_schedules_run_as_a_non_superuser_role(server: Any) -> None:
    """The installed jobs run as pgflight_cron, which is not a superuser and cannot become one."""
    from pgflight import migrate
    from test_cron import CRON_DB  # the database cron.database_name names in the test cluster

    dsn = server.dsn_for(CRON_DB)
    with psycopg.connect(dsn, autocommit=True) as c:
        if c.execute("select 1 from pg_available_extensions where name = 'pg_cron'").fetchone() is None:
            pytest.skip("pg_cron is not installed on this server")
        migrate.deploy(dsn)
        try:
            c.execute("select pgflight.install_schedules()")
            jobs = c.execute(
                "select j.jobname, j.username, r.rolsuper,"
                "       pg_has_role(j.username, 'pgflight_owner', 'MEMBER')"
                "  from cron.job j join pg_roles r on r.rolname = j.username"
                " where j.jobname like 'pgflight-%%'"
            ).fetchall()
        finally:
            c.execute("select pgflight.uninstall_schedules()")
    assert jobs, "no pgflight job installed"
    for name, user, is_super, owner_member in jobs:
        assert not is_super, f"{name} runs as superuser {user}"
        assert not owner_member, f"{name} runs as {user}, a member of pgflight_owner"


# --- C: another worker's attempt -----------------------------------------------------------------


def test_an_error_never_shows_the_current_fencing_token(su: Conn, as_login: Callable[[str], Conn]) -> None:
    for login in ("pgf_worker_a", "pgf_worker_b"):
        grant(su, login, "A", "worker")
    victim = _worker_world(su, as_login("pgf_worker_a"))
    held = victim.held()
    thief = as_login("pgf_worker_b")
    for query in (
        "select * from pgflight.complete_step(%s, -1, '{}')",
        "select * from pgflight.fail_step(%s, -1, '{}')",
        "select * from pgflight.start_step(%s, -1)",
        "select * from pgflight.release_step(%s, -1)",
    ):
        e = error_of(lambda q=query: thief.execute(q, [held["attempt_id"]]))
        shown = " ".join(filter(None, [e.diag.message_primary, e.diag.message_detail, e.diag.message_hint]))
        assert str(held["token"]) not in shown, f"{query} shows the token: {shown}"


def test_a_stolen_token_is_refused_for_every_worker_write(su: Conn, as_login: Callable[[str], Conn]) -> None:
    """With the right (attempt, token) but another login, every write is ZF012 (a batch row
    lease_lost) and changes nothing."""
    for login in ("pgf_worker_a", "pgf_worker_b"):
        grant(su, login, "A", "worker")
    victim = _worker_world(su, as_login("pgf_worker_a"))
    held = victim.held()
    ar = victim.agent(held, victim.me)
    thief = as_login("pgf_worker_b")
    a, t = held["attempt_id"], held["token"]
    writes = {
        "complete_step": ("select * from pgflight.complete_step(%s, %s, '{\"forged\": true}')", [a, t]),
        "fail_step": ('select * from pgflight.fail_step(%s, %s, \'{"m": "forged"}\')', [a, t]),
        "release_step": ("select * from pgflight.release_step(%s, %s)", [a, t]),
        "start_step": ("select * from pgflight.start_step(%s, %s)", [a, t]),
        "spawn_children": (
            "select * from pgflight.spawn_children(%s, %s, %s)",
            [a, t, Jsonb([{"key": "evil", "recipe": "x", "input": {}}])],
        ),
        "request_approval": ("select * from pgflight.request_approval(%s, %s, 'g')", [a, t]),
        "record_effect": ("select * from pgflight.record_effect(%s, %s, 'k', '{}')", [a, t]),
        "record_stale_write": ("select pgflight.record_stale_write(%s, %s, 'complete_step')", [a, t]),
        "begin_agent_run": (
            'select * from pgflight.begin_agent_run(%s, %s, \'{"model": "m", "task": "t"}\')',
            [a, t],
        ),
        "record_trace": (
            "select * from pgflight.record_trace(%s, %s, %s, 1, 'system', 'api_error', '{}')",
            [a, t, ar],
        ),
        "load_transcript": ("select * from pgflight.load_transcript(%s, %s, %s)", [a, t, ar]),
    }
    before = snapshot(su)
    codes = {
        name: sqlstate_of(lambda q=q, p=p: thief.execute(q, p).fetchall()) for name, (q, p) in writes.items()
    }
    assert codes == dict.fromkeys(writes, "ZF012")
    # a batch answers per row: the stolen attempt is lease_lost, its row alone
    got = thief.execute(
        "select outcome from pgflight.complete_batch(%s, %s, %s)", [[a], [t], [Jsonb({"forged": 1})]]
    ).fetchall()
    assert got == [("lease_lost",)]
    assert snapshot(su) == before
    # heartbeat with the thief's own worker id renews nothing of the victim's
    thief_worker = int(thief.execute("select pgflight.register_worker('thief')").fetchone()[0])  # type: ignore[index]
    lease = su.execute("select lease_expires_at from pgflight.step_attempts where id = %s", [a]).fetchone()
    got = thief.execute(
        "select status from pgflight.heartbeat(%s, %s, %s)", [thief_worker, [a], [t]]
    ).fetchall()
    assert got != [("held",)]
    assert (
        su.execute("select lease_expires_at from pgflight.step_attempts where id = %s", [a]).fetchone()
        == lease
    )


def test_another_logins_worker_id_is_refused(su: Conn, as_login: Callable[[str], Conn]) -> None:
    for login in ("pgf_worker_a", "pgf_worker_b"):
        grant(su, login, "A", "worker")
    victim = _worker_world(su, as_login("pgf_worker_a"))
    held = victim.held()
    victim.submit()  # something ready the thief could take with the victim's id
    thief = as_login("pgf_worker_b")
    wid = victim.worker_id
    before = snapshot(su)
    assert (
        sqlstate_of(lambda: thief.execute("select * from pgflight.claim_batch(%s, 10, 30)", [wid]).fetchall())
        == "ZF010"
    )
    assert (
        sqlstate_of(
            lambda: thief.execute(
                "select * from pgflight.heartbeat(%s, %s, %s)", [wid, [held["attempt_id"]], [held["token"]]]
            ).fetchall()
        )
        == "ZF010"
    )
    # a sweep over a range of ids ends none of the victim's workers
    assert (
        sqlstate_of(
            lambda: thief.execute(
                "select pgflight.deregister_worker(g) from generate_series(1, %s) g", [wid + 5]
            )
        )
        == "ZF010"
    )
    assert snapshot(su) == before


# --- D: tenants ---------------------------------------------------------------------------------


def _two_tenants(su: Conn) -> dict[str, dict[str, Any]]:
    """A finished run, a dead letter, a parked approval and a queued run in each of A and B."""
    out: dict[str, dict[str, Any]] = {}
    for ws in ("A", "B"):
        w = World(su=su, me=su, workspace=ws)
        out[ws] = {
            "finished": w.finished_run(),
            "dead": w.dead_letter(),
            "queued": w.submit(),
        }
        gate = w.su_held()
        su.execute(
            "select * from pgflight.request_approval(%s, %s, 'g', '{\"q\": 1}')",
            [gate["attempt_id"], gate["token"]],
        )
        out[ws]["gate"] = gate
    return out


def test_a_reader_of_a_sees_no_row_of_b(su: Conn, as_login: Callable[[str], Conn]) -> None:
    runs = _two_tenants(su)
    grant(su, "pgf_reader_a", "A", "reader")
    me = as_login("pgf_reader_a")
    b_runs = {r["run_id"] for r in runs["B"].values()}
    a_runs = {r["run_id"] for r in runs["A"].values()}
    for view in readable_views(su, "pgflight_reader"):
        cols = [d.name for d in me.execute(f"select * from pgflight.{view} limit 0").description or []]
        rows = me.execute(f"select * from pgflight.{view}").fetchall()
        if "run_id" in cols:
            seen = {r[cols.index("run_id")] for r in rows}
            assert not seen & b_runs, f"{view} shows workspace B's runs {seen & b_runs}"
            if view in ("run_list", "step_status", "attempts"):
                assert a_runs <= seen, f"{view} hides the reader's own workspace"
        if "workspace" in cols:
            assert {r[cols.index("workspace")] for r in rows} <= {"A"}, view
    # B's run and step read as unknown ones: ZF003, or no row (one answer for what a login may not see)
    for fn in ("run_status", "run_audit"):
        assert (
            sqlstate_of(
                lambda f=fn: me.execute(
                    f"select * from pgflight.{f}(%s)", [runs["B"]["finished"]["run_id"]]
                ).fetchall()
            )
            == "ZF003"
        )
    got = me.execute("select * from pgflight.children_results(%s)", [runs["B"]["finished"]["step_id"]])
    assert got.fetchall() == []


def _spend(su: Conn, ws: str) -> int:
    """A model call's costs row in workspace `ws` (written by the superuser); its run id."""
    w = World(su=su, me=su, workspace=ws)
    h = w.su_held()
    ar = w.agent(h, su)
    su.execute(
        "insert into pgflight.costs (agent_run_id, iteration, step_id, run_id, workspace_id, model, usd)"
        " select %s, 1, %s, r.id, r.workspace_id, 'claude-haiku-4-5', 0.01"
        " from pgflight.runs r where r.id = %s",
        [ar, h["step_id"], h["run_id"]],
    )
    return int(h["run_id"])


# the inspector's and the exporter's read functions, called the way the inspector does
_INSPECTOR_READS = {
    "run_list_page": "select * from pgflight.run_list_page(null, 500)",
    "dead_letter_page": "select * from pgflight.dead_letter_page(null, 500)",
    "pending_approvals": "select * from pgflight.pending_approvals(1000)",
    "worker_list": "select * from pgflight.worker_list(1000)",
    "queue_depths": "select * from pgflight.queue_depths()",
    "cost_by_day": "select * from pgflight.cost_by_day(7)",
}


def test_a_reader_of_a_sees_nothing_of_b_in_the_inspector_reads(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """run_list_page, dead_letter_page, … and metrics_snapshot are filtered by lanes like the views."""
    runs = _two_tenants(su)
    spent = {ws: _spend(su, ws) for ws in ("A", "B")}
    grant(su, "pgf_reader_a", "A", "reader")
    me = as_login("pgf_reader_a")
    b_runs = {r["run_id"] for r in runs["B"].values()} | {spent["B"]}
    readable = set(api_functions(su, "pgflight_reader"))
    assert set(_INSPECTOR_READS) | {"metrics_snapshot", "run_trace_context"} <= readable
    for name, query in _INSPECTOR_READS.items():
        cur = me.execute(query)
        cols = [d.name for d in cur.description or []]
        rows = cur.fetchall()
        assert rows or name == "worker_list", f"{name} shows the reader nothing of A"
        if "workspace" in cols:
            assert {r[cols.index("workspace")] for r in rows} == {"A"}, name
        if "run_id" in cols:
            assert not {r[cols.index("run_id")] for r in rows} & b_runs, f"{name} shows B's runs"
        if name == "worker_list":  # held attempts of B's runs are left out too
            held = {h["run_id"] for r in rows for h in r[cols.index("held")]}
            assert not held & b_runs
    metrics = me.execute("select metric, labels, value from pgflight.metrics_snapshot(0, 100000)").fetchall()
    assert {m for m, _, _ in metrics} >= {"queue_ready", "usd_today", "dead_letters", "events_delta"}
    assert {lb["workspace"] for _, lb, _ in metrics if "workspace" in lb} == {"A"}
    # engine-wide figures: for every-workspace readers only
    assert not {m for m, _, _ in metrics} & {"claims_total", "workers_alive"}
    dead = {m: v for m, _, v in metrics}["dead_letters"]
    assert dead == 1, "only A's dead letter"
    every = "select value from pgflight.metrics_snapshot(0, 100000) where metric = 'dead_letters'"
    assert su.execute(every).fetchone() == (2,)
    b_queued = runs["B"]["queued"]["run_id"]
    assert me.execute("select pgflight.run_trace_context(%s)", [b_queued]).fetchone() == (None,)
    assert me.execute(
        "select count(*) from pgflight.run_list_page(null, 500, %s)", [Jsonb({"workspace": "B"})]
    ).fetchone() == (0,)


def test_an_operator_of_a_cannot_act_in_b(su: Conn, as_login: Callable[[str], Conn]) -> None:
    runs = _two_tenants(su)["B"]
    grant(su, "pgf_operator_a", "A", "operator")
    me = as_login("pgf_operator_a")
    before = snapshot(su)
    acts = {
        "submit_run": ("select * from pgflight.submit_run('B', 'x', '{}')", []),
        "submit_runs": ("select * from pgflight.submit_runs('B', '[{\"recipe\": \"x\"}]')", []),
        "cancel_run": ("select * from pgflight.cancel_run(%s)", [runs["queued"]["run_id"]]),
        "cancel_step": ("select * from pgflight.cancel_step(%s)", [runs["queued"]["step_id"]]),
        "approve": ("select * from pgflight.approve(%s, 'approve', 'me')", [runs["gate"]["step_id"]]),
        "retry_step": ("select pgflight.retry_step(%s)", [runs["dead"]["step_id"]]),
        "replay_from": ("select pgflight.replay_from(%s)", [runs["finished"]["step_id"]]),
        "purge_finished": ("select pgflight.purge_finished(0, 1000)", []),
    }
    codes = {n: sqlstate_of(lambda q=q, p=p: me.execute(q, p).fetchall()) for n, (q, p) in acts.items()}
    # B's workspace, runs and steps read as unknown ones (ZF003); the every-workspace sweep is ZF012
    assert codes == {n: "ZF012" if n == "purge_finished" else "ZF003" for n in acts}
    assert snapshot(su) == before


def test_a_worker_of_a_never_claims_bs_steps(su: Conn, as_login: Callable[[str], Conn]) -> None:
    b = World(su=su, me=su, workspace="B")
    b_steps = {b.submit("shared")["step_id"] for _ in range(5)}
    grant(su, "pgf_worker_a", "A", "worker")
    w = _worker_world(su, as_login("pgf_worker_a"))
    a_steps = {w.submit("shared")["step_id"] for _ in range(3)}
    got = w.me.execute("select step_id from pgflight.claim_batch(%s, 100, 30)", [w.worker_id]).fetchall()
    assert {r[0] for r in got} == a_steps
    assert not {r[0] for r in got} & b_steps


def test_actor_fields_record_the_login(su: Conn, as_login: Callable[[str], Conn]) -> None:
    grant(su, "pgf_operator_a", "A", "operator")
    me = as_login("pgf_operator_a")
    w = World(su=su, me=su, workspace="A")
    run = w.submit()
    me.execute("select * from pgflight.cancel_run(%s, 'the-ceo', 'spoofed')", [run["run_id"]])
    actors = su.execute(
        "select distinct actor from pgflight.run_events where run_id = %s and reason like 'cancel%%'",
        [run["run_id"]],
    ).fetchall()
    assert actors == [("pgf_operator_a",)]
    notes = su.execute(
        "select detail from pgflight.run_events where run_id = %s and reason like 'cancel%%'", [run["run_id"]]
    ).fetchall()
    assert any("the-ceo" in str(d) for (d,) in notes), "the free text is kept, as a note"


# --- E: caps ------------------------------------------------------------------------------------

CAP = 1024  # bytes, set for the test so an over-cap write is small


@pytest.mark.parametrize(
    ("cap", "write"),
    [
        ("max_result_bytes", "select * from pgflight.complete_step(%(a)s, %(t)s, %(big)s)"),
        ("max_error_bytes", "select * from pgflight.fail_step(%(a)s, %(t)s, %(big)s)"),
        ("max_receipt_bytes", "select * from pgflight.record_effect(%(a)s, %(t)s, 'k', %(big)s)"),
        ("max_approval_request_bytes", "select * from pgflight.request_approval(%(a)s, %(t)s, 'g', %(big)s)"),
        ("max_name_bytes", "select * from pgflight.record_effect(%(a)s, %(t)s, %(long)s, '{}')"),
        (
            "max_input_bytes",
            "select * from pgflight.spawn_children(%(a)s, %(t)s,"
            " jsonb_build_array(jsonb_build_object('key', 'k', 'recipe', 'r', 'input', %(big)s::jsonb)))",
        ),
    ],
)
def test_an_oversized_write_is_refused_naming_its_cap(
    su: Conn, as_login: Callable[[str], Conn], cap: str, write: str
) -> None:
    su.execute(f"update pgflight.settings set {cap} = %s", [CAP])
    grant(su, "pgf_worker_a", "A", "worker")
    w = _worker_world(su, as_login("pgf_worker_a"))
    held = w.held()
    before = snapshot(su)
    e = error_of(
        lambda: w.me.execute(
            write,
            {
                "a": held["attempt_id"],
                "t": held["token"],
                "big": Jsonb({"x": "y" * CAP}),
                "long": "k" * (CAP + 1),
            },
        ).fetchall()
    )
    assert e.sqlstate == "ZF005"
    assert cap in (e.diag.message_detail or "") + (e.diag.message_primary or "")
    assert snapshot(su) == before


def test_an_oversized_result_in_a_batch_is_refused_alone_naming_its_cap(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    """complete_batch checks max_result_bytes row by row: the neighbours still complete."""
    su.execute("update pgflight.settings set max_result_bytes = %s", [CAP])
    grant(su, "pgf_worker_a", "A", "worker")
    w = _worker_world(su, as_login("pgf_worker_a"))
    big, ok = w.held(), w.held()
    got = w.me.execute(
        "select outcome from pgflight.complete_batch(%s, %s, %s::jsonb[])",
        [
            [big["attempt_id"], ok["attempt_id"]],
            [big["token"], ok["token"]],
            [Jsonb({"x": "y" * CAP}), Jsonb(1)],
        ],
    ).fetchall()
    assert got == [("result_refused",), ("succeeded",)]
    row = su.execute(
        "select status, reason, error from pgflight.step_attempts where id = %s", [big["attempt_id"]]
    ).fetchone()
    assert row is not None and row[:2] == ("dead_letter", "result_refused")
    assert row[2]["sqlstate"] == "ZF005" and "settings.max_result_bytes" in row[2]["message"]


def test_a_worker_name_over_the_cap_is_refused(su: Conn, as_login: Callable[[str], Conn]) -> None:
    su.execute("update pgflight.settings set max_name_bytes = 64")
    grant(su, "pgf_worker_a", "A", "worker")
    me = as_login("pgf_worker_a")
    before = snapshot(su)
    assert sqlstate_of(lambda: me.execute("select pgflight.register_worker(%s)", ["w" * 65])) == "ZF005"
    assert snapshot(su) == before


def test_children_over_the_per_call_and_per_parent_caps_are_refused(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("update pgflight.settings set max_children_per_call = 20, max_children_per_parent = 15")
    grant(su, "pgf_worker_a", "A", "worker")
    w = _worker_world(su, as_login("pgf_worker_a"))
    held = w.held()

    def spawn(n: int) -> None:
        kids = Jsonb([{"key": f"k{i}", "recipe": "c", "input": {}} for i in range(n)])
        w.me.execute(
            "select * from pgflight.spawn_children(%s, %s, %s)", [held["attempt_id"], held["token"], kids]
        )

    before = snapshot(su)
    for n, cap in ((21, "max_children_per_call"), (16, "max_children_per_parent")):
        e = error_of(lambda n=n: spawn(n))
        assert e.sqlstate == "ZF005" and cap in (e.diag.message_detail or ""), (n, e)
        assert snapshot(su) == before
    spawn(15)  # at the caps: accepted


def test_claim_batch_of_every_step_for_thirty_years_is_refused(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    grant(su, "pgf_worker_a", "A", "worker")
    w = _worker_world(su, as_login("pgf_worker_a"))
    for _ in range(3):
        w.submit("bulk")
    before = snapshot(su)
    for n, lease in ((2**31 - 1, 30), (1, 1e9)):
        e = error_of(
            lambda n=n, lease=lease: w.me.execute(
                "select * from pgflight.claim_batch(%s, %s, %s)", [w.worker_id, n, lease]
            ).fetchall()
        )
        assert e.sqlstate == "ZF005", (n, lease, e)
        assert ("max_batch_size" if n > 1 else "max_lease_s") in (e.diag.message_detail or "")
    assert snapshot(su) == before


def test_register_worker_and_record_stale_write_cannot_be_flooded(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute(
        "update pgflight.settings set max_live_workers_per_login = 3, max_stale_writes_per_attempt = 2"
    )
    grant(su, "pgf_worker_a", "A", "worker")
    me = as_login("pgf_worker_a")
    w = _worker_world(su, me)  # the first live worker
    me.execute("select pgflight.register_worker('w2'), pgflight.register_worker('w3')")
    e = error_of(lambda: me.execute("select pgflight.register_worker('w4')"))
    assert e.sqlstate == "ZF005" and "max_live_workers_per_login" in (e.diag.message_detail or "")
    held = w.held()
    me.execute("select * from pgflight.complete_step(%s, %s, '{}')", [held["attempt_id"], held["token"]])
    for _ in range(2):
        me.execute(
            "select pgflight.record_stale_write(%s, %s, 'complete_step')", [held["attempt_id"], held["token"]]
        )
    before = snapshot(su)
    e = error_of(
        lambda: me.execute(
            "select pgflight.record_stale_write(%s, %s, 'complete_step')", [held["attempt_id"], held["token"]]
        )
    )
    assert e.sqlstate == "ZF005" and "max_stale_writes_per_attempt" in (e.diag.message_detail or "")
    assert snapshot(su) == before


# --- F: engine_health and _now() for every reading lane ------------------------------------------


@pytest.mark.parametrize("lane", ["operator", "reader"])
def test_engine_health_and_the_clock_work_for_every_lane(
    su: Conn, as_login: Callable[[str], Conn], lane: str
) -> None:
    login = LOGIN_OF[lane]
    grant(su, login, "A", lane)
    me = as_login(login)
    assert me.execute("select pgflight._now() is not null").fetchone() == (True,)
    assert me.execute("select ready >= 0 from pgflight.engine_health").fetchone() == (True,)


@pytest.mark.parametrize("lane", ["operator", "reader"])
def test_engine_health_shows_every_lane_the_vacuum_horizon_another_role_holds(
    su: Conn, dsn: str, as_login: Callable[[str], Conn], lane: str
) -> None:
    """C49: a snapshot held open by another role is visible (age, seconds, pid) to the lanes."""
    login = LOGIN_OF[lane]
    grant(su, login, "A", lane)
    su.execute("select pgflight.run_sweeps()")
    with psycopg.connect(dsn, autocommit=False) as holder:
        holder.execute("set transaction isolation level repeatable read")
        holder.execute("select count(*) from pgflight.runs")  # the snapshot is taken: xmin held
        pid = holder.info.backend_pid
        me = as_login(login)
        row = me.execute(
            "select oldest_xmin_age, oldest_xmin_held_s, oldest_xmin_pid, notify_queue_usage,"
            " dead_tuples ? 'step_attempts', sweep_lag_s from pgflight.engine_health"
        ).fetchone()
        assert row is not None
        age, held_s, held_pid, usage, has_attempts, lag = row
        # the oldest horizon of the cluster: this holder's, or an older one of a test running beside
        got = su.execute("select age(backend_xmin) from pg_stat_activity where pid = %s", [pid]).fetchone()
        assert got is not None and got[0] is not None
        holder_age = int(got[0])
        assert held_pid is not None and age is not None and age >= holder_age >= 0
        assert held_s is not None and held_s >= 0
        assert usage == 0.0 and has_attempts is True
        assert lag is not None and 0 <= lag < 60, "run_sweeps records its pass"
