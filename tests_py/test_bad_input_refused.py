"""
Bad input the SQL API refuses with its own SQLSTATE, as the lane logins over scram: a date-only
``not_before`` (it would be read in the session's time zone), a child of ``spawn_children`` with a
key outside its shape (it was dropped without a word), and a result or error a worker cannot
store (the text-form completion and failure end the attempt instead of leaving it claimed).
Real PostgreSQL; nothing is written by a refused call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from conftest import Logins
from core_helpers import scalar
from security_support import grant, login_connect

Conn = psycopg.Connection[Any]


def _sqlstate(conn: Conn, query: str, params: list[Any]) -> str | None:
    try:
        conn.execute(query, params)
    except psycopg.Error as e:
        return e.sqlstate
    return None


@pytest.fixture
def operator(conn: Conn, dsn: str, logins: Logins) -> Iterator[Conn]:
    """An operator login of workspace "bad" (the superuser `conn` made it)."""
    conn.execute("select pgflight.create_workspace('bad')")
    grant(conn, "pgf_operator_a", "bad", "operator")
    with login_connect(logins.dsn("pgf_operator_a", dsn)) as c:
        yield c


@pytest.mark.parametrize(
    "value", ["2030-01-01", " 2030-01-01 ", "2030-12-31", "2030-01-01Z", "2030-01-01+02:00"]
)
def test_a_not_before_without_a_time_of_day_is_refused(conn: Conn, operator: Conn, value: str) -> None:
    """A date alone ("2030-01-01": its "-01" is no UTC offset) is refused with 22023, by
    submit_run and by submit_runs, and no run is made."""
    opts = Jsonb({"not_before": value})
    assert _sqlstate(operator, "select * from pgflight.submit_run('bad', 'r', '{}', %s)", [opts]) == "22023"
    assert (
        _sqlstate(
            operator,
            "select * from pgflight.submit_runs('bad', %s)",
            [Jsonb([{"recipe": "r", "options": {"not_before": value}}])],
        )
        == "22023"
    )
    assert scalar(conn, "select count(*) from pgflight.runs") == 0


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        ("2030-01-01T09:00:00Z", "2030-01-01 09:00:00+00"),
        ("2030-01-01 09:00+02", "2030-01-01 07:00:00+00"),
        ("2030-01-01T09:00:00.5-01:30", "2030-01-01 10:30:00.5+00"),
    ],
)
def test_a_not_before_with_a_time_and_an_offset_is_the_instant_it_names(
    conn: Conn, operator: Conn, value: str, instant: str
) -> None:
    operator.execute(
        "select * from pgflight.submit_run('bad', 'r', '{}', %s)", [Jsonb({"not_before": value})]
    )
    assert scalar(conn, "select available_after = %s::timestamptz from pgflight.step_attempts", [instant])


@pytest.fixture
def worker(conn: Conn, dsn: str, logins: Logins) -> Iterator[Conn]:
    """A worker login of workspace "bad" (the superuser `conn` made it)."""
    conn.execute("select pgflight.create_workspace('bad')")
    grant(conn, "pgf_worker_a", "bad", "worker")
    with login_connect(logins.dsn("pgf_worker_a", dsn)) as c:
        yield c


def _held(conn: Conn, worker: Conn, recipe: str = "parent") -> tuple[int, int]:
    """Submit one run (superuser) and claim it running as the worker login: (attempt, token)."""
    conn.execute("select * from pgflight.submit_run('bad', %s, '{}')", [recipe])
    wid = scalar(worker, "select pgflight.register_worker('w')")
    row = worker.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 30, %s, '{\"start\": true}')",
        [wid, [recipe]],
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@pytest.mark.parametrize(
    ("child", "key"),
    [
        ({"key": "c", "recipe": "r", "backoff": {"base_s": 0}}, "backoff"),
        ({"key": "c", "recipe": "r", "input": {}, "max_attempts": 3}, "max_attempts"),
        ({"key": "c", "recipe": "r", "option": {"priority": 1}}, "option"),
    ],
)
def test_a_child_key_outside_its_shape_is_refused_naming_it(
    conn: Conn, worker: Conn, child: dict[str, Any], key: str
) -> None:
    """spawn_children refuses a child with a key other than key, recipe, input and options with
    22023 naming the key and the child; nothing is spawned and the parent keeps running."""
    attempt, token = _held(conn, worker)
    ok = {"key": "first", "recipe": "r", "options": {"backoff": {"base_s": 0}}}
    with pytest.raises(psycopg.Error) as e:
        worker.execute(
            "select * from pgflight.spawn_children(%s, %s, %s)", [attempt, token, Jsonb([ok, child])]
        )
    assert e.value.sqlstate == "22023"
    assert f"unknown key {key} of spawn_children child 2" in str(e.value)
    assert scalar(conn, "select count(*) from pgflight.steps") == 1
    assert scalar(conn, "select status from pgflight.step_attempts where id = %s", [attempt]) == "running"
    # the same child with its options inside options is taken
    fixed = {k: v for k, v in child.items() if k in ("key", "recipe", "input")}
    worker.execute("select * from pgflight.spawn_children(%s, %s, %s)", [attempt, token, Jsonb([ok, fixed])])
    assert scalar(conn, "select count(*) from pgflight.steps") == 3


NUL_RESULT = '{"text": "a\\u0000b"}'  # JSON text jsonb refuses (22P05): a NUL character


@pytest.mark.parametrize(
    "text",
    [NUL_RESULT, '{"n": NaN}', '{"a": 1,', '"' + "x" * 70_000 + '"'],
    ids=["nul", "nan", "malformed", "over_max_result_bytes"],
)
def test_a_result_postgres_refuses_fails_the_step_through_the_text_form(
    conn: Conn, worker: Conn, text: str
) -> None:
    """complete_step_text with a result PostgreSQL refuses (or over max_result_bytes) answers
    'result_refused' in the same call: the step is dead-lettered (not retried, reason result_refused) with
    an error that says why, instead of staying claimed until its lease lapses."""
    conn.execute("update pgflight.settings set max_result_bytes = 65536")
    attempt, token = _held(conn, worker)
    if text == NUL_RESULT:
        # the jsonb form cannot be reached: the argument fails to parse (22P05) before
        # complete_step runs, and the attempt stays claimed
        with pytest.raises(psycopg.Error) as e:
            worker.execute("select * from pgflight.complete_step(%s, %s, %s::jsonb)", [attempt, token, text])
        assert e.value.sqlstate == "22P05"
        assert scalar(conn, "select status from pgflight.step_attempts where id = %s", [attempt]) == "running"
    row = worker.execute(
        "select attempt_id, status from pgflight.complete_step_text(%s, %s, %s)", [attempt, token, text]
    ).fetchone()
    assert row == (attempt, "result_refused")
    status, error = conn.execute(
        "select status, error from pgflight.step_attempts where id = %s", [attempt]
    ).fetchone() or (None, None)
    assert status == "dead_letter"
    assert error["sqlstate"] in ("22P05", "22P02", "ZF005"), error
    assert "refused by PostgreSQL" in error["message"] or "too large" in error["message"], error


def test_a_storable_result_completes_through_the_text_form(conn: Conn, worker: Conn) -> None:
    attempt, token = _held(conn, worker)
    row = worker.execute(
        "select attempt_id, status from pgflight.complete_step_text(%s, %s, %s)",
        [attempt, token, '{"answer": 42}'],
    ).fetchone()
    assert row == (attempt, "succeeded")
    assert scalar(conn, "select result from pgflight.step_attempts where id = %s", [attempt]) == {
        "answer": 42
    }
    # a stale token is refused like complete_step's (ZF001), nothing written
    with pytest.raises(psycopg.Error) as e:
        worker.execute("select * from pgflight.complete_step_text(%s, %s, %s)", [attempt, token, NUL_RESULT])
    assert e.value.sqlstate == "ZF001"


def _claim(worker: Conn, wid: int, recipe: str) -> tuple[int, int]:
    row = worker.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 30, %s, '{\"start\": true}')",
        [wid, [recipe]],
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_an_error_postgres_refuses_still_fails_the_step_through_the_text_form(
    conn: Conn, worker: Conn
) -> None:
    """fail_step_text with an error holding a NUL stores a message saying so, with the error's
    first characters, and fails the attempt as fail_step would (here: retried)."""
    conn.execute(
        "select * from pgflight.submit_run('bad', 'flaky', '{}', %s)",
        [Jsonb({"max_attempts": 2, "backoff": {"base_s": 0, "jitter": 0}})],
    )
    wid = scalar(worker, "select pgflight.register_worker('w')")
    attempt, token = _claim(worker, wid, "flaky")
    row = worker.execute(
        "select outcome, next_attempt_id is not null from pgflight.fail_step_text(%s, %s, %s)",
        [attempt, token, '{"message": "boom \\u0000 here"}'],
    ).fetchone()
    assert row == ("retry", True)
    error = scalar(conn, "select error from pgflight.step_attempts where id = %s", [attempt])
    assert error["sqlstate"] == "22P05" and "refused by PostgreSQL" in error["message"], error
    assert "boom" in error["raw"]
    # a storable error is kept as given
    attempt2, token2 = _claim(worker, wid, "flaky")
    worker.execute(
        "select * from pgflight.fail_step_text(%s, %s, %s, '{\"retryable\": false}')",
        [attempt2, token2, '{"message": "plain"}'],
    )
    assert scalar(conn, "select error from pgflight.step_attempts where id = %s", [attempt2]) == {
        "message": "plain"
    }
