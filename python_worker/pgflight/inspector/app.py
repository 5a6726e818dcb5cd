"""
The run inspector: a Starlette application with server-rendered Jinja2 pages over one database.

It connects with the DSN it is given (or, with ``auth="login"``, as the login each visitor signs in
with) and reads through the reader lane only (see `queries`). The role of that login decides what
it may do: actions (retry a dead letter, replay from a step, cancel a run, approve or reject a gate)
are offered only when the role is a member of pgflight_operator, each asks for a reason, each is a
POST from the inspector's own origin carrying the browser session's CSRF token, and the database
itself refuses them to any other role. /metrics serves the Prometheus metrics. What is checked
before a page runs (Host, Origin, the session cookie, sign-in) is in `guard`.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
import psycopg
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pgflight import db
from pgflight.inspector import guard, view
from pgflight.inspector import queries as q
from pgflight.inspector.metrics import SnapshotCollector
from pgflight.inspector.pool import CONNECT_KWARGS, open_pool, page_json

HERE = Path(__file__).parent
FILTERS = ("key", "status", "recipe", "workspace", "since", "until")
STATUSES = ("queued", "running", "waiting", "succeeded", "failed", "cancelled")
WHOLE_FIELDS = ("result", "error")


# an id the database may be asked about: a bigint; any other number is a 404
_BIGINT = (-(2**63), 2**63 - 1)
# errors that mean "no such thing for this login": unknown, or outside the login's lanes
_NOT_FOUND_STATES = frozenset({"ZF003", "ZF012", "22003"})


#: Largest edited-arguments text the approvals page accepts (approve() caps the payload again in SQL).
MAX_EDIT_CHARS = 65536


def _edited_arguments(text: str) -> tuple[Any, str | None]:
    """
    The payload of an approval with edited tool arguments, from the page's textarea: ``({"arguments":
    obj}, None)``, or ``(None, why)`` when the text is too long, not JSON, or not a JSON object.
    """
    if len(text) > MAX_EDIT_CHARS:
        return None, f"the edited arguments are longer than {MAX_EDIT_CHARS} characters"
    try:
        value = json.loads(text)
    except ValueError as e:
        return None, f"the edited arguments are not JSON ({e})"
    if not isinstance(value, dict):
        return None, f"the edited arguments must be a JSON object, not {type(value).__name__}"
    return {"arguments": value}, None


class NotFound(Exception):
    """No such run, step or attempt (a 404 page)."""


def create_app(
    dsn: str,
    *,
    auth: str = "none",
    hosts: frozenset[str] | None = None,
    secure: bool = False,
) -> Starlette:
    """
    The inspector for the database `dsn` (its login role decides the lane).

    :param auth: "none": every page runs as `dsn`'s login; "login": visitors sign in with a
        database login and password and every page runs as that login (`dsn` gives the host,
        port and database only).
    :param hosts: the names accepted in ``Host`` (:func:`guard.host_names`; loopback by default).
    :param secure: the session cookie is Secure (the inspector is served over TLS).
    :return: an ASGI application; the pool opens now and closes at shutdown.
    """
    if auth not in guard.AUTH_MODES:
        raise ValueError(f"auth must be one of {guard.AUTH_MODES}, not {auth!r}")
    login_mode = auth == "login"
    pool = None if login_mode else open_pool(dsn)
    sessions = guard.Sessions(dsn, CONNECT_KWARGS, page_json) if login_mode else None
    key = secrets.token_bytes(32)  # signs each browser session's CSRF token
    registry = CollectorRegistry(auto_describe=False)
    if pool is not None:
        registry.register(SnapshotCollector(pool))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    templates = Jinja2Templates(env=env)
    env.globals.update(
        show=view.show, dur=view.dur, age=view.age, stamp=view.stamp, usd=view.usd, num=view.num
    )
    env.globals.update(line=view.line, whole=view.whole, count=view.count)
    env.globals.update(body=view.body, tool_state=view.tool_state, redact=view.redact, statuses=STATUSES)

    def sid_of(request: Request) -> str | None:
        sid = request.scope.get("state", {}).get("sid")
        return sid if isinstance(sid, str) else None

    def source(request: Request) -> Any:
        """Where this request's connections come from: the shared pool or the visitor's session."""
        if pool is not None:
            return pool
        assert sessions is not None
        visitor = sessions.get(sid_of(request))
        if visitor is None:
            raise guard.SessionEnded("not signed in")
        return visitor

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> Response:
        with source(request).connection() as conn:
            role, operator = q.whoami(conn)
        ctx = {
            "request": request,
            "role": role,
            "operator": operator,
            "msg": request.query_params.get("msg"),
            "csrf": guard.csrf_token(key, sid_of(request) or ""),
            "signed_in": login_mode,
        } | ctx
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    def read(request: Request, fn: Any, *args: Any) -> Any:
        with source(request).connection() as conn:
            return fn(conn, *args)

    def int_param(request: Request, name: str) -> int | None:
        raw = request.query_params.get(name) or request.path_params.get(name)
        if raw in (None, ""):
            return None
        try:
            value = int(raw)
        except ValueError:
            raise NotFound(f"{name} must be a number") from None
        if not _BIGINT[0] <= value <= _BIGINT[1]:
            raise NotFound(f"no {name} {raw}")
        return value

    # --- pages ------------------------------------------------------------------------------

    def runs(request: Request) -> Response:
        filters = {k: v for k in FILTERS if (v := request.query_params.get(k, "").strip())}
        after = int_param(request, "after")
        try:
            rows = read(request, q.runs_page, after, filters)
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
        with source(request).connection() as conn:
            status = q.run(conn, run_id or 0)
            if status is None:
                raise NotFound(f"no run {run_id}")
            row = q.run_row(conn, status["run_id"])
            steps = q.run_steps(conn, status["run_id"])
            events = q.run_events(conn, status["run_id"])
            audit = q.run_audit(conn, status["run_id"])
            streams = _streams(conn, status["run_id"])
        ctx = {
            "streams": streams,
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

    def stream(request: Request) -> Response:
        """
        Server-sent events of one stream of a run (docs/streams.md): ``event: chunk`` with
        ``{seq, attempt_no, chunk}`` and ``id: seq`` per chunk after ``after`` (or the browser's
        Last-Event-ID, so a reconnecting EventSource resumes where it was), then ``event: end``
        once the run has ended and everything is sent. A connection is held only for each read;
        one response lasts at most STREAM_RESPONSE_S, the EventSource then reconnects.
        """
        run_id = int_param(request, "run_id") or 0
        channel = request.query_params.get("channel", "")
        after = int(request.headers.get("last-event-id") or int_param(request, "after") or 0)
        read(request, db.stream_channels, run_id)  # an unknown run (or one not ours) is a 404 now

        def events() -> Iterator[str]:
            nonlocal after
            until = time.monotonic() + STREAM_RESPONSE_S
            while time.monotonic() < until:
                with source(request).connection() as conn:
                    chunks = db.stream_read(conn, run_id, channel, after_seq=after, limit=1000)
                for k in chunks:
                    data = json.dumps({"seq": k.seq, "attempt_no": k.attempt_no, "chunk": k.chunk})
                    yield f"id: {k.seq}\nevent: chunk\ndata: {data}\n\n"
                    after = k.seq
                if chunks:
                    continue
                if read(request, db.run_status, run_id).status != "running":
                    yield "event: end\ndata: {}\n\n"
                    return
                yield ": waiting\n\n"
                time.sleep(STREAM_POLL_S)

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    def step(request: Request) -> Response:
        step_id = int_param(request, "step_id") or 0
        with source(request).connection() as conn:
            st = q.step(conn, step_id)
            if st is None:
                raise NotFound(f"no step {step_id}")
            origin, forks = q.fork_links(conn, st["run_id"], step_id)
            ctx = {
                "step": st,
                "origin": origin,
                "forks": forks,
                "attempts": q.attempts(conn, step_id),
                "events": q.run_events(conn, st["run_id"], step_id)[: q.MAX_EVENTS],
                "children": q.children(conn, step_id),
                "agent": q.agent_of(conn, step_id),
                "max_children": q.MAX_CHILDREN,
            }
        return page(request, "step.html", ctx)

    def transcript(request: Request) -> Response:
        step_id = int_param(request, "step_id") or 0
        with source(request).connection() as conn:
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
        with source(request).connection() as conn:
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

    def fork_diff(request: Request) -> Response:
        step_id = int_param(request, "step_id") or 0
        with source(request).connection() as conn:
            st = q.step(conn, step_id)
            if st is None:
                raise NotFound(f"no step {step_id}")
            origin, _ = q.fork_links(conn, st["run_id"], step_id)
            if origin is None:
                raise NotFound(f"step {step_id} is not a fork")
            mine = q.agent_of(conn, step_id)
            theirs = q.agent_of(conn, int(origin["from_step"]))
            if mine is None or theirs is None:
                raise NotFound(f"step {step_id} or the step it was forked from has no agent run")
            lines = view.diff(
                view.agent_text(theirs, q.transcript(conn, theirs["agent_run_id"])),
                view.agent_text(mine, q.transcript(conn, mine["agent_run_id"])),
                f"step {origin['from_step']} (original)",
                f"step {step_id} (fork at iteration {origin['at_iteration']})",
            )
        ctx = {"step": st, "origin": origin, "lines": lines}
        return page(request, "fork_diff.html", ctx)

    def whole_attempt(request: Request) -> Response:
        attempt_id = int_param(request, "attempt_id") or 0
        fld = request.path_params["field"]
        row = read(request, q.attempt, attempt_id)
        if row is None or fld not in WHOLE_FIELDS:
            raise NotFound(f"no {fld} of attempt {attempt_id}")
        return _plain(view.text_of(row[fld]))

    def whole_trace(request: Request) -> Response:
        agent_run_id = int_param(request, "agent_run_id") or 0
        it, seq = int_param(request, "iteration"), int_param(request, "seq")
        rows = read(request, q.transcript, agent_run_id)
        found = [r for r in rows if r["iteration"] == it and r["seq"] == seq]
        if not found:
            raise NotFound(f"no block {it}.{seq} in agent run {agent_run_id}")
        return _plain(view.text_of(found[0]["content"]))

    def dead_letters(request: Request) -> Response:
        rows = read(request, q.dead_letters, int_param(request, "after"))
        more = len(rows) > q.PAGE
        rows = rows[: q.PAGE]
        next_url = f"/dead-letters?after={rows[-1]['attempt_id']}" if more else None
        return page(request, "dead_letters.html", {"rows": rows, "next_url": next_url})

    def approvals(request: Request) -> Response:
        return page(request, "approvals.html", {"rows": read(request, q.approvals)})

    def workers(request: Request) -> Response:
        return page(request, "workers.html", {"rows": read(request, q.workers)})

    def queues(request: Request) -> Response:
        return page(request, "queues.html", {"rows": read(request, q.queues)})

    def costs(request: Request) -> Response:
        days = min(max(int_param(request, "days") or 14, 1), 92)
        return page(request, "costs.html", {"rows": read(request, q.costs, days), "days": days})

    def metrics(request: Request) -> Response:
        if pool is not None:
            return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
        mine = CollectorRegistry(auto_describe=False)  # the visitor's own lane
        mine.register(SnapshotCollector(source(request)))
        return Response(generate_latest(mine), media_type=CONTENT_TYPE_LATEST)

    # --- actions ----------------------------------------------------------------------------

    async def action(request: Request) -> Response:
        form = await request.form()
        if not guard.csrf_ok(key, sid_of(request), str(form.get("csrf", ""))):
            return PlainTextResponse("refused: missing or wrong CSRF token", status_code=403)
        src = source(request)
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
        gate = str(form.get("gate", "")) or None
        payload: Any = None
        if kind == "approve" and decision == "edit":
            # edited tool arguments: a JSON object, checked here and again by approve() in SQL
            payload, refused = _edited_arguments(str(form.get("arguments", "")))
            if refused:
                return PlainTextResponse(f"refused: {refused}", status_code=400)
            decision = "approve"
        try:
            done = await run_in_threadpool(_act, src, kind, target, decision, note, gate, payload)
        except psycopg.Error as e:
            status = 403 if e.sqlstate == "42501" else 409
            text = e.diag.message_primary or str(e)
            return page(request, "refused.html", {"kind": kind, "target": target, "error": text}, status)
        sep = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{sep}{urlencode({'msg': done})}", status_code=303)

    def _act(
        src: Any, kind: str, target: int, decision: str, note: str, gate: str | None, payload: Any
    ) -> str:
        with src.connection() as conn:
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
                q.decide(conn, target, decision, note, gate, payload)
                edited = " with edited arguments" if payload is not None else ""
                return f"step {target}: {decision}d{edited}"
        raise NotFound(f"no action {kind}")

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(f"not found: {exc}", status_code=404)

    async def db_error(request: Request, exc: Exception) -> Response:
        # an id the login may not see answers exactly as an unknown one
        if isinstance(exc, psycopg.Error) and exc.sqlstate in _NOT_FOUND_STATES:
            return PlainTextResponse("not found", status_code=404)
        raise exc

    async def signed_out(request: Request, exc: Exception) -> Response:
        if request.method in guard.SAFE_METHODS:
            return RedirectResponse("/login", status_code=303)
        return PlainTextResponse(f"refused: {exc}; sign in again", status_code=403)

    # --- signing in (auth="login") --------------------------------------------------------------

    def login_form(request: Request, error: str | None = None, status: int = 200) -> Response:
        ctx = {"request": request, "csrf": guard.csrf_token(key, sid_of(request) or ""), "error": error}
        return templates.TemplateResponse(request, "login.html", ctx, status_code=status)

    async def login(request: Request) -> Response:
        assert sessions is not None
        if request.method == "GET":
            return login_form(request)
        form = await request.form()
        if not guard.csrf_ok(key, sid_of(request), str(form.get("csrf", ""))):
            return PlainTextResponse("refused: missing or wrong CSRF token", status_code=403)
        client = request.client.host if request.client else "?"
        if sessions.throttled(client):
            return login_form(request, "too many failed sign-ins from this address; wait a few minutes", 429)
        name, password = str(form.get("login", "")).strip(), str(form.get("password", ""))
        if not name or not password or len(name) > 63 or len(password) > 1000:
            return login_form(request, "give a login name and its password", 400)
        try:
            sid = await run_in_threadpool(sessions.sign_in, name, password, client)
        except psycopg.OperationalError:
            return login_form(
                request, "sign-in failed: wrong login name or password, or the database refused it", 401
            )
        sessions.sign_out(sid_of(request))  # the session id changes at sign-in
        response = RedirectResponse("/runs", status_code=303)
        response.headers.append("set-cookie", guard.set_cookie(sid, secure=secure).decode())
        return response

    async def logout(request: Request) -> Response:
        assert sessions is not None
        form = await request.form()
        if not guard.csrf_ok(key, sid_of(request), str(form.get("csrf", ""))):
            return PlainTextResponse("refused: missing or wrong CSRF token", status_code=403)
        sessions.sign_out(sid_of(request))
        response = RedirectResponse("/login", status_code=303)
        response.headers.append("set-cookie", guard.set_cookie("", secure=secure, clear=True).decode())
        return response

    def home(request: Request) -> Response:
        return RedirectResponse("/runs", status_code=307)

    routes = [
        Route("/", home),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/stream", stream),
        Route("/steps/{step_id}", step),
        Route("/steps/{step_id}/transcript", transcript),
        Route("/steps/{step_id}/diff", diff),
        Route("/steps/{step_id}/fork-diff", fork_diff),
        Route("/whole/attempt/{attempt_id}/{field}", whole_attempt),
        Route("/whole/trace/{agent_run_id}/{iteration}/{seq}", whole_trace),
        Route("/dead-letters", dead_letters),
        Route("/approvals", approvals),
        Route("/workers", workers),
        Route("/queues", queues),
        Route("/costs", costs),
        Route("/metrics", metrics),
        Route("/actions/{kind}", action, methods=["POST"]),
        *(
            [Route("/login", login, methods=["GET", "POST"]), Route("/logout", logout, methods=["POST"])]
            if login_mode
            else []
        ),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if pool is not None:
            pool.close()
        if sessions is not None:
            sessions.close()

    app = Starlette(
        routes=routes,
        exception_handlers={
            NotFound: not_found,
            psycopg.Error: db_error,
            guard.SessionEnded: signed_out,
        },
        middleware=[
            Middleware(
                guard.Guard,
                hosts=hosts if hosts is not None else guard.host_names("127.0.0.1"),
                secure=secure,
            )
        ],
        lifespan=lifespan,
    )
    app.state.csrf_of = lambda sid: guard.csrf_token(key, sid)
    return app


STREAM_POLL_S = 0.2  # between two reads of a stream with nothing new (no connection held meanwhile)
STREAM_RESPONSE_S = 300.0  # one server-sent events response at most; the browser reconnects
STREAM_PAGE_CHUNKS = 10000  # chunks of each stream the run page shows; the live view goes on from there


def _streams(conn: psycopg.Connection[Any], run_id: int) -> list[dict[str, Any]]:
    """Each stream of the run for its page: channel, text so far (an attempt's switch marked), last seq."""
    out = []
    for s in db.stream_channels(conn, run_id):
        chunks = db.stream_read(conn, run_id, s.channel, limit=STREAM_PAGE_CHUNKS)
        text, attempt = [], None
        for k in chunks:
            if attempt is not None and k.attempt_no != attempt:
                text.append(f"\n— attempt {k.attempt_no} —\n")
            attempt = k.attempt_no
            text.append(k.chunk)
        out.append(
            {
                "channel": s.channel,
                "text": "".join(text),
                "seq": chunks[-1].seq if chunks else 0,
                "attempt": attempt,
                "clipped": s.last_seq > (chunks[-1].seq if chunks else 0),
            }
        )
    return out


def _plain(text: str) -> Response:
    """A whole value as text/plain: never interpreted by the browser."""
    return PlainTextResponse(text)


def serve(
    dsn: str,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    auth: str = "none",
    allow_hosts: list[str] | tuple[str, ...] = (),
    tls_cert: str | None = None,
    tls_key: str | None = None,
) -> None:
    """
    Serve the inspector for `dsn` on host:port (localhost by default) until interrupted.

    :raises guard.Refused: a non-loopback `host` without ``auth="login"``, or a wildcard bind
        (0.0.0.0, ::) without `allow_hosts`; checked before anything binds or connects.
    """
    import uvicorn

    guard.check_bind(host, auth, allow_hosts)
    app = create_app(dsn, auth=auth, hosts=guard.host_names(host, allow_hosts), secure=tls_cert is not None)
    # log_config=None: uvicorn's loggers go to the root logger, in the CLI's --log-format
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        log_config=None,
        ssl_certfile=tls_cert,
        ssl_keyfile=tls_key,
    )
