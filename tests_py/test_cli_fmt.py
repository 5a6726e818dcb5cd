"""
One way to write numbers for people (pgflight.fmt), used by the CLI, the inspector's pages and
the review's report: counts grouped by thousands, USD with at least two decimals and, below a cent,
two significant digits (a model call of $0.0012 must not read as $0.00 or $0.0000), and USD for
machines (JSON) as a fixed-scale decimal string.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from pgflight import fmt
from pgflight.inspector import view


@pytest.mark.parametrize(
    ("usd", "shown"),
    [
        (0, "$0.00"),
        (None, "$0.00"),
        (Decimal("0E-8"), "$0.00"),
        (0.1, "$0.10"),
        (12, "$12.00"),
        (1234.5678, "$1,234.57"),
        (1234567.891, "$1,234,567.89"),
        (Decimal("0.01"), "$0.01"),
        (Decimal("0.00999"), "$0.01"),
        # below a cent: two significant digits, at most six places
        (Decimal("0.001234"), "$0.0012"),
        (Decimal("0.00160000"), "$0.0016"),
        (Decimal("0.005"), "$0.005"),
        (Decimal("0.0000183"), "$0.000018"),
        (Decimal("0.00000100"), "$0.000001"),
        # not zero, but less than the last place
        (Decimal("0.00000040"), "<$0.000001"),
        ("0.25", "$0.25"),
    ],
)
def test_usd_for_people_has_cents_and_shows_a_sub_cent_call(usd: object, shown: str) -> None:
    assert fmt.money(usd) == shown  # type: ignore[arg-type]


def test_usd_for_machines_keeps_its_fixed_scale() -> None:
    assert fmt.money_json(Decimal("0E-8")) == "0.000000"
    assert fmt.money_json(Decimal("0.00123456")) == "0.001235"
    assert fmt.money_json(1234.5) == "1234.500000"


def test_counts_are_grouped_by_thousands_and_plural() -> None:
    assert fmt.number(1234567) == "1,234,567"
    assert fmt.number(999) == "999"
    assert fmt.count(1, "document") == "1 document"
    assert fmt.count(7470, "finding") == "7,470 findings"
    assert fmt.count(2, "retry", "retries") == "2 retries"


def test_durations_up_to_days() -> None:
    assert [fmt.duration(s) for s in (0.85, 12.34, 245, 3 * 3600 + 125, 2 * 86400 + 4 * 3600 + 59)] == [
        "850 ms",
        "12.3 s",
        "4 min 05 s",
        "3 h 02 min",
        "2 d 4 h",
    ]
    assert fmt.duration(None) == ""


@pytest.mark.parametrize("usd", [Decimal("0.0016"), Decimal("0.0033"), Decimal("12.5"), Decimal(0)])
def test_the_inspector_writes_usd_and_counts_as_the_cli(usd: Decimal) -> None:
    assert view.usd(usd) == fmt.money(usd)
    assert view.num(20928662) == fmt.number(20928662) == "20,928,662"
    assert view.dur(90061) == fmt.duration(90061) == "1 d 1 h"
    assert view.usd(None) == view.num(None) == view.dur(None) == "-"
