"""
Agent commands of the ``pgflight`` CLI: the flight recorder as a transcript, and the dataset export.

- ``pgflight trace STEP``: the agent of a step, block by block, with each model call's tokens and
  USD and the totals (``--json`` for the raw rows).
- ``pgflight export-dataset [--out FILE] [--status succeeded]``: one JSON line per agent run whose
  step ended with the status: ``{"system", "messages", "tools_used", "model", "usd", ...}`` where
  ``messages`` is the conversation exactly as sent to and received from the model, ready for
  fine-tuning pipelines that take Messages-API conversations.
- ``pgflight fork STEP --at K [--system TEXT] [--model NAME] [--patch-file FILE] --reason TEXT``:
  a new run whose agent reuses the iterations before K of the agent of STEP (USD 0) and asks the
  model from K on with the patch (fork_agent).
- ``pgflight replay-agent STEP [--recipe MODULE]``: re-run the recorded agent's tool calls
  against its recorded model responses with the tools as they are now (no model call, no cost,
  nothing written); exit 1 at the first iteration that differs (pgflight.testing).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape

from pgflight import fmt
from pgflight.cli.context import NOT_FOUND, CliError, current, usage
from pgflight.db import agent as adb
from pgflight.models_agent import TraceRow

StepEnd = Literal["succeeded", "dead_letter", "cancelled"]


def _text_of(block: dict[str, Any]) -> str:
    t = block.get("type")
    if t == "text":
        return str(block.get("text", ""))
    if t in ("thinking", "redacted_thinking"):
        return str(block.get("thinking", "[redacted thinking]"))
    if t == "tool_use":
        return f"{block.get('name')}({json.dumps(block.get('input'), sort_keys=True)})"
    if t == "tool_result":
        c = block.get("content")
        return c if isinstance(c, str) else json.dumps(c)
    return json.dumps(block)


def trace(
    step: Annotated[
        int, typer.Argument(metavar="STEP", min=1, help="Step id of an agent step.", show_default=False)
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
    width: Annotated[
        int, typer.Option("--width", metavar="N", min=10, help="Characters shown per block.")
    ] = 400,
) -> None:
    """Print an agent's flight recorder as a transcript with costs."""
    cli = current(as_json)
    out = cli.out
    with cli.connect() as conn:
        info = adb.agent_run_of(conn, step)
        if info is None:
            known = conn.execute("select 1 from pgflight.step_status where step_id = %s", [step]).fetchone()
            if known:
                raise CliError(f"step {step} is not an agent step (no agent run)")
            raise CliError(f"step {step} is unknown", code=NOT_FOUND)
        rows = adb.agent_transcript(conn, info.agent_run_id)
    if as_json:
        agent = {**info.model_dump(mode="json"), "usd": fmt.money_json(info.usd)}
        blocks = [
            {**r.model_dump(mode="json"), "usd": None if r.usd is None else fmt.money_json(r.usd)}
            for r in rows
        ]
        sys.stdout.write(json.dumps({"agent": agent, "blocks": blocks}, indent=2, default=str) + "\n")
        return
    out.print(
        f"[bold]agent run {info.agent_run_id}[/] step {info.step_id} run {info.run_id} "
        f"model {escape(info.model)} status {info.step_status}"
    )
    if info.system_prompt:
        out.print(f"[dim]system:[/] {escape(info.system_prompt[:width])}")
    iteration = -1
    for r in rows:
        if r.iteration != iteration:
            iteration = r.iteration
            out.print(_iteration_header(r))
        label = {"assistant": "[cyan]assistant[/]", "user": "[green]user[/]", "system": "[red]system[/]"}[
            r.role
        ]
        status = "" if r.status == "completed" else f" [yellow]({r.status})[/]"
        body = (
            _text_of(r.content)
            if isinstance(r.content, dict)
            else ("" if r.content is None else str(r.content))
        )
        out.print(f"  {label} {r.block_type}{status}: {escape(body[:width])}")
    out.print(
        f"[bold]total[/] {fmt.count(info.iterations, 'model call')}, "
        f"{fmt.count(info.tool_calls, 'tool call')}, "
        f"{fmt.number(info.input_tokens)} in / {fmt.number(info.output_tokens)} out / "
        f"{fmt.number(info.cache_creation_tokens)} cache-write / "
        f"{fmt.number(info.cache_read_tokens)} cache-read tokens, {fmt.money(info.usd)}"
    )


def _iteration_header(r: TraceRow) -> str:
    if r.iteration == 0:
        return "[bold]— task —[/]"
    if r.usd is None:
        return f"[bold]— iteration {r.iteration} —[/]"
    return (
        f"[bold]— iteration {r.iteration} —[/] {escape(r.model or '')} "
        f"{fmt.number(r.input_tokens or 0)} in / {fmt.number(r.output_tokens or 0)} out"
        f" tokens, {fmt.money(r.usd)}, stop {r.stop_reason}"
    )


def conversation(rows: list[TraceRow]) -> list[dict[str, Any]]:
    """The Messages-API conversation of a transcript: user task, then assistant / tool-result turns."""
    messages: list[dict[str, Any]] = []
    for r in rows:
        if r.block_type == "api_error" or r.content is None:
            continue
        role = "assistant" if r.role == "assistant" else "user"
        if messages and messages[-1]["role"] == role and not (role == "assistant" and r.seq == 0):
            messages[-1]["content"].append(r.content)
        else:
            messages.append({"role": role, "content": [r.content]})
    return messages


def export_dataset(
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", metavar="FILE", help="File to write (default: stdout).")
    ] = None,
    status: Annotated[
        StepEnd,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Agent steps that ended so: succeeded, dead_letter or cancelled.",
        ),
    ] = "succeeded",
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", min=1, help="Most runs.")] = 100_000,
) -> None:
    """Write agent runs as JSONL conversations (one per line) for fine-tuning."""
    cli = current()
    if out_path is not None:
        if out_path.is_dir():
            raise usage(f"--out {out_path} is a directory; name a file")
        if not out_path.parent.is_dir():
            raise usage(f"--out {out_path}: folder {out_path.parent} does not exist")
    n = 0
    with cli.connect() as conn:
        try:
            sink = out_path.open("w") if out_path else sys.stdout
        except OSError as e:
            raise usage(f"--out {out_path}: {e.strerror}") from None
        try:
            after = 0
            while n < limit:
                page = adb.agent_runs_by_status(conn, status=status, after=after, limit=min(500, limit - n))
                if not page:
                    break
                for a in page:
                    rows = adb.agent_transcript(conn, a.agent_run_id)
                    tools = sorted({r.tool_name for r in rows if r.block_type == "tool_use" and r.tool_name})
                    sink.write(
                        json.dumps(
                            {
                                "agent_run_id": a.agent_run_id,
                                "step_id": a.step_id,
                                "run_id": a.run_id,
                                "model": a.model,
                                "system": a.system_prompt,
                                "messages": conversation(rows),
                                "tools_used": tools,
                                "iterations": a.iterations,
                                "usd": fmt.money_json(a.usd),
                            },
                            sort_keys=True,
                        )
                        + "\n"
                    )
                    n += 1
                after = page[-1].agent_run_id
        finally:
            if out_path:
                sink.close()
    if out_path:
        cli.err.print(f"wrote {fmt.count(n, 'conversation')} to {escape(str(out_path))}", soft_wrap=True)


def fork(
    step: Annotated[
        int, typer.Argument(metavar="STEP", min=1, help="Step id of an agent step.", show_default=False)
    ],
    at: Annotated[
        int,
        typer.Option(
            "--at",
            metavar="K",
            min=1,
            help="The first iteration the fork asks of the model itself.",
            show_default=False,
        ),
    ],
    reason: Annotated[
        str,
        typer.Option("--reason", metavar="TEXT", help="Why (kept in the events log).", show_default=False),
    ],
    system: Annotated[
        str | None, typer.Option("--system", metavar="TEXT", help="The system prompt from iteration K on.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", metavar="NAME", help="The model from iteration K on.")
    ] = None,
    patch_file: Annotated[
        Path | None,
        typer.Option(
            "--patch-file",
            metavar="FILE",
            help="A JSON object: system, model, provider, tools, max_tokens, max_iterations, max_tool_calls, "
            "max_usd, max_wall_s, tool_results {tool_use id: result} (docs/agents.md).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Fork an agent at an iteration: reuse what came before, ask the model again with a patch."""
    cli = current(as_json)
    patch: dict[str, Any] = {}
    if patch_file is not None:
        try:
            patch = json.loads(patch_file.read_text())
        except OSError as e:
            raise usage(f"--patch-file {patch_file}: {e.strerror}") from None
        except ValueError as e:
            raise usage(f"--patch-file {patch_file} is not JSON: {e}") from None
        if not isinstance(patch, dict):
            raise usage(f"--patch-file {patch_file} must hold a JSON object")
    if system is not None:
        patch["system"] = system
    if model is not None:
        patch["model"] = model
    with cli.connect() as conn:
        forked = adb.fork_agent(conn, step, at, patch, reason=reason)
    if cli.json:
        sys.stdout.write(json.dumps(forked.model_dump(mode="json")) + "\n")
        return
    cli.out.print(
        f"step {step} forked at iteration {at}: run {forked.run_id} step {forked.step_id} "
        f"agent run {forked.agent_run_id} (iterations 1..{at - 1} reused at USD 0)"
    )


def replay_agent(
    step: Annotated[
        int, typer.Argument(metavar="STEP", min=1, help="Step id of a recorded agent.", show_default=False)
    ],
    recipe: Annotated[
        list[str] | None,
        typer.Option(
            "--recipe",
            metavar="MODULE",
            help="A module to import first: the recipe and tools as they are now (repeatable).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Replay a recorded agent against its recorded responses; exit 1 where its tool calls differ."""
    import dataclasses
    import importlib
    import os

    from pgflight.testing import replay_agent as replay

    cli = current(as_json)
    sys.path.insert(0, os.getcwd())
    for m in recipe or []:
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise usage(f"cannot import {m}: {e}", "check --recipe and PYTHONPATH") from None
    with cli.connect() as conn:
        try:
            report = replay(conn, step)
        except LookupError as e:
            raise CliError(str(e), code=NOT_FOUND) from None
    if cli.json:
        sys.stdout.write(json.dumps(dataclasses.asdict(report), default=str) + "\n")
    else:
        cli.out.print(escape(report.describe()), soft_wrap=True)
    if not report.clean:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``trace``, ``export-dataset`` and ``fork`` to the CLI app."""
    app.command("trace")(trace)
    app.command("export-dataset")(export_dataset)
    app.command("fork")(fork)
    app.command("replay-agent")(replay_agent)
