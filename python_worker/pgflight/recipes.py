"""
Recipes: the functions a worker runs, and the context each step gets.

::

    class Charge(BaseModel):
        invoice: str
        usd: float

    @recipe("charge", input=Charge)
    def charge(ctx: StepContext) -> dict:
        receipt = ctx.effect(f"charge-{ctx.input.invoice}", lambda: bank.charge(ctx.input.usd))
        return {"receipt": receipt}

A recipe is a sync or async function of one :class:`StepContext`; it returns the step's JSON
result. It raises :class:`Fatal` (dead letter at once, no retry), :class:`Retry` (retry after a
given delay; still spends an attempt), :class:`Release` (give the step back, no attempt spent) or
any other exception (retryable with backoff). An input
that fails the recipe's pydantic model is fatal with the validation message.

Fan-out, approvals and waits park the step: :meth:`StepContext.spawn`,
:meth:`StepContext.request_approval`, :meth:`StepContext.sleep` and
:meth:`StepContext.wait_event` raise :class:`Parked` (a BaseException, so a recipe's
``except Exception`` cannot swallow it) when the attempt now waits; the worker writes nothing
more. The step runs again from the top once the children are done or the gate decided: the same
calls then return at once (spawn creates nothing, the approval returns the decision, an elapsed
sleep returns, a received event returns its payload), so a recipe is written as straight-line
code whose side effects before a park are wrapped in :meth:`StepContext.effect`.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from pydantic import BaseModel

from pgflight import errors, models

log = logging.getLogger("pgflight.recipes")
if TYPE_CHECKING:
    from pgflight.db import Connection

T = TypeVar("T")
P = ParamSpec("P")

RecipeFn = Callable[["StepContext"], Any] | Callable[["StepContext"], Awaitable[Any]]


class DbCall(Protocol):
    """
    How a step context calls the database: ``call(fn, *args, **kwargs)`` runs ``fn(conn, *args,
    **kwargs)`` on a connection (the worker's: :class:`pgflight.worker.calls.Lane`, with its
    reconnect-and-retry policy). Typed by `fn`: the fencing token and the other arguments are
    checked against the ``pgflight.db`` function's own signature.
    """

    def __call__(
        self, fn: Callable[Concatenate[Connection, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...


class Fatal(Exception):
    """Raise from a recipe to fail the step for good (dead letter, no retry)."""


class Retry(Exception):
    """
    Raise from a recipe to retry after `after_s` seconds instead of the backoff.

    Still spends an attempt, so the max_attempts ceiling holds on this path too (C07).

    :raises ValueError: `after_s` is not a finite number >= 0 (raised in the recipe: a retryable
        failure with the ordinary backoff, instead of a delay the database would refuse).
    """

    def __init__(self, message: str = "retry requested", *, after_s: float | None = None) -> None:
        if after_s is not None and not (isinstance(after_s, int | float) and 0 <= after_s < float("inf")):
            raise ValueError(f"Retry(after_s={after_s!r}): a delay must be a finite number of seconds >= 0")
        super().__init__(message)
        self.after_s = after_s


class Release(BaseException):
    """
    Raise from a recipe to give the step back without spending an attempt (e.g. the model API is
    rate-limiting): the worker calls release_step with the message as the reason and the step is
    queued again, claimable at once or, with `after_s`, that many seconds later (a rate limit's
    Retry-After: the next attempt must not ask before the server said it may). Not an Exception,
    so ``except Exception`` in a recipe does not swallow it.

    :param after_s: seconds before the step may be claimed again; None or 0: at once. A value
        that is not a finite number >= 0 is taken as 0, a value over 30 days as 30 days (the
        release must not fail: the step would then wait for its lease to lapse).
    """

    MAX_AFTER_S = 2592000.0

    def __init__(self, message: str = "released", *, after_s: float | None = None) -> None:
        super().__init__(message)
        self.after_s: float | None = None
        if after_s is not None and 0 < after_s < float("inf"):
            self.after_s = min(float(after_s), self.MAX_AFTER_S)


class Parked(BaseException):
    """
    The attempt now waits (for children or a decision) and gave up its lease: the worker stops
    this run of the recipe and writes nothing more. Not an Exception, so ``except Exception`` in a
    recipe does not swallow it.
    """


@dataclass(frozen=True)
class Recipe:
    """A registered recipe: its name, function and optional pydantic input model."""

    name: str
    fn: RecipeFn
    input_model: type[BaseModel] | None
    is_async: bool

    def parse_input(self, raw: Any) -> Any:
        """
        Validate the step input against the recipe's model.

        :return: the model instance, or `raw` when the recipe has no model.
        :raises Fatal: the input does not match the model (a retry cannot fix it).
        """
        if self.input_model is None:
            return raw
        from pydantic import ValidationError

        try:
            return self.input_model.model_validate(raw)
        except ValidationError as e:
            raise Fatal(
                f"input of recipe {self.name!r} does not match {self.input_model.__name__}: "
                f"{e.error_count()} error(s): {_short_errors(e)}"
            ) from None


def _short_errors(e: Any) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in e.errors()[:5]
    )


class Registry:
    """Recipes by name."""

    def __init__(self) -> None:
        self._recipes: dict[str, Recipe] = {}

    def add(self, name: str, fn: RecipeFn, input_model: type[BaseModel] | None = None) -> Recipe:
        """
        Register `fn` as recipe `name`.

        :raises ValueError: another function is registered under this name.
        """
        existing = self._recipes.get(name)
        if (
            existing is not None
            and existing.fn is not fn
            and (getattr(existing.fn, "__qualname__", None) != getattr(fn, "__qualname__", None))
        ):
            raise ValueError(f"recipe {name!r} is already registered by {existing.fn!r}")
        r = Recipe(name, fn, input_model, inspect.iscoroutinefunction(fn))
        self._recipes[name] = r
        return r

    def get(self, name: str) -> Recipe | None:
        """The recipe called `name`, or None."""
        return self._recipes.get(name)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._recipes)

    def all(self) -> list[Recipe]:
        """Every registered recipe, by name."""
        return [self._recipes[n] for n in sorted(self._recipes)]

    def __contains__(self, name: object) -> bool:
        return name in self._recipes

    def __len__(self) -> int:
        return len(self._recipes)


REGISTRY = Registry()


def recipe(
    name: str, *, input: type[BaseModel] | None = None, registry: Registry | None = None
) -> Callable[[RecipeFn], RecipeFn]:
    """
    Decorator: register a function as recipe `name`.

    :param input: pydantic model the step input must match (else the step fails fatally).
    :param registry: where to register (default: the process-wide :data:`REGISTRY`).
    """

    def deco(fn: RecipeFn) -> RecipeFn:
        (registry or REGISTRY).add(name, fn, input)
        return fn

    return deco


def load_modules(modules: Iterable[str]) -> Registry:
    """
    Import modules and return the recipes they define, and only those.

    A recipe belongs to a module when its function is defined there (or in a submodule of a named
    package) or when importing the module registered it (a tools module that imports
    ``pgflight.agent.loop`` brings the ``agent`` recipe); recipes registered in the process-wide
    registry by anything else are left out: a worker runs exactly the recipes of its modules.

    :param modules: dotted module names.
    :return: a registry with the recipes of those modules.
    :raises ModuleNotFoundError: a module (or one it imports) cannot be found.
    :raises ValueError: a module defines no recipe.
    """
    names = [m.strip() for m in modules if m.strip()]
    chosen = Registry()
    for m in names:
        before = set(REGISTRY.names())
        importlib.import_module(m)
        found = [r for r in REGISTRY.all() if r.name not in before or _defined_in(r.fn, m)]
        if not found:
            raise ValueError(f"module {m} defines no recipe (no @recipe function in it or its imports)")
        for r in found:
            chosen.add(r.name, r.fn, r.input_model)
    return chosen


def _defined_in(fn: RecipeFn, module: str) -> bool:
    home = getattr(fn, "__module__", "") or ""
    return home == module or home.startswith(module + ".")


class StepContext:
    """
    What a running step sees: its input and identity, fan-out, approvals, effects, cancellation.

    Created by the worker for one attempt and one claim; every write it makes carries the claim's
    fencing token. Its methods are synchronous (one short SQL call each) and may be called from
    a sync recipe's thread or an async recipe.
    """

    def __init__(
        self,
        claim: models.ClaimedStep,
        input: Any,
        *,
        call: DbCall,
        cancelled: threading.Event | None = None,
        on_park: Callable[[], bool] | None = None,
        on_unpark: Callable[[], object] | None = None,
        lost: Callable[[], bool] | None = None,
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger] | None = None,
        max_receipt_bytes: int | None = None,
    ) -> None:
        self.claim = claim
        self.input = input
        self.attempt_no = claim.attempt_no
        self.run_id = claim.run_id
        self.step_id = claim.step_id
        self.attempt_id = claim.attempt_id
        self.token = claim.fencing_token
        self.step_key = claim.step_key
        self.cancelled = cancelled or threading.Event()
        self._log = logger  # made on first use: most steps never log
        self._call = call
        self._on_park = on_park or (lambda: True)
        self._on_unpark = on_unpark or (lambda: None)
        self._lost = lost or (lambda: False)
        self.max_receipt_bytes = max_receipt_bytes
        self._streams: dict[str, Any] | None = None  # channel -> StreamWriter, made on first use

    @property
    def log(self) -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
        """The step's logger: ``pgflight.recipe.<recipe>`` with run_id, step_id and attempt_no."""
        if self._log is None:
            claim = self.claim
            self._log = logging.LoggerAdapter(
                logging.getLogger(f"pgflight.recipe.{claim.recipe}"),
                {"run_id": claim.run_id, "step_id": claim.step_id, "attempt_no": claim.attempt_no},
            )
        return self._log

    @log.setter
    def log(self, logger: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
        self._log = logger

    def call(self, fn: Callable[Concatenate[Connection, P], T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """
        Run one client function (a `pgflight.db` function taking a connection first) on the
        worker's pool, with its reconnect-and-retry policy; for step types built on the SQL API,
        such as the agent loop.

        :param fn: e.g. ``pgflight.db.agent.record_model_call``.
        :return: what `fn` returns.
        :raises PgflightError: as `fn` raises it.
        """
        return self._call(fn, *args, **kwargs)

    # --- cancellation ------------------------------------------------------------------------

    def check_cancelled(self) -> None:
        """
        Stop here if the run was cancelled or the lease was lost.

        :raises LeaseLost: the heartbeat said the lease is lost.
        :raises Cancelled: the heartbeat said the run or step was cancelled.
        """
        if self.cancelled.is_set():
            if self._lost():
                raise errors.LeaseLost(
                    f"lease lost on attempt {self.attempt_id}", hint="abandon this attempt and write nothing"
                )
            raise errors.Cancelled(f"attempt {self.attempt_id} was cancelled")

    # --- fan-out -----------------------------------------------------------------------------

    def spawn(self, children: Sequence[Mapping[str, Any]], *, fail_fast: bool = False) -> models.SpawnResult:
        """
        Create child steps (idempotent by key) and wait for them.

        :param children: ``{"key": str, "recipe": str, "input": json, "options": {...}}`` each.
        :param fail_fast: the first child that ends unsuccessfully fails this step.
        :return: the spawn result when nothing is left to wait for (a re-run after the wake).
        :raises Parked: the step now waits for its children; the recipe runs again afterwards.
        """
        self.check_cancelled()
        res: models.SpawnResult = self._parking(
            lambda: self._call(
                db.spawn_children, self.attempt_id, self.token, list(children), fail_fast=fail_fast
            )
        )
        return res

    def children(self) -> list[models.ChildResult]:
        """The children's status, result and error, in key order."""
        return list(self._call(db.children_results, self.step_id))

    # --- approvals ---------------------------------------------------------------------------

    def request_approval(
        self,
        key: str = "approval",
        request: Any = None,
        *,
        expires_in_s: float | None = None,
        default: str = "reject",
    ) -> str:
        """
        Ask for a decision at gate `key`.

        :param request: JSON shown to the approver.
        :param expires_in_s: seconds until `default` applies.
        :return: 'approve' or 'reject' once decided (:meth:`approval` also gives the payload).
        :raises Parked: the step now waits for the decision; it runs again once decided.
        """
        res = self.approval(key, request, expires_in_s=expires_in_s, default=default)
        assert res.decision is not None
        return res.decision

    def approval(
        self,
        key: str = "approval",
        request: Any = None,
        *,
        expires_in_s: float | None = None,
        default: str = "reject",
    ) -> models.ApprovalRequest:
        """
        Ask for a decision at gate `key` and return it whole: the decision, who made it, the
        reason (``note``) and the JSON ``payload`` the decider handed back with it
        (``approve(step, decision, actor, note, gate_key, payload)``; None when none).

        :param request: JSON shown to the approver.
        :param expires_in_s: seconds until `default` applies (an expired gate has no payload).
        :return: the decided gate (``waiting`` is False).
        :raises Parked: the step now waits for the decision; it runs again once decided.
        """
        self.check_cancelled()
        res: models.ApprovalRequest = self._parking(
            lambda: self._call(
                db.request_approval,
                self.attempt_id,
                self.token,
                key,
                request=request,
                expires_in_s=expires_in_s,
                default=default,
            )
        )
        return res

    # --- waits -------------------------------------------------------------------------------

    def sleep(self, key: str, seconds: float) -> None:
        """
        Sleep `seconds` without holding a lease or spending an attempt (docs/waiting.md).

        The first call with `key` fixes the wake-up time; the attempt parks and the worker moves
        on. When the time has come the step is claimed again and the recipe runs again **from the
        top**: this call (same key) then returns at once. Code before it runs again too, so wrap
        its side effects in :meth:`effect`. Keyed like :meth:`effect`: two sleeps of one step need
        two keys.

        :param key: names the sleep within this step (stored as ``sleep:<key>``).
        :param seconds: 0 or more; counted from the first call with this key.
        :raises Parked: the step now sleeps; it runs again from the top when due.
        """
        self.check_cancelled()
        self._parking(lambda: self._call(db.wait_timer, self.attempt_id, self.token, f"sleep:{key}", seconds))

    def wait_event(
        self,
        name: str,
        key: str,
        timeout_s: float | None = None,
        *,
        default: Any = None,
        wait_key: str | None = None,
    ) -> Any:
        """
        Wait for the event `name` / `key` of this run's workspace and return its payload.

        An event emitted (``emit_event``) before the wait started is kept for
        ``settings.event_retention_s`` and returned at once. Otherwise the attempt parks without a
        lease or an attempt spent, and the recipe runs again **from the top** once the event comes
        or the timeout passes; this call (same wait key) then returns at once.

        :param timeout_s: seconds until the wait gives up and returns `default` (None: no timeout).
        :param default: what a timed-out wait returns (JSON).
        :param wait_key: names the wait within this step (default ``event:<name>:<key>``); give a
            new one to wait twice for the same name and key.
        :return: the event's payload, or `default` when the wait timed out.
        :raises Parked: the step now waits; it runs again once the wait has an outcome.
        """
        self.check_cancelled()
        res: models.EventWait = self._parking(
            lambda: self._call(
                db.wait_event,
                self.attempt_id,
                self.token,
                wait_key or f"event:{name}:{key}",
                name,
                key,
                timeout_s=timeout_s,
                default=default,
            )
        )
        return res.payload

    def _parking(self, fn: Callable[[], T]) -> T:
        # Mark the attempt as finishing before a call that may park it, so the heartbeat thread
        # does not take the parked attempt (no longer leased) for a lost lease.
        if not self._on_park():
            self.check_cancelled()
        try:
            res = fn()
        except BaseException:
            self._on_unpark()
            raise
        if getattr(res, "parked", False) or getattr(res, "waiting", False):
            raise Parked(f"attempt {self.attempt_id} parked")
        self._on_unpark()
        return res

    # --- streams -----------------------------------------------------------------------------

    def stream(self, channel: str) -> Any:
        """
        The writer of stream `channel` of this run (docs/streams.md): ``ctx.stream("tokens").write("Hel")``.

        Chunks are batched (every ``PGFLIGHT_STREAM_FLUSH_MS`` ms, default 50, or 16 KiB) and
        written with this attempt's fencing token; the worker flushes every channel when the
        recipe returns, fails or parks. A reader follows them with ``stream_read`` from any
        language; each chunk carries this attempt's number.

        :return: a :class:`pgflight.streams.StreamWriter` (the same one for the same channel).
        """
        from pgflight.streams import StreamWriter

        if self._streams is None:
            self._streams = {}
        writer = self._streams.get(channel)
        if writer is None:
            writer = StreamWriter(
                channel,
                lambda ch, chunks: self._call(db.stream_write, self.attempt_id, self.token, ch, chunks),
            )
            self._streams[channel] = writer
        return writer

    @property
    def has_streams(self) -> bool:
        """Has the recipe written to a stream (the worker then flushes them when it ends)?"""
        return bool(self._streams)

    def close_streams(self) -> None:
        """Send every channel's queued chunks (the worker calls this when the recipe ends); never raises."""
        for writer in (self._streams or {}).values():
            writer.close()
            if writer.error is not None:
                self.log.warning("stream %r: last chunks not written: %s", writer.channel, writer.error)

    # --- effects -----------------------------------------------------------------------------

    def effect(self, key: str, fn: Callable[[], Any]) -> Any:
        """
        Run an external side effect at most once per step and key.

        Looks for the receipt first (an earlier attempt may have acted and then crashed); else
        calls `fn` and records its JSON result the instant it returns.

        :param key: names the effect within this step.
        :param fn: does the effect; returns a JSON-serialisable receipt.
        :return: the receipt: `fn`'s result now or from the attempt that acted.
        :raises LeaseLost: the lease was lost (the receipt is still recorded when `fn` ran).
        :raises Fatal: `fn` acted but its receipt cannot be stored (NaN, a NUL character, a lone
            surrogate, over the size cap; or the database refused it): a retry would act again, so
            the step ends here. A stand-in receipt naming the problem is recorded when it can be,
            so not even a manual retry_step repeats the effect.
        """
        from pgflight.db.payload import DEFAULT_MAX_BYTES, BadPayload, check_json, clean_text

        found = self._call(db.find_effect, self.step_id, key)
        if found is not None:
            self.log.info("effect %r already happened (attempt %s): not repeating it", key, found.attempt_id)
            return found.result
        self.check_cancelled()
        value = fn()
        try:
            check_json(
                value,
                what=f"the receipt of effect {key!r}",
                max_bytes=self.max_receipt_bytes or DEFAULT_MAX_BYTES,
            )
            rec: models.RecordedEffect = self._call(db.record_effect, self.attempt_id, self.token, key, value)
        except errors.LeaseLost:
            raise  # the token was never this attempt's: nothing recorded, nothing this holder may do
        except Exception as e:
            reason = clean_text(str(e), limit=2000)
            stand_in = {"pgflight_unstorable_receipt": reason}
            if isinstance(e, BadPayload):
                stand_in["path"] = clean_text(e.path)
            try:
                self._call(db.record_effect, self.attempt_id, self.token, key, stand_in)
            except Exception as e2:
                self.log.error("effect %r acted, and not even a stand-in receipt was stored: %s", key, e2)
            raise Fatal(
                f"effect {key!r} acted but its receipt cannot be stored, so the step stops rather than "
                f"act again on a retry: {reason}"
            ) from None
        if not rec.lease_held:
            raise errors.LeaseLost(
                f"lease lost on attempt {self.attempt_id} (effect {key!r} recorded)",
                hint="abandon this attempt and write nothing",
            )
        return rec.result


if TYPE_CHECKING:
    from pgflight import db
else:

    class _LazyDb:
        """
        :mod:`pgflight.db`, imported on first use (recipes.py must not import psycopg for modules
        that only declare recipes); the first use puts the module itself in its place.
        """

        def __getattr__(self, name: str) -> Any:
            from pgflight import db as module

            globals()["db"] = module
            return getattr(module, name)

    db = _LazyDb()
