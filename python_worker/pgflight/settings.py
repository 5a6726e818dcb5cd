"""
Worker-side settings read from the environment (documented in docs/recipes.md, "Writing recipes
and agents"); the engine's own settings are the row in ``pgflight.settings``.
"""

from __future__ import annotations

import math
import os


def env_number(name: str, default: float, *, positive: bool = False) -> float:
    """
    A finite number from environment variable `name`, else `default` (unset or blank).

    :param positive: require > 0 (else >= 0).
    :raises ValueError: not a number, not finite, or out of range; the message names the variable.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name}={raw!r} must be a finite number {'> 0' if positive else '>= 0'}")
    return value
