"""
The worker-library conformance suite (conformance/README.md): the same behaviours checked against
every client under conformance/clients/ (today the Python worker and the TypeScript worker), each
driven by its own small worker program serving the standard test recipes. The suite submits work
with SQL, starts, kills (SIGKILL), freezes (SIGSTOP) and stops (SIGTERM) real worker processes
connected as a worker-lane login over scram, and asserts from the tables.

A client whose `check` script says it cannot run here (no node, not built) is skipped with the
reason; with PGFLIGHT_CONFORMANCE_REQUIRE=1 (CI) it fails instead (tests_py/clients_support.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from clients_support import CLIENTS, CLIENTS_DIR, require
from pgflight import db, errors
from security_support import grant
from worker_support import WorkerProc, one, wait_for

ROOT = Path(__file__).resolve().parent.parent
WORKSPACE = "conformance"
LOGIN = "pgf_worker_a"
FIGURES = ROOT / ".pgflight" / "conformance-figures.json"

each_client = pytest.mark.parametrize("client", CLIENTS)


def test_both_reference_clients_are_in_the_suite() -> None:
    """The suite runs at least the Python and the TypeScript libraries (a third joins by directory)."""
    assert {"python", "typescript"} <= set(CLIENTS)


@dataclass
class World:
    """The test database, as the superuser (`su`), and the client's worker processes."""

    client: str
    su: psycopg.Connection[Any]
    worker_dsn: str
    tmp: Path
    started: list[WorkerProc] = field(default_factory=list)

    def worker(
        self, *, lease: float = 5, poll: float = 0.2, concurrency: int = 4, grace: float = 3
    ) -> WorkerProc:
        """Start the client's worker program in its own process group; return once it has registered."""
        log = self.tmp / f"{self.client}-worker-{len(self.started)}.log"
        args = [
            "--lease",
            str(lease),
            "--poll",
            str(poll),
            "--concurrency",
            str(concurrency),
            "--grace",
            str(grace),
        ]
        env = dict(os.environ, PGFLIGHT_DSN=self.worker_dsn)
        env.pop("PGFLIGHT_LISTEN_DSN", None)
        with open(log, "wb") as f:
            proc = subprocess.Popen(
                [str(CLIENTS_DIR / self.client / "worker"), *args],
                stdout=f,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        w = WorkerProc(proc, log)
        self.started.append(w)
        try:
            wait_for(lambda: self._registered(w), 20, f"the {self.client} worker to register")
        except BaseException:
            print(w.output()[-3000:])
            raise
        return w

    def _registered(self, w: WorkerProc) -> bool:
        # the exit is read before the row: a worker told to crash may register, run its step and
        # die between two polls, and its row (a SIGKILL leaves stopped_at null) still says it came up
        exited = w.proc.poll() is not None
        if one(self.su, "select count(*) from pgflight.workers where pid = %s and stopped_at is null", w.pid):
            return True
        if exited:
            pytest.fail(f"{self.client} worker exited with {w.proc.returncode}:\n{w.output()[-3000:]}")
        return False

    def submit(self, recipe: str, input: Any, **options: Any) -> db.models.SubmittedRun:
        return db.submit_run(self.su, WORKSPACE, recipe, input, options=options)

    def attempts(self, step_id: int) -> list[dict[str, Any]]:
        cur = self.su.cursor(row_factory=psycopg.rows.dict_row)
        return cur.execute(
            "select id, attempt_no, status, worker_id, claimed_at, finished_at, available_after, error,"
            " result from pgflight.step_attempts where step_id = %s order by attempt_no",
            [step_id],
        ).fetchall()

    def status(self, step_id: int) -> str:
        return str(one(self.su, "select status from pgflight.step_status where step_id = %s", step_id))

    def reasons(self, **where: Any) -> list[str]:
        ((col, val),) = where.items()
        return [
            r[0]
            for r in self.su.execute(
                f"select reason from pgflight.run_events where {col} = %s order by id", [val]
            ).fetchall()
        ]


@pytest.fixture
def world(client: str, dsn: str, logins: Any, tmp_path: Path) -> Iterator[World]:
    require(client)
    with psycopg.connect(dsn, autocommit=True) as su:
        db.create_workspace(su, WORKSPACE)
        grant(su, LOGIN, WORKSPACE, "worker")
        w = World(client, su, logins.dsn(LOGIN, dsn), tmp_path)
        try:
            yield w
        finally:
            for p in w.started:
                p.kill()


def _record(client: str, **figures: float) -> None:
    """Keep a client's figures for the side-by-side report (printed, and merged into FIGURES)."""
    print(f"conformance figures [{client}]: " + ", ".join(f"{k}={v:.4g}" for k, v in figures.items()))
    with contextlib.suppress(OSError, ValueError):
        FIGURES.parent.mkdir(exist_ok=True)
        data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
        data.setdefault(client, {}).update(figures, recorded_at=time.time())
        FIGURES.write_text(json.dumps(data, indent=2, sort_keys=True))


# --- the scenarios (conformance/README.md names each) -------------------------------------------


@each_client
def test_every_step_ends_exactly_once_with_two_workers(world: World, client: str) -> None:
    n = 300
    # both idle first: the submit's wake ticket, its relay and the polls must bring both to work
    world.worker(concurrency=4)
    world.worker(concurrency=4)
    db.submit_many(world.su, WORKSPACE, [{"recipe": "noop", "input": {"n": i}} for i in range(n)])
    wait_for(
        lambda: one(world.su, "select count(*) = %s from pgflight.step_status where status = 'succeeded'", n),
        60,
        f"{n} steps to succeed",
        interval_s=0.1,
    )
    rows = world.su.execute(
        "select s.id, (s.input->>'n')::int, count(*) filter (where a.status = 'succeeded'), count(*),"
        "       (array_agg(a.result) filter (where a.status = 'succeeded'))[1]"
        "  from pgflight.steps s join pgflight.step_attempts a on a.step_id = s.id group by s.id"
    ).fetchall()
    assert len(rows) == n
    assert all(r[2] == 1 and r[3] == 1 for r in rows), "a step ran twice or failed"
    assert all(r[4] == {"n": r[1]} for r in rows), "a result is not its step's"
    per_worker = dict(
        world.su.execute("select worker_id, count(*) from pgflight.step_attempts group by 1").fetchall()
    )
    assert len(per_worker) == 2, f"one worker did everything: {per_worker}"
    span_s = one(
        world.su, "select extract(epoch from max(finished_at) - min(claimed_at)) from pgflight.step_attempts"
    )
    # wake latency: an idle worker group, one step submitted at a time, submit -> claim (server clock)
    latencies = []
    for i in range(5):
        time.sleep(0.3)
        run = world.submit("noop", {"n": -i})
        wait_for(lambda r=run: world.status(r.step_id) == "succeeded", 10, "the probe step")  # type: ignore[misc]
        latencies.append(
            one(
                world.su,
                "select extract(epoch from a.claimed_at - s.created_at) * 1000 from pgflight.step_attempts a"
                " join pgflight.steps s on s.id = a.step_id where a.step_id = %s",
                run.step_id,
            )
        )
    _record(
        client,
        burn_down_steps_per_s=n / float(span_s),
        wake_latency_p50_ms=float(statistics.median(latencies)),
        wake_latency_max_ms=float(max(latencies)),
        workers_sharing=float(len(per_worker)),
    )


@each_client
def test_a_step_whose_worker_is_killed_is_reclaimed_and_completes_once(world: World, client: str) -> None:
    run = world.submit("sleep", {"seconds": 2.0})
    a = world.worker(lease=2)
    wait_for(lambda: world.status(run.step_id) == "running", 10, "the step to start on worker A")
    a.kill()  # SIGKILL mid-step: nothing released
    killed_at = time.monotonic()
    world.worker(lease=2)
    wait_for(lambda: world.status(run.step_id) == "succeeded", 15, "the step to succeed on worker B")
    assert time.monotonic() - killed_at < 2 + 2 + 8  # lease + the step + start-up and sweep slack
    tries = world.attempts(run.step_id)
    assert [t["status"] for t in tries] == ["lease_expired", "succeeded"]
    assert tries[0]["worker_id"] != tries[1]["worker_id"]
    assert world.reasons(step_id=run.step_id).count("succeeded") == 1


@each_client
def test_a_stale_token_is_refused_reported_and_writes_nothing(world: World, client: str) -> None:
    # `slow` streams a chunk, sleeps heedless of its lease, then streams, records an effect and
    # returns: the frozen worker, thawed, tries those writes with its stale token
    run = world.submit("slow", {"seconds": 2.5})
    a = world.worker(lease=1.5)
    wait_for(lambda: world.status(run.step_id) == "running", 10, "the step to start on worker A")
    first = world.attempts(run.step_id)[0]
    token_a = one(world.su, "select fencing_token from pgflight.step_attempts where id = %s", first["id"])
    a.signal(signal.SIGSTOP)
    try:
        time.sleep(2.0)  # past the 1.5 s lease, frozen: no heartbeat
        assert db.reclaim_expired(world.su) == 1
        world.worker(lease=5)
        wait_for(
            lambda: one(
                world.su,
                "select count(*) from pgflight.step_attempts where step_id = %s and attempt_no = 2"
                " and status in ('running', 'succeeded')",
                run.step_id,
            ),
            10,
            "worker B to take attempt 2",
        )
    finally:
        a.signal(signal.SIGCONT)
    # the library notices (heartbeat `lease_lost`, or its completion refused) and says so
    wait_for(
        lambda: f"lease lost on attempt {first['id']}" in a.output(), 10, "worker A to report the lost lease"
    )
    # the old token is refused at the fence, whoever of the login sends it
    with psycopg.connect(world.worker_dsn, autocommit=True) as late, pytest.raises(errors.LeaseLost):
        db.complete_step(late, first["id"], token_a, {"late": True})
    wait_for(lambda: world.status(run.step_id) == "succeeded", 10, "attempt 2 to succeed")
    tries = world.attempts(run.step_id)
    assert [t["status"] for t in tries] == ["lease_expired", "succeeded"]
    assert tries[0]["result"] is None
    assert "succeeded" not in world.reasons(attempt_id=first["id"])
    assert one(world.su, "select result from pgflight.step_status where step_id = %s", run.step_id) == {
        "receipt": {"by_attempt": 2},
        "attempt": 2,
    }
    time.sleep(1.0)  # worker A's late writes, if any were still on their way, have landed or failed
    chunks = world.su.execute(
        "select attempt_no, chunk from pgflight.stream_chunks where run_id = %s and channel = 'progress'"
        " order by seq",
        [run.run_id],
    ).fetchall()
    assert (1, "end 1") not in chunks, "a stale attempt's stream chunk was written"
    assert chunks[-2:] == [(2, "start 2"), (2, "end 2")]
    assert world.su.execute(
        "select attempt_id from pgflight.effects where step_id = %s", [run.step_id]
    ).fetchall() == [(tries[1]["id"],)], "the effect is recorded once, by the live attempt"
    assert world.reasons(step_id=run.step_id).count("succeeded") == 1
    assert a.proc.poll() is None, "worker A keeps running after abandoning the attempt"


@each_client
def test_a_step_longer_than_its_lease_is_kept_by_heartbeats(world: World, client: str) -> None:
    run = world.submit("sleep", {"seconds": 4.0})
    world.worker(lease=1.2)  # heartbeats every lease/3 on their own connection keep the lease
    wait_for(lambda: world.status(run.step_id) == "running", 10, "the step to start")
    for _ in range(3):  # sweeps in the meantime find no lapsed lease
        time.sleep(1.0)
        assert db.reclaim_expired(world.su) == 0
    wait_for(lambda: world.status(run.step_id) == "succeeded", 10, "the step to succeed")
    assert [t["status"] for t in world.attempts(run.step_id)] == ["succeeded"]


@each_client
def test_an_approval_parks_the_step_and_the_sql_decision_finishes_it_once(world: World, client: str) -> None:
    run = world.submit("approval", {"gate": "ship"})
    world.worker()
    wait_for(lambda: world.status(run.step_id) == "awaiting_approval", 10, "the step to park at its gate")
    time.sleep(1.0)  # parked: nothing claims or runs it meanwhile, and it holds no lease
    assert world.status(run.step_id) == "awaiting_approval"
    assert (
        one(
            world.su,
            "select count(*) from pgflight.step_attempts where step_id = %s"
            " and status in ('claimed', 'running')",
            run.step_id,
        )
        == 0
    )
    applied = world.su.execute(
        "select applied from pgflight.approve(%s, 'approve', 'conformance', 'looks right', 'ship')",
        [run.step_id],
    ).fetchall()
    assert applied == [(True,)]
    wait_for(lambda: world.status(run.step_id) == "succeeded", 10, "the approved step to finish")
    result = one(world.su, "select result from pgflight.step_status where step_id = %s", run.step_id)
    assert result["decision"] == "approve"
    assert world.reasons(step_id=run.step_id).count("succeeded") == 1
    assert sum(t["status"] == "succeeded" for t in world.attempts(run.step_id)) == 1


@each_client
def test_a_wait_for_an_event_is_woken_by_sql_and_finishes_once(world: World, client: str) -> None:
    run = world.submit("wait_event", {"name": "shipped", "key": "order-7"})
    world.worker()
    wait_for(
        lambda: (
            one(
                world.su,
                "select count(*) from pgflight.step_attempts where step_id = %s"
                " and status in ('queued', 'claimed', 'running', 'succeeded')",
                run.step_id,
            )
            == 0
        ),
        10,
        "the step to park on its event",
    )
    time.sleep(0.5)
    assert world.status(run.step_id) not in ("succeeded", "running")
    woken = one(
        world.su,
        "select woken from pgflight.emit_event(%s, 'shipped', 'order-7', '{\"tracking\": \"T1\"}')",
        WORKSPACE,
    )
    assert woken == 1
    wait_for(lambda: world.status(run.step_id) == "succeeded", 10, "the woken step to finish")
    result = one(world.su, "select result from pgflight.step_status where step_id = %s", run.step_id)
    assert result["payload"] == {"tracking": "T1"}
    assert world.reasons(step_id=run.step_id).count("succeeded") == 1


@each_client
def test_a_hung_step_is_ended_at_its_deadline_and_the_worker_carries_on(world: World, client: str) -> None:
    backoff = {"base_s": 0.2, "factor": 1, "max_s": 1, "jitter": 0}
    run = world.submit("hang", {}, max_runtime_s=1.0, max_attempts=2, backoff=backoff)
    world.worker(lease=5)  # the heartbeats would hold the lease for ever: only the deadline ends it
    wait_for(lambda: world.status(run.step_id) == "dead_letter", 20, "the hung step's dead letter")
    tries = world.attempts(run.step_id)
    assert [t["status"] for t in tries][-1] == "dead_letter" and len(tries) == 2
    assert tries[0]["status"] in ("failed", "timed_out")
    for t in tries:
        ran = (t["finished_at"] - t["claimed_at"]).total_seconds()
        assert 0.9 <= ran < 1.0 + 3.0, f"attempt {t['attempt_no']} ended {ran:.2f}s after its claim"
        assert "deadline" in json.dumps(t["error"]).lower()
    probe = world.submit("noop", {"n": 1})  # the hung recipe did not take the worker down
    wait_for(lambda: world.status(probe.step_id) == "succeeded", 10, "a step after the hung one")


@each_client
def test_an_invalid_result_fails_that_step_alone_without_a_retry(world: World, client: str) -> None:
    bad = world.submit("invalid_result", {}, max_attempts=3)
    good = [world.submit("noop", {"n": i}) for i in range(3)]
    world.worker(concurrency=4)
    wait_for(lambda: world.status(bad.step_id) == "dead_letter", 15, "the invalid result's dead letter")
    wait_for(lambda: all(world.status(r.step_id) == "succeeded" for r in good), 15, "the good steps")
    tries = world.attempts(bad.step_id)
    assert len(tries) == 1, "a result a retry would only produce again is not retried"
    assert tries[0]["result"] is None
    assert "$.bad" in json.dumps(tries[0]["error"]), tries[0]["error"]


#: docs/worker_protocol.md §3's test vectors: (recipes, ticket, key)
TICKET_VECTORS = [
    (["noop"], "123", -1071107197322973696),
    (["b", "a", "\u00e9"], "relay.7.1", 7485424639200065680),
    (["fan_out", "child"], "99999999", 7163396157066252055),
]


def test_the_python_wake_ticket_key_is_the_documented_derivation() -> None:
    """Without node too: the Python worker's keys are the documented vectors."""
    from pgflight.worker import WakeTickets

    assert [WakeTickets(r).key(t) for r, t, _ in TICKET_VECTORS] == [k for _, _, k in TICKET_VECTORS]


def test_both_libraries_derive_the_same_wake_ticket_key() -> None:
    """docs/worker_protocol.md §3: one derivation, so Python and TypeScript workers meet on one lock."""
    require("typescript")
    from pgflight.worker import WakeTickets

    cases = [(r, t) for r, t, _ in TICKET_VECTORS]
    cases.append((["z\U0001f600", "z\uffff"], "4294967296"))  # sorted by code point, not by UTF-16 unit
    index = ROOT / "clients" / "typescript" / "dist" / "src" / "index.js"
    script = (
        f"import {{ wakeTicketKey }} from {json.dumps(str(index))};"
        "const cases = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(cases.map(([r, t]) => wakeTicketKey(r, t).toString())));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert [int(k) for k in json.loads(out)] == [WakeTickets(r).key(t) for r, t in cases]


@each_client
def test_a_fan_out_wakes_its_parent_once_with_every_child_result(world: World, client: str) -> None:
    run = world.submit("fan_out", {"n": 20})
    world.worker(concurrency=4)
    world.worker(concurrency=4)
    wait_for(lambda: world.status(run.step_id) == "succeeded", 30, "the parent to succeed")
    assert one(world.su, "select result from pgflight.step_status where step_id = %s", run.step_id) == {
        "children": 20,
        "sum": 2 * sum(range(20)),
    }
    children = world.su.execute(
        "select s.id, count(*) filter (where a.status = 'succeeded') from pgflight.steps s"
        " join pgflight.step_attempts a on a.step_id = s.id where s.parent_id = %s group by s.id",
        [run.step_id],
    ).fetchall()
    assert len(children) == 20 and all(c[1] == 1 for c in children)
    assert world.reasons(step_id=run.step_id).count("parent_resumed") == 1
    assert world.reasons(step_id=run.step_id).count("succeeded") == 1


@each_client
def test_an_effect_is_recorded_once_across_a_crash(world: World, client: str, tmp_path: Path) -> None:
    counter = tmp_path / "effect-calls.txt"
    counter.touch()
    os.chmod(tmp_path, 0o777)  # the worker writes here
    run = world.submit("effect", {"counter": str(counter), "crash_on_attempt": 1})
    a = world.worker(lease=1.5)
    wait_for(lambda: a.proc.poll() is not None, 15, "worker A to crash after the effect")
    assert len(counter.read_text().split()) == 1
    assert one(world.su, "select count(*) from pgflight.effects where step_id = %s", run.step_id) == 1
    world.worker(lease=1.5)
    wait_for(lambda: world.status(run.step_id) == "succeeded", 15, "the retry to succeed")
    assert len(counter.read_text().split()) == 1, "the retry must find the receipt and not act again"
    assert one(world.su, "select result from pgflight.step_status where step_id = %s", run.step_id) == {
        "receipt": {"calls": 1},
        "attempt": 2,
    }


@each_client
def test_a_failing_step_retries_with_backoff_then_dead_letters(world: World, client: str) -> None:
    backoff = {"base_s": 0.5, "factor": 2, "max_s": 10, "jitter": 0}
    run = world.submit("fail_always", {}, max_attempts=3, backoff=backoff)
    world.worker()
    wait_for(lambda: world.status(run.step_id) == "dead_letter", 20, "the dead letter")
    tries = world.attempts(run.step_id)
    assert [t["status"] for t in tries] == ["failed", "failed", "dead_letter"]
    assert "boom on attempt 1" in json.dumps(tries[0]["error"])
    for n, (before, after) in enumerate(itertools.pairwise(tries), start=1):
        gap = (after["claimed_at"] - before["finished_at"]).total_seconds()
        assert gap >= 0.5 * 2 ** (n - 1) - 0.01, f"retry {n} came after {gap:.3f}s, before its backoff"
    time.sleep(1.5)
    assert len(world.attempts(run.step_id)) == 3, "nothing runs after the dead letter"


@each_client
def test_sigterm_releases_held_steps_promptly_without_spending_an_attempt(world: World, client: str) -> None:
    runs = [world.submit("sleep", {"seconds": 60}) for _ in range(2)]
    w = world.worker(concurrency=2, grace=1)
    wait_for(lambda: all(world.status(r.step_id) == "running" for r in runs), 10, "both steps running")
    w.signal(signal.SIGTERM)
    t0 = time.monotonic()
    assert w.wait(15) == 0, w.output()[-2000:]
    assert time.monotonic() - t0 < 1 + 4  # grace + a little
    for r in runs:
        assert world.status(r.step_id) == "queued"
        assert one(world.su, "select failed_attempts from pgflight.steps where id = %s", r.step_id) == 0
        assert len(world.attempts(r.step_id)) == 1
        assert world.reasons(step_id=r.step_id).count("released") == 1
    assert one(world.su, "select stopped_at is not null from pgflight.workers where pid = %s", w.pid) is True


@each_client
def test_a_bad_payload_fails_that_step_alone(world: World, client: str) -> None:
    good = [world.submit("typed", {"n": i}) for i in range(8)]
    bad = world.submit("typed", {"n": "not a number"})
    world.worker(concurrency=10)  # one claim takes them all: the bad one is in the good ones' batch
    wait_for(lambda: world.status(bad.step_id) == "dead_letter", 15, "the bad step's dead letter")
    wait_for(
        lambda: all(world.status(r.step_id) == "succeeded" for r in good), 15, "every good step to succeed"
    )
    tries = world.attempts(bad.step_id)
    assert len(tries) == 1, "an input a retry cannot fix is not retried"
    assert "n" in json.dumps(tries[0]["error"])
    assert [
        one(world.su, "select result from pgflight.step_status where step_id = %s", r.step_id) for r in good
    ] == [{"n": i} for i in range(8)]
