"""
Trust boundary, property: a second login that calls every worker function with random ids and tokens
(and with the real ones, as if they had leaked) while a first login runs real work in the same
workspace changes nothing of the first login's work: each of its steps succeeds exactly once,
with its own result, and every one of its writes is accepted.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from security_support import Conn, fresh, grant, login_connect

STEPS = 6

# What the intruder calls, as (query, how many leading (attempt, token) pairs it takes). The
# worker id argument, where there is one, is the victim's.
ATTEMPT_CALLS = {
    "complete_step": 'select * from pgflight.complete_step(%s, %s, \'{"by": "intruder"}\')',
    "complete_batch": "select * from pgflight.complete_batch(array[%s]::bigint[], array[%s]::bigint[],"
    ' array[\'{"by": "intruder"}\'::jsonb])',
    "fail_step": 'select * from pgflight.fail_step(%s, %s, \'{"m": "intruder"}\')',
    "release_step": "select * from pgflight.release_step(%s, %s)",
    "start_step": "select * from pgflight.start_step(%s, %s)",
    "spawn_children": 'select * from pgflight.spawn_children(%s, %s, \'[{"key": "x", "recipe": "x"}]\')',
    "request_approval": "select * from pgflight.request_approval(%s, %s, 'gate')",
    "record_effect": "select * from pgflight.record_effect(%s, %s, 'k', '{}')",
    "record_stale_write": "select pgflight.record_stale_write(%s, %s, 'complete_step')",
    "begin_agent_run": 'select * from pgflight.begin_agent_run(%s, %s, \'{"model": "m", "task": "t"}\')',
}
WORKER_CALLS = {
    "claim_batch": "select * from pgflight.claim_batch(%s, 10, 30)",
    "heartbeat": "select * from pgflight.heartbeat(%s, array[%s]::bigint[], array[%s]::bigint[])",
    "deregister_worker": "select pgflight.deregister_worker(%s)",
}

attack = st.tuples(
    st.sampled_from(sorted(ATTEMPT_CALLS) + sorted(WORKER_CALLS)),
    st.one_of(
        st.integers(0, STEPS - 1), st.integers(-5, 10**6)
    ),  # an index into the victim's attempts, or any id
    st.one_of(st.just("leaked"), st.integers(-(2**63), 2**63 - 1)),  # the real current token, or any
)


@pytest.fixture
def pair(dsn: str, logins: Any) -> Any:
    """(superuser, victim, intruder) connections; both logins work in workspace W."""
    with psycopg.connect(dsn, autocommit=True) as su:
        su.execute("select pgflight.create_workspace('W')")
        # no grants for the test logins but the ones given here (see test_security_attacks)
        su.execute("delete from pgflight.workspace_grants where login like 'pgf\\_%%'")
        for login in ("pgf_worker_a", "pgf_worker_b"):
            grant(su, login, "W", "worker")
        with (
            login_connect(logins.dsn("pgf_worker_a", dsn)) as victim,
            login_connect(logins.dsn("pgf_worker_b", dsn)) as intruder,
        ):
            yield su, victim, intruder


def _intrusion(
    name: str, attempt: int, token: int, *, victim_worker: int, own_worker: int, which: int
) -> tuple[str, list[Any]]:
    """The intruder's call: a write on an attempt, or a worker call with the victim's (or its own) id."""
    if name in ATTEMPT_CALLS:
        return ATTEMPT_CALLS[name], [attempt, token]
    if name == "heartbeat":  # the victim's id, or its own id with the victim's attempt
        return WORKER_CALLS[name], [victim_worker if which % 2 == 0 else own_worker, attempt, token]
    return WORKER_CALLS[name], [victim_worker]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attacks=st.lists(attack, min_size=5, max_size=30))
def test_an_intruder_login_never_touches_another_logins_work(
    pair: tuple[Conn, Conn, Conn], attacks: list[tuple[str, int, Any]]
) -> None:
    su, victim, intruder = pair
    recipe = fresh("victim")
    worker = int(victim.execute("select pgflight.register_worker('victim')").fetchone()[0])  # type: ignore[index]
    steps = [
        su.execute("select step_id from pgflight.submit_run('W', %s, '{}')", [recipe]).fetchone()[0]  # type: ignore[index]
        for _ in range(STEPS)
    ]
    claimed = victim.execute(
        "select attempt_id, fencing_token, step_id from pgflight.claim_batch(%s, %s, 60, %s)",
        [worker, STEPS, [recipe]],
    ).fetchall()
    assert len(claimed) == STEPS
    attempts = [a for a, _, _ in claimed]
    go = threading.Event()
    outcomes: list[str] = []

    def victim_works() -> None:
        """The first login's real work, concurrent with the intrusion: start, heartbeat, complete."""
        go.wait()
        for a, t, s in claimed:
            victim.execute("select * from pgflight.start_step(%s, %s)", [a, t])
            victim.execute(
                "select * from pgflight.heartbeat(%s, array[%s]::bigint[], array[%s]::bigint[])",
                [worker, a, t],
            )
            got = victim.execute(
                "select status from pgflight.complete_step(%s, %s, %s)",
                [a, t, Jsonb({"by": "victim", "step": s})],
            ).fetchone()
            outcomes.append(str(got[0]) if got else "none")

    thread = threading.Thread(target=victim_works)
    thread.start()
    go.set()
    intruder_worker = int(intruder.execute("select pgflight.register_worker('intruder')").fetchone()[0])  # type: ignore[index]
    for name, which, token in attacks:
        attempt = attempts[which] if 0 <= which < STEPS else which
        if token == "leaked":
            row = su.execute(
                "select fencing_token from pgflight.step_attempts where id = %s", [attempt]
            ).fetchone()
            token = row[0] if row and row[0] is not None else 0
        query, params = _intrusion(
            name, attempt, token, victim_worker=worker, own_worker=intruder_worker, which=which
        )
        try:
            intruder.execute(query, params).fetchall()
        except psycopg.Error as e:
            assert e.sqlstate is not None and (e.sqlstate.startswith("ZF") or e.sqlstate == "22023"), e
    thread.join(30)
    assert not thread.is_alive()

    assert outcomes == ["succeeded"] * STEPS, "every write of the first login was accepted"
    done = su.execute(
        "select a.step_id, a.result, (select count(*) from pgflight.run_events e where e.attempt_id = a.id"
        "        and e.reason = 'succeeded') from pgflight.step_attempts a where a.step_id = any (%s)",
        [steps],
    ).fetchall()
    assert sorted(done) == sorted((s, {"by": "victim", "step": s}, 1) for s in steps), (
        "each step succeeded exactly once, with the first login's result"
    )
    intruded = su.execute(
        "select count(*) from pgflight.run_events e join pgflight.step_attempts a on a.id = e.attempt_id"
        " where a.step_id = any (%s) and e.reason not in ('queued', 'claimed', 'started', 'succeeded')",
        [steps],
    ).fetchone()
    assert intruded == (0,), "no event of the intruder on the first login's attempts"
    stopped = su.execute("select stopped_at from pgflight.workers where id = %s", [worker]).fetchone()
    assert stopped == (None,), "the first login's worker is still registered"
