"""
Bulk submit: `submit_runs` does what one `submit_run` per element does, in one call,
all or nothing. Idempotency keys are honoured per element (against the database and inside the
call), a bad element refuses the whole call naming its position and the key, a cap bounds the
call, one NOTIFY wakes the workers, and two connections submitting the same keys at once end
with one run per key (no deadlock, whatever order they list them in).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import ConnectFactory
from core_helpers import Conn, setup_engine, submit, table_counts
from pgflight import db, errors

WS = "core"


def bulk(
    conn: Conn, runs: list[dict[str, Any]], options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    cur = conn.execute(
        "select * from pgflight.submit_runs(%s, %s, %s)", [WS, Jsonb(runs), Jsonb(options or {})]
    )
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def refused(conn: Conn, runs: Any, options: dict[str, Any] | None = None) -> psycopg.Error:
    before = table_counts(conn)
    with pytest.raises(psycopg.Error) as e:
        conn.execute(
            "select * from pgflight.submit_runs(%s, %s, %s)", [WS, Jsonb(runs), Jsonb(options or {})]
        )
    assert table_counts(conn) == before, "a refused call writes nothing"
    return e.value


def row_of(conn: Conn, run_id: int) -> tuple[Any, ...]:
    """A run apart from its ids, times and key: run, root step, first attempt, queued event."""
    row = conn.execute(
        "select r.recipe, r.options ->> 'idempotency_key' = r.idempotency_key, r.input_hash, r.submitted_by,"
        "       r.options - 'idempotency_key', r.max_usd, r.max_wall_s,"
        "       r.max_iterations, r.max_tool_calls, s.step_key, s.recipe, s.input, s.priority,"
        "       s.max_attempts,"
        "       s.backoff, s.lease_s, s.max_runtime_s, s.concurrency_key, s.concurrency_limit, s.depth,"
        "       a.attempt_no, a.status, a.priority, a.concurrency_key,"
        "       case when r.options ? 'not_before' then a.available_after::text"
        "            else (a.available_after - a.created_at)::text end,"
        "       a.concurrency_limit, a.workspace_id,"
        "       (select array_agg(e.to_status || '/' || e.reason || '/' || e.actor)"
        "          from pgflight.run_events e"
        "         where e.run_id = r.id)"
        "  from pgflight.runs r join pgflight.steps s on s.id = r.root_step_id"
        "  join pgflight.step_attempts a on a.step_id = s.id where r.id = %s",
        [run_id],
    ).fetchone()
    assert row is not None
    return tuple(row)


def test_each_element_is_the_run_submit_run_makes(conn: Conn) -> None:
    setup_engine(conn)
    shapes: list[dict[str, Any]] = [
        {},
        {"priority": 7, "max_attempts": 5.0, "lease_s": 12.5, "backoff": {"base_s": 2, "jitter": 0}},
        {"delay_s": 60, "concurrency_key": "cust-1", "concurrency_limit": 2.0, "submitted_by": "me"},
        {"not_before": "2031-05-01T09:00:00+02:00", "max_usd": 1.5, "max_wall_s": 30, "max_iterations": 4},
        {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "max_tool_calls": 0},
    ]
    for i, options in enumerate(shapes):
        one = submit(conn, "r", {"n": i}, idempotency_key=f"single-{i}", **options)
        [many] = bulk(
            conn, [{"recipe": "r", "input": {"n": i}, "options": {**options, "idempotency_key": f"bulk-{i}"}}]
        )
        assert many["created"] and many["idx"] == 1
        single, batch = row_of(conn, one.run_id), row_of(conn, many["run_id"])
        assert single == batch, options


def test_a_call_submits_every_element_in_order_with_shared_options(conn: Conn) -> None:
    setup_engine(conn)
    runs = [{"recipe": "a" if i % 2 else "b", "input": {"i": i}} for i in range(1, 301)]
    runs[9]["options"] = {"priority": 9}  # over the shared priority
    got = bulk(conn, runs, {"priority": 3, "max_attempts": 2})
    assert [r["idx"] for r in got] == list(range(1, 301))
    assert all(r["created"] for r in got)
    assert len({r["run_id"] for r in got}) == 300
    prio = dict(
        conn.execute(
            "select (s.input->>'i')::int, s.priority from pgflight.steps s where s.run_id = any(%s)",
            [[r["run_id"] for r in got]],
        ).fetchall()
    )
    assert prio[10] == 9 and {p for i, p in prio.items() if i != 10} == {3}
    counts = conn.execute(
        "select (select count(*) from pgflight.steps where run_id = any(%(r)s)),"
        "       (select count(*) from pgflight.step_attempts where run_id = any(%(r)s) and status = 'queued'"
        "                                                     and attempt_no = 1),"
        "       (select count(*) from pgflight.run_events"
        "         where run_id = any(%(r)s) and to_status = 'queued')",
        {"r": [r["run_id"] for r in got]},
    ).fetchone()
    assert counts == (300, 300, 300)
    assert bulk(conn, []) == []


def test_keys_existing_and_repeated_inside_the_call(conn: Conn) -> None:
    setup_engine(conn)
    before = submit(conn, "r", {"x": 1}, idempotency_key="k1")
    got = bulk(
        conn,
        [
            {"recipe": "r", "input": {"x": 2}, "options": {"idempotency_key": "k2"}},
            {"recipe": "r", "input": {"x": 1}, "options": {"idempotency_key": "k1"}},
            {"recipe": "r", "input": {"x": 2}, "options": {"idempotency_key": "k2"}},
            {"recipe": "r", "input": {"x": 3}},
        ],
    )
    assert [(r["idx"], r["created"]) for r in got] == [(1, True), (2, False), (3, False), (4, True)]
    assert got[1]["run_id"] == before.run_id and got[1]["attempt_id"] == before.attempt_id
    assert got[2]["run_id"] == got[0]["run_id"], "the first element of a key creates, later ones get its run"
    assert conn.execute("select count(*) from pgflight.runs where idempotency_key = 'k2'").fetchone() == (1,)


@pytest.mark.parametrize(
    ("runs", "phrase"),
    [
        (
            [{"recipe": "r", "input": {"x": 1}, "options": {"idempotency_key": "k1"}}],
            "element 1: idempotency key 'k1'",
        ),
        (
            [
                {"recipe": "r", "input": {}, "options": {"idempotency_key": "n1"}},
                {"recipe": "r", "input": {"y": 1}, "options": {"idempotency_key": "n1"}},
            ],
            "element 2: idempotency key 'n1'",
        ),
        (
            [{"recipe": "r"}, {"recipe": "other", "input": {"x": 9}, "options": {"idempotency_key": "k1"}}],
            "element 2",
        ),
    ],
)
def test_a_key_with_another_input_refuses_the_call(
    conn: Conn, runs: list[dict[str, Any]], phrase: str
) -> None:
    setup_engine(conn)
    submit(conn, "r", {"x": 9}, idempotency_key="k1")
    e = refused(conn, runs)
    assert e.sqlstate == "ZF004" and phrase in str(e), str(e)


@pytest.mark.parametrize(
    ("bad", "code", "phrase"),
    [
        ("nope", "22023", "a run must be a JSON object"),
        ({"input": {}}, "22023", "recipe is required"),
        ({"recipe": " "}, "22023", "recipe is required"),
        ({"recipe": "x" * 300}, "22023", "longer than 256"),
        ({"recipe": "r", "optoins": {}}, "22023", "unknown key optoins"),
        ({"recipe": "r", "options": [1]}, "22023", "must be a JSON object"),
        ({"recipe": "r", "options": {"priority": 1.5}}, "22023", "option priority"),
        ({"recipe": "r", "options": {"maxattempts": 2}}, "22023", "unknown option maxattempts"),
        ({"recipe": "r", "options": {"idempotency_key": ""}}, "22023", "option idempotency_key"),
        ({"recipe": "r", "options": {"idempotency_key": 5}}, "22023", "option idempotency_key"),
        (
            {"recipe": "r", "options": {"delay_s": 1, "not_before": "2030-01-01T00:00:00Z"}},
            "22023",
            "delay_s",
        ),
        (
            {"recipe": "r", "options": {"not_before": "2030-01-01 00:00"}},
            "22023",
            "not_before of submit_run must be an ISO 8601 timestamp with a time of day and a UTC offset",
        ),
        (
            {"recipe": "r", "options": {"concurrency_limit": 2}},
            "22023",
            "concurrency_limit needs concurrency_key",
        ),
        ({"recipe": "r", "options": {"backoff": {"factor": 1000}}}, "22023", "option factor of backoff"),
        ({"recipe": "r", "input": {"t": "x" * 300}}, "ZF005", "max_input_bytes"),
    ],
)
def test_one_bad_element_refuses_the_call_naming_it(conn: Conn, bad: Any, code: str, phrase: str) -> None:
    setup_engine(conn)
    conn.execute("update pgflight.settings set max_input_bytes = 200")
    e = refused(conn, [{"recipe": "r"}, {"recipe": "r", "input": {"i": 2}}, bad, {"recipe": "r"}])
    assert e.sqlstate == code, str(e)
    assert str(e).startswith("submit_runs element 3: ") and phrase in str(e), str(e)
    assert e.diag.message_hint, "the hint of the element's error is kept"


def test_bad_call_arguments(conn: Conn) -> None:
    setup_engine(conn)
    assert refused(conn, {"recipe": "r"}).sqlstate == "22023"
    assert refused(conn, [{"recipe": "r"}], {"idempotency_key": "same"}).sqlstate == "22023"
    assert refused(conn, [{"recipe": "r"}], {"lease_s": 0}).sqlstate == "22023"
    with pytest.raises(psycopg.Error) as e:
        conn.execute("select * from pgflight.submit_runs('nowhere', '[]')")
    assert e.value.sqlstate == "ZF003"
    conn.execute("update pgflight.settings set max_runs_per_call = 3")
    e4 = refused(conn, [{"recipe": "r"}] * 4)
    assert e4.sqlstate == "ZF005" and "max_runs_per_call" in str(e4)
    assert len(bulk(conn, [{"recipe": "r"}] * 3)) == 3


def test_one_notify_per_call(conn: Conn, connect: ConnectFactory) -> None:
    setup_engine(conn)
    listener = connect()
    listener.execute("listen pgflight_ready")
    bulk(conn, [{"recipe": "r", "input": {"i": i}} for i in range(50)])
    bulk(conn, [{"recipe": "r", "options": {"delay_s": 600}}])  # nothing claimable now: no NOTIFY
    got = list(listener.notifies(timeout=1.0))
    assert len(got) == 1 and got[0].payload.isdigit()  # the wake ticket (a transaction id), no user data


@pytest.mark.parametrize("reverse", [False, True])
def test_two_connections_bulk_submitting_the_same_keys_make_one_run_per_key(
    conn: Conn, connect: ConnectFactory, reverse: bool
) -> None:
    """
    A holds keys 0..199 uncommitted while B submits 100..299 (listed backwards when `reverse`): B
    waits for A on the shared keys (runs go in in key order, so never a deadlock), then gets A's
    runs for them, created false.
    """
    setup_engine(conn)
    a, b = connect(timeout_s=30, autocommit=False), connect(timeout_s=30)

    def runs(keys: range) -> list[dict[str, Any]]:
        return [
            {"recipe": "r", "input": {"k": k}, "options": {"idempotency_key": f"key-{k:03d}"}} for k in keys
        ]

    got_a = bulk(a, runs(range(200)))
    got_b: list[dict[str, Any]] = []
    b_keys = range(299, 99, -1) if reverse else range(100, 300)
    t = threading.Thread(target=lambda: got_b.extend(bulk(b, runs(b_keys))))
    t.start()
    t.join(1.0)
    assert t.is_alive(), "B waits for A's uncommitted keys"
    a.commit()
    t.join(30)
    assert not t.is_alive() and len(got_b) == 200
    per_key = conn.execute(
        "select count(*), count(distinct idempotency_key) from pgflight.runs"
        " where idempotency_key like 'key-%'"
    ).fetchone()
    assert per_key == (300, 300)
    a_run = {r["idx"] - 1: r["run_id"] for r in got_a}  # A submitted key k as element k + 1
    for r in got_b:
        k = b_keys[r["idx"] - 1]
        assert r["created"] == (k >= 200), k
        if k < 200:
            assert r["run_id"] == a_run[k]


def test_python_client_and_cli(conn: Conn, dsn: str, tmp_path: Any) -> None:
    from test_cli import pgflight

    setup_engine(conn)
    got = db.submit_many(
        conn,
        WS,
        [
            {"recipe": "r", "input": {"i": 1}, "idempotency_key": "p1"},
            {"recipe": "r", "options": {"priority": 2}},
        ],
        options={"max_attempts": 4},
    )
    assert [(r.idx, r.created) for r in got] == [(1, True), (2, True)]
    again = db.submit_many(conn, WS, [{"recipe": "r", "input": {"i": 1}, "idempotency_key": "p1"}])
    assert again[0].run_id == got[0].run_id and not again[0].created
    with pytest.raises(errors.IdempotencyConflict):
        db.submit_many(conn, WS, [{"recipe": "r", "input": {"i": 2}, "idempotency_key": "p1"}])
    with pytest.raises(errors.BadArgument, match="submit_runs element 2"):
        db.submit_many(conn, WS, [{"recipe": "r"}, {"recipe": ""}])

    lines = tmp_path / "runs.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps(r) for r in [{"input": {"n": 1}, "idempotency_key": "c1"}, {"input": {"n": 2}}, {}]
        )
        + "\n"
    )
    proc = pgflight(dsn, "submit", "--from-jsonl", str(lines), "noop", "--workspace", "jsonl", "--chunk", "2")
    assert proc.returncode == 0, proc.stderr
    assert "3 runs submitted, 0 already submitted" in proc.stdout
    proc = pgflight(dsn, "submit", "--from-jsonl", str(lines), "noop", "--workspace", "jsonl", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["created"] for r in json.loads(proc.stdout)] == [False, True, True]


def test_submit_run_waits_on_an_uncommitted_key_and_keyless_runs_never_conflict(
    conn: Conn, connect: ConnectFactory
) -> None:
    """
    The key is unique through a partial index (tables/runs_idempotency_partial): submit_run with a
    key another connection holds uncommitted waits for it and then gets that run (created false);
    runs without a key, from both connections, are all created.
    """
    setup_engine(conn)
    a, b = connect(timeout_s=30, autocommit=False), connect(timeout_s=30)
    sql = "select run_id, created from pgflight.submit_run(%s, 'r', %s, %s)"
    first = a.execute(sql, [WS, Jsonb({"x": 1}), Jsonb({"idempotency_key": "held"})]).fetchone()
    a.execute(sql, [WS, Jsonb({}), Jsonb({})])
    got: list[Any] = []
    t = threading.Thread(
        target=lambda: got.append(
            b.execute(sql, [WS, Jsonb({"x": 1}), Jsonb({"idempotency_key": "held"})]).fetchone()
        )
    )
    t.start()
    t.join(1.0)
    assert t.is_alive(), "B waits for A's uncommitted key"
    a.commit()
    t.join(30)
    assert first is not None and got == [(first[0], False)]
    assert b.execute(sql, [WS, Jsonb({}), Jsonb({})]).fetchone()[1] is True  # type: ignore[index]
    keyless = conn.execute("select count(*) from pgflight.runs where idempotency_key is null").fetchone()
    assert keyless == (2,)


# --- enqueue: the common shape and the large call -------------------------------------

LARGE = 600  # at or over submit_runs' threshold for writing without the per-row foreign key checks


def locked_rows(conn: Conn, run_ids: list[int]) -> tuple[int, int]:
    """Runs and root steps among `run_ids` whose row carries a lock (xmax set): a foreign key check's."""
    row = conn.execute(
        "select count(*) filter (where r.xmax <> '0'), count(*) filter (where s.xmax <> '0')"
        "  from pgflight.runs r join pgflight.steps s on s.id = r.root_step_id where r.id = any(%s)",
        [run_ids],
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@pytest.mark.parametrize("n", [3, LARGE])
def test_the_common_shape_writes_what_submit_run_writes(conn: Conn, n: int) -> None:
    """
    Elements without options of their own and without keys (read in one pass, option values read
    once per call; at LARGE without foreign key checks): each run, step and attempt is the one
    submit_run makes with the same options, and the rows come back in element order.
    """
    setup_engine(conn)
    shapes: list[dict[str, Any]] = [
        {},
        {"priority": 7, "max_attempts": 5.0, "lease_s": 12.5, "backoff": {"base_s": 2, "jitter": 0}},
        {"delay_s": 60, "concurrency_key": "cust-1", "concurrency_limit": 2.0, "submitted_by": "me"},
        {"not_before": "2031-05-01T09:00:00+02:00", "max_usd": 1.5, "max_wall_s": 30, "max_iterations": 4},
        {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "max_tool_calls": 0},
    ]
    for s, options in enumerate(shapes):
        runs = [{"recipe": "r", "input": {"n": i}} for i in range(n)]
        got = bulk(conn, runs, options)
        assert [(r["idx"], r["created"]) for r in got] == [(i, True) for i in range(1, n + 1)]
        for i in (0, n - 1):
            one = submit(conn, "r", {"n": i}, **options)
            assert row_of(conn, one.run_id) == row_of(conn, got[i]["run_id"]), (s, i)
        ids = conn.execute(
            "select (s.input ->> 'n')::int, r.id, s.id, a.id from pgflight.runs r"
            "  join pgflight.steps s on s.id = r.root_step_id"
            "  join pgflight.step_attempts a on a.step_id = s.id"
            " where r.id = any(%s)",
            [[r["run_id"] for r in got]],
        ).fetchall()
        assert sorted(ids) == [(i, r["run_id"], r["step_id"], r["attempt_id"]) for i, r in enumerate(got)]


def test_a_large_call_skips_the_foreign_key_checks_of_rows_it_creates(
    conn: Conn, connect: ConnectFactory
) -> None:
    """
    A call of LARGE elements writes with session_replication_role = replica: its runs and steps
    carry no foreign key check's row lock (a call of 3 does), while the workspace is locked as
    that check would lock it; the setting is back to origin after the call, and after a call
    that failed inside its writes (a lock timeout on a key another transaction holds), so the
    foreign keys still hold for the statements that follow.
    """
    setup_engine(conn)
    small = bulk(conn, [{"recipe": "r", "input": {"i": i}} for i in range(3)])
    assert locked_rows(conn, [r["run_id"] for r in small]) == (3, 3)

    a = connect(timeout_s=30, autocommit=False)
    large = bulk(
        a, [{"recipe": "r", "input": {"i": i}, "options": {"idempotency_key": f"k{i}"}} for i in range(LARGE)]
    )
    assert a.execute("show session_replication_role").fetchone() == ("origin",)
    other = connect(timeout_s=5)
    with pytest.raises(psycopg.errors.LockNotAvailable):
        other.execute("select from pgflight.workspaces where name = %s for update nowait", [WS])
    a.commit()
    assert locked_rows(conn, [r["run_id"] for r in large]) == (0, 0)

    # B fails inside its writes: A holds a key of B's uncommitted
    a.execute("select pgflight.submit_run(%s, 'r', '{}', %s)", [WS, Jsonb({"idempotency_key": "held"})])
    b = connect(timeout_s=30, autocommit=False)
    b.execute("set lock_timeout = '300ms'")
    b.execute("savepoint s")
    runs = [{"recipe": "r", "input": {"i": i}} for i in range(LARGE)]
    runs[-1]["options"] = {"idempotency_key": "held"}
    with pytest.raises(psycopg.errors.LockNotAvailable):
        bulk(b, runs)
    b.execute("rollback to savepoint s")
    assert b.execute("show session_replication_role").fetchone() == ("origin",)
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        b.execute(
            "insert into pgflight.step_attempts (step_id, run_id, attempt_no, recipe, available_after,"
            " workspace_id) values (-1, -1, 1, 'r', now(), 1)"
        )
    b.rollback()
    a.rollback()


def test_without_the_grant_a_large_call_keeps_its_foreign_key_checks(conn: Conn) -> None:
    """
    A deploy by a non-superuser leaves pgflight_owner unable to set session_replication_role:
    submit_runs then writes with the checks (its rows locked by them), the way the slow path always
    did.
    """
    setup_engine(conn)
    # parameter privileges are cluster-wide: the revoke stays inside a transaction that is rolled
    # back, so tests of other databases running meanwhile never see it
    tx = conn.transaction(force_rollback=True)
    with tx:
        conn.execute("revoke set on parameter session_replication_role from pgflight_privileged")
        got = bulk(conn, [{"recipe": "r", "input": {"i": i}} for i in range(LARGE)])
        assert [r["idx"] for r in got] == list(range(1, LARGE + 1))
        assert locked_rows(conn, [r["run_id"] for r in got]) == (LARGE, LARGE)
    got = bulk(conn, [{"recipe": "r", "input": {"i": i}} for i in range(LARGE)])
    assert locked_rows(conn, [r["run_id"] for r in got]) == (0, 0)
