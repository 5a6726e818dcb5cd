"""
OpenTelemetry traces of pgflight work: off unless configured.

On when :func:`configure` is called with an exporter (tests: an ``InMemorySpanExporter``), or by
:func:`configure_from_env` when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is
set or the worker runs with ``--traces``: then spans go to an OTLP/HTTP exporter configured by the
standard ``OTEL_*`` variables. Off, every helper here is a no-op costing one attribute read.

Spans:

- ``pgflight.attempt <recipe>``: one per attempt a worker runs, with run, step, attempt, recipe
  and worker attributes;
- ``chat <model>``: one per model call, with the GenAI semantic conventions
  (``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``,
  ``gen_ai.usage.output_tokens``) and the call's cost (``pgflight.usd``);
- ``execute_tool <name>``: one per tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``).

One run is one trace, across processes: a client that submits inside a span stores its W3C
``traceparent`` in the run's options (:func:`traceparent`), and every attempt of every step of
the run, on any worker, reads it back (``pgflight.run_trace_context``) and parents its span on
it. A run submitted outside any span gets a trace id derived from its run id, the same in every
process.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator
from typing import Any

# OpenTelemetry is imported only once tracing is on: a worker without it starts as fast as before.
_tracer: Any = None
_provider: Any = None
_propagator: Any = None


def configure(exporter: Any = None, *, service_name: str = "pgflight", batch: bool = True) -> None:
    """
    Turn tracing on in this process.

    :param exporter: an OpenTelemetry SpanExporter; default: OTLP over HTTP from the OTEL_* variables.
    :param batch: export in the background (BatchSpanProcessor); False exports each span as it ends.
    """
    global _tracer, _provider, _propagator
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    shutdown()
    _provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    _provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    _tracer = _provider.get_tracer("pgflight")
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _propagator = TraceContextTextMapPropagator()


def configure_from_env(*, force: bool = False, service_name: str = "pgflight-worker") -> bool:
    """Turn tracing on when an OTLP endpoint is configured (or `force`); return whether it is on."""
    if (
        force
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        configure(service_name=service_name)
    return _tracer is not None


def shutdown() -> None:
    """Flush and turn tracing off (a worker calls it before it exits)."""
    global _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    _tracer, _provider = None, None


def enabled() -> bool:
    """True once `setup()` installed a tracer (OTLP endpoint set or `worker --traces`)."""
    return _tracer is not None


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[None]:
    """A span of the caller's own (e.g. around a submit, whose run then joins its trace); no-op when off."""
    if _tracer is None:
        yield
        return
    with _tracer.start_as_current_span(name, attributes=attributes):
        yield


def traceparent() -> str | None:
    """The W3C traceparent of the current span, to store with a run at submit; None when off."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    if not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


def _run_context(run_id: int, stored: str | None) -> Any:
    """The run's trace: the stored traceparent, else ids derived from the run id."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    if stored:
        ctx = _propagator.extract({"traceparent": stored})
        if trace.get_current_span(ctx).get_span_context().is_valid:
            return ctx
    digest = hashlib.sha256(f"pgflight run {run_id}".encode()).digest()
    parent = SpanContext(
        trace_id=int.from_bytes(digest[:16], "big") or 1,
        span_id=int.from_bytes(digest[16:24], "big") or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def start_attempt(claim: Any, worker: str, worker_id: int | None, stored: str | None) -> Any:
    """
    Start the span of one attempt and make it current; pass the result to :func:`end_attempt`.

    :param claim: the ClaimedStep.
    :param stored: the run's traceparent (``pgflight.run_trace_context``), or None.
    """
    if _tracer is None:
        return None
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    span = _tracer.start_span(
        f"pgflight.attempt {claim.recipe}",
        context=_run_context(claim.run_id, stored),
        kind=SpanKind.CONSUMER,
        attributes={
            "pgflight.run_id": claim.run_id,
            "pgflight.step_id": claim.step_id,
            "pgflight.step_key": claim.step_key,
            "pgflight.parent_step_id": claim.parent_id or 0,
            "pgflight.attempt_id": claim.attempt_id,
            "pgflight.attempt_no": claim.attempt_no,
            "pgflight.recipe": claim.recipe,
            "pgflight.worker": worker,
            "pgflight.worker_id": worker_id or 0,
        },
    )
    return span, otel_context.attach(trace.set_span_in_context(span))


def end_attempt(started: Any, outcome: str) -> None:
    """End an attempt's span with its outcome (the worker's state of the attempt)."""
    if started is None:
        return
    from opentelemetry import context as otel_context

    span, token = started
    span.set_attribute("pgflight.outcome", outcome)
    otel_context.detach(token)
    span.end()


def record_error(exc: BaseException) -> None:
    """Mark the current span failed with `exc`."""
    if _tracer is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    span = trace.get_current_span()
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))


def now_ns() -> int:
    """Wall-clock time in nanoseconds since the epoch, the unit of span start/end times."""
    return time.time_ns()


def model_call(
    started_ns: int,
    model: str,
    response: dict[str, Any],
    *,
    iteration: int,
    agent_run_id: int | None,
    usd: Any,
    retries: int,
    max_tokens: int | None = None,
) -> None:
    """Record a finished model call as a span from `started_ns` to now (GenAI conventions)."""
    if _tracer is None:
        return
    from opentelemetry.trace import SpanKind

    usage = response.get("usage") or {}
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.system": "anthropic",
        "gen_ai.request.model": model,
        "gen_ai.response.model": response.get("model") or model,
        "gen_ai.response.finish_reasons": [str(response.get("stop_reason") or "")],
        "gen_ai.usage.input_tokens": int(usage.get("input_tokens") or 0),
        "gen_ai.usage.output_tokens": int(usage.get("output_tokens") or 0),
        "pgflight.usd": float(usd or 0),
        "pgflight.iteration": iteration,
        "pgflight.agent_run_id": agent_run_id or 0,
        "pgflight.api_retries": retries,
    }
    if response.get("id"):
        attrs["gen_ai.response.id"] = str(response["id"])
    if max_tokens is not None:
        attrs["gen_ai.request.max_tokens"] = max_tokens
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if usage.get(key):
            attrs[f"gen_ai.usage.{key}"] = int(usage[key])
    span = _tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, start_time=started_ns, attributes=attrs)
    span.end()


@contextlib.contextmanager
def tool_call(name: str, call_id: str | None, iteration: int | None) -> Iterator[None]:
    """A span around one tool call (``execute_tool <name>``); exceptions mark it failed."""
    if _tracer is None:
        yield
        return
    attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id:
        attrs["gen_ai.tool.call.id"] = call_id
    if iteration is not None:
        attrs["pgflight.iteration"] = iteration
    from opentelemetry.trace import SpanKind

    with _tracer.start_as_current_span(f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attrs):
        yield
