"""
The Python half of the mixed deployment: a step that fans out one child per word, each child of
recipe `shout`, which only the TypeScript worker serves (ts_worker.mjs), and joins their results.
"""

from __future__ import annotations

from typing import Any

from pgflight.recipes import StepContext, recipe


@recipe("headline")
def headline(ctx: StepContext) -> Any:
    words = str(ctx.input["text"]).split()
    ctx.spawn([{"key": f"w{i:03d}", "recipe": "shout", "input": {"word": w}} for i, w in enumerate(words)])
    # the recipe runs again from the top once every child is terminal: spawn then returns at once
    children = ctx.children()
    return {
        "headline": " ".join(str((c.result or {}).get("word", "?")) for c in children),
        "served_by": sorted({str((c.result or {}).get("by")) for c in children}),
    }
