"""
The depth cap on every JSON value the API accepts: settings.max_json_depth (64 by default; a
scalar is 0, [1] is 1). A value nested deeper is refused with ZF005 naming max_json_depth, its
depth and the cap in DETAIL, and nothing is written, on each family of entry points: submit
(submit_run, submit_runs), spawn (spawn_children), complete (complete_step; complete_batch
refuses that row alone), fail (fail_step), effects and gates (record_effect, request_approval) and
the agent's records (record_trace, record_model_call, complete_tool_call, complete_tool_calls).
Called as real logins over scram.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from security_support import Conn, World, error_of, grant, login_connect, snapshot

CAP = 64


def deep(levels: int) -> str:
    """JSON text of an object whose array nests so that the whole value is `levels` deep."""
    return '{"a": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


@pytest.fixture
def su(conn: Conn, logins: Any) -> Conn:
    """The superuser connection, workspace A, the operator and worker logins of A."""
    conn.execute("select pgflight.create_workspace('A')")
    conn.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
    grant(conn, "pgf_operator_a", "A", "operator")
    grant(conn, "pgf_worker_a", "A", "worker")
    return conn


@pytest.fixture
def as_login(dsn: str, logins: Any) -> Iterator[Callable[[str], Conn]]:
    opened: list[Conn] = []

    def _open(login: str) -> Conn:
        c = login_connect(logins.dsn(login, dsn))
        opened.append(c)
        return c

    yield _open
    for c in opened:
        c.close()


@pytest.fixture
def world(su: Conn, as_login: Callable[[str], Conn]) -> World:
    """The worker login of A with a registered worker of its own."""
    me = as_login("pgf_worker_a")
    w = World(su=su, me=me, workspace="A")
    w.worker_id = int(me.execute("select pgflight.register_worker('w')").fetchone()[0])  # type: ignore[index]
    return w


def _refused(su: Conn, call: Callable[[], Any], what: str, depth: int = CAP + 1) -> None:
    """`call` raises ZF005 naming max_json_depth, `what`, the depth and the cap; nothing written."""
    before = snapshot(su)
    e = error_of(call)
    assert e.sqlstate == "ZF005", (e.sqlstate, str(e))
    assert "max_json_depth" in e.diag.message_primary and what in e.diag.message_primary, (
        e.diag.message_primary
    )
    assert e.diag.message_detail == (
        f"{what} nests {depth} levels deep (arrays and objects); settings.max_json_depth is {CAP}"
    ), e.diag.message_detail
    assert "max_json_depth" in (e.diag.message_hint or "")
    assert snapshot(su) == before


def test_the_cap_is_64_levels_by_default_and_counts_arrays_and_objects(su: Conn) -> None:
    assert su.execute("select max_json_depth from pgflight.settings").fetchone() == (CAP,)
    for text, depth in [("1", 0), ('"[["', 0), ("[]", 1), ("[1]", 1), ('{"a": [1]}', 2), ("[[], [[{}]]]", 4)]:
        assert su.execute("select pgflight._json_depth(%s::jsonb)", [text]).fetchone() == (depth,), text
    assert su.execute("select pgflight._json_depth(%s::jsonb)", [deep(5001)]).fetchone() == (5001,)


def test_submit_refuses_an_input_nested_deeper_than_the_cap(
    su: Conn, as_login: Callable[[str], Conn]
) -> None:
    op = as_login("pgf_operator_a")
    # at the cap: accepted
    op.execute("select * from pgflight.submit_run('A', 'r', %s::jsonb)", [deep(CAP)])
    _refused(
        su,
        lambda: op.execute("select * from pgflight.submit_run('A', 'r', %s::jsonb)", [deep(CAP + 1)]),
        "input",
    )
    _refused(
        su,
        lambda: op.execute("select * from pgflight.submit_run('A', 'r', %s::jsonb)", [deep(5001)]),
        "input",
        5001,
    )
    runs = f'[{{"recipe": "r", "input": {{}}}}, {{"recipe": "r", "input": {deep(CAP + 1)}}}]'
    _refused(
        su, lambda: op.execute("select * from pgflight.submit_runs('A', %s::jsonb)", [runs]), "input of run 2"
    )


def test_spawn_refuses_a_child_input_nested_deeper_than_the_cap(su: Conn, world: World) -> None:
    h = world.held()
    child = '{"key": "a", "recipe": "r", "input": {}}'
    children = f'[{child}, {{"key": "b", "recipe": "r", "input": {deep(CAP + 1)}}}]'
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.spawn_children(%s, %s, %s::jsonb)",
            [h["attempt_id"], h["token"], children],
        ),
        "child 2 input",
    )


def test_complete_refuses_a_result_nested_deeper_than_the_cap(su: Conn, world: World) -> None:
    h = world.held()
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.complete_step(%s, %s, %s::jsonb)",
            [h["attempt_id"], h["token"], deep(CAP + 1)],
        ),
        "result",
    )
    world.me.execute(
        "select * from pgflight.complete_step(%s, %s, %s::jsonb)", [h["attempt_id"], h["token"], deep(CAP)]
    )


def test_complete_batch_refuses_the_deep_result_alone(su: Conn, world: World) -> None:
    """The deep row's step dead-letters with ZF005 in its error; its neighbours complete (both overloads)."""
    for cast in ("jsonb[]", "text[]"):
        a, b = world.held(), world.held()
        rows = world.me.execute(
            f"select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s::{cast})",
            [[a["attempt_id"], b["attempt_id"]], [a["token"], b["token"]], ['{"ok": true}', deep(CAP + 1)]],
        ).fetchall()
        assert dict(rows) == {a["attempt_id"]: "succeeded", b["attempt_id"]: "result_refused"}, (cast, rows)
        error = su.execute(
            "select error from pgflight.step_attempts where id = %s", [b["attempt_id"]]
        ).fetchone()
        assert error is not None
        assert error[0]["sqlstate"] == "ZF005"
        assert (
            error[0]["message"]
            == f"result nests {CAP + 1} levels deep; the cap is {CAP} (settings.max_json_depth)"
        )


def test_fail_refuses_an_error_nested_deeper_than_the_cap(su: Conn, world: World) -> None:
    h = world.held()
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.fail_step(%s, %s, %s::jsonb)",
            [h["attempt_id"], h["token"], deep(CAP + 1)],
        ),
        "error",
    )


def test_effects_and_gates_refuse_values_nested_deeper_than_the_cap(su: Conn, world: World) -> None:
    h = world.held()
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.record_effect(%s, %s, 'k', %s::jsonb)",
            [h["attempt_id"], h["token"], deep(CAP + 1)],
        ),
        "receipt",
    )
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.request_approval(%s, %s, 'g', %s::jsonb)",
            [h["attempt_id"], h["token"], deep(CAP + 1)],
        ),
        "approval request",
    )


def test_agent_records_refuse_values_nested_deeper_than_the_cap(su: Conn, world: World) -> None:
    h = world.held()
    ar = world.agent(h, world.me)
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.record_trace(%s, %s, %s, 1, 'user', 'text', %s::jsonb)",
            [h["attempt_id"], h["token"], ar, deep(CAP + 1)],
        ),
        "trace block",
    )
    blocks = (
        f'[{{"type": "text", "text": "x", "extra": {deep(CAP - 1)}}}]'  # in an object in an array: CAP + 1
    )
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.record_model_call(%s, %s, %s, 1, %s::jsonb, %s, 'claude-haiku-4-5')",
            [h["attempt_id"], h["token"], ar, blocks, Jsonb({"input_tokens": 1})],
        ),
        "model response blocks",
    )
    tid = world.tool_use(h, ar, world.me)
    result = f'{{"type": "tool_result", "content": {deep(CAP)}}}'  # the block itself adds a level
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.complete_tool_call(%s, %s, %s, %s, %s::jsonb)",
            [h["attempt_id"], h["token"], ar, tid, result],
        ),
        "tool result",
    )
    results = f'[{{"type": "tool_result", "tool_use_id": "{tid}", "content": {deep(CAP - 1)}}}]'
    _refused(
        su,
        lambda: world.me.execute(
            "select * from pgflight.complete_tool_calls(%s, %s, %s, %s::jsonb)",
            [h["attempt_id"], h["token"], ar, results],
        ),
        "tool results",
    )


def test_the_owner_may_raise_the_cap(su: Conn, as_login: Callable[[str], Conn]) -> None:
    """The cap is a setting: raised by the owner, the same input is accepted."""
    su.execute("update pgflight.settings set max_json_depth = 200")
    op = as_login("pgf_operator_a")
    op.execute("select * from pgflight.submit_run('A', 'r', %s::jsonb)", [deep(CAP + 1)])
    with pytest.raises(psycopg.errors.CheckViolation):
        su.execute("update pgflight.settings set max_json_depth = 0")
