"""
Tools an agent may call: ``@tool`` functions whose pydantic argument model gives the JSON schema
the model sees.

::

    class ReadLines(BaseModel):
        path: str
        start: int = 1
        count: int = Field(50, le=500)

    @tool(description="Read lines of a file.")
    def read_lines(args: ReadLines) -> str:
        ...

    @tool(side_effects=True, verify=lambda args, ctx: lookup_ticket(args.title))
    def open_ticket(args: Ticket, ctx: ToolContext) -> dict:
        ...

A tool returns a string or any JSON value (sent to the model as JSON text). It may take a second
parameter, the :class:`ToolContext`. A tool that acts on the world says ``side_effects=True``: it
runs through the step's effect receipts (:meth:`StepContext.effect`, key ``tool:<tool_use_id>``),
so a retry after a crash finds the receipt and does not act again. ``verify(args, ctx)`` decides,
after a crash, whether an interrupted call took effect: it returns the call's result if it did,
None if it did not (then the call runs again). A tool with neither, and no side effects, is simply
run again; one with side effects and neither a receipt nor a verdict is reported to the model as
interrupted. A call counts as interrupted only when the crash came after it was marked in flight,
which the loop does just before the call starts: a call the crash kept from starting simply runs.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from pgflight import tracing


@dataclass
class ToolContext:
    """What a tool sees besides its arguments: the step context and the call's identity."""

    step: Any  # pgflight.recipes.StepContext
    agent_run_id: int
    iteration: int
    tool_use_id: str


VerifyFn = Callable[[Any, ToolContext], Any]


@dataclass(frozen=True)
class Tool:
    """A registered tool: name, description, function, argument model, side effects, verify hook."""

    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    side_effects: bool = False
    verify: VerifyFn | None = None

    def schema(self) -> dict[str, Any]:
        """The tool definition sent to the Messages API: name, description, input_schema."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.args_model.model_json_schema(),
        }

    def call(self, args: BaseModel, ctx: ToolContext) -> Any:
        """Run the tool with parsed arguments (and the context when it takes one), in a trace span."""
        with tracing.tool_call(self.name, ctx.tool_use_id, ctx.iteration):
            if len(inspect.signature(self.fn).parameters) >= 2:
                return self.fn(args, ctx)
            return self.fn(args)


TOOLS: dict[str, Tool] = {}


def tool(
    name: str | None = None,
    *,
    description: str | None = None,
    side_effects: bool = False,
    verify: VerifyFn | None = None,
    registry: dict[str, Tool] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """
    Decorator: register a function as a tool. Its first parameter must be annotated with a
    pydantic model (the arguments); the description defaults to the docstring.

    :param side_effects: the tool acts on the world: run it through effect receipts.
    :param verify: ``verify(args, ctx) -> result | None`` after a crash (see the module doc).
    :raises TypeError: the first parameter is not a pydantic model.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(fn, eval_str=True).parameters.values())
        model = params[0].annotation if params else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(
                f"tool {fn.__name__}: the first parameter must be annotated with a pydantic model"
            )
        t = Tool(
            name or fn.__name__,
            description or inspect.getdoc(fn) or fn.__name__,
            fn,
            model,
            side_effects,
            verify,
        )
        (TOOLS if registry is None else registry)[t.name] = t
        return fn

    return deco


def get_tools(names: list[str], registry: dict[str, Tool] | None = None) -> list[Tool]:
    """
    The tools named, in order.

    :raises KeyError: a name is not registered.
    """
    reg = TOOLS if registry is None else registry
    missing = [n for n in names if n not in reg]
    if missing:
        raise KeyError(f"unknown tools {missing}; registered: {sorted(reg)}")
    return [reg[n] for n in names]


def result_text(value: Any) -> str:
    """A tool's return value as the text of a tool_result: strings as they are, the rest as JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
