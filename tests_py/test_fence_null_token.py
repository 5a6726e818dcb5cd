"""
The fence every worker write passes, attacked as real logins over scram: worker w1 of workspace A,
worker w2 of workspace B, an operator and a reader of A.

The rule under test (docs/security.md, "The fence"): every fenced worker function refuses a NULL
attempt id, a NULL token and a NULL element of its arrays (22023, the same for every id), and an
attempt outside the caller's worker lanes answers exactly as an attempt that does not exist
(ZF003, the same message, no DETAIL); nothing is written on any refused path.

Before, a NULL token passed the fence of every never-claimed attempt in every workspace (the
attempt's token is NULL too, and the fence compared them with IS NOT DISTINCT FROM): w1 could
dead-letter B's steps, store forged effect receipts that B's worker then trusted, and charge
B's budgets; and another workspace's attempt answered ZF001 / ZF002 / ZF012, telling w1 it exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from security_support import World, grant, snapshot
from test_security_attacks import as_login, su  # noqa: F401  (fixtures)

# Every fenced worker function, called on attempt %(a)s with token %(t)s (and, for the agent
# functions, agent run %(ar)s; for the batch ones, worker %(w)s). Arguments other than the fence's
# are valid, so only the fence can refuse.
FENCED: dict[str, str] = {
    "complete_step": "select * from pgflight.complete_step(%(a)s, %(t)s, '{\"forged\": true}')",
    "fail_step": (
        'select * from pgflight.fail_step(%(a)s, %(t)s, \'{"message": "forged"}\', \'{"retryable": false}\')'
    ),
    "start_step": "select * from pgflight.start_step(%(a)s, %(t)s)",
    "release_step": "select * from pgflight.release_step(%(a)s, %(t)s, 'forged')",
    "record_effect": (
        "select * from pgflight.record_effect(%(a)s, %(t)s, 'charge-invoice-42', '{\"forged\": true}')"
    ),
    "record_stale_write": "select pgflight.record_stale_write(%(a)s, %(t)s, 'complete_step')",
    "spawn_children": (
        "select * from pgflight.spawn_children(%(a)s, %(t)s,"
        ' \'[{"key": "evil", "recipe": "x", "input": {}}]\')'
    ),
    "request_approval": "select * from pgflight.request_approval(%(a)s, %(t)s, 'gate', '{\"q\": 1}')",
    "wait_timer": "select * from pgflight.wait_timer(%(a)s, %(t)s, 'nap', 5)",
    "wait_event": "select * from pgflight.wait_event(%(a)s, %(t)s, 'paid', 'order.paid', '42')",
    "stream_write": "select * from pgflight.stream_write(%(a)s, %(t)s, 'tokens', '{a}')",
    "begin_agent_run": (
        'select * from pgflight.begin_agent_run(%(a)s, %(t)s, \'{"model": "claude-haiku-4-5", "task": "t"}\')'
    ),
    "record_orphan_cost": (
        "select * from pgflight.record_orphan_cost(%(a)s, %(t)s, %(ar)s, 1,"
        " '{\"input_tokens\": 1000000000, \"output_tokens\": 1000000000}', 'claude-haiku-4-5')"
    ),
    "record_model_call": (
        "select * from pgflight.record_model_call(%(a)s, %(t)s, %(ar)s, 1,"
        ' \'[{"type": "text", "text": "hi"}]\','
        " '{\"input_tokens\": 10}', 'claude-haiku-4-5', '{}')"
    ),
    "record_trace": (
        "select * from pgflight.record_trace(%(a)s, %(t)s, %(ar)s, 1, 'system', 'api_error',"
        " '{\"e\": 1}', '{}')"
    ),
    "load_transcript": "select * from pgflight.load_transcript(%(a)s, %(t)s, %(ar)s)",
    "mark_tool_call": "select * from pgflight.mark_tool_call(%(a)s, %(t)s, %(ar)s, 'tu-1')",
    "complete_tool_call": (
        "select * from pgflight.complete_tool_call(%(a)s, %(t)s, %(ar)s, 'tu-1',"
        ' \'{"type": "tool_result", "tool_use_id": "tu-1", "content": "ok"}\')'
    ),
    "complete_tool_calls": (
        "select * from pgflight.complete_tool_calls(%(a)s, %(t)s, %(ar)s,"
        ' \'[{"type": "tool_result", "tool_use_id": "tu-1", "content": "ok"}]\')'
    ),
    "reserve_budget": "select pgflight.reserve_budget(%(a)s, %(t)s, %(ar)s, 1, 0.01)",
}
# The batch functions: one element per array (their NULL elements are tested on their own below).
BATCHES: dict[str, str] = {
    "heartbeat": "select * from pgflight.heartbeat(%(w)s, array[%(a)s]::bigint[], array[%(t)s]::bigint[])",
    "complete_batch": (
        "select * from pgflight.complete_batch(array[%(a)s]::bigint[], array[%(t)s]::bigint[],"
        " array['{\"forged\": true}']::jsonb[])"
    ),
    "complete_batch (text)": (
        "select * from pgflight.complete_batch(array[%(a)s]::bigint[], array[%(t)s]::bigint[],"
        " array['{\"forged\": true}']::text[])"
    ),
}


@dataclass
class Tenants:
    """Workspaces A and B; w1 works A, w2 works B (an operator and a reader of A exist too)."""

    su: psycopg.Connection[Any]
    w1: World
    w2: World

    def never_claimed(self, world: World) -> dict[str, Any]:
        """
        A queued attempt that no worker ever claimed (its token is NULL), of a step whose agent run
        exists: the worker claims the step, begins its agent, and fails it (retryable).
        """
        h = world.held(max_attempts=5)
        ar = world.agent(h, world.me)
        nxt = world.me.execute(
            'select next_attempt_id from pgflight.fail_step(%s, %s, \'{"m": "retry"}\')',
            [h["attempt_id"], h["token"]],
        ).fetchone()
        assert nxt is not None and nxt[0] is not None
        return {**h, "attempt_id": int(nxt[0]), "token": None, "agent_run_id": ar}

    def held_with_agent(self, world: World) -> dict[str, Any]:
        """A step claimed and started by the world's worker, with its agent run."""
        h = world.held()
        return {**h, "agent_run_id": world.agent(h, world.me)}


@pytest.fixture
def tenants(su: psycopg.Connection[Any], as_login: Callable[[str], psycopg.Connection[Any]]) -> Tenants:
    grant(su, "pgf_worker_a", "A", "worker")
    grant(su, "pgf_worker_b", "B", "worker")
    grant(su, "pgf_operator_a", "A", "operator")
    grant(su, "pgf_reader_a", "A", "reader")
    w1 = World(su=su, me=as_login("pgf_worker_a"), workspace="A")
    w2 = World(su=su, me=as_login("pgf_worker_b"), workspace="B")
    for w, name in ((w1, "w1"), (w2, "w2")):
        w.worker_id = int(w.me.execute("select pgflight.register_worker(%s)", [name]).fetchone()[0])  # type: ignore[index]
    return Tenants(su=su, w1=w1, w2=w2)


def _error(conn: psycopg.Connection[Any], query: str, args: Any) -> psycopg.Error | None:
    try:
        conn.execute(query, args).fetchall()
    except psycopg.Error as e:
        return e
    return None


def _answer(
    conn: psycopg.Connection[Any], query: str, args: dict[str, Any], ids: list[int]
) -> tuple[Any, ...]:
    """What a call answers, with the ids it was given written as <id>: the error's SQLSTATE,
    message, DETAIL and HINT, or the rows it returned."""

    def norm(s: str | None) -> str | None:
        if s is None:
            return None
        for i in sorted(ids, key=lambda x: -len(str(x))):
            s = re.sub(rf"\b{i}\b", "<id>", s)
        return s

    try:
        got = conn.execute(query, args).fetchall()
    except psycopg.Error as e:
        d = e.diag
        return (e.sqlstate, norm(d.message_primary), norm(d.message_detail), norm(d.message_hint))
    return ("rows", norm(repr([tuple("<id>" if v in ids else v for v in r) for r in got])))


# --- a NULL token, a NULL id ------------------------------------------------------------------------


@pytest.mark.parametrize("whose", ["another workspace's", "its own workspace's"])
@pytest.mark.parametrize("fn", [*FENCED, *BATCHES])
def test_a_null_token_on_a_never_claimed_attempt_is_refused_and_writes_nothing(
    tenants: Tenants, fn: str, whose: str
) -> None:
    """w1 sends a NULL token for a queued attempt no worker ever claimed (its own token is NULL
    too): 22023, and no engine table changes (before: fail_step dead-lettered the step,
    complete_step said succeeded, record_effect stored a receipt, release_step wrote an event)."""
    world = tenants.w2 if whose == "another workspace's" else tenants.w1
    target = tenants.never_claimed(world)
    query = {**FENCED, **BATCHES}[fn]
    args = {"a": target["attempt_id"], "t": None, "ar": target["agent_run_id"], "w": tenants.w1.worker_id}
    before = snapshot(tenants.su)
    e = _error(tenants.w1.me, query, args)
    assert e is not None, f"{fn} accepted a NULL token"
    assert e.sqlstate == "22023", (e.sqlstate, e.diag.message_primary)
    assert snapshot(tenants.su) == before


@pytest.mark.parametrize("fn", [*FENCED])
def test_a_null_attempt_id_is_refused_and_writes_nothing(tenants: Tenants, fn: str) -> None:
    """A NULL attempt id with w1's own live token: 22023, nothing written."""
    own = tenants.held_with_agent(tenants.w1)
    before = snapshot(tenants.su)
    args = {"a": None, "t": own["token"], "ar": own["agent_run_id"], "w": tenants.w1.worker_id}
    e = _error(tenants.w1.me, FENCED[fn], args)
    assert e is not None and e.sqlstate == "22023", (fn, e and e.sqlstate)
    assert snapshot(tenants.su) == before


def test_a_forged_null_token_fail_does_not_dead_letter_another_workspaces_step(tenants: Tenants) -> None:
    """The attack as reported: fail_step(<B's queued attempt>, NULL, ..., retryable false) as w1
    dead-lettered B's step and failed B's run. Now it is refused, and B's worker still runs the step."""
    b = tenants.w2.submit()
    e = _error(
        tenants.w1.me,
        'select * from pgflight.fail_step(%(a)s, null, \'{"message": "forged"}\', \'{"retryable": false}\')',
        {"a": b["attempt_id"]},
    )
    assert e is not None and e.sqlstate == "22023"
    assert tenants.su.execute("select status from pgflight.runs where id = %s", [b["run_id"]]).fetchone() == (
        "running",
    )
    row = tenants.w2.me.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, %s)",
        [tenants.w2.worker_id, [b["recipe"]]],
    ).fetchone()
    assert row is not None and row[0] == b["attempt_id"]
    tenants.w2.me.execute("select * from pgflight.complete_step(%s, %s, '{\"ok\": 1}')", [row[0], row[1]])
    assert tenants.su.execute("select status from pgflight.runs where id = %s", [b["run_id"]]).fetchone() == (
        "succeeded",
    )


def test_a_forged_receipt_is_not_stored_and_the_holders_own_is(tenants: Tenants) -> None:
    """record_effect(<B's queued attempt>, NULL, 'charge-invoice-42') as w1 stored a receipt that
    B's worker then trusted (its own record_effect said recorded = false). Now it is refused, and
    B's own receipt is the one recorded."""
    b = tenants.w2.submit()
    e = _error(
        tenants.w1.me,
        "select * from pgflight.record_effect(%(a)s, null, 'charge-invoice-42', '{\"forged\": true}')",
        {"a": b["attempt_id"]},
    )
    assert e is not None and e.sqlstate == "22023"
    row = tenants.w2.me.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 60, %s)",
        [tenants.w2.worker_id, [b["recipe"]]],
    ).fetchone()
    assert row is not None
    got = tenants.w2.me.execute(
        "select result, recorded, lease_held from pgflight.record_effect(%s, %s, 'charge-invoice-42', %s)",
        [row[0], row[1], Jsonb({"charge": "ch_real"})],
    ).fetchone()
    assert got == ({"charge": "ch_real"}, True, True)


def test_a_forged_orphan_cost_charges_no_budget_of_another_workspace(tenants: Tenants) -> None:
    """record_orphan_cost(<B's never-claimed attempt>, NULL, <B's agent run>, ...) as w1 charged
    B's budgets (USD millions) and its agent run. Now it is refused: no cost, no budget move."""
    target = tenants.never_claimed(tenants.w2)
    spent = "select coalesce(sum(usd), 0) from pgflight.costs where run_id = %s"
    agent = "select usd, input_tokens from pgflight.agent_runs where id = %s"
    cost_before = tenants.su.execute(spent, [target["run_id"]]).fetchone()
    agent_before = tenants.su.execute(agent, [target["agent_run_id"]]).fetchone()
    e = _error(
        tenants.w1.me,
        FENCED["record_orphan_cost"],
        {"a": target["attempt_id"], "t": None, "ar": target["agent_run_id"]},
    )
    assert e is not None and e.sqlstate == "22023"
    assert tenants.su.execute(spent, [target["run_id"]]).fetchone() == cost_before
    assert tenants.su.execute(agent, [target["agent_run_id"]]).fetchone() == agent_before


def test_a_null_token_complete_or_release_raises_instead_of_answering(tenants: Tenants) -> None:
    """complete_step(..., NULL) answered succeeded and wrote nothing; release_step(..., NULL) wrote
    an event with a NULL run. Both raise now, and no event is written."""
    b = tenants.w2.submit()
    events = "select count(*) from pgflight.events"
    n = tenants.su.execute(events).fetchone()
    for query in (
        "select * from pgflight.complete_step(%(a)s, null, '{}')",
        "select * from pgflight.release_step(%(a)s, null)",
    ):
        e = _error(tenants.w1.me, query, {"a": b["attempt_id"]})
        assert e is not None and e.sqlstate == "22023", query
    assert tenants.su.execute(events).fetchone() == n


# --- NULL elements of the batch functions' arrays ------------------------------------------------------


def test_a_null_element_in_a_batch_refuses_the_whole_batch(tenants: Tenants) -> None:
    """heartbeat, complete_batch (both overloads) and complete_and_claim refuse an array with a NULL
    attempt id or token (22023) and change nothing, not even the rows beside it (before: the NULL
    row answered lost / lease_lost and its neighbours were renewed or completed)."""
    w1 = tenants.w1
    own = w1.held()
    other = w1.held()
    a, t = own["attempt_id"], own["token"]
    calls = {
        "heartbeat id": ("select * from pgflight.heartbeat(%s, %s, %s)", [w1.worker_id, [a, None], [t, t]]),
        "heartbeat token": (
            "select * from pgflight.heartbeat(%s, %s, %s)",
            [w1.worker_id, [a, other["attempt_id"]], [t, None]],
        ),
        "complete_batch id": (
            "select * from pgflight.complete_batch(%s, %s, %s)",
            [[a, None], [t, other["token"]], [Jsonb(1), Jsonb(2)]],
        ),
        "complete_batch token": (
            "select * from pgflight.complete_batch(%s, %s, %s)",
            [[a, other["attempt_id"]], [t, None], [Jsonb(1), Jsonb(2)]],
        ),
        "complete_batch text": (
            "select * from pgflight.complete_batch(%s::bigint[], %s::bigint[], %s::text[])",
            [[a, other["attempt_id"]], [t, None], ["1", "NaN"]],
        ),
        "complete_and_claim": (
            "select * from pgflight.complete_and_claim(%s, %s, %s, %s, 1, 30)",
            [w1.worker_id, [a, None], [t, t], [Jsonb(1), Jsonb(2)]],
        ),
    }
    w1.submit()  # ready: complete_and_claim's claim half would take it
    before = snapshot(tenants.su)
    codes = {n: getattr(_error(w1.me, q, p), "sqlstate", None) for n, (q, p) in calls.items()}
    assert codes == dict.fromkeys(calls, "22023")
    after = snapshot(tenants.su)
    # heartbeat's renewal of its worker's last_seen_at is refused with the rest
    assert after == before


# --- one answer for what a login may not see ------------------------------------------------------------


def _targets(t: Tenants) -> dict[str, dict[str, Any]]:
    """B's attempts in every state a fence meets, w2's, each with its agent run."""
    w2 = t.w2
    running = t.held_with_agent(w2)
    claimed = w2.held()  # started: the plain held attempt
    cancelled = t.held_with_agent(w2)
    t.su.execute("select * from pgflight.cancel_run(%s)", [cancelled["run_id"]])
    finished = t.held_with_agent(w2)
    w2.me.execute(
        "select * from pgflight.complete_step(%s, %s, '{}')", [finished["attempt_id"], finished["token"]]
    )
    queued = t.never_claimed(w2)
    return {
        "running": running,
        "claimed": {**claimed, "agent_run_id": running["agent_run_id"]},
        "cancel requested": cancelled,
        "succeeded": finished,
        "never claimed": {**queued, "token": running["token"]},
    }


def test_another_workspaces_attempt_answers_as_an_unknown_one(tenants: Tenants) -> None:
    """For every fenced worker function, as w1, with w1's own live token, with the attempt's own
    current token (leaked) and with a made-up one: an attempt of workspace B in any state answers
    exactly (SQLSTATE, message, DETAIL, HINT; or the rows) as an attempt id that does not exist.
    Before, it answered ZF001 / ZF002 / ZF012 with the attempt's status, telling w1 it exists."""
    own = tenants.held_with_agent(tenants.w1)
    targets = _targets(tenants)
    unknown = int(tenants.su.execute("select max(id) + 1000 from pgflight.step_attempts").fetchone()[0])  # type: ignore[index]
    before = snapshot(tenants.su)
    differ: dict[str, Any] = {}
    codes: set[str] = set()
    for state, target in targets.items():
        for token_name, token in (
            ("w1's own token", own["token"]),
            ("B's token", target["token"]),
            ("made up", 42),
        ):
            for fn, query in {**FENCED, **BATCHES}.items():
                if token_name == "B's token" and fn.startswith("complete_batch"):
                    continue  # a leaked current token refuses the whole batch: see the next test
                base = {"t": token, "ar": target["agent_run_id"], "w": tenants.w1.worker_id}
                ids = [target["attempt_id"], unknown, target["agent_run_id"]]
                got = _answer(tenants.w1.me, query, {**base, "a": target["attempt_id"]}, ids)
                want = _answer(tenants.w1.me, query, {**base, "a": unknown}, ids)
                if got != want:
                    differ[f"{fn} on a {state} attempt with {token_name}"] = (got, want)
                codes.add(str(got[0]))
    assert differ == {}
    assert codes <= {"ZF003", "rows"}
    # nothing changed but w1's own worker's last_seen_at, which its heartbeats renew
    after = snapshot(tenants.su)
    assert {k: v for k, v in after.items() if k != "workers"} == {
        k: v for k, v in before.items() if k != "workers"
    }


def test_an_unknown_attempt_says_nothing_but_its_id(tenants: Tenants) -> None:
    """The one answer is ZF003 naming only the id: no DETAIL, no workspace, no status."""
    target = _targets(tenants)["running"]
    e = _error(tenants.w1.me, FENCED["fail_step"], {"a": target["attempt_id"], "t": target["token"]})
    assert e is not None and e.sqlstate == "ZF003"
    assert e.diag.message_primary == f"unknown attempt {target['attempt_id']}"
    assert e.diag.message_detail is None


def test_a_batch_carrying_another_workspaces_current_token_answers_lease_lost_for_that_row(
    tenants: Tenants,
) -> None:
    """complete_batch with w1's own attempt and B's attempt with B's current token (a leaked one):
    B's row answers lease_lost, exactly as an unknown attempt, and is not written; w1's own attempt
    completes (before, the whole batch was refused: ZF003, and earlier ZF012)."""
    own = tenants.w1.held()
    target = tenants.w2.held()
    theirs = "select status, result from pgflight.step_attempts where id = %s"
    before = tenants.su.execute(theirs, [target["attempt_id"]]).fetchone()
    got = tenants.w1.me.execute(
        "select attempt_id, outcome from pgflight.complete_batch(%(ids)s, %(tokens)s, %(results)s)",
        {
            "ids": [own["attempt_id"], target["attempt_id"]],
            "tokens": [own["token"], target["token"]],
            "results": [Jsonb(1), Jsonb(2)],
        },
    ).fetchall()
    assert got == [(own["attempt_id"], "succeeded"), (target["attempt_id"], "lease_lost")]
    assert tenants.su.execute(theirs, [target["attempt_id"]]).fetchone() == before


def test_another_workspaces_step_has_no_effect_to_find(tenants: Tenants) -> None:
    """find_effect on a step of workspace B that has a receipt answers as on a step that does not
    exist: no row (before: ZF012, which told w1 the step exists and is another tenant's)."""
    b = tenants.w2.held()
    tenants.w2.me.execute(
        "select * from pgflight.record_effect(%s, %s, 'charge-invoice-42', '{\"id\": 1}')",
        [b["attempt_id"], b["token"]],
    )
    unknown = int(tenants.su.execute("select max(id) + 1000 from pgflight.steps").fetchone()[0])  # type: ignore[index]
    query = "select * from pgflight.find_effect(%(s)s, 'charge-invoice-42')"
    ids = [b["step_id"], unknown]
    got = _answer(tenants.w1.me, query, {"s": b["step_id"]}, ids)
    assert got == _answer(tenants.w1.me, query, {"s": unknown}, ids) == ("rows", "[]")
    # B's own worker still finds it
    assert len(tenants.w2.me.execute(query, {"s": b["step_id"]}).fetchall()) == 1
