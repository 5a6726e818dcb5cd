"""
The plan re-baselined at 1.0 (scripts/rebaseline_plan.py) deploys exactly what the 0.9 plan
deployed: at its first tag, the normalised schema dump equals the 0.9 plan's committed one
(sql/upgrade/from-0.9/schema.dump.sql) with its history references in words (the statements
sql/upgrade/from-0.9/reword.sql runs on an upgraded database) and the rows a deploy writes equal
the 0.9 plan's (sql/upgrade/from-0.9/seed.dump.sql), so a 0.9 database may record the new plan without running
it. And the layout the re-baseline wrote: one change per object, no rework copy before a release.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest

from pgflight import migrate
from pgflight.embedded import find_bindir
from plan_support import ROOT, plan_entries

BRIDGE = ROOT / "sql" / "upgrade" / "from-0.9"


def _rebaseline() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rebaseline_plan", ROOT / "scripts" / "rebaseline_plan.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _first_tag() -> str:
    return next(e for e in plan_entries() if e.startswith("@"))


def test_the_plan_at_its_first_tag_deploys_exactly_what_the_0_9_plan_deployed(
    deployed: Callable[..., str],
) -> None:
    at_tag = deployed(_first_tag())
    fresh = migrate.dump_schema(at_tag)
    committed = (BRIDGE / "schema.dump.sql").read_text()
    if migrate.dump_major(fresh) != migrate.dump_major(committed):
        pytest.skip("the 0.9 dump was made by another pg_dump major: regenerate on the project's machine")
    # the same schema, with the history references of 0.9's function bodies and comments in words
    assert fresh == _rebaseline().reword(committed)
    assert re.search("iss" + r"ues?\s+\d+", fresh, re.I) is None
    # the constant rows (settings, prices, locks) as 0.9 wrote them
    tables = sorted(
        set(re.findall(r"^INSERT INTO pgflight\.(\w+)", (BRIDGE / "seed.dump.sql").read_text(), re.M))
    )
    assert {"settings", "model_prices"} <= set(tables)
    rows = []
    for t in tables:
        out = subprocess.run(
            [
                str(find_bindir() / "pg_dump"),
                "--data-only",
                "--column-inserts",
                f"--table=pgflight.{t}",
                "-d",
                at_tag,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows += [ln for ln in out.splitlines() if ln.startswith("INSERT INTO")]
    expected = [
        ln for ln in (BRIDGE / "seed.dump.sql").read_text().splitlines() if ln.startswith("INSERT INTO")
    ]
    assert sorted(rows) == sorted(expected)


def test_every_change_before_the_first_tag_is_one_object_with_its_three_scripts() -> None:
    entries = plan_entries()
    first = entries.index(_first_tag())
    changes = entries[:first]
    assert len(changes) == len(set(changes)), "a change appears twice before the first release"
    for change in changes:
        for kind in ("deploy", "revert", "verify"):
            assert (ROOT / "sql" / kind / f"{change}.sql").exists(), f"{kind}/{change}.sql"
    # a function change defines one function (with its overloads), a table change one table
    for change in changes:
        folder, _, name = change.partition("/")
        text = (ROOT / "sql" / "deploy" / f"{change}.sql").read_text()
        if folder in ("functions", "internals", "cron"):
            defined = set(re.findall(r"CREATE OR REPLACE (?:FUNCTION|PROCEDURE) pgflight\.(\w+)\(", text))
            assert defined == {name}, change
        if folder == "tables":
            assert re.findall(r"^CREATE TABLE pgflight\.(\w+) ", text, re.M)[0] == name, change
    # rework copies only of a release of this plan (sqitch's <change>@<tag>.sql)
    tags = {e[1:] for e in entries if e.startswith("@")}
    copies = [p for kind in ("deploy", "revert", "verify") for p in (ROOT / "sql" / kind).rglob("*@*.sql")]
    assert [p for p in copies if p.stem.split("@")[1] not in tags] == []
