"""
Operating commands of the ``pgflight`` CLI: the worker, submitting and inspecting runs, and what
shows stuck work (``workers``, ``approvals``, the states of :mod:`pgflight.cli.state`).

Registered onto the root app by :func:`register`. Every read command takes ``--json`` (one JSON
document on stdout). Failures are raised and printed by :func:`pgflight.cli.context.report`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal

import psycopg
import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.tree import Tree

from pgflight import db, fmt, logs, models, tracing
from pgflight.cli import flow as cli_flow
from pgflight.cli import state
from pgflight.cli.context import Cli, CliError, current, usage
from pgflight.cli.tables import JsonOpt, Listing, dump_json
from pgflight.embedded import command_name

RunArg = Annotated[int, typer.Argument(metavar="RUN", help="Run id.", min=1, show_default=False)]
StepArg = Annotated[int, typer.Argument(metavar="STEP", help="Step id.", min=1, show_default=False)]
ReasonOpt = Annotated[
    str | None, typer.Option("--reason", metavar="TEXT", help="Why (kept in the events log).")
]
RunStatus = Literal["running", "succeeded", "failed", "cancelled"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
PreparedMode = Literal["auto", "on", "off"]

STATE_STYLE: Final = {
    "succeeded": "green",
    "dead_letter": "red",
    "failed": "red",
    "cancelled": "yellow",
    "running": "cyan",
    "queued": "white",
    "cancel_requested": "yellow",
    "lease_expired": "red",
}


def _style(status: str) -> str:
    style = STATE_STYLE.get(status, "magenta" if status.startswith("waiting") else "white")
    return f"[{style}]{escape(status)}[/]"


def _short(value: Any, n: int = 60) -> str:
    text = value if isinstance(value, str) else (json.dumps(value, default=str) if value is not None else "")
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _message(error: Any) -> str:
    """The message of an attempt's error (a dict with "message", or anything)."""
    if isinstance(error, dict) and "message" in error:
        return str(error["message"])
    return _short(error, 200)


def _actor() -> str:
    return os.environ.get("PGFLIGHT_ACTOR") or os.environ.get("USER") or "cli"


def _warn(cli: Cli, unserved: list[str]) -> None:
    """A warning per recipe that has waiting steps and no live worker to run them."""
    for r in unserved:
        cli.err.print(
            f"[yellow]warning:[/] no live worker serves recipe {escape(r)}: its steps wait until one"
            f" runs (`{command_name()} worker --recipes MODULE`; see `{command_name()} workers`)",
            soft_wrap=True,
        )


# --- worker ------------------------------------------------------------------------------------


def worker(
    recipes: Annotated[
        str,
        typer.Option(
            "--recipes",
            metavar="MODULES",
            help="Python modules whose recipes this worker runs (only those), separated by ':' or ','.",
        ),
    ],
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", metavar="N", min=1, help="Steps run at once.")
    ] = 4,
    batch_size: Annotated[
        int | None,
        typer.Option("--batch-size", metavar="N", min=1, help="Most steps per claim (default: concurrency)."),
    ] = None,
    claim_coalesce: Annotated[
        float,
        typer.Option(
            "--claim-coalesce",
            metavar="SECONDS",
            min=0,
            max=1,
            help=(
                "While a backlog lasts, how long a freed slot waits for more to free, so that one"
                " claim takes a whole batch (0: at once)."
            ),
        ),
    ] = 0.005,
    lease: Annotated[
        float, typer.Option("--lease", metavar="SECONDS", min=0.1, help="Lease of a claim.")
    ] = 30.0,
    grace: Annotated[
        float, typer.Option("--grace", metavar="SECONDS", min=0, help="Time running steps get after SIGTERM.")
    ] = 10.0,
    heartbeat: Annotated[
        float | None,
        typer.Option(
            "--heartbeat", metavar="SECONDS", min=0.01, help="Heartbeat interval (default: lease / 3)."
        ),
    ] = None,
    poll: Annotated[
        float, typer.Option("--poll", metavar="SECONDS", min=0.01, help="Poll interval while LISTEN works.")
    ] = 2.0,
    listen_dsn: Annotated[
        str | None,
        typer.Option(
            "--listen-dsn",
            metavar="DSN",
            envvar="PGFLIGHT_LISTEN_DSN",
            help="Direct connection for LISTEN when the DSN is a pooler (default: the DSN).",
        ),
    ] = None,
    no_listen: Annotated[bool, typer.Option("--no-listen", help="Poll only.")] = False,
    pool_size: Annotated[
        int, typer.Option("--pool-size", metavar="N", min=1, help="Connections for control calls.")
    ] = 2,
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME", help="Worker name (default: host:pid).")
    ] = None,
    prepared_statements: Annotated[
        PreparedMode,
        typer.Option(
            "--prepared-statements",
            metavar="MODE",
            envvar="PGFLIGHT_PREPARED_STATEMENTS",
            case_sensitive=False,
            help=(
                "Server-side prepared statements: auto (once LISTEN shows the DSN is a direct"
                " connection), on (direct, or PgBouncer >= 1.21 with max_prepared_statements), off."
            ),
        ),
    ] = "auto",
    log_level: Annotated[
        LogLevel,
        typer.Option(
            "--log-level",
            metavar="LEVEL",
            case_sensitive=False,
            help="DEBUG, INFO, WARNING or ERROR.",
        ),
    ] = "INFO",
    traces: Annotated[
        bool,
        typer.Option(
            "--traces", help="Export OpenTelemetry traces (OTLP; on when OTEL_EXPORTER_OTLP_ENDPOINT is set)."
        ),
    ] = False,
) -> None:
    """
    Run a worker until SIGTERM or SIGINT: claim, run, heartbeat, complete.

    The worker runs exactly the recipes of the modules named by --recipes (defined in them or
    registered by their imports); a module with none is an error.
    """
    from pgflight.recipes import load_modules
    from pgflight.worker import Worker

    cli = current()
    modules = [m.strip() for part in recipes.split(":") for m in part.split(",") if m.strip()]
    if not modules:
        raise usage("--recipes names no module")
    sys.path.insert(0, os.getcwd())
    try:
        registry = load_modules(modules)
    except ImportError as e:
        raise usage(f"cannot import a recipe module: {e}", "check --recipes and PYTHONPATH") from None
    except ValueError as e:
        raise usage(str(e)) from None
    logs.setup(log_level)
    w = Worker(
        cli.dsn(),
        registry,
        concurrency=concurrency,
        batch_size=batch_size,
        claim_coalesce_s=claim_coalesce,
        lease_s=lease,
        heartbeat_s=heartbeat,
        grace_s=grace,
        poll_s=poll,
        listen_dsn=listen_dsn,
        listen=not no_listen,
        pool_size=pool_size,
        name=name,
        prepared_statements=prepared_statements.lower(),
    )
    tracing.configure_from_env(force=traces)
    w.run()
    tracing.shutdown()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # step threads still running after their release must not hold the process


# --- submit and decide -------------------------------------------------------------------------


def submit(
    recipe: Annotated[
        str | None,
        typer.Argument(
            metavar="RECIPE",
            help="Recipe name (with --from-jsonl: of the lines that name none).",
            show_default=False,
        ),
    ] = None,
    input_json: Annotated[str, typer.Argument(metavar="INPUT", help="The input, as JSON.")] = "{}",
    workspace: Annotated[
        str, typer.Option("--workspace", "-w", metavar="NAME", help="Workspace (created if missing).")
    ] = "default",
    key: Annotated[
        str | None, typer.Option("--key", metavar="KEY", help="Idempotency key: the same key, the same run.")
    ] = None,
    priority: Annotated[
        int | None, typer.Option("--priority", metavar="N", help="Higher runs first (default 0).")
    ] = None,
    delay: Annotated[
        float | None, typer.Option("--delay", metavar="SECONDS", min=0, help="Not claimable before this.")
    ] = None,
    max_attempts: Annotated[
        int | None,
        typer.Option(
            "--max-attempts", metavar="N", min=1, help="Attempts before the dead letter (default: settings)."
        ),
    ] = None,
    from_jsonl: Annotated[
        typer.FileText | None,
        typer.Option(
            "--from-jsonl",
            metavar="FILE",
            help='Submit one run per line of FILE ("-": stdin), each {"recipe", "input", "options",'
            ' "idempotency_key"}, by submit_runs in statements of --chunk lines (each all or nothing).',
        ),
    ] = None,
    chunk: Annotated[
        int, typer.Option("--chunk", metavar="N", min=1, help="Lines per submit_runs call.")
    ] = 1000,
    as_json: JsonOpt = False,
) -> None:
    """Submit a run and print its id (or many with --from-jsonl); warn when no live worker serves a recipe."""
    cli = current(as_json)
    options: dict[str, Any] = {"submitted_by": _actor()}
    if priority is not None:
        options["priority"] = priority
    if max_attempts is not None:
        options["max_attempts"] = max_attempts
    if delay:
        options["delay_s"] = delay
    if from_jsonl is not None:
        if key is not None:
            raise usage("--key names one run; with --from-jsonl put idempotency_key on each line")
        _submit_jsonl(cli, from_jsonl, recipe, workspace, options, chunk)
        return
    if recipe is None:
        raise usage("RECIPE is required (or --from-jsonl FILE)")
    try:
        value = json.loads(input_json)
    except json.JSONDecodeError as e:
        raise usage(f"INPUT is not JSON: {e}") from None
    with cli.connect() as c:
        db.create_workspace(c, workspace)
        r = db.submit_run(c, workspace, recipe, value, idempotency_key=key, options=options)
        if r.created:
            _warn(cli, state.unserved(c, [recipe]))
    if cli.json:
        dump_json(r)
    else:
        cli.out.print(
            f"run {r.run_id} {'submitted' if r.created else 'already submitted (same key)'}"
            f" (step {r.step_id})"
        )


def _submit_jsonl(
    cli: Cli, lines: Any, recipe: str | None, workspace: str, options: dict[str, Any], chunk: int
) -> None:
    """`submit --from-jsonl`: submit_runs per `chunk` lines; a bad line refuses its chunk (and stops)."""
    made = seen = 0
    recipes: set[str] = set()
    rows: list[models.SubmittedRunItem] = []
    with cli.connect() as c:
        db.create_workspace(c, workspace)
        batch: list[dict[str, Any]] = []

        def flush() -> None:
            nonlocal made, seen
            if batch:
                done = db.submit_many(c, workspace, batch, options=options)
                made += sum(r.created for r in done)
                seen += len(done)
                rows.extend(done)
                batch.clear()

        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
            except json.JSONDecodeError as e:
                raise usage(f"line {n} is not JSON: {e}") from None
            if not isinstance(run, dict):
                raise usage(f"line {n} is not a JSON object")
            if recipe is not None:
                run.setdefault("recipe", recipe)
            recipes.add(str(run.get("recipe")))
            batch.append(run)
            if len(batch) >= chunk:
                flush()
        flush()
        if made:
            _warn(cli, state.unserved(c, sorted(recipes)))
    if cli.json:
        dump_json(rows)
    else:
        cli.out.print(f"{made} runs submitted, {seen - made} already submitted (same key)")


def cancel(run: RunArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Cancel a run: every unfinished step stops."""
    cli = current(as_json)
    with cli.connect() as c:
        r = db.cancel_run(c, run, actor=_actor(), reason=reason or "cancelled from the CLI")
    if cli.json:
        dump_json(r)
    elif r.was_running:
        cli.out.print(
            f"run {run} cancelled: {fmt.count(r.cancelled, 'attempt')} cancelled, "
            f"{fmt.count(r.cancel_requested, 'running attempt')} asked to stop"
        )
    else:
        cli.out.print(f"run {run} had already finished: nothing to cancel")


def approve(
    step: StepArg,
    decision: Annotated[
        Literal["approve", "reject"],
        typer.Argument(
            metavar="DECISION",
            help="approve or reject.",
            show_default=False,
        ),
    ],
    note: Annotated[
        str | None,
        typer.Option(
            "--reason", "--note", metavar="TEXT", help="Why (kept with the decision); --note is the same."
        ),
    ] = None,
    gate: Annotated[
        str | None, typer.Option("--gate", metavar="KEY", help="Gate key (default: the pending one).")
    ] = None,
    payload: Annotated[
        str | None,
        typer.Option(
            "--payload",
            metavar="JSON",
            help="JSON handed to the step with the decision; a tool gate takes"
            ' {"arguments": {...}} or {"message": "..."}.',
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Decide a step's approval gate (see `pgflight approvals`)."""
    cli = current(as_json)
    try:
        data = None if payload is None else json.loads(payload)
    except ValueError as e:
        raise typer.BadParameter(f"--payload is not JSON: {e}") from None
    with cli.connect() as c:
        r = db.approve(c, step, decision, _actor(), note=note, gate_key=gate, payload=data)
    if cli.json:
        dump_json(r)
    else:
        cli.out.print(
            f"step {r.step_id} gate {escape(r.gate_key)}: {r.decision}"
            + ("" if r.applied else " (already decided so)")
        )


def retry(step: StepArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Give a dead-lettered step a fresh attempt."""
    cli = current(as_json)
    with cli.connect() as c:
        a = db.retry_step(c, step, actor=_actor(), note=reason)
    dump_json({"step_id": step, "attempt_id": a}) if cli.json else cli.out.print(
        f"step {step}: new attempt {a}"
    )


def replay(step: StepArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Run a finished step again, then what depends on it."""
    cli = current(as_json)
    with cli.connect() as c:
        a = db.replay_from(c, step, actor=_actor(), note=reason)
    if cli.json:
        dump_json({"step_id": step, "attempt_id": a})
    else:
        cli.out.print(f"step {step}: replaying as attempt {a}")


# --- runs and show -----------------------------------------------------------------------------


def runs(
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="Show at most this many.")
    ] = 20,
    status: Annotated[
        RunStatus | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Only runs with this status: running, succeeded, failed or cancelled.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """
    List recent runs, newest first, with their state.

    A running run's state says what it waits for: running, queued (no worker has claimed it),
    waiting (approval | backoff | delay | children).
    """
    cli = current(as_json)
    with cli.connect() as c:
        rows = db.list_runs(c, limit=limit, status=status)
        states = {
            r.run_id: state.run_state(
                r.status, state.live_steps(c, r.run_id) if r.status == "running" else []
            )
            for r in rows
        }
    if cli.json:
        dump_json([{**r.model_dump(mode="json"), "state": states[r.run_id]} for r in rows])
        return
    if not rows:
        cli.out.print(f"no {status} runs" if status else "no runs")
        return
    t = Listing(
        "run",
        "workspace",
        "recipe",
        "state",
        "created",
        "took",
        flexible=("workspace", "recipe"),
        right=("run",),
    )
    for r in rows:
        t.add_row(
            str(r.run_id),
            escape(r.workspace),
            escape(r.recipe),
            _style(states[r.run_id]),
            f"{r.created_at:%Y-%m-%d %H:%M:%S}",
            fmt.between(r.created_at, r.finished_at),
        )
    cli.out.print(t)


def show(run: RunArg, as_json: JsonOpt = False) -> None:
    """
    Show a run as a tree of steps with state, attempts and durations.

    Also: the last error of a step waiting to retry, the approval gates it waits on, a warning for
    each recipe with waiting steps that no live worker serves, and its workspace's flow control.
    """
    from pgflight.db import flow

    cli = current(as_json)
    with cli.connect() as c:
        st = db.run_status(c, run)
        steps = db.run_steps(c, run)
        live = state.live_steps(c, run)
        gates = state.pending_gates(c, run) if any(s.status == "awaiting_approval" for s in live) else []
        waiting = [s.recipe for s in live if s.state in ("queued", "waiting (backoff)", "waiting (delay)")]
        unserved = state.unserved(c, waiting)
        caps = flow.workspace_flow(c, st.workspace)
    live_of = {s.step_id: s for s in live}
    run_state = state.run_state(st.status, live)
    if cli.json:
        dump_json(
            {
                "run": {**st.model_dump(mode="json"), "state": run_state},
                "steps": [
                    {
                        **s.model_dump(mode="json"),
                        "state": live_of[s.step_id].state if s.step_id in live_of else s.status,
                        "last_error": live_of[s.step_id].last_error if s.step_id in live_of else None,
                    }
                    for s in steps
                ],
                "pending_gates": [g.model_dump(mode="json") for g in gates],
                "unserved_recipes": unserved,
                "workspace_flow": caps[0].model_dump(mode="json") if caps else None,
            }
        )
        return
    cli.out.print(_tree(st, run_state, steps, live_of))
    for g in gates:
        cli.out.print(
            f"step {g.step_id} waits for approval at gate {escape(g.gate_key)}: "
            f"decide with `{command_name()} approve {g.step_id} approve` (or reject)"
            + (f"; {g.default_decision} applies at {g.expires_at:%Y-%m-%d %H:%M:%S}" if g.expires_at else ""),
            soft_wrap=True,
        )
    _warn(cli, unserved)
    if caps:
        cli.out.print(cli_flow.flow_line(caps[0]))


def _tree(
    st: models.RunStatus, run_state: str, steps: list[models.StepState], live: dict[int, state.LiveStep]
) -> Tree:
    root = Tree(
        f"run {st.run_id} [bold]{escape(st.recipe)}[/] {_style(run_state)} · "
        f"{fmt.count(st.steps_total, 'step')}, {fmt.count(st.attempts_total, 'attempt')} · "
        f"{fmt.between(st.created_at, st.finished_at)}"
    )
    nodes: dict[int | None, Tree] = {None: root}
    children_of: dict[int | None, list[models.StepState]] = {}
    for s in steps:
        children_of.setdefault(s.parent_id, []).append(s)
    stack: list[int | None] = [None]
    while stack:
        parent = stack.pop()
        kids = children_of.get(parent, [])
        shown = kids[:50]
        for s in shown:
            ls = live.get(s.step_id)
            name, result = _step_name(s)
            label = (
                f"{escape(name)} [dim]step {s.step_id}[/] [bold]{escape(s.recipe)}[/] "
                f"{_style(ls.state if ls else s.status)} {fmt.attempt(s.attempt_no, s.max_attempts)}"
                f" {fmt.between(s.started_at or s.claimed_at, s.finished_at)}"
            )
            if s.error:
                label += f" [red]{escape(_short(_message(s.error)))}[/]"
            elif ls is not None and ls.last_error is not None:
                label += f" [red]last error: {escape(_short(_message(ls.last_error)))}[/]"
            elif result is not None:
                label += f" → {escape(_short(result))}"
            nodes[s.step_id] = nodes[parent].add(label)
            stack.append(s.step_id)
        if len(kids) > len(shown):
            nodes[parent].add(f"… {fmt.count(len(kids) - len(shown), 'more step')}")
    return root


_HASH_KEY: Final = re.compile(r"^[0-9a-f]{16,}$")
_NAME_FIELDS: Final = ("name", "title", "path", "document", "file")


def _step_name(s: models.StepState) -> tuple[str, Any]:
    """
    What names a step in the tree, and the rest of its result to preview: its key, unless the key
    is a hash (spawned by content, as the review's documents are) and the result names the step
    (a string field ``name``, ``title``, ``path``, ``document`` or ``file``): then that name.
    """
    if _HASH_KEY.match(s.step_key) and isinstance(s.result, dict):
        for field in _NAME_FIELDS:
            value = s.result.get(field)
            if isinstance(value, str) and value:
                rest = {k: v for k, v in s.result.items() if k != field}
                return value, rest or None
    return s.step_key, s.result


# --- events ------------------------------------------------------------------------------------

_AGE_RX: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$")
_UNIT_S: Final = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_since(value: str) -> datetime:
    """``--since``: an age (``90s``, ``10m``, ``2h``, ``1d``) or an ISO time. :raises CliError: neither."""
    m = _AGE_RX.match(value)
    if m:
        return datetime.now(UTC) - timedelta(seconds=float(m.group(1)) * _UNIT_S[m.group(2)])
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise usage(
            f"--since {value!r}: give an age (90s, 10m, 2h, 1d) or a time (2026-11-30T17:00)"
        ) from None
    return at if at.tzinfo else at.astimezone()


_EVENTS_SQL: Final = (
    "select * from pgflight.run_events where run_id = %(run)s"
    " and (%(step)s::bigint is null or step_id = %(step)s)"
    " and (%(since)s::timestamptz is null or at >= %(since)s)"
    " and (%(after)s::bigint is null or id > %(after)s)"
    " and (%(before)s::bigint is null or id < %(before)s)"
)


def _events(c: psycopg.Connection[Any], params: dict[str, Any], *, newest: int | None) -> list[models.Event]:
    order = "order by id desc limit %(limit)s" if newest else "order by id"
    with c.cursor(row_factory=psycopg.rows.class_row(models.Event)) as cur:
        rows = cur.execute(_EVENTS_SQL + " " + order, {**params, "limit": newest}).fetchall()
    return rows[::-1] if newest else rows


def _event_line(e: models.Event) -> str:
    change = f"{e.from_status or ''}→{e.to_status or ''}" if e.from_status or e.to_status else ""
    step = f"step {e.step_id}" if e.step_id else "run"
    detail = _short(e.detail, 80) if e.detail else ""
    return f"{e.id} {e.at:%H:%M:%S.%f}"[:-3] + f" {step} {change} {e.reason} {detail}".rstrip()


def events(
    run: RunArg,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", min=1, help="Show the newest N.")] = 50,
    before: Annotated[
        int | None, typer.Option("--before", metavar="ID", min=1, help="Page back: events before this id.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="AGE|TIME", help="Only events since: 90s, 10m, 2h, 1d or a time."),
    ] = None,
    step: Annotated[
        int | None, typer.Option("--step", metavar="STEP", min=1, help="Only this step's events.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events until the run ends.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """
    The transition log of a run: the newest events, oldest first, and how many came earlier.

    Page back with --before (the id the "earlier" line names); --follow prints new events as
    they happen until the run ends (or Ctrl-C).
    """
    cli = current(as_json)
    params = {
        "run": run,
        "step": step,
        "since": parse_since(since) if since else None,
        "after": None,
        "before": before,
    }
    with cli.connect() as c:
        db.run_status(c, run)  # ZF003 for an unknown run
        rows = _events(c, params, newest=limit)
        earlier = 0
        if rows:
            row = c.execute(
                f"select count(*) from ({_EVENTS_SQL}) e", {**params, "before": rows[0].id}
            ).fetchone()
            earlier = int(row[0]) if row else 0
        if cli.json and not follow:
            dump_json({"events": [e.model_dump(mode="json") for e in rows], "earlier": earlier})
            return
        if not cli.json:
            if earlier:
                cli.out.print(
                    f"[dim]{fmt.count(earlier, 'earlier event')} (see them with --before {rows[0].id})[/]"
                )
            if rows and not follow:
                cli.out.print(_events_table(rows))
            elif not rows:
                cli.out.print("no events" + (" match" if step or since or before else ""))
        if follow:
            _follow(cli, c, params, rows)


def _events_table(rows: list[models.Event]) -> Listing:
    t = Listing(
        "id",
        "at",
        "step",
        "change",
        "reason",
        "detail",
        # a state change is whole like an id (docs/quickstart.md promises whole states): only the free
        # text after it is cut
        flexible=("reason", "detail"),
        right=("id", "step"),
        max_widths={"reason": 18},
    )
    for e in rows:
        change = f"{e.from_status or ''} → {e.to_status or ''}" if e.from_status or e.to_status else ""
        t.add_row(
            str(e.id),
            f"{e.at:%H:%M:%S.%f}"[:-3],
            str(e.step_id or ""),
            escape(change),
            escape(e.reason),
            escape(_short(e.detail, 200)) if e.detail else "",
        )
    return t


def _follow(cli: Cli, c: psycopg.Connection[Any], params: dict[str, Any], shown: list[models.Event]) -> None:
    def emit(e: models.Event) -> None:
        if cli.json:
            sys.stdout.write(json.dumps(e.model_dump(mode="json"), default=str) + "\n")
            sys.stdout.flush()
        else:
            cli.out.print(escape(_event_line(e)), soft_wrap=True)

    for e in shown:
        emit(e)
    last = shown[-1].id if shown else 0
    params = {**params, "before": None}
    while True:
        finished = db.run_status(c, params["run"]).status != "running"
        new = _events(c, {**params, "after": last}, newest=None)
        for e in new:
            emit(e)
        if new:
            last = new[-1].id
        if finished:
            return
        time.sleep(0.5)


# --- watch -------------------------------------------------------------------------------------


def _progress_line(st: models.RunStatus, run_state: str) -> str:
    done = st.steps_succeeded + st.steps_dead_letter + st.steps_cancelled
    return (
        f"run {st.run_id} {run_state}: {done}/{fmt.count(st.steps_total, 'step')} done · "
        f"{st.steps_running} running · {st.steps_queued} queued · {st.steps_waiting} waiting · "
        f"{fmt.count(st.steps_dead_letter, 'dead letter')}"
    )


def watch(
    run: RunArg,
    interval: Annotated[
        float, typer.Option("--interval", metavar="SECONDS", min=0.05, help="Time between polls.")
    ] = 0.5,
    every: Annotated[
        float,
        typer.Option(
            "--every", metavar="SECONDS", min=0.1, help="Without a terminal: a progress line this often."
        ),
    ] = 10.0,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", metavar="SECONDS", min=0, help="Give up after this long (exit 1)."),
    ] = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Print the run's streams (docs/streams.md) as they come, not the progress bar.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """
    Follow a run until it ends: a live progress bar on a terminal, progress lines otherwise.

    Prints the last error of each step that waits to retry, and warns when no live worker serves
    a waiting recipe. With --stream, prints the chunks of the run's streams as they come instead
    (one JSON object per chunk with --json), marking a channel's switch to another attempt. Exit 0
    when the run succeeded, 1 otherwise.
    """
    cli = current(as_json)
    if stream:
        st = _follow_streams(cli, run, interval, timeout)
        if not cli.json:
            cli.out.print()
        _watch_end(cli, run, st)
        return
    start = time.monotonic()
    tty = cli.err.is_terminal and not cli.json
    told: set[tuple[int, int]] = set()
    warned: set[str] = set()
    with cli.connect() as c:
        st = db.run_status(c, run)
        with Progress(
            TextColumn("run {task.fields[run]} {task.fields[state]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=cli.err,
            disable=not tty,
        ) as progress:
            task = progress.add_task("run", total=max(st.steps_total, 1), run=run, state=st.status, detail="")
            last_line = ""
            next_line = 0.0
            while True:
                st = db.run_status(c, run)
                live = state.live_steps(c, run) if st.status == "running" else []
                run_state = state.run_state(st.status, live)
                done = st.steps_succeeded + st.steps_dead_letter + st.steps_cancelled
                progress.update(
                    task,
                    total=max(st.steps_total, 1),
                    completed=done,
                    state=run_state,
                    detail=f"running {st.steps_running} queued {st.steps_queued} waiting {st.steps_waiting}"
                    f" dead {st.steps_dead_letter}",
                )
                for s in live:
                    if s.last_error is not None and (s.step_id, s.attempt_no) not in told:
                        told.add((s.step_id, s.attempt_no))
                        cli.err.print(
                            f"step {s.step_id} ({escape(s.recipe)}) {s.state}, attempt {s.attempt_no}: "
                            f"last error: {escape(_short(_message(s.last_error), 200))}",
                            soft_wrap=True,
                        )
                waiting = [s.recipe for s in live if s.state == "queued" and s.recipe not in warned]
                unserved = state.unserved(c, waiting)
                warned.update(unserved)
                _warn(cli, unserved)
                now = time.monotonic()
                line = _progress_line(st, run_state)
                if not tty and not cli.json and (line != last_line or now >= next_line):
                    cli.err.print(line, soft_wrap=True)
                    last_line, next_line = line, now + every
                if st.status != "running":
                    break
                if timeout is not None and now - start > timeout:
                    raise CliError(
                        f"run {run} still {run_state} after {fmt.duration(timeout)}",
                        hint=f"see `{command_name()} show {run}`",
                    )
                time.sleep(interval)
    _watch_end(cli, run, st)


def _watch_end(cli: Cli, run: int, st: models.RunStatus) -> None:
    """The last line of watch (or the status as JSON); exit 1 unless the run succeeded."""
    if cli.json:
        dump_json(st)
    else:
        cli.out.print(
            f"run {run} {_style(st.status)} in {fmt.between(st.created_at, st.finished_at)}"
            + (f": {escape(_short(st.result, 200))}" if st.result is not None else "")
            + (f": {escape(_short(_message(st.error), 200))}" if st.error else ""),
            soft_wrap=True,
        )
    if st.status != "succeeded":
        raise typer.Exit(1)


def _follow_streams(cli: Cli, run: int, interval: float, timeout: float | None) -> models.RunStatus:
    """
    Print every chunk of every stream of `run` in order per channel until the run has ended and
    its streams are read to the end; a header when the channel printed changes, and a line on
    stderr when a channel's chunks come from another attempt (a retry's output follows).
    """
    start = time.monotonic()
    after: dict[str, int] = {}
    attempt: dict[str, int] = {}
    shown = ""
    with cli.connect() as c:
        while True:
            st = db.run_status(c, run)  # before the reads: a run seen ended has nothing more to write
            channels = [s.channel for s in db.stream_channels(c, run)]
            got = 0
            for ch in channels:
                # one channel: wait for it (a chunk shows within a poll of being written)
                wait = interval if len(channels) == 1 and st.status == "running" else 0.0
                chunks = db.stream_read(c, run, ch, after_seq=after.get(ch, 0), limit=1000, wait_s=wait)
                for k in chunks:
                    if cli.json:
                        line = {"channel": ch, "seq": k.seq, "attempt_no": k.attempt_no, "chunk": k.chunk}
                        cli.out.print(json.dumps(line), markup=False, highlight=False, soft_wrap=True)
                        continue
                    if ch != shown and len(channels) > 1:
                        # markup off: "[channel]" would be read as a style tag and print nothing
                        cli.err.print(f"\n[{ch}]", markup=False, highlight=False, soft_wrap=True)
                    shown = ch
                    if attempt.get(ch, k.attempt_no) != k.attempt_no:
                        cli.err.print(
                            f"\n[{ch}: attempt {k.attempt_no} of step {k.step_id} follows]",
                            markup=False,
                            highlight=False,
                            soft_wrap=True,
                        )
                    attempt[ch] = k.attempt_no
                    cli.out.print(k.chunk, end="", markup=False, highlight=False, soft_wrap=True)
                if chunks:
                    after[ch] = chunks[-1].seq
                    got += len(chunks)
            if st.status != "running" and got == 0:
                return st
            if timeout is not None and time.monotonic() - start > timeout:
                raise CliError(
                    f"run {run} still {st.status} after {fmt.duration(timeout)}",
                    hint=f"see `{command_name()} show {run}`",
                )
            if got == 0 and (len(channels) != 1 or st.status != "running"):
                time.sleep(interval)


# --- dead letters, workers, approvals ----------------------------------------------------------


def dead_letters(
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="Show at most this many.")
    ] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Dead-lettered steps with their last error (revive one with `pgflight retry STEP`)."""
    cli = current(as_json)
    with cli.connect() as c:
        rows = db.dead_letters(c, limit=limit)
    if cli.json:
        dump_json(rows)
        return
    if not rows:
        cli.out.print("no dead letters")
        return
    t = Listing(
        "step",
        "run",
        "key",
        "recipe",
        "attempts",
        "error",
        flexible=("key", "recipe", "error"),
        right=("step", "run", "attempts"),
    )
    for d in rows:
        t.add_row(
            str(d.step_id),
            str(d.run_id),
            escape(_short(d.step_key, 24)),
            escape(d.recipe),
            str(d.attempt_no),
            escape(_short(_message(d.error), 120)),
        )
    cli.out.print(t)


def workers(
    include_stopped: Annotated[
        bool, typer.Option("--all", "-a", help="Also the ones stopped in the last hour.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """
    Workers: who holds which steps, when each was last seen; stale ones flagged.

    A worker is stale when it has not been seen for a minute (its process is gone or stuck); its
    steps run again once their leases lapse.
    """
    cli = current(as_json)
    with cli.connect() as c:
        rows = state.workers(c, include_stopped=include_stopped)
    if cli.json:
        dump_json([{**r.model_dump(mode="json"), "state": r.state} for r in rows])
        return
    if not rows:
        cli.out.print("no workers" + ("" if include_stopped else " running (--all shows stopped ones)"))
        return
    t = Listing(
        "id", "name", "state", "last seen", "holds", "recipes", flexible=("name", "recipes"), right=("id",)
    )
    for w in rows:
        holds = ", ".join(map(str, w.holds[:5])) + (f" +{len(w.holds) - 5}" if len(w.holds) > 5 else "")
        t.add_row(
            str(w.worker_id),
            escape(w.name),
            {"alive": "[green]alive[/]", "stale": "[red]stale[/]", "stopped": "[dim]stopped[/]"}[w.state],
            fmt.ago(w.last_seen_at, w.now),
            f"{len(w.holds)}: {holds}" if w.holds else "0",
            escape(",".join(w.recipes or ["(any)"])),
        )
    cli.out.print(t)


def approvals(
    run: Annotated[
        int | None, typer.Option("--run", metavar="RUN", min=1, help="Only this run's gates.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Approval gates waiting for a decision (decide with `pgflight approve STEP approve|reject`)."""
    cli = current(as_json)
    with cli.connect() as c:
        rows = state.pending_gates(c, run)
    if cli.json:
        dump_json(rows)
        return
    if not rows:
        cli.out.print("no approvals pending")
        return
    t = Listing(
        "step",
        "run",
        "gate",
        "waiting",
        "default",
        "request",
        flexible=("gate", "request"),
        right=("step", "run"),
    )
    for g in rows:
        default = (
            f"{g.default_decision} at {g.expires_at:%Y-%m-%d %H:%M}"
            if g.expires_at
            else f"none ({g.default_decision})"
        )
        t.add_row(
            str(g.step_id),
            str(g.run_id),
            escape(g.gate_key),
            fmt.ago(g.requested_at).replace(" ago", ""),
            default,
            escape(_short(g.request, 120)),
        )
    cli.out.print(t)


def register(app: typer.Typer) -> None:
    """Add the operating commands to the CLI app."""
    app.command("worker")(worker)
    for fn in (submit, runs, show, events, watch, cancel, approve, retry, replay, workers, approvals):
        app.command(fn.__name__)(fn)
    app.command("dead-letters")(dead_letters)
