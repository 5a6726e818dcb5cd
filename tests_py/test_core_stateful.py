"""
A hypothesis stateful test of the SQL engine: random sequences of API calls (submit,
claim, start, heartbeat, complete, fail, release, cancel_run, retry_step, and a fake-clock jump
followed by the reclaim sweep) against a small Python model of the attempt state machine.

After every call the model and the database must agree on the status of every attempt, and the
invariants hold: at most one live attempt per step, claim_batch(n) returns at most n, no queued
step at the ceiling, terminal steps stay terminal unless retried (the model never moves them),
every attempt's status is the last status the events log gives it, and a stale token is always
refused (the model says which writes are stale and which SQLSTATE they get).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import psycopg
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from core_helpers import (
    Claim,
    Conn,
    cancel_run,
    claim,
    complete,
    fail,
    heartbeat,
    invariant_violations,
    reclaim,
    register,
    release,
    rows,
    set_clock,
    setup_engine,
    sqlstate,
    start_step,
    submit,
)

LEASE_S = 10.0
MAX_ATTEMPTS = 3
BACKOFF = {"base_s": 1, "factor": 1, "jitter": 0}  # every retry is claimable 1 s later
LEASED = ("claimed", "running", "cancel_requested")
HOLDABLE = ("claimed", "running")
TERMINAL = ("succeeded", "dead_letter", "cancelled")


@dataclass
class Attempt:
    step_id: int
    status: str = "queued"
    token: int | None = None
    available_at: float = 0.0
    lease_until: float = 0.0


@dataclass
class Step:
    run_id: int
    attempt_id: int
    failed: int = 0


@dataclass
class Model:
    now: float
    steps: dict[int, Step] = field(default_factory=dict)
    attempts: dict[int, Attempt] = field(default_factory=dict)

    def expected_write(self, c: Claim) -> str | None:
        """SQLSTATE a worker write with this claim must get (None: accepted)."""
        a = self.attempts[c.attempt_id]
        if a.token == c.token and a.status in HOLDABLE:
            return None
        if a.token == c.token and a.status in ("cancel_requested", "cancelled"):
            return "ZF002"
        return "ZF001"

    def heartbeat_says(self, c: Claim) -> str:
        a = self.attempts[c.attempt_id]
        if a.token == c.token and a.status in HOLDABLE:
            return "held"
        if a.token == c.token and a.status == "cancel_requested":
            return "cancelled"
        return "lease_lost"

    def ready(self) -> set[int]:
        return {i for i, a in self.attempts.items() if a.status == "queued" and a.available_at <= self.now}

    def end_unsuccessfully(self, attempt_id: int, status: str, next_attempt: int | None) -> None:
        """
        fail_step (retryable) or lease expiry: a retry after the backoff, or the dead letter at the
        ceiling.
        """
        a = self.attempts[attempt_id]
        s = self.steps[a.step_id]
        s.failed += 1
        if s.failed >= MAX_ATTEMPTS:
            a.status = "dead_letter"
            assert next_attempt is None
            return
        a.status = status
        assert next_attempt is not None
        self.attempts[next_attempt] = Attempt(a.step_id, available_at=self.now + BACKOFF["base_s"])
        s.attempt_id = next_attempt


_examples = itertools.count()
DSN: dict[str, str] = {}


class EngineMachine(RuleBasedStateMachine):
    claims = Bundle("claims")

    def __init__(self) -> None:
        super().__init__()
        self.conn: Conn = psycopg.connect(
            DSN["dsn"], autocommit=True, options="-c statement_timeout=10000 -c lock_timeout=10000"
        )
        self.example = next(_examples)
        self.recipe = f"sm{self.example}"
        self.model = Model(now=1_000_000.0 * (self.example + 1))
        set_clock(self.conn, self.model.now)
        self.worker = register(self.conn, self.recipe)

    def _latest_attempt(self, step_id: int) -> int:
        got = rows(
            self.conn, "select max(id) as id from pgflight.step_attempts where step_id = %s", [step_id]
        )
        return int(got[0]["id"])

    def _pick(self, k: int) -> int:
        """The k-th step of this example (modulo), so a drawn choice never depends on database ids."""
        ids = sorted(self.model.steps)
        return ids[k % len(ids)]

    @initialize()
    def first_step(self) -> None:
        self.submit()

    @precondition(lambda self: len(self.model.steps) < 6)
    @rule()
    def submit(self) -> None:
        sub = submit(self.conn, self.recipe, max_attempts=MAX_ATTEMPTS, backoff=BACKOFF)
        self.model.steps[sub.step_id] = Step(sub.run_id, sub.attempt_id)
        self.model.attempts[sub.attempt_id] = Attempt(sub.step_id, available_at=self.model.now)

    @rule(target=claims, n=st.integers(1, 4))
    def claim(self, n: int) -> Any:
        got = claim(self.conn, self.worker, n, LEASE_S, [self.recipe])
        self._sweep_model()  # claim_batch reclaimed the lapsed leases before it claimed
        ready = self.model.ready()
        assert len(got) == min(n, len(ready)), (n, ready, got)
        for c in got:
            assert c.attempt_id in ready, f"claimed {c.attempt_id}, not ready in the model"
            a = self.model.attempts[c.attempt_id]
            a.status, a.token, a.lease_until = "claimed", c.token, self.model.now + LEASE_S
        return multiple(*got)

    def _write(self, c: Claim, call: Any, on_success: Any) -> None:
        expected = self.model.expected_write(c)
        got = sqlstate(call)
        assert got == expected, f"write with {c} got {got}, the model expects {expected}"
        if expected is None:
            on_success()

    @rule(c=claims)
    def start(self, c: Claim) -> None:
        a = self.model.attempts[c.attempt_id]
        expected = self.model.expected_write(c)
        assert sqlstate(lambda: start_step(self.conn, c)) == expected
        if expected is None:
            a.status = "running"

    @rule(picked=st.lists(claims, min_size=1, max_size=4, unique_by=lambda c: c.attempt_id))
    def heartbeat(self, picked: list[Claim]) -> None:
        got = heartbeat(self.conn, self.worker, picked)
        for c in picked:
            expected = self.model.heartbeat_says(c)
            assert got[c.attempt_id] == expected, (c, got, expected)
            if expected == "held":
                self.model.attempts[c.attempt_id].lease_until = self.model.now + LEASE_S

    @rule(c=claims)
    def complete(self, c: Claim) -> None:
        def done() -> None:
            self.model.attempts[c.attempt_id].status = "succeeded"

        self._write(c, lambda: complete(self.conn, c, {"ok": True}), done)

    @rule(c=claims, retryable=st.booleans())
    def fail(self, c: Claim, retryable: bool) -> None:
        result: dict[str, Any] = {}

        def call() -> None:
            result.update(fail(self.conn, c, {"message": "boom"}, retryable=retryable))

        def failed() -> None:
            if retryable:
                self.model.end_unsuccessfully(c.attempt_id, "failed", result["next_attempt_id"])
            else:
                self.model.steps[c.step_id].failed += 1
                self.model.attempts[c.attempt_id].status = "dead_letter"

        self._write(c, call, failed)

    @rule(c=claims)
    def release(self, c: Claim) -> None:
        a = self.model.attempts[c.attempt_id]
        if a.token == c.token and a.status == "cancel_requested":
            assert release(self.conn, c) == "cancelled"
            a.status = "cancelled"
            return

        def released() -> None:
            a.status, a.available_at = "queued", self.model.now

        self._write(c, lambda: release(self.conn, c), released)

    @rule(k=st.integers(0, 5))
    def cancel(self, k: int) -> None:
        step_id = self._pick(k)
        s = self.model.steps[step_id]
        a = self.model.attempts[s.attempt_id]
        got = cancel_run(self.conn, s.run_id)
        live = a.status not in TERMINAL and a.status != "cancel_requested"
        assert got["was_running"] is live, (a, got)
        if a.status in HOLDABLE:
            a.status = "cancel_requested"
        elif live:
            a.status = "cancelled"

    @rule(k=st.integers(0, 5))
    def retry(self, k: int) -> None:
        step_id = self._pick(k)
        s = self.model.steps[step_id]
        if self.model.attempts[s.attempt_id].status != "dead_letter":
            assert sqlstate(lambda: self.conn.execute("select pgflight.retry_step(%s)", [step_id])) == "ZF006"
            return
        new = self.conn.execute("select pgflight.retry_step(%s)", [step_id]).fetchone()
        assert new is not None
        s.attempt_id, s.failed = int(new[0]), 0
        self.model.attempts[s.attempt_id] = Attempt(step_id, available_at=self.model.now)

    def _sweep_model(self) -> None:
        """What the reclaim sweep does to the model: every lapsed lease ends."""
        for attempt_id, a in sorted(self.model.attempts.items(), key=lambda kv: kv[1].lease_until):
            if a.status in LEASED and a.lease_until < self.model.now:
                if a.status == "cancel_requested":
                    a.status = "cancelled"
                else:
                    nxt = None
                    if self.model.steps[a.step_id].failed + 1 < MAX_ATTEMPTS:
                        nxt = self._latest_attempt(a.step_id)
                    self.model.end_unsuccessfully(attempt_id, "lease_expired", nxt)

    @rule(seconds=st.sampled_from([0.5, 2.0, 6.0, 11.0]))
    def jump_and_sweep(self, seconds: float) -> None:
        self.model.now += seconds
        set_clock(self.conn, self.model.now)
        expected = sum(
            1 for a in self.model.attempts.values() if a.status in LEASED and a.lease_until < self.model.now
        )
        assert reclaim(self.conn) == expected
        self._sweep_model()

    @invariant()
    def database_agrees_with_the_model(self) -> None:
        if not self.model.steps:
            return
        got = {
            r["id"]: r["status"]
            for r in rows(
                self.conn, "select id, status from pgflight.step_attempts where recipe = %s", [self.recipe]
            )
        }
        assert got == {i: a.status for i, a in self.model.attempts.items()}

    @invariant()
    def engine_invariants_hold(self) -> None:
        assert invariant_violations(self.conn) == {}
        stale_log = rows(
            self.conn,
            """
            select a.id, a.status, (select e.to_status from pgflight.run_events e
                                     where e.attempt_id = a.id and e.to_status is not null
                                       and e.reason <> 'stale_result_rejected'
                                     order by e.id desc limit 1) as logged
              from pgflight.step_attempts a where a.recipe = %s""",
            [self.recipe],
        )
        assert all(r["status"] == r["logged"] for r in stale_log), [
            r for r in stale_log if r["status"] != r["logged"]
        ]

    def teardown(self) -> None:
        """Finish everything of this example so the next one starts from a quiet database."""
        for s in self.model.steps.values():
            cancel_run(self.conn, s.run_id)
        set_clock(self.conn, self.model.now + 3600)
        reclaim(self.conn)
        self.conn.close()


def test_engine_state_machine(conn: Conn, dsn: str) -> None:
    """Random API call sequences against the model; about 30-60 s."""
    setup_engine(conn)
    DSN["dsn"] = dsn
    run_state_machine_as_test(
        EngineMachine,
        settings=settings(
            max_examples=80,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
