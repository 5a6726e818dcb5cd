"""
The review job's recipes: ``review_library`` (the root), ``review_document`` (one agent per
document) and ``reconcile`` (the report). Import this module in a worker::

    pgflight worker --recipes pgflight_review.recipes

The tree of one run::

    review_library            input: the documents discovery found (path, sha256, key, lines) + skipped
    ├── review-doc:<hash>     review_document: an agent with read_lines / search / flag / finish
    ├── …                     one per document; key from path and content hash (spawn is idempotent)
    └── reconcile             after every document step has ended: children results + the audit
                              from the database -> report.md, report.html, flags.csv

The root runs three times: it spawns the document steps and parks; woken when they have all
ended, it spawns ``reconcile`` and parks again; woken once more, it returns the reconcile's result.
Each spawn is a no-op the second time, so the recipe is straight-line code. The reconcile is its
own step (not the root's last run) so that it can be retried alone and shows in ``pgflight show``.

A document step reuses the agent machinery (:class:`~pgflight.agent.loop.AgentLoop`: every model
call and tool call is durable rows, and a reclaimed attempt resumes from the transcript) with the
four review tools bound to its document. The model is the offline one by default, whose
behaviour for these tools is :func:`pgflight_review.policy.review_policy`; ``provider=anthropic``
uses the real API. The step's result is built from the transcript (the accepted ``flag`` calls
and the ``finish`` summary), never from what this process happened to see, so a resumed review
reports the flags of earlier attempts too.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from pgflight import db
from pgflight.agent.loop import AgentInput, AgentLoop
from pgflight.agent.providers import OfflineRequest, OfflineTurn, register_policy
from pgflight.agent.tools import Tool
from pgflight.db import agent as adb
from pgflight.db.audit import run_audit
from pgflight.recipes import Fatal, StepContext, recipe
from pgflight.testing import register_replay_tools
from pgflight_review import tools as rtools
from pgflight_review.clauses import UNKNOWN_FAMILY, expand_to_sentences, identify_family
from pgflight_review.discovery import UnreadableDocument
from pgflight_review.licences import LicenceMap, package_licence
from pgflight_review.policy import CHUNK_LINES, MAX_READ_ATTEMPTS, SYSTEM_PROMPT, review_policy, task_prompt
from pgflight_review.report import RunInfo, write_report

DOCUMENT_RECIPE: Final = "review_document"
RECONCILE_RECIPE: Final = "reconcile"
RECONCILE_KEY: Final = "reconcile"
REVIEW_TOOL_NAMES: Final = frozenset(rtools.TOOL_ARGS)
#: Iterations an agent may use beyond the reads its document needs (search, flag turns, finish).
SPARE_ITERATIONS: Final = 30
#: Tool calls an agent may make beyond one per iteration (several flags per turn).
SPARE_TOOL_CALLS: Final = 300


# --- inputs ---------------------------------------------------------------------------------------


class DocumentRef(BaseModel):
    """A document as discovery found it; `key` is its child step's key."""

    key: str
    path: str
    sha256: str
    line_count: int


class SkippedRef(BaseModel):
    """A path discovery did not submit, and why."""

    path: str
    reason: str


class ModelChoice(BaseModel):
    """Which model reviews: ``offline`` (the default) or ``anthropic`` with a model name."""

    provider: str = "offline"
    model: str = "offline"
    max_tokens: int = 4096


class LibraryInput(ModelChoice):
    """Input of ``review_library``: the whole job."""

    documents: list[DocumentRef]
    skipped: list[SkippedRef] = []
    out_dir: str


class DocumentInput(ModelChoice):
    """Input of ``review_document``: one document, read again and checked against its hash."""

    path: str
    sha256: str
    line_count: int
    system: str | None = None  # the system prompt (default SYSTEM_PROMPT); a fork_agent patch may set it


class ReconcileInput(BaseModel):
    """Input of ``reconcile``: where the report goes, and what the report needs besides the children."""

    out_dir: str
    paths: dict[str, str]  # child step key -> document path (for documents that have no result)
    skipped: list[SkippedRef] = []
    model: str = ""  # "provider:model", for the report's header


# --- the review tools, bound to one document --------------------------------------------------------


@dataclass(frozen=True)
class ReviewTool(Tool):
    """An agent tool whose definition is the review's own (`tools.TOOL_SPECS`)."""

    spec: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        """The Messages API tool definition, as `pgflight_review.tools` writes it."""
        return self.spec


def _call_tool(doc: rtools.ReviewDocument, fn: Callable[..., Any], args: BaseModel) -> str:
    out = fn(doc, args)
    if isinstance(out, rtools.FlagArgs):
        return f"flag recorded: {out.category} ({out.severity}) at lines {out.line_start}-{out.line_end}"
    return str(out)


_TOOL_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "read_lines": rtools.read_lines,
    "search": rtools.search,
    "flag": rtools.flag,
    "finish": rtools.finish,
}


def bind_tools(doc: rtools.ReviewDocument) -> dict[str, Tool]:
    """
    The four review tools as agent tools over `doc`. None has side effects (an interrupted call
    is simply run again); a refusal (`tools.ToolError`) goes back to the model as an error result.

    :return: tools by name, in `tools.TOOL_SPECS` order.
    """
    return {
        spec["name"]: ReviewTool(
            name=spec["name"],
            description=spec["description"],
            fn=functools.partial(_call_tool, doc, _TOOL_FUNCTIONS[spec["name"]]),
            args_model=rtools.TOOL_ARGS[spec["name"]],
            spec=spec,
        )
        for spec in rtools.TOOL_SPECS
    }


def _offline_review(req: OfflineRequest) -> OfflineTurn:
    """The offline model's turn for a review conversation: `review_policy` over the request."""
    r = req.request
    blocks, stop = review_policy({"system": r.system, "tools": r.tools, "messages": r.messages})
    return OfflineTurn(
        text="".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
        tool_calls=[{"name": b["name"], "input": b["input"]} for b in blocks if b.get("type") == "tool_use"],
        stop_reason=stop,
    )


register_policy(lambda names: names >= REVIEW_TOOL_NAMES, _offline_review)


# --- review_document ------------------------------------------------------------------------------


def agent_caps(line_count: int) -> tuple[int, int]:
    """
    :return: (max_iterations, max_tool_calls) for a document of `line_count` lines: every chunk
        read twice at most, plus spare turns for search, flags and finish.
    """
    reads = -(-max(line_count, 1) // CHUNK_LINES) * MAX_READ_ATTEMPTS
    return reads + SPARE_ITERATIONS, reads + SPARE_TOOL_CALLS


def outcome_from_transcript(blocks: list[Any]) -> tuple[list[dict[str, Any]], str]:
    """
    The accepted flags and the finish summary of a review, read from its transcript.

    :param blocks: `load_transcript` rows (anything with a ``content`` block), in order.
    :return: (flags in call order, without repeats; the last accepted finish summary or "").
    """
    uses: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, Any]] = {}
    for b in blocks:
        c = b.content
        if isinstance(c, dict) and c.get("type") == "tool_use":
            uses[str(c.get("id"))] = c
        elif isinstance(c, dict) and c.get("type") == "tool_result":
            results[str(c.get("tool_use_id"))] = c
    flags: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    summary = ""
    for tid, use in uses.items():
        res = results.get(tid)
        if res is None or res.get("is_error"):
            continue  # refused by the tool, or never completed
        args = use.get("input") or {}
        if use.get("name") == "flag":
            ident = tuple(args.get(k) for k in ("category", "severity", "line_start", "line_end", "quote"))
            if ident not in seen:
                seen.add(ident)
                flags.append(
                    {k: args.get(k) for k in ("category", "severity", "quote", "line_start", "line_end")}
                )
        elif use.get("name") == "finish":
            summary = str(args.get("summary", ""))
    return flags, summary


def document_licence(path: str, lines: list[str]) -> tuple[str, list[str], str]:
    """
    The licence a document is under, with where it was read from: a Python package's metadata
    first (``metadata``), else a DEP-5 file's ``Files: *`` stanza (``dep5``), else the text's own
    title or notice (``text``).

    :return: (the licence, SPDX where it came from metadata or DEP-5; every licence the text
        names, that one first; the source).
    """
    family, named, _ = identify_family(lines)
    from_metadata = package_licence(path)
    if from_metadata:
        return from_metadata, [from_metadata, *(f for f in named if f != from_metadata)], "metadata"
    stanzas = LicenceMap.of(lines, UNKNOWN_FAMILY)
    primary = stanzas.primary()
    if primary:
        return (
            primary,
            list(dict.fromkeys([primary, *(s.licence for s in stanzas.stanzas if s.licence)])),
            "dep5",
        )
    return family, list(named), "text"


def _replay_tools(info: Any) -> dict[str, Tool]:
    """The tools a recorded document review was offered, over the document as it is now (replay)."""
    path = info.result.get("path") if isinstance(info.result, dict) else None
    if not path:
        raise LookupError(f"step {info.step_id} has no result naming its document; replay needs one")
    return bind_tools(rtools.ReviewDocument.load(str(path)))


register_replay_tools(DOCUMENT_RECIPE, _replay_tools)


@recipe(DOCUMENT_RECIPE, input=DocumentInput)
def review_document(ctx: StepContext) -> dict[str, Any]:
    """
    Review one document with an agent; resume its transcript on a retry.

    :return: path, family, families, flags (category, severity, quote, line_start, line_end),
        summary, iterations, usd.
    :raises Fatal: the document cannot be read, or changed since discovery (no retry helps).
    """
    inp: DocumentInput = ctx.input
    try:
        doc = rtools.ReviewDocument.load(inp.path, expected_sha256=inp.sha256)
    except UnreadableDocument as e:
        raise Fatal(f"{e.reason}") from None
    max_iterations, max_tool_calls = agent_caps(doc.line_count)
    agent_input = AgentInput(
        task=task_prompt(inp.path, doc.line_count),
        system=SYSTEM_PROMPT if inp.system is None else inp.system,
        model=inp.model,
        provider=inp.provider,
        max_tokens=inp.max_tokens,
        max_iterations=max_iterations,
        max_tool_calls=max_tool_calls,
    )
    loop = AgentLoop(ctx, agent_input)
    loop.tools = bind_tools(doc)
    answer = loop.run()
    rows = ctx.call(adb.load_transcript, ctx.attempt_id, ctx.token, loop.agent_run_id)
    flags, summary = outcome_from_transcript(rows)
    family, families, source = document_licence(inp.path, doc.lines)
    where = LicenceMap.of(doc.lines, family)
    for f in flags:
        f["family"] = where.family_at(int(f["line_start"]))
        f["context"], f["context_start"], f["context_end"] = expand_to_sentences(
            doc.lines, int(f["line_start"]), int(f["line_end"]), str(f["quote"])
        )
    return {
        "path": inp.path,
        "family": family,
        "family_source": source,
        "families": list(families),
        "flags": flags,
        "summary": summary or str(answer.get("answer", "")),
        "iterations": answer.get("iterations"),
        "usd": answer.get("usd"),
    }


# --- reconcile ----------------------------------------------------------------------------------


def _message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return "" if error is None else str(error)


#: The file `pgflight review --chaos` appends one JSON line to per worker it kills.
CHAOS_LOG: Final = "chaos.jsonl"


def chaos_kills(log_dir: Path) -> int | None:
    """:return: workers killed by ``--chaos`` so far (lines of `CHAOS_LOG`), None without chaos."""
    path = log_dir / CHAOS_LOG
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return sum(1 for line in text.splitlines() if line.strip() and json.loads(line).get("pid"))


def document_results(children: list[Any], paths: dict[str, str]) -> list[dict[str, Any]]:
    """
    The report's per-document results from the root's children (`db.children_results`): a
    succeeded document step's result, else its path (from `paths`, by step key), status and error.
    """
    results: list[dict[str, Any]] = []
    for c in children:
        if c.recipe != DOCUMENT_RECIPE:
            continue
        if c.status == "succeeded" and isinstance(c.result, dict):
            results.append({**c.result, "status": "succeeded", "step_id": c.step_id})
        else:
            results.append(
                {
                    "path": paths.get(c.step_key, c.step_key),
                    "status": c.status,
                    "error": _message(c.error),
                    "step_id": c.step_id,
                }
            )
    return results


@recipe(RECONCILE_RECIPE, input=ReconcileInput)
def reconcile(ctx: StepContext) -> dict[str, Any]:
    """
    Write the report once every document step has ended: the children's results in key order,
    the skipped documents, and the audit queried from the database.

    :return: the report's paths, counts and the audit written into it.
    """
    inp: ReconcileInput = ctx.input
    parent = ctx.claim.parent_id
    if parent is None:
        raise Fatal("reconcile must run as a child of review_library")
    results = document_results(ctx.call(db.children_results, parent), inp.paths)
    audit = ctx.call(run_audit, ctx.run_id)
    audit_figures = audit.model_dump(
        include={
            "steps",
            "attempts",
            "retries",
            "reclaimed_attempts",
            "stale_writes_rejected",
            "dead_letters",
            "model_calls",
            "input_tokens",
            "output_tokens",
            "tokens",
            "wall_time_s",
            "steps_succeeded_twice",
        }
    )
    audit_figures["usd"] = float(audit.usd)
    audit_figures["wall_time_s"] = round(audit.wall_time_s, 1)
    run = RunInfo.now(ctx.run_id, inp.model, chaos_kills(Path(inp.out_dir) / "logs"))
    files = write_report(inp.out_dir, results, audit_figures, [s.model_dump() for s in inp.skipped], run=run)
    reviewed = sum(1 for r in results if r["status"] == "succeeded")
    return {
        "report": str(files.markdown),
        "html": str(files.html),
        "csv": str(files.csv),
        "pages": len(files.pages),  # files under pages/ (HTML and Markdown) of a paged report
        "documents": len(results),
        "reviewed": reviewed,
        "not_reviewed": len(results) - reviewed,
        "skipped": len(inp.skipped),
        "findings": sum(len(r.get("flags") or []) for r in results if r["status"] == "succeeded"),
        "audit_at_report": audit_figures,
    }


# --- review_library -----------------------------------------------------------------------------


@recipe("review_library", input=LibraryInput)
def review_library(ctx: StepContext) -> dict[str, Any]:
    """
    The root: fan out one ``review_document`` per document, then the ``reconcile`` step.

    :return: the reconcile's result (report paths, counts, audit).
    :raises Fatal: the reconcile step did not succeed.
    """
    inp: LibraryInput = ctx.input
    choice = ModelChoice.model_validate(inp.model_dump(include={"provider", "model", "max_tokens"}))
    ctx.spawn(
        [
            {
                "key": d.key,
                "recipe": DOCUMENT_RECIPE,
                "input": {
                    **choice.model_dump(),
                    "path": d.path,
                    "sha256": d.sha256,
                    "line_count": d.line_count,
                },
            }
            for d in inp.documents
        ]
    )
    rec_input = ReconcileInput(
        out_dir=inp.out_dir,
        paths={d.key: d.path for d in inp.documents},
        skipped=inp.skipped,
        model=inp.model if inp.provider == "offline" else f"{inp.provider}:{inp.model}",
    )
    ctx.spawn([{"key": RECONCILE_KEY, "recipe": RECONCILE_RECIPE, "input": rec_input.model_dump()}])
    rec = next((c for c in ctx.children() if c.step_key == RECONCILE_KEY), None)
    if rec is None or rec.status != "succeeded":
        raise Fatal(f"reconcile {rec.status if rec else 'missing'}: {_message(rec.error if rec else None)}")
    result: dict[str, Any] = rec.result
    return result
