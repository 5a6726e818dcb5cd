"""
Retention of the agent firehose by dropping partitions (tables/firehose_by_agent_run),
with the fake clock: traces and costs are range-partitioned by agent_run_id;
maintain_partitions creates the ranges ahead and drops a range once its ids are all drawn and
every agent run in it is purged (purge_finished, settings.purge_after_s). The rows of a live run
are never dropped; a purged run's rows go with their partition, not row by row.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from psycopg.types.json import Jsonb

from core_helpers import (
    Claim,
    Conn,
    claim_one,
    complete,
    register,
    rows,
    scalar,
    set_clock,
    setup_engine,
    submit,
)

T = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
WIDTH = 1000  # the smallest settings.agent_runs_per_partition


def _agent(conn: Conn, worker: int) -> tuple[Claim, int]:
    """A claimed agent step (a 10-hour lease) with one model call recorded: 2 traces rows, 1 costs row."""
    submit(conn, "agent")
    c = claim_one(conn, worker, lease_s=36_000, recipes=["agent"])
    agent_run_id = int(
        scalar(
            conn,
            "select agent_run_id from pgflight.begin_agent_run(%s, %s, %s)",
            [c.attempt_id, c.token, Jsonb({"model": "claude-haiku-4-5", "task": "t"})],
        )
    )
    conn.execute(
        "select * from pgflight.record_model_call(%s, %s, %s, 1, %s, %s, 'claude-haiku-4-5')",
        [
            c.attempt_id,
            c.token,
            agent_run_id,
            Jsonb([{"type": "text", "text": "hi"}]),
            Jsonb({"input_tokens": 10}),
        ],
    )
    return c, agent_run_id


def _next_agent_id(conn: Conn, next_id: int) -> None:
    """As if the agent runs before `next_id` had been created (and purged) already."""
    conn.execute("select setval('pgflight.agent_runs_id_seq', %s, false)", [next_id])


def _rows_of(conn: Conn, agent_run_id: int) -> tuple[int, int]:
    return (
        scalar(conn, "select count(*) from pgflight.traces where agent_run_id = %s", [agent_run_id]),
        scalar(conn, "select count(*) from pgflight.costs where agent_run_id = %s", [agent_run_id]),
    )


def _partition_of(conn: Conn, agent_run_id: int) -> str:
    return str(
        scalar(
            conn,
            "select distinct tableoid::regclass::text from pgflight.traces where agent_run_id = %s",
            [agent_run_id],
        )
    )


def _maintain(conn: Conn) -> dict[str, tuple[str, int | None]]:
    return {
        r["partition_name"]: (r["action"], r["moved_rows"])
        for r in rows(conn, "select * from pgflight.maintain_partitions()")
        if not r["partition_name"].startswith("events_")
    }


def test_traces_and_costs_go_by_partition_drop_and_never_while_a_run_of_theirs_lives(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    conn.execute("update pgflight.settings set purge_after_s = 3600, agent_runs_per_partition = %s", [WIDTH])
    set_clock(conn, T)
    # the deploy made [0, 100000); ids near its end: the next range is made ahead, WIDTH wide
    _next_agent_id(conn, 99_990)
    assert _maintain(conn) == {"traces_from_100000": ("created", 0), "costs_from_100000": ("created", 0)}

    done_a, a = _agent(conn, w)
    live, lv = _agent(conn, w)  # stays running: its partition must stay
    complete(conn, done_a, {"ok": True})
    _next_agent_id(conn, 100_500)
    done_c, c = _agent(conn, w)
    complete(conn, done_c, {"ok": True})
    assert [_partition_of(conn, x) for x in (a, lv, c)] == [
        "pgflight.traces_from_0",
        "pgflight.traces_from_0",
        "pgflight.traces_from_100000",
    ]
    # an agent run past every range lands in the default partitions; creating its range moves it
    _next_agent_id(conn, 101_100)
    done_d, d = _agent(conn, w)
    complete(conn, done_d, {"ok": True})
    assert _partition_of(conn, d) == "pgflight.traces_default"
    assert _maintain(conn) == {"traces_from_101000": ("created", 2), "costs_from_101000": ("created", 1)}
    assert _partition_of(conn, d) == "pgflight.traces_from_101000"
    assert _rows_of(conn, d) == (2, 1)

    # two hours on: a, c and d are past retention, purged; lv still runs
    set_clock(conn, T + timedelta(hours=2))
    purged = scalar(conn, "select pgflight.purge_finished(null, 1000)")
    assert purged == 3
    # purging a run no longer deletes its traces row by row: they wait for their partition
    assert _rows_of(conn, a) == (2, 1) and _rows_of(conn, c) == (2, 1)
    _next_agent_id(conn, 102_000)  # every id of [100000, 101000) and [101000, 102000) drawn
    acts = _maintain(conn)
    dropped = {n for n, (act, _) in acts.items() if act == "dropped"}
    assert dropped == {"traces_from_100000", "costs_from_100000", "traces_from_101000", "costs_from_101000"}
    assert _rows_of(conn, c) == (0, 0) and _rows_of(conn, d) == (0, 0)
    # [0, 100000) holds the live agent: nothing of it goes, not even the purged run a's rows
    assert _rows_of(conn, lv) == (2, 1) and _rows_of(conn, a) == (2, 1)
    assert scalar(conn, "select to_regclass('pgflight.traces_from_0') is not null")
    transcript = rows(
        conn, "select * from pgflight.load_transcript(%s, %s, %s)", [live.attempt_id, live.token, lv]
    )
    assert [(t["iteration"], t["role"]) for t in transcript] == [(0, "user"), (1, "assistant")]

    # the live run finishes, ages past retention, is purged: now its range goes too
    complete(conn, live, {"ok": True})
    set_clock(conn, T + timedelta(hours=4))
    assert scalar(conn, "select pgflight.purge_finished(null, 1000)") == 1
    acts = _maintain(conn)
    assert {n for n, (act, _) in acts.items() if act == "dropped"} == {"traces_from_0", "costs_from_0"}
    assert scalar(conn, "select count(*) from pgflight.traces") == 0
    assert scalar(conn, "select count(*) from pgflight.costs") == 0
    assert _maintain(conn) == {}, "a second call has nothing to do"


def test_strays_of_the_default_partitions_whose_agent_run_is_gone_are_purged_in_batches(conn: Conn) -> None:
    setup_engine(conn)
    conn.execute(
        "insert into pgflight.traces (agent_run_id, iteration, seq, role, block_type)"
        " select 900000000 + g, 0, 0, 'user', 'text' from generate_series(1, 30) g"
    )
    assert scalar(conn, "select count(*) from pgflight.traces_default") == 30
    got = rows(conn, "select * from pgflight.maintain_partitions(20)")
    assert [(r["action"], r["moved_rows"]) for r in got if r["partition_name"] == "traces_default"] == [
        ("purged", 20)
    ]
    rows(conn, "select * from pgflight.maintain_partitions(20)")
    assert scalar(conn, "select count(*) from pgflight.traces_default") == 0


def _streamed(conn: Conn, worker: int) -> Claim:
    """A claimed step (a 10-hour lease) that wrote two chunks to its run's stream 'text'."""
    submit(conn, "streamer")
    c = claim_one(conn, worker, lease_s=36_000, recipes=["streamer"])
    conn.execute("select * from pgflight.stream_write(%s, %s, 'text', '{a,b}')", [c.attempt_id, c.token])
    return c


def _stream_rows(conn: Conn, run_id: int) -> tuple[int, int]:
    return (
        scalar(conn, "select count(*) from pgflight.streams where run_id = %s", [run_id]),
        scalar(conn, "select count(*) from pgflight.stream_chunks where run_id = %s", [run_id]),
    )


def test_streams_go_by_partition_drop_once_every_run_of_their_range_is_purged(conn: Conn) -> None:
    setup_engine(conn)
    w = register(conn)
    conn.execute("update pgflight.settings set purge_after_s = 3600, runs_per_stream_partition = %s", [WIDTH])
    set_clock(conn, T)
    # the deploy made [0, 100000); run ids near its end: the next range is made ahead, WIDTH wide
    conn.execute("select setval('pgflight.runs_id_seq', 99990, false)")
    made = {n: a for n, a in _maintain(conn).items() if n.startswith("stream")}
    assert made == {"streams_from_100000": ("created", 0), "stream_chunks_from_100000": ("created", 0)}
    conn.execute("select setval('pgflight.runs_id_seq', 100000, false)")
    done, live = _streamed(conn, w), _streamed(conn, w)  # runs 100000 and 100001
    complete(conn, done, {"ok": True})
    assert (
        scalar(
            conn,
            "select distinct tableoid::regclass::text from pgflight.stream_chunks where run_id = %s",
            [done.run_id],
        )
        == "pgflight.stream_chunks_from_100000"
    )

    set_clock(conn, T + timedelta(hours=2))
    assert scalar(conn, "select pgflight.purge_finished(null, 1000)") == 1
    conn.execute("select setval('pgflight.runs_id_seq', 101000, false)")  # every id of the range drawn
    dropped = {n for n, (act, _) in _maintain(conn).items() if act == "dropped"}
    assert "streams_from_100000" not in dropped and "stream_chunks_from_100000" not in dropped
    assert _stream_rows(conn, done.run_id) == (1, 2)  # a live run holds the range: nothing of it goes

    complete(conn, live, {"ok": True})
    set_clock(conn, T + timedelta(hours=4))
    assert scalar(conn, "select pgflight.purge_finished(null, 1000)") == 1
    dropped = {n for n, (act, _) in _maintain(conn).items() if act == "dropped"}
    assert {"streams_from_100000", "stream_chunks_from_100000"} <= dropped
    assert _stream_rows(conn, done.run_id) == (0, 0) and _stream_rows(conn, live.run_id) == (0, 0)
