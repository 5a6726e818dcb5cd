"""
The agent ledger counts every call that may have been paid, and caps hold on what is sent, through
real worker processes and the real `anthropic` SDK against a local Messages API server:

- a call whose worker dies with the request out (SIGKILL while the server holds the answer) is
  charged at its reservation, as a costs row marked unknown_outcome, in the budgets and the agent's
  totals; an answer recorded late for that call settles the row to the real figures;
- the next call is priced on the request about to be sent, tool results included: a call that
  cannot fit under max_usd is refused before it is made (one 200 KB tool result under 0.10, five
  sub-agents with 60 KB results under 0.15);
- a response block of a type the engine does not know (server_tool_use, web_search_tool_result, a
  future type) is stored, costed and sent back on the next turn exactly as received;
- one-hour cache writes are priced at the one-hour rate, web searches per search.
"""

from __future__ import annotations

import json
import signal
import threading
from decimal import Decimal
from typing import Any

import psycopg

import agent_ledger_recipes  # noqa: F401  (the agent recipe with the test tools)
from agent_support import FakeAnthropic, fake_anthropic, message, tool_use  # noqa: F401
from pgflight import db
from worker_support import one, wait_for, workers  # noqa: F401

RECIPES = "agent_ledger_recipes"
FINAL = message([{"type": "text", "text": "all done"}], input_tokens=100, output_tokens=10)
SONNET_IN, SONNET_OUT = Decimal(3), Decimal(15)  # USD per million tokens (model_prices)


def _env(server: FakeAnthropic) -> dict[str, str]:
    return {
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.url,
        "PGFLIGHT_AGENT_BACKOFF_S": "0.01",
    }


def _submit(conn: psycopg.Connection[Any], inp: dict[str, Any], daily_usd_cap: float | None = None) -> Any:
    db.create_workspace(conn, "w", daily_usd_cap=daily_usd_cap)
    base = {"model": "claude-sonnet-4-6", "provider": "anthropic"}
    return db.submit_run(conn, "w", "agent", {**base, **inp}, options={"max_attempts": 3})


def _status(conn: psycopg.Connection[Any], step_id: int) -> str:
    return str(one(conn, "select status from pgflight.step_status where step_id = %s", step_id))


def _wait_end(conn: psycopg.Connection[Any], step_id: int, w: Any, timeout_s: float = 60) -> str:
    wait_for(
        lambda: _status(conn, step_id) in ("succeeded", "dead_letter") or None,
        timeout_s,
        f"the step to end\n{w.output()[-3000:]}",
    )
    return _status(conn, step_id)


def _reservation(body: dict[str, Any], max_tokens: int = 1024) -> Decimal:
    """What the agent loop reserves for a request (its documented estimate): JSON chars / 4 + 1 input
    tokens at the input price, max_tokens at the output price."""
    chars = len(json.dumps([body.get("system", ""), body["messages"], body.get("tools", [])], default=str))
    return (SONNET_IN * (chars // 4 + 1) + SONNET_OUT * max_tokens) / 1_000_000


def _costs(conn: psycopg.Connection[Any], agent_run_id: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "select iteration, attempt_id, unknown_outcome, usd, input_tokens from pgflight.costs"
        " where agent_run_id = %s order by attempt_id, iteration",
        [agent_run_id],
    ).fetchall()


def _budgets(conn: psycopg.Connection[Any]) -> list[tuple[str, Decimal, Decimal]]:
    return [
        (r[0], r[1], r[2])
        for r in conn.execute("select scope, spent_usd, reserved_usd from pgflight.budgets order by id")
    ]


def _held_server(first_out: threading.Event, hold: threading.Event) -> Any:
    """The first request is answered only once `hold` is set (the worker may be dead by then)."""

    def reply(body: dict[str, Any], n: int) -> tuple[int, Any]:
        if n == 1:
            first_out.set()
            hold.wait(60)
        return 200, FINAL

    return reply


def test_a_call_out_when_its_worker_is_killed_is_charged_at_its_reservation(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    first_out, hold = threading.Event(), threading.Event()
    server = fake_anthropic(_held_server(first_out, hold))
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            sub = _submit(conn, {"task": "answer", "tools": ["note"], "max_usd": 1.0}, daily_usd_cap=50.0)
            w1 = workers(dsn, "--lease", "2", recipes=RECIPES, env=_env(server))
            assert first_out.wait(40), w1.output()[-3000:]
            w1.kill()  # SIGKILL with the request out: nobody knows whether it was answered (and paid)
            hold.set()
            w2 = workers(dsn, "--lease", "2", recipes=RECIPES, env=_env(server))
            assert _wait_end(conn, sub.step_id, w2) == "succeeded"
            assert len(server.requests) == 2  # asked again by the next attempt

            agent = db.agent.agent_run_of(conn, sub.step_id)
            assert agent is not None
            reserved = _reservation(server.requests[0])
            real = (100 * SONNET_IN + 10 * SONNET_OUT) / 1_000_000
            total = reserved + real
            assert one(conn, "select sum(usd) from pgflight.costs where run_id = %s", sub.run_id) == total
            first, second = _costs(conn, agent.agent_run_id)
            # the lost call: charged at its reservation, marked as of unknown outcome
            assert first[0] == 1 and first[2] is True and first[3] == reserved and first[4] == 0
            assert second[0] == 1 and second[2] is False and second[3] == real
            assert one(conn, "select usd from pgflight.agent_runs where id = %s", agent.agent_run_id) == total
            assert agent.usd == total
            # every budget the call was bound by: the agent's and the workspace's day
            assert _budgets(conn) == [("step", total, 0), ("workspace_day", total, 0)]
    finally:
        hold.set()


def test_a_late_answer_settles_the_call_charged_at_its_reservation(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    first_out, hold = threading.Event(), threading.Event()
    server = fake_anthropic(_held_server(first_out, hold))
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            sub = _submit(conn, {"task": "answer", "tools": ["note"], "max_usd": 1.0})
            w1 = workers(dsn, "--lease", "2", recipes=RECIPES, env=_env(server))
            assert first_out.wait(40), w1.output()[-3000:]
            w1.signal(signal.SIGSTOP)  # frozen with the request out; its lease lapses
            w2 = workers(dsn, "--lease", "2", recipes=RECIPES, env=_env(server))
            assert _wait_end(conn, sub.step_id, w2) == "succeeded"
            agent = db.agent.agent_run_of(conn, sub.step_id)
            assert agent is not None
            reserved = _reservation(server.requests[0])
            real = (100 * SONNET_IN + 10 * SONNET_OUT) / 1_000_000
            costs = one(conn, "select sum(usd) from pgflight.costs where run_id = %s", sub.run_id)
            assert costs == reserved + real
            assert [c[2:4] for c in _costs(conn, agent.agent_run_id)] == [(True, reserved), (False, real)]

            # the first answer arrives after all, and its worker records it: the row is settled
            hold.set()
            w1.signal(signal.SIGCONT)
            wait_for(
                lambda: _costs(conn, agent.agent_run_id)[0][2] is False or None,
                30,
                f"the late answer to be recorded\n{w1.output()[-3000:]}",
            )
            first, second = _costs(conn, agent.agent_run_id)
            assert first[2:5] == (False, real, 100) and second[2:4] == (False, real)
            total = 2 * real
            assert one(conn, "select usd from pgflight.agent_runs where id = %s", agent.agent_run_id) == total
            assert _budgets(conn) == [("step", total, 0)]
    finally:
        hold.set()


def _bulk_reply(kb: int) -> Any:
    """Each agent: call 1 asks for one `kb` KB document (a parent delegates to five sub-agents first),
    call 2 answers. Input tokens are the request's bytes / 4, as a tokenizer would count them."""

    def reply(body: dict[str, Any], n: int) -> tuple[int, Any]:
        tokens = len(json.dumps(body)) // 4
        names = [t["name"] for t in body.get("tools", [])]
        done = any(b.get("type") == "tool_result" for m in body["messages"] for b in m["content"])
        if done:
            return 200, message([{"type": "text", "text": "read"}], input_tokens=tokens, output_tokens=200)
        if "delegate" in names:
            tasks = {"tasks": [{"task": f"read document {i}"} for i in range(5)]}
            return 200, message(
                tool_use("toolu_del", "delegate", tasks), input_tokens=tokens, output_tokens=200
            )
        return 200, message(
            tool_use("toolu_bulk", "bulk", {"kb": kb}), input_tokens=tokens, output_tokens=200
        )

    return reply


def test_a_call_priced_on_a_200kb_tool_result_is_refused_before_it_is_made(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    server = fake_anthropic(_bulk_reply(200))
    limit = Decimal("0.10")
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(conn, {"task": "read the document", "tools": ["bulk"], "max_usd": float(limit)})
        w = workers(dsn, "--lease", "5", recipes=RECIPES, env=_env(server))
        status = _wait_end(conn, sub.step_id, w)
        spent = one(
            conn, "select spent_usd from pgflight.budgets where scope = 'step' and step_id = %s", sub.step_id
        )
        print(
            f"one agent, one 200 KB tool result, max_usd {limit}: "
            f"spent {spent} ({len(server.requests)} calls)"
        )
        assert spent <= limit
        assert len(server.requests) == 1  # the second call, some 50,000 tokens, was never sent
        assert status == "dead_letter"
        error = one(
            conn,
            "select error from pgflight.step_attempts where step_id = %s and status = 'dead_letter'",
            sub.step_id,
        )
        assert "budget_exhausted" in error["message"] and "budget exceeded" in error["message"]
        assert one(conn, "select sum(usd) from pgflight.costs where run_id = %s", sub.run_id) == spent


def test_five_subagents_with_60kb_tool_results_stay_under_their_tree_cap(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    server = fake_anthropic(_bulk_reply(60))
    limit = Decimal("0.15")
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(
            conn, {"task": "read five documents", "tools": ["delegate", "bulk"], "max_usd": float(limit)}
        )
        w = workers(dsn, "--lease", "5", "--concurrency", "6", recipes=RECIPES, env=_env(server))
        _wait_end(conn, sub.step_id, w, 90)
        spent = one(
            conn, "select spent_usd from pgflight.budgets where scope = 'step' and step_id = %s", sub.step_id
        )
        print(
            f"five sub-agents, 60 KB tool results, max_usd {limit}: "
            f"spent {spent} ({len(server.requests)} calls)"
        )
        assert spent <= limit
        assert one(conn, "select sum(usd) from pgflight.costs where run_id = %s", sub.run_id) == spent
        kids = db.children_results(conn, sub.step_id)
        assert len(kids) == 5
        refused = [k for k in kids if k.status == "dead_letter"]
        assert refused and all("budget_exhausted" in k.error["message"] for k in refused)
        big = [r for r in server.requests if len(json.dumps(r)) > 60_000]
        assert len(big) == 5 - len(refused)  # a refused sub-agent never sent its 60 KB request


SERVER_TOOL_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me search.", "citations": None},
    {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "pgflight"}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://example.org/pgflight",
                "title": "pgflight",
                "encrypted_content": "EqQBCgIYAhIM",
                "page_age": None,
            }
        ],
    },
    {"type": "a_block_type_added_later", "payload": {"nested": [1, None, {"k": "v"}]}, "extra": None},
    {"type": "tool_use", "id": "toolu_note", "name": "note", "input": {"text": "found"}},
]


def test_unknown_block_types_are_stored_costed_and_sent_back_as_received(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    first = message(SERVER_TOOL_BLOCKS, input_tokens=1000, output_tokens=100)
    first["usage"]["server_tool_use"] = {"web_search_requests": 1}
    server = fake_anthropic(lambda body, n: (200, first if n == 1 else FINAL))
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(conn, {"task": "search", "tools": ["note"]})
        w = workers(dsn, "--lease", "5", recipes=RECIPES, env=_env(server))
        assert _wait_end(conn, sub.step_id, w) == "succeeded", w.output()[-3000:]
        assert len(server.requests) == 2
        # the assistant turn went back exactly as it came, every block and null included
        assert server.requests[1]["messages"][1] == {"role": "assistant", "content": SERVER_TOOL_BLOCKS}
        agent = db.agent.agent_run_of(conn, sub.step_id)
        assert agent is not None
        rows = conn.execute(
            "select block_type, content from pgflight.traces where agent_run_id = %s and iteration = 1"
            " and seq < 1000 order by seq",
            [agent.agent_run_id],
        ).fetchall()
        assert [r[0] for r in rows] == [b["type"] for b in SERVER_TOOL_BLOCKS]
        assert [r[1] for r in rows] == SERVER_TOOL_BLOCKS
        usd, searches = conn.execute(
            "select usd, web_search_requests from pgflight.costs where agent_run_id = %s and iteration = 1",
            [agent.agent_run_id],
        ).fetchone() or (None, None)
        assert searches == 1
        assert usd == (1000 * SONNET_IN + 100 * SONNET_OUT) / 1_000_000 + Decimal("0.01")


def test_one_hour_cache_writes_and_web_searches_are_priced_at_their_rates(
    dsn: str, fake_anthropic: Any, workers: Any
) -> None:
    answer = message(
        [{"type": "text", "text": "cached"}], input_tokens=100, output_tokens=10, cache_creation=1000
    )
    answer["usage"]["cache_creation"] = {"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600}
    answer["usage"]["server_tool_use"] = {"web_search_requests": 3}
    server = fake_anthropic(lambda body, n: (200, answer))
    with psycopg.connect(dsn, autocommit=True) as conn:
        sub = _submit(conn, {"task": "cache this"})
        w = workers(dsn, "--lease", "5", recipes=RECIPES, env=_env(server))
        assert _wait_end(conn, sub.step_id, w) == "succeeded", w.output()[-3000:]
        agent = db.agent.agent_run_of(conn, sub.step_id)
        assert agent is not None
        # Anthropic's pricing page: a five-minute cache write is 1.25x the base input price (3.75
        # for this model), a one-hour write 2x (6.00); web search USD 10 per 1,000 searches
        tokens_usd = (
            100 * SONNET_IN + 10 * SONNET_OUT + 400 * Decimal("3.75") + 600 * Decimal("6.00")
        ) / 1_000_000
        assert agent.usd == tokens_usd + 3 * Decimal("0.01")
        row = conn.execute(
            "select usd, cache_creation_tokens, cache_creation_1h_tokens, web_search_requests"
            " from pgflight.costs where agent_run_id = %s",
            [agent.agent_run_id],
        ).fetchone()
        assert row == (tokens_usd + 3 * Decimal("0.01"), 1000, 600, 3)
        assert (
            one(conn, "select pgflight.price_usd('claude-sonnet-4-6', %s)", json.dumps(answer["usage"]))
            == row[0]
        )
