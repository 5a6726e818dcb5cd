"""
One answer for what a login may not see, generated from the catalogue: every function the worker,
operator and reader lanes may execute that takes a run, step, agent run or attempt id (or a
workspace name) is called as each lane's real login over scram twice, once with an id that was
never issued and once with the id of another workspace's object, everything else as in its valid
call (security_support.CALLS). The two calls must answer exactly alike: the same SQLSTATE,
message, DETAIL and HINT with the id (or name) itself masked, or the same rows. A ZF012, a
status, a workspace name or a row for the foreign id would tell the login that it exists and
whose it is.

Logins and data as in the fence matrix (test_fence_matrix.py): a worker, an operator and a reader
of A; the other login, a worker of A and B, holds a started step of B with an agent run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from fence_matrix_support import Signature, build_foreign, parse_call, signatures, text_json
from security_support import CALLS, Conn, World
from test_fence_matrix import CALLERS, OTHER_LOGIN, _api, _may_execute, as_login, su  # noqa: F401  (fixtures)

#: an id no sequence of the test database reaches
UNKNOWN_ID = 8_000_000_000_000_000_001
UNKNOWN_WORKSPACE = "no-such-workspace"
#: argument name -> the kind of object it names
ID_ARGS = {
    "p_run_id": "run",
    "p_step_id": "step",
    "p_agent_run_id": "agent_run",
    "p_attempt_id": "attempt",
    "p_attempt_ids": "attempt",
    "p_workspace": "workspace",
}

Answer = tuple[str, ...]


def _answer(me: Conn, query: str, params: list[Any], masks: list[str]) -> Answer:
    """
    What the login is told: ('error', state, message, detail, hint), or ('rows', how many, the rows
    that answer for the id: their first column is it, as in every batch function's answer), with the
    id masked. Other rows (a step claimed by complete_and_claim in the same call) carry fresh ids
    and times, so only their count is compared.
    """

    def mask(text: str | None) -> str:
        out = text or ""
        for m in masks:
            out = re.sub(rf"(?<![\w-]){re.escape(m)}(?![\w-])", "<id>", out)
        return out

    try:
        with me.transaction(force_rollback=True):
            rows = me.execute(query, params).fetchall()
    except psycopg.Error as e:
        d = e.diag
        return (
            "error",
            e.sqlstate or "",
            mask(d.message_primary),
            mask(d.message_detail),
            mask(d.message_hint),
        )
    named = [mask(repr(r)) for r in rows if r and str(r[0]) in masks]
    return ("rows", str(len(rows)), *named)


def _render(sig: Signature, args: list[Any], replace: int, value: str) -> tuple[str, list[Any]]:
    """The valid call of `sig` with argument `replace` set to `value` (text, cast to its type)."""
    texts: list[str] = []
    params: list[Any] = []
    for i, typ in enumerate(sig.arg_types):
        if i == replace:
            texts.append(f"%s::{typ}" if i < len(args) else f"{sig.arg_names[i]} => %s::{typ}")
            params.append(value)
        elif i < len(args):
            texts.append(f"({args[i].text})::{typ}")
            params.extend(args[i].params)
    return f"select * from pgflight.{sig.name}({', '.join(texts)})", params


@pytest.mark.timeout(600)
@pytest.mark.parametrize("caller", ["worker", "operator", "reader"])
def test_an_id_of_another_workspace_answers_exactly_as_an_unknown_id(
    su: Conn, as_login: Callable[[str], Conn], caller: str
) -> None:
    """
    Every function of the caller's lane that takes an id or a workspace name: another workspace's
    id answers as an id never issued, in SQLSTATE, message, DETAIL, HINT and rows.
    """
    login, _ws, lane = CALLERS[caller]
    me = as_login(login)
    worker = as_login("pgf_worker_a") if login != "pgf_worker_a" else me
    other = as_login(OTHER_LOGIN)
    text_json(me)
    foreign = build_foreign(su, worker, other)
    world = World(su=su, me=worker, workspace="A")
    world.worker_id = int(worker.execute("select pgflight.register_worker('one-answer')").fetchone()[0])  # type: ignore[index]
    of_b = {kind: ids[0][1] for kind, ids in foreign.ids.items() if ids and "workspace B" in ids[0][0]}

    api = _api(su)
    sigs = signatures(su, list(api))
    checked: list[str] = []
    differ: list[str] = []
    for fn in sorted(api):
        for sig in sigs[fn]:
            if not _may_execute(su, lane, sig.regprocedure):
                continue
            targets = [(i, ID_ARGS[n]) for i, n in enumerate(sig.arg_names) if n in ID_ARGS]
            if not targets:
                continue
            query, params = CALLS[fn](world)
            args = parse_call(fn, query, params)
            for i, kind in targets:
                if kind == "workspace":
                    unknown, theirs = UNKNOWN_WORKSPACE, "B"
                else:
                    unknown, theirs = str(UNKNOWN_ID), str(of_b[kind])
                if sig.arg_types[i].endswith("[]"):
                    unknown, theirs = "{" + unknown + "}", "{" + theirs + "}"
                masks = (
                    [UNKNOWN_WORKSPACE, "B"] if kind == "workspace" else [str(UNKNOWN_ID), str(of_b[kind])]
                )
                a = _answer(me, *_render(sig, args, i, unknown), masks)
                b = _answer(me, *_render(sig, args, i, theirs), masks)
                label = f"{sig.regprocedure} ({sig.arg_names[i]})"
                checked.append(label)
                if a != b:
                    differ.append(f"{label}:\n    unknown: {a}\n    foreign: {b}")
    print(f"\none answer, {caller}: {len(checked)} (function, argument) pairs compared")
    assert len(checked) >= 5, checked
    assert not differ, f"{len(differ)} answers tell a foreign id from an unknown one:\n" + "\n".join(differ)


# --- a batch answers each row on its own ---------------------------------------------------------


def _held_by(su: Conn, conn: Conn, worker_id: int, workspace: str) -> tuple[int, int]:
    """A step of `workspace` claimed and started by `worker_id` (a worker of `conn`'s login)."""
    n = su.execute("select nextval('pgflight.events_id_seq')").fetchone()[0]  # type: ignore[index]
    recipe = f"batch-{workspace}-{worker_id}-{n}"
    su.execute("select pgflight.submit_run(%s, %s, '{}', '{}')", [workspace, recipe])
    att, tok = conn.execute(
        "select attempt_id, fencing_token from pgflight.claim_batch(%s, 1, 600, %s)", [worker_id, [recipe]]
    ).fetchone()  # type: ignore[misc]
    conn.execute("select * from pgflight.start_step(%s, %s)", [att, tok])
    return int(att), int(tok)


THEIRS = "select id, status, result, finished_at from pgflight.step_attempts where id = any(%s) order by id"


@pytest.mark.parametrize(
    "call", ["complete_batch", "complete_batch text", "complete_and_claim", "one row refused"]
)
def test_a_batch_row_of_another_login_or_workspace_is_lease_lost_and_the_others_complete(
    su: Conn, as_login: Callable[[str], Conn], call: str
) -> None:
    """
    A worker of A sends, among its own two attempts, the current tokens of another login's attempts
    (one in A, one in B, one whose cancel was requested): each of those rows answers lease_lost,
    exactly as an unknown attempt, nothing is written to them, and its own attempts complete.
    (Before, the whole batch was refused with ZF012 or ZF003, which also confirmed the attempt.)
    """
    me, other = as_login("pgf_worker_a"), as_login(OTHER_LOGIN)
    mine = int(me.execute("select pgflight.register_worker('mine')").fetchone()[0])  # type: ignore[index]
    theirs = int(other.execute("select pgflight.register_worker('theirs')").fetchone()[0])  # type: ignore[index]
    own1, own2 = _held_by(su, me, mine, "A"), _held_by(su, me, mine, "A")
    in_a, in_b, cancelling = (
        _held_by(su, other, theirs, "A"),
        _held_by(su, other, theirs, "B"),
        _held_by(su, other, theirs, "A"),
    )
    su.execute(
        "select pgflight.cancel_run((select run_id from pgflight.step_attempts where id = %s), 'op', 'x')",
        [cancelling[0]],
    )
    rows = [own1, in_a, own2, in_b, cancelling, (UNKNOWN_ID, 1)]
    ids, toks = [r[0] for r in rows], [r[1] for r in rows]
    results: list[Any] = ['{"ok": 1}'] * len(rows)
    if call == "one row refused":
        results[2] = "NaN"  # refused by the jsonb parser: that own row fails alone
    theirs_before = su.execute(
        THEIRS,
        [[in_a[0], in_b[0], cancelling[0]]],
    ).fetchall()
    if call == "complete_batch":
        got = me.execute(
            "select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s::jsonb[])",
            [ids, toks, results],
        ).fetchall()
    elif call in ("complete_batch text", "one row refused"):
        got = me.execute(
            "select attempt_id, outcome from pgflight.complete_batch(%s, %s, %s::text[])",
            [ids, toks, results],
        ).fetchall()
    else:
        got = me.execute(
            "select attempt_id, outcome from pgflight.complete_and_claim(%s, %s, %s, %s::jsonb[], 1, 30,"
            " '{nothing-queued}')"
            " where outcome is not null",
            [mine, ids, toks, results],
        ).fetchall()
    own2_outcome = "result_refused" if call == "one row refused" else "succeeded"
    assert got == [
        (own1[0], "succeeded"),
        (in_a[0], "lease_lost"),
        (own2[0], own2_outcome),
        (in_b[0], "lease_lost"),
        (cancelling[0], "lease_lost"),
        (UNKNOWN_ID, "lease_lost"),
    ]
    assert (
        su.execute(
            THEIRS,
            [[in_a[0], in_b[0], cancelling[0]]],
        ).fetchall()
        == theirs_before
    )
    statuses = dict(
        su.execute(
            "select id, status from pgflight.step_attempts where id = any(%s)", [[own1[0], own2[0]]]
        ).fetchall()
    )
    assert statuses == {
        own1[0]: "succeeded",
        own2[0]: "succeeded" if own2_outcome == "succeeded" else "dead_letter",
    }
    stale = su.execute(
        "select count(*) from pgflight.events"
        " where reason = 'stale_result_rejected' and attempt_id = any(%s)",
        [[in_a[0], in_b[0], cancelling[0]]],
    ).fetchone()
    assert stale == (0,)
