"""
One way to write counts, durations, bytes and money, for the CLI and its JSON, the inspector's
pages and the review's report (they all format through this module).

- :func:`count` ``count(1, "document")`` → ``1 document``; ``count(16031274, "token")`` →
  ``16,031,274 tokens`` (humanize's grouping).
- :func:`duration` seconds → ``850 ms``, ``2.4 s``, ``3 min 05 s``, ``1 h 02 min``, ``2 d 4 h``.
- :func:`size` bytes → ``2.0 MB`` (humanize, decimal units).
- :func:`money` USD for people: at least two decimals (cents, grouped: ``$1,234.57``, ``$0.00``), and
  below a cent two significant digits, up to :data:`MONEY_SCALE` places, so that one cheap model
  call does not read as free (``$0.0012``, ``$0.000018``); a non-zero amount under the smallest
  place is ``<$0.000001``.
- :func:`money_json` → ``"0.001234"``: USD for machines, a decimal string with the fixed scale
  :data:`MONEY_SCALE`, never a float or an exponent (``0E-8``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Final

import humanize

#: Decimal places of every USD amount written as JSON, and the most :func:`money` prints.
MONEY_SCALE: Final = 6
_QUANTUM: Final = Decimal(1).scaleb(-MONEY_SCALE)
_CENT: Final = Decimal("0.01")


def number(n: int | float) -> str:
    """``16,031,274`` (integers grouped by thousands)."""
    return humanize.intcomma(n)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 document``, ``0 documents``, ``2 children`` (with `plural`)."""
    word = noun if n == 1 else (plural or f"{noun}s")
    return f"{number(n)} {word}"


def duration(seconds: float | None) -> str:
    """A short duration for people and tables: 850 ms, 4 min 05 s, 3 h 02 min, 2 d 4 h; empty for None."""
    if seconds is None:
        return ""
    s = max(float(seconds), 0.0)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    if s < 86400:
        return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    return f"{int(s // 86400)} d {int(s % 86400 // 3600)} h"


def between(start: datetime | None, end: datetime | None) -> str:
    """The duration from `start` to `end` (now when None); empty without a start."""
    if start is None:
        return ""
    return duration(((end or datetime.now(start.tzinfo)) - start).total_seconds())


def ago(at: datetime | None, now: datetime | None = None) -> str:
    """``4.2 s ago``; empty for None."""
    if at is None:
        return ""
    now = now or datetime.now(at.tzinfo)
    return f"{duration((now - at).total_seconds())} ago"


def size(n_bytes: int) -> str:
    """``2.0 MB``."""
    return humanize.naturalsize(n_bytes)


def _usd(value: Decimal | float | int | str | None) -> Decimal:
    return Decimal(str(value if value is not None else 0)).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)


def money(value: Decimal | float | int | str | None) -> str:
    """
    USD for people: ``$1,234.57``, ``$0.00``, ``$0.0012``, ``$0.000018``, ``<$0.000001``.

    :param value: an amount in USD; None counts as zero.
    :return: cents (two decimals, grouped by thousands) from one cent up and for zero; below a cent
        two significant digits, at most :data:`MONEY_SCALE` places.
    """
    exact = Decimal(str(value if value is not None else 0))
    v = _usd(exact)
    sign = "-" if v < 0 else ""
    v = abs(v)
    if v == 0 and exact != 0:
        return f"{sign}<${_QUANTUM:f}"
    if v == 0 or v >= _CENT:
        return f"{sign}${v.quantize(_CENT, rounding=ROUND_HALF_EVEN):,.2f}"
    # below a cent: two significant digits (0.001234 -> 0.0012), trailing zeros dropped (0.005)
    places = min(MONEY_SCALE, 1 - v.adjusted())
    shown = v.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    return f"{sign}${shown:f}".rstrip("0")


def money_json(value: Decimal | float | int | str | None) -> str:
    """``"0.001234"``: USD as a decimal string with the fixed scale, for JSON."""
    return f"{_usd(value):f}"


def attempt(no: int, max_attempts: int) -> str:
    """'attempt 2/3'; past the limit (an operator's retry_step grants one more) 'attempt 3 (2 + retried)'."""
    if no > max_attempts:
        return f"attempt {no} ({max_attempts} + retried)"
    return f"attempt {no}/{max_attempts}"


def seconds(td: timedelta) -> float:
    """A timedelta in seconds."""
    return td.total_seconds()
