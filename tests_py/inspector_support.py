"""
A database for the inspector tests, built through the SQL API only (no process, no fake clock):

- ``finished``: a ``fanout`` run whose two children succeeded, the second child's result 1 MB;
- ``failed``: a ``fatal`` run whose root step failed twice and was dead-lettered (run failed);
- ``gated``: a run parked on approval gate ``approval``;
- ``agent``: an agent run whose first attempt lapsed with tool call ``tu1`` in flight (reclaimed,
  the stale writer's late result refused), resumed on a second worker that found the call
  interrupted, re-ran it and finished; hostile content (a script tag, a 5,000-character line,
  binary-looking text) in its transcript.

Also login roles with passwords: ``insp_operator`` (granted pgflight_operator) and ``insp_reader``
(granted pgflight_reader), and :func:`login_dsn` to connect as them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from core_helpers import Claim, claim_one, complete, fail, register, scalar, spawn, submit

Conn = psycopg.Connection[Any]

PASSWORD = "insp-secret-pw"
OPERATOR = "insp_operator"
READER = "insp_reader"
HOSTILE_SCRIPT = "<script>window.__pwned = 1</script>"
LONG_LINE = "x" * 5000
BINARY_LOOKING = "".join(chr(c) for c in range(1, 32) if c not in (9, 10, 13)) + "\u00ff\ufffd\x7f" * 50
BIG_RESULT = {"blob": "A" * 1_000_000}


@dataclass
class Scenario:
    """Ids of the runs and steps the tests click through."""

    finished_run: int
    finished_step: int
    big_child_step: int
    failed_run: int
    dead_step: int
    gated_run: int
    gated_step: int
    agent_run: int
    agent_step: int
    agent_run_id: int
    first_attempt: int
    second_attempt: int


def login_roles(conn: Conn) -> None:
    """The two login roles of the tests, created or reset (cluster-wide), on every workspace here."""
    for role, lane in ((OPERATOR, "pgflight_operator"), (READER, "pgflight_reader")):
        exists = conn.execute("select 1 from pg_roles where rolname = %s", [role]).fetchone()
        verb = "alter" if exists else "create"
        conn.execute(f"{verb} role {role} login password '{PASSWORD}'")
        conn.execute(f"grant {lane} to {role}")
        # a login acts only on the workspaces granted to it; these two on every one
        conn.execute("select pgflight.grant_workspace(%s, null, %s)", [role, lane.removeprefix("pgflight_")])


def login_dsn(superuser_dsn: str, role: str) -> str:
    """The DSN of `superuser_dsn`'s database for one of the login roles."""
    return make_conninfo(superuser_dsn, user=role, password=PASSWORD)


def _agent_call(
    conn: Conn, c: Claim, agent_run_id: int, iteration: int, blocks: list[Any], usage: Any
) -> None:
    conn.execute(
        "select * from pgflight.record_model_call(%s, %s, %s, %s, %s, %s, 'claude-haiku-4-5')",
        [c.attempt_id, c.token, agent_run_id, iteration, Jsonb(blocks), Jsonb(usage)],
    )


def build(conn: Conn) -> Scenario:
    """Fill the database (autocommit superuser connection) with the four runs; return their ids."""
    login_roles(conn)
    conn.execute("select pgflight.create_workspace('acme', '{\"daily_usd_cap\": 5}')")
    conn.execute("select pgflight.create_workspace('globex')")
    w1, w2 = register(conn, "worker-a"), register(conn, "worker-b")

    # finished: a parent with two children, the second with a 1 MB result
    fin = submit(conn, "fanout", {"n": 2}, workspace="acme", idempotency_key="fin-1")
    parent = claim_one(conn, w1, recipes=["fanout"])
    spawn(conn, parent, ["a", "b"], recipe="square")
    kid_a = claim_one(conn, w1, recipes=["square"])
    complete(conn, kid_a, 4)
    kid_b = claim_one(conn, w2, recipes=["square"])
    complete(conn, kid_b, BIG_RESULT)
    parent2 = claim_one(conn, w1, recipes=["fanout"])
    complete(conn, parent2, {"children": 2, "note": HOSTILE_SCRIPT})

    # failed: two failures, dead-lettered
    bad = submit(conn, "fatal", {}, workspace="globex", max_attempts=2, backoff={"base_s": 0, "jitter": 0})
    for n in (1, 2):
        c = claim_one(conn, w2, recipes=["fatal"])
        fail(conn, c, {"message": f"boom {n}", "traceback": f"Traceback\n  line {n}\n{HOSTILE_SCRIPT}"})

    # gated: parked on an approval
    gated = submit(conn, "gated", {}, workspace="acme")
    g = claim_one(conn, w1, recipes=["gated"])
    conn.execute(
        "select * from pgflight.request_approval(%s, %s, 'approval', %s)",
        [g.attempt_id, g.token, Jsonb({"what": "send the contract", "html": HOSTILE_SCRIPT})],
    )

    # agent: first attempt lapses with a tool call in flight
    ag = submit(conn, "agent", {}, workspace="acme", backoff={"base_s": 0, "jitter": 0})
    a1 = claim_one(conn, w1, lease_s=0.3, recipes=["agent"])
    agent_run_id = int(
        scalar(
            conn,
            "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
            [
                a1.attempt_id,
                a1.token,
                Jsonb({"model": "claude-haiku-4-5", "task": f"Review {HOSTILE_SCRIPT}"}),
            ],
        )
    )
    tool_use = {"type": "tool_use", "id": "tu1", "name": "charge", "input": {"amount": 5, "memo": LONG_LINE}}
    _agent_call(
        conn,
        a1,
        agent_run_id,
        1,
        [{"type": "text", "text": f"I will charge. {BINARY_LOOKING}"}, tool_use],
        {"input_tokens": 1200, "output_tokens": 80},
    )
    conn.execute(
        "select * from pgflight.mark_tool_call(%s, %s, %s, 'tu1')", [a1.attempt_id, a1.token, agent_run_id]
    )
    time.sleep(0.4)
    conn.execute("select pgflight.reclaim_expired()")
    # the stalled worker's late write is refused and logged
    try:
        complete(conn, a1, {"late": True})
    except psycopg.Error:
        conn.execute("select pgflight.record_stale_write(%s, %s, 'complete_step')", [a1.attempt_id, a1.token])
    a2 = claim_one(conn, w2, recipes=["agent"])
    conn.execute(
        "select * from pgflight.load_transcript(%s, %s, %s)", [a2.attempt_id, a2.token, agent_run_id]
    ).fetchall()
    conn.execute(
        "select * from pgflight.mark_tool_call(%s, %s, %s, 'tu1')", [a2.attempt_id, a2.token, agent_run_id]
    )
    conn.execute(
        "select * from pgflight.complete_tool_call(%s, %s, %s, 'tu1', %s)",
        [
            a2.attempt_id,
            a2.token,
            agent_run_id,
            Jsonb({"type": "tool_result", "tool_use_id": "tu1", "content": "charged once (receipt r-1)"}),
        ],
    )
    _agent_call(
        conn,
        a2,
        agent_run_id,
        2,
        [{"type": "text", "text": f"Done: charged once. {HOSTILE_SCRIPT}"}],
        {"input_tokens": 1500, "output_tokens": 40},
    )
    complete(conn, a2, {"answer": "charged once"})

    return Scenario(
        finished_run=fin.run_id,
        finished_step=fin.step_id,
        big_child_step=kid_b.step_id,
        failed_run=bad.run_id,
        dead_step=bad.step_id,
        gated_run=gated.run_id,
        gated_step=gated.step_id,
        agent_run=ag.run_id,
        agent_step=ag.step_id,
        agent_run_id=agent_run_id,
        first_attempt=a1.attempt_id,
        second_attempt=a2.attempt_id,
    )
