"""
Agent commands of the ``pgflight`` CLI: the flight recorder as a transcript, and the dataset export.

- ``pgflight trace STEP``: the agent of a step, block by block, with each model call's tokens and
  USD and the totals (``--json`` for the raw rows).
- ``pgflight export-dataset [--out FILE] [--status succeeded]``: one JSON line per agent run whose
  step ended with the status: ``{"system", "messages", "tools_used", "model", "usd", ...}`` where
  ``messages`` is the conversation exactly as sent to and received from the model, ready for
  fine-tuning pipelines that take Messages-API conversations.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from pgflight.db import agent as adb
from pgflight.db.connection import connect
from pgflight.models_agent import TraceRow

out = Console(highlight=False)
_dsn_fn: Callable[[], str] | None = None


def _conn() -> Any:
    assert _dsn_fn is not None, "cli_agent.register was not called"
    return connect(_dsn_fn(), application_name="pgflight-cli")


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
    step: Annotated[int, typer.Argument(help="Step id of an agent step.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
    width: Annotated[int, typer.Option("--width", help="Characters shown per block.")] = 400,
) -> None:
    """Print an agent's flight recorder as a transcript with costs."""
    with _conn() as conn:
        info = adb.agent_run_of(conn, step)
        if info is None:
            known = conn.execute("select 1 from pgflight.step_status where step_id = %s", [step]).fetchone()
            why = "is not an agent step (no agent run)" if known else "is unknown"
            Console(stderr=True).print(f"[bold red]error:[/] step {step} {why}")
            raise typer.Exit(1)
        rows = adb.agent_transcript(conn, info.agent_run_id)
    if as_json:
        out.print_json(
            json.dumps(
                {"agent": info.model_dump(mode="json"), "blocks": [r.model_dump(mode="json") for r in rows]}
            )
        )
        return
    out.print(
        f"[bold]agent run {info.agent_run_id}[/] step {info.step_id} run {info.run_id} "
        f"model {escape(info.model)} status {info.step_status}"
    )
    if info.system_prompt:
        out.print(f"[dim]system:[/] {escape(info.system_prompt[:width])}")
    current = -1
    for r in rows:
        if r.iteration != current:
            current = r.iteration
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
        f"[bold]total[/] {info.iterations} model calls, {info.tool_calls} tool calls, "
        f"{info.input_tokens} in / {info.output_tokens} out / {info.cache_creation_tokens} cache-write / "
        f"{info.cache_read_tokens} cache-read tokens, {info.usd:.6f} USD"
    )


def _iteration_header(r: TraceRow) -> str:
    if r.iteration == 0:
        return "[bold]— task —[/]"
    if r.usd is None:
        return f"[bold]— iteration {r.iteration} —[/]"
    return (
        f"[bold]— iteration {r.iteration} —[/] {escape(r.model or '')} "
        f"{r.input_tokens} in / {r.output_tokens} out"
        f" tokens, {r.usd:.6f} USD, stop {r.stop_reason}"
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
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="File (default stdout).")] = None,
    status: Annotated[str, typer.Option("--status", help="Step status of the runs.")] = "succeeded",
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most runs.")] = 100_000,
) -> None:
    """Write agent runs as JSONL conversations (one per line) for fine-tuning."""
    sink = out_path.open("w") if out_path else sys.stdout
    n = 0
    try:
        with _conn() as conn:
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
                                "usd": float(a.usd),
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
        out.print(f"wrote {n} conversations to {out_path}")


def register(app: typer.Typer, dsn: Callable[[], str]) -> None:
    """
    Add ``trace`` and ``export-dataset`` to the CLI app.

    :param dsn: returns the DSN the commands connect to.
    """
    global _dsn_fn
    _dsn_fn = dsn
    app.command("trace")(trace)
    app.command("export-dataset")(export_dataset)
