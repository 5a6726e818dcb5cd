"""
The run inspector: a Starlette application with server-rendered Jinja2 pages over one database.

It connects with the DSN it is given and reads through the reader lane only (see `queries`).
The role of that login decides what it may do: actions (retry a dead letter, replay from a step,
cancel a run, approve or reject a gate) are offered only when the role is a member of
pgflight_operator, each asks for a reason, each is a POST carrying the page's CSRF token, and
the database itself refuses them to any other role. /metrics serves the Prometheus metrics.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
import psycopg
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pgflight.inspector import queries as q
from pgflight.inspector import view
from pgflight.inspector.metrics import SnapshotCollector

HERE = Path(__file__).parent
FILTERS = ("key", "status", "recipe", "workspace", "since", "until")
STATUSES = ("queued", "running", "waiting", "succeeded", "failed", "cancelled")
WHOLE_FIELDS = ("result", "error")


def open_pool(dsn: str, *, max_size: int = 4) -> ConnectionPool:
    """Autocommit connections with a statement timeout, so a slow page cannot hold the server."""
    return ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        name="pgflight-inspector",
        open=True,
        timeout=10.0,
        kwargs={
            "autocommit": True,
            "prepare_threshold": None,
            "connect_timeout": 5,
            "application_name": "pgflight-inspector",
            "options": "-c statement_timeout=15000",
        },
    )


class NotFound(Exception):
    """No such run, step or attempt (a 404 page)."""


def create_app(dsn: str) -> Starlette:
    """
    The inspector for the database `dsn` (its login role decides the lane).

    :return: an ASGI application; the pool opens now and closes at shutdown.
    """
    pool = open_pool(dsn)
    csrf = secrets.token_urlsafe(32)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(pool))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    templates = Jinja2Templates(env=env)
    env.globals.update(
        show=view.show, dur=view.dur, age=view.age, stamp=view.stamp, usd=view.usd, num=view.num
    )
    env.globals.update(line=view.line, whole=view.whole, count=view.count)
    env.globals.update(
        body=view.body, tool_state=view.tool_state, redact=view.redact, csrf=csrf, statuses=STATUSES
    )

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> Response:
        with pool.connection() as conn:
            role, operator = q.whoami(conn)
        ctx = {
            "request": request,
            "role": role,
            "operator": operator,
            "msg": request.query_params.get("msg"),
        } | ctx
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    def read(fn: Any, *args: Any) -> Any:
        with pool.connection() as conn:
            return fn(conn, *args)

    def int_param(request: Request, name: str) -> int | None:
        raw = request.query_params.get(name) or request.path_params.get(name)
        if raw in (None, ""):
            return None
        try:
            return int(raw)
        except ValueError:
            raise NotFound(f"{name} must be a number") from None

    # --- pages ------------------------------------------------------------------------------

    def runs(request: Request) -> Response:
        filters = {k: v for k in FILTERS if (v := request.query_params.get(k, "").strip())}
        after = int_param(request, "after")
        try:
            rows = read(q.runs_page, after, filters)
            error = None
        except psycopg.Error as e:
            if e.sqlstate != "22023":
                raise
            rows, error = [], (e.diag.message_primary or str(e))
        more = len(rows) > q.PAGE
        rows = rows[: q.PAGE]
        next_url = f"/runs?{urlencode(filters | {'after': rows[-1]['run_id']})}" if more else None
        return page(
            request, "runs.html", {"rows": rows, "filters": filters, "next_url": next_url, "error": error}
        )

    def run(request: Request) -> Response:
        run_id = int_param(request, "run_id")
        with pool.connection() as conn:
            status = q.run(conn, run_id or 0)
            if status is None:
                raise NotFound(f"no run {run_id}")
            row = q.run_row(conn, status["run_id"])
            steps = q.run_steps(conn, status["run_id"])
            events = q.run_events(conn, status["run_id"])
            audit = q.run_audit(conn, status["run_id"])
        ctx = {
            "run": status,
            "row": row,
            "roots": view.tree(steps[: q.MAX_STEPS]),
            "steps_clipped": len(steps) > q.MAX_STEPS,
            "events": events[: q.MAX_EVENTS],
            "events_clipped": len(events) > q.MAX_EVENTS,
            "audit": audit,
            "root_attempt": next((s["attempt_id"] for s in steps if s["parent_id"] is None), None),
        }
        return page(request, "run.html", ctx)

    def step(request: Request) -> Response:
        step_id = int_param(request, "step_id") or 0
        with pool.connection() as conn:
            st = q.step(conn, step_id)
            if st is None:
                raise NotFound(f"no step {step_id}")
            ctx = {
                "step": st,
                "attempts": q.attempts(conn, step_id),
                "events": q.run_events(conn, st["run_id"], step_id)[: q.MAX_EVENTS],
                "children": q.children(conn, step_id),
                "agent": q.agent_of(conn, step_id),
                "max_children": q.MAX_CHILDREN,
            }
        return page(request, "step.html", ctx)

    def transcript(request: Request) -> Response:
        step_id = int_param(request, "step_id") or 0
        with pool.connection() as conn:
            st = q.step(conn, step_id)
            agent = q.agent_of(conn, step_id)
            if st is None or agent is None:
                raise NotFound(f"step {step_id} is not an agent step")
            rows = q.transcript(conn, agent["agent_run_id"])
            tries = q.attempts(conn, step_id)
        ctx = {"step": st, "agent": agent, "iterations": view.iterations(rows), "attempts": tries}
        return page(request, "transcript.html", ctx)

    def diff(request: Request) -> Response:
        step_id = int_param(request, "step_id") or 0
        with pool.connection() as conn:
            st = q.step(conn, step_id)
            if st is None:
                raise NotFound(f"no step {step_id}")
            tries = {a["attempt_no"]: a for a in q.attempts(conn, step_id)}
            agent = q.agent_of(conn, step_id)
            rows = q.transcript(conn, agent["agent_run_id"]) if agent else []
        nos = sorted(tries)
        a_no = int_param(request, "a") or (nos[-2] if len(nos) > 1 else nos[0])
        b_no = int_param(request, "b") or nos[-1]
        if a_no not in tries or b_no not in tries:
            raise NotFound(f"step {step_id} has attempts {nos}")
        lines = view.diff(
            view.attempt_text(tries[a_no], rows),
            view.attempt_text(tries[b_no], rows),
            f"attempt {a_no}",
            f"attempt {b_no}",
        )
        ctx = {"step": st, "a": a_no, "b": b_no, "nos": nos, "lines": lines}
        return page(request, "diff.html", ctx)

    def whole_attempt(request: Request) -> Response:
        attempt_id = int_param(request, "attempt_id") or 0
        fld = request.path_params["field"]
        row = read(q.attempt, attempt_id)
        if row is None or fld not in WHOLE_FIELDS:
            raise NotFound(f"no {fld} of attempt {attempt_id}")
        return _plain(view.text_of(row[fld]))

    def whole_trace(request: Request) -> Response:
        agent_run_id = int_param(request, "agent_run_id") or 0
        it, seq = int_param(request, "iteration"), int_param(request, "seq")
        rows = read(q.transcript, agent_run_id)
        found = [r for r in rows if r["iteration"] == it and r["seq"] == seq]
        if not found:
            raise NotFound(f"no block {it}.{seq} in agent run {agent_run_id}")
        return _plain(view.text_of(found[0]["content"]))

    def dead_letters(request: Request) -> Response:
        rows = read(q.dead_letters, int_param(request, "after"))
        more = len(rows) > q.PAGE
        rows = rows[: q.PAGE]
        next_url = f"/dead-letters?after={rows[-1]['attempt_id']}" if more else None
        return page(request, "dead_letters.html", {"rows": rows, "next_url": next_url})

    def approvals(request: Request) -> Response:
        return page(request, "approvals.html", {"rows": read(q.approvals)})

    def workers(request: Request) -> Response:
        return page(request, "workers.html", {"rows": read(q.workers)})

    def queues(request: Request) -> Response:
        return page(request, "queues.html", {"rows": read(q.queues)})

    def costs(request: Request) -> Response:
        days = min(max(int_param(request, "days") or 14, 1), 92)
        return page(request, "costs.html", {"rows": read(q.costs, days), "days": days})

    def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    # --- actions ----------------------------------------------------------------------------

    async def action(request: Request) -> Response:
        form = await request.form()
        if not secrets.compare_digest(str(form.get("csrf", "")), csrf):
            return PlainTextResponse("refused: missing or wrong CSRF token", status_code=403)
        kind = request.path_params["kind"]
        note = str(form.get("reason", "")).strip()
        if not note:
            return PlainTextResponse("refused: give a reason", status_code=400)
        back = str(form.get("back", "/"))
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        try:
            target = int(str(form.get("id", "")))
        except ValueError:
            return PlainTextResponse("refused: no target id", status_code=400)
        decision = str(form.get("decision", ""))
        try:
            done = await run_in_threadpool(_act, kind, target, decision, note)
        except psycopg.Error as e:
            status = 403 if e.sqlstate == "42501" else 409
            text = e.diag.message_primary or str(e)
            return page(request, "refused.html", {"kind": kind, "target": target, "error": text}, status)
        sep = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{sep}{urlencode({'msg': done})}", status_code=303)

    def _act(kind: str, target: int, decision: str, note: str) -> str:
        with pool.connection() as conn:
            if kind == "retry":
                q.retry(conn, target, note)
                return f"step {target}: retried"
            if kind == "replay":
                q.replay(conn, target, note)
                return f"step {target}: replayed"
            if kind == "cancel":
                q.cancel(conn, target, note)
                return f"run {target}: cancelled"
            if kind == "approve" and decision in ("approve", "reject"):
                q.decide(conn, target, decision, note)
                return f"step {target}: {decision}d"
        raise NotFound(f"no action {kind}")

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(f"not found: {exc}", status_code=404)

    def home(request: Request) -> Response:
        return RedirectResponse("/runs", status_code=307)

    routes = [
        Route("/", home),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/steps/{step_id}", step),
        Route("/steps/{step_id}/transcript", transcript),
        Route("/steps/{step_id}/diff", diff),
        Route("/whole/attempt/{attempt_id}/{field}", whole_attempt),
        Route("/whole/trace/{agent_run_id}/{iteration}/{seq}", whole_trace),
        Route("/dead-letters", dead_letters),
        Route("/approvals", approvals),
        Route("/workers", workers),
        Route("/queues", queues),
        Route("/costs", costs),
        Route("/metrics", metrics),
        Route("/actions/{kind}", action, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        pool.close()

    app = Starlette(
        routes=routes,
        exception_handlers={NotFound: not_found},
        middleware=[Middleware(_SecurityHeaders)],
        lifespan=lifespan,
    )
    app.state.csrf = csrf
    return app


class _SecurityHeaders:
    """No script runs and no frame embeds a page, even if a value escaped its escaping."""

    HEADERS = (
        (b"content-security-policy", b"default-src 'self'; script-src 'none'; frame-ancestors 'none'"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"same-origin"),
    )

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *[(k, v) for k, v in message.get("headers", []) if k not in dict(self.HEADERS)],
                    *self.HEADERS,
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


def _plain(text: str) -> Response:
    """A whole value as text/plain: never interpreted by the browser."""
    return PlainTextResponse(text)


def serve(dsn: str, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the inspector for `dsn` on host:port (localhost by default) until interrupted."""
    import uvicorn

    # log_config=None: uvicorn's loggers go to the root logger, in the CLI's --log-format
    uvicorn.run(create_app(dsn), host=host, port=port, log_level="warning", log_config=None)
