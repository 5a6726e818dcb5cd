"""
Caps on what one tenant could hold or grow without bound, tried as the tenant would, through the
worker and operator logins over scram:

- a global in-flight cap is shared among the workspaces that have queued work: no workspace holds
  more than ceil(cap / those workspaces) while another waits;
- a lease under an in-flight cap is clamped to settings.max_lease_s_capped, so capacity a tenant
  took while it was alone comes back within that time, whatever lease it asked for;
- schedules: at most settings.max_schedules_per_workspace per workspace, none firing more often
  than settings.min_schedule_interval_s;
- trace blocks: at most settings.max_trace_blocks_per_iteration per agent iteration;
- stopped workers: deleted by the retention sweep after settings.workers_keep_s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from security_support import World, error_of, grant, login_connect

Conn = psycopg.Connection[Any]
T0 = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)
MODEL_CALL = (
    "select * from pgflight.record_model_call(%s, %s, %s, ITER, %s,"
    " '{\"input_tokens\": 10}', 'claude-haiku-4-5')"
)


@pytest.fixture
def su(conn: Conn) -> Conn:
    """The superuser connection, with workspaces A and B: a worker and an operator login of each."""
    conn.execute("select pgflight.create_workspace('A'), pgflight.create_workspace('B')")
    conn.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
    for login, ws, lane in [
        ("pgf_worker_a", "A", "worker"),
        ("pgf_worker_b", "B", "worker"),
        ("pgf_operator_a", "A", "operator"),
    ]:
        grant(conn, login, ws, lane)
    return conn


@pytest.fixture
def as_login(dsn: str, logins: Any) -> Iterator[Callable[[str], Conn]]:
    """A connection as a login, over TCP with its scram password, on the fake clock at T0."""
    opened: list[Conn] = []

    def _open(login: str) -> Conn:
        c = login_connect(logins.dsn(login, dsn), timeout_s=20)
        c.execute("select set_config('pgflight.fake_now', %s, false)", [T0.isoformat()])
        opened.append(c)
        return c

    yield _open
    for c in opened:
        c.close()


def _at(c: Conn, when: datetime) -> None:
    c.execute("select set_config('pgflight.fake_now', %s, false)", [when.isoformat()])


def _submit_many(su: Conn, ws: str, n: int) -> None:
    su.execute(
        "select count(*) from pgflight.submit_runs(%s,"
        " (select jsonb_agg(jsonb_build_object('recipe', 'noop')) from generate_series(1, %s)))",
        [ws, n],
    )


def _register(c: Conn, name: str) -> int:
    return int(c.execute("select pgflight.register_worker(%s)", [name]).fetchone()[0])  # type: ignore[index]


def _claim(c: Conn, worker_id: int, lease_s: float = 86400) -> list[dict[str, Any]]:
    cur = c.execute(
        "select attempt_id, lease_expires_at from pgflight.claim_batch(%s, 10000, %s)", [worker_id, lease_s]
    )
    return [{"attempt_id": r[0], "lease_expires_at": r[1]} for r in cur.fetchall()]


def _leased(su: Conn, ws: str) -> int:
    return int(
        su.execute(
            "select count(*) from pgflight.step_attempts a"
            " join pgflight.workspaces w on w.id = a.workspace_id"
            " where w.name = %s and a.status in ('claimed', 'running', 'cancel_requested')",
            [ws],
        ).fetchone()[0]  # type: ignore[index]
    )


def test_a_global_cap_is_shared_among_the_workspaces_with_queued_work(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("""select pgflight.set_global_limits('{"max_in_flight": 50}')""")
    _submit_many(su, "A", 200)
    _submit_many(su, "B", 200)
    w1c, w2c = as_login("pgf_worker_a"), as_login("pgf_worker_b")
    w1, w2 = _register(w1c, "w1"), _register(w2c, "w2")
    # tenant A's worker loops on the largest batch and the longest lease, and never heartbeats
    got_a = sum(len(_claim(w1c, w1)) for _ in range(5))
    assert got_a == 25, "A took more than its share (ceil(50 / 2)) while B had queued work"
    got_b = len(_claim(w2c, w2))
    assert got_b == 25, "B's worker gets the rest of the cap"
    assert _leased(su, "A") == 25 and _leased(su, "B") == 25
    # a claim naming one recipe sees the same two waiting workspaces
    assert _claim(w1c, w1) == []
    assert w1c.execute(
        "select count(*) from pgflight.claim_batch(%s, 10000, 60, array['noop'])", [w1]
    ).fetchone() == (0,)


def test_a_workspace_alone_takes_the_whole_cap_and_gives_back_down_to_its_share_once_its_leases_lapse(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("""select pgflight.set_global_limits('{"max_in_flight": 50}')""")
    _submit_many(su, "A", 200)
    w1c, w2c = as_login("pgf_worker_a"), as_login("pgf_worker_b")
    w1, w2 = _register(w1c, "w1"), _register(w2c, "w2")
    held = _claim(w1c, w1, lease_s=86400)
    assert len(held) == 50, "alone with queued work, A may use the whole cap"
    ceiling = float(su.execute("select max_lease_s_capped from pgflight.settings").fetchone()[0])  # type: ignore[index]
    assert ceiling == 900
    # the 24 h lease asked for is clamped to the ceiling of capped leases
    assert {h["lease_expires_at"] for h in held} == {T0 + timedelta(seconds=ceiling)}
    _submit_many(su, "B", 200)
    assert _claim(w2c, w2) == [], "the cap is full"
    # once the ceiling has passed without a heartbeat, A's leases lapse; A gets its share back, B the rest
    later = T0 + timedelta(seconds=ceiling + 1)
    _at(w1c, later)
    _at(w2c, later)
    _at(su, later)
    su.execute("select pgflight.reclaim_expired(10000)")
    assert len(_claim(w1c, w1)) == 25
    assert len(_claim(w2c, w2)) == 25


def test_a_lease_under_a_workspace_cap_is_clamped_and_an_uncapped_one_is_not(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("""select pgflight.set_workspace_limits('A', '{"max_in_flight": 10}')""")
    su.execute("update pgflight.settings set max_lease_s_capped = 120")
    _submit_many(su, "A", 5)
    _submit_many(su, "B", 5)
    w1c, w2c = as_login("pgf_worker_a"), as_login("pgf_worker_b")
    w1, w2 = _register(w1c, "w1"), _register(w2c, "w2")
    capped = _claim(w1c, w1, lease_s=3600)
    free = _claim(w2c, w2, lease_s=3600)
    assert {h["lease_expires_at"] for h in capped} == {T0 + timedelta(seconds=120)}
    assert {h["lease_expires_at"] for h in free} == {T0 + timedelta(seconds=3600)}
    # a heartbeat renews by the clamped lease, not the one asked for
    _at(w1c, T0 + timedelta(seconds=60))
    ids = [h["attempt_id"] for h in capped]
    tokens = [
        r[0]
        for r in su.execute(
            "select fencing_token from pgflight.step_attempts"
            " where id = any(%s) order by array_position(%s, id)",
            [ids, ids],
        ).fetchall()
    ]
    rows = w1c.execute(
        "select lease_expires_at from pgflight.heartbeat(%s, %s, %s)", [w1, ids, tokens]
    ).fetchall()
    assert {r[0] for r in rows} == {T0 + timedelta(seconds=180)}


def _cap_error(fn: Callable[[], Any]) -> psycopg.Error:
    e = error_of(fn)
    assert e.sqlstate == "ZF005", (e.sqlstate, str(e))
    return e


def test_an_operator_gets_at_most_the_workspace_schedule_cap_and_a_new_name_past_it_is_refused(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("update pgflight.settings set max_schedules_per_workspace = 3")
    op = as_login("pgf_operator_a")
    for i in range(3):
        op.execute("select * from pgflight.schedule_run('A', %s, '0 * * * *', 'tick')", [f"s{i}"])
    e = _cap_error(lambda: op.execute("select * from pgflight.schedule_run('A', 's3', '0 * * * *', 'tick')"))
    assert e.diag.message_detail is not None and "max_schedules_per_workspace is 3" in e.diag.message_detail
    assert e.diag.message_hint is not None and "max_schedules_per_workspace" in e.diag.message_hint
    # replacing a schedule by its name is not a new one; another workspace has its own count
    op.execute("select * from pgflight.schedule_run('A', 's0', '30 * * * *', 'tick')")
    su.execute("select * from pgflight.schedule_run('B', 's3', '0 * * * *', 'tick')")
    # and removing one makes room again
    op.execute("select pgflight.unschedule_run('A', 's1')")
    op.execute("select * from pgflight.schedule_run('A', 's3', '0 * * * *', 'tick')")
    assert su.execute(
        "select count(*) from pgflight.schedules s"
        " join pgflight.workspaces w on w.id = s.workspace_id where w.name = 'A'"
    ).fetchone() == (3,)


@pytest.mark.parametrize(
    ("expr", "gap_s"),
    [
        ("* * * * * *", 1),  # every second
        ("*/30 * * * * *", 30),
        ("0,59 * * * * *", 1),  # 59 s, then 1 s round the minute
        ("0 0,1 3 * * *", 60),
    ],
)
def test_a_schedule_firing_more_often_than_the_floor_is_refused(
    su: Conn, as_login: Callable[[str], Conn], expr: str, gap_s: int
) -> None:
    su.execute("update pgflight.settings set min_schedule_interval_s = 61")
    op = as_login("pgf_operator_a")
    e = _cap_error(lambda: op.execute("select * from pgflight.schedule_run('A', 'fast', %s, 'tick')", [expr]))
    assert e.diag.message_detail is not None and f"{gap_s} s apart" in e.diag.message_detail
    assert "min_schedule_interval_s is 61" in e.diag.message_detail
    assert e.diag.message_hint is not None and "min_schedule_interval_s" in e.diag.message_hint
    assert su.execute("select count(*) from pgflight.schedules").fetchone() == (0,)


def test_schedules_at_or_over_the_floor_are_taken_and_the_default_floor_is_a_minute(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    op = as_login("pgf_operator_a")
    assert su.execute("select min_schedule_interval_s from pgflight.settings").fetchone() == (60,)
    _cap_error(lambda: op.execute("select * from pgflight.schedule_run('A', 'x', '* * * * * *', 'tick')"))
    for name, expr in [("m", "* * * * *"), ("h", "0 * * * *"), ("d", "59 59 23 * * *"), ("s", "0 * * * * *")]:
        op.execute("select * from pgflight.schedule_run('A', %s, %s, 'tick')", [name, expr])


def test_an_agent_iteration_holds_at_most_the_trace_block_cap(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("update pgflight.settings set max_trace_blocks_per_iteration = 5")
    me = as_login("pgf_worker_a")
    w = World(su=su, me=me, workspace="A", worker_id=_register(me, "tracer"))
    held = w.held()
    ar = w.agent(held, me)
    block = Jsonb({"type": "text", "text": "x"})
    me.execute(
        MODEL_CALL.replace("ITER", "1"),
        [held["attempt_id"], held["token"], ar, Jsonb([{"type": "text", "text": "a"}] * 3)],
    )

    def trace(seq: int | None = None, iteration: int = 1) -> Any:
        return me.execute(
            "select * from pgflight.record_trace(%s, %s, %s, %s, 'system', 'api_error', %s, %s)",
            [
                held["attempt_id"],
                held["token"],
                ar,
                iteration,
                block,
                Jsonb({} if seq is None else {"seq": seq}),
            ],
        ).fetchone()

    trace()
    trace()  # five blocks now: three of the response, two of record_trace
    e = _cap_error(lambda: trace())
    assert (
        e.diag.message_detail is not None and "max_trace_blocks_per_iteration is 5" in e.diag.message_detail
    )
    assert e.diag.message_hint is not None and "max_trace_blocks_per_iteration" in e.diag.message_hint
    assert trace(seq=2000)[2] is False, "a repeated seq is still a no-op, not a refusal"
    trace(iteration=2)  # another iteration has its own count
    # a response of more blocks than an iteration may hold is refused whole
    e = _cap_error(
        lambda: me.execute(
            MODEL_CALL.replace("ITER", "3"),
            [held["attempt_id"], held["token"], ar, Jsonb([{"type": "text", "text": "a"}] * 6)],
        )
    )
    assert "max_trace_blocks_per_iteration" in str(e)
    counts = dict(
        su.execute(
            "select iteration, count(*) from pgflight.traces"
            " where agent_run_id = %s and iteration > 0 group by 1",
            [ar],
        ).fetchall()
    )
    assert counts == {1: 5, 2: 1}


def test_the_trace_block_cap_stays_within_a_responses_seq_band(su: Conn) -> None:
    """A model response sits at seq 0 .. n-1 and its tool results from 1000: the cap is at most 1000."""
    su.execute("update pgflight.settings set max_trace_blocks_per_iteration = 999")
    with pytest.raises(psycopg.errors.CheckViolation) as e, su.transaction():
        su.execute("update pgflight.settings set max_trace_blocks_per_iteration = 1001")
    assert e.value.diag.constraint_name == "max_trace_blocks_per_iteration_fits_its_band"
    row = su.execute("select max_trace_blocks_per_iteration from pgflight.settings").fetchone()
    assert row is not None and row[0] == 999
    su.execute("update pgflight.settings set max_trace_blocks_per_iteration = 1000")


def test_stopped_workers_are_purged_after_the_retention_period_and_live_ones_are_kept(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    su.execute("update pgflight.settings set workers_keep_s = 3600")
    me = as_login("pgf_worker_a")
    old = _register(me, "old")
    recent = _register(me, "recent")
    live = _register(me, "live")
    # the old worker ran a step to its end, so attempts and events name it
    _submit_many(su, "A", 1)
    row = me.execute(
        "select attempt_id, fencing_token, run_id from pgflight.claim_batch(%s, 1, 60)", [old]
    ).fetchone()
    assert row is not None
    me.execute("select * from pgflight.complete_step(%s, %s, '{\"ok\": true}')", [row[0], row[1]])
    me.execute("select pgflight.deregister_worker(%s)", [old])
    _at(me, T0 + timedelta(seconds=3000))
    me.execute("select pgflight.deregister_worker(%s)", [recent])
    _at(su, T0 + timedelta(seconds=3601))
    purged = su.execute(
        "select moved_rows from pgflight.maintain_partitions()"
        " where partition_name = 'workers' and action = 'purged'"
    ).fetchall()
    assert purged == [(1,)]
    left = {r[0] for r in su.execute("select name from pgflight.workers").fetchall()}
    assert "old" not in left and {"recent", "live"} <= left
    # nothing that named the purged worker breaks
    assert su.execute(
        "select worker_id from pgflight.attempts where attempt_id = %s", [row[0]]
    ).fetchone() == (old,)
    events = su.execute("select count(*) from pgflight.run_events where run_id = %s", [row[2]]).fetchone()
    assert events is not None and events[0] >= 2
    assert me.execute("select status from pgflight.run_status(%s)", [row[2]]).fetchone() is not None
    reader_rows = su.execute("select * from pgflight.worker_list()").fetchall()
    assert all(r[1] != "old" for r in reader_rows)
    # the live worker still works
    _submit_many(su, "A", 1)
    _at(me, T0 + timedelta(seconds=3601))
    assert len(me.execute("select * from pgflight.claim_batch(%s, 1, 60)", [live]).fetchall()) == 1


def test_a_stopped_worker_that_still_holds_a_lease_is_kept(su: Conn, as_login: Callable[[str], Conn]) -> None:
    su.execute("update pgflight.settings set workers_keep_s = 60")
    me = as_login("pgf_worker_a")
    wid = _register(me, "stuck")
    _submit_many(su, "A", 1)
    assert len(me.execute("select * from pgflight.claim_batch(%s, 1, 3600)", [wid]).fetchall()) == 1
    # a stop written without the release deregister_worker makes (by hand, or an older client)
    su.execute("update pgflight.workers set stopped_at = %s where id = %s", [T0, wid])
    _at(su, T0 + timedelta(seconds=120))
    su.execute("select * from pgflight.maintain_partitions()")
    assert su.execute("select count(*) from pgflight.workers where id = %s", [wid]).fetchone() == (1,)
