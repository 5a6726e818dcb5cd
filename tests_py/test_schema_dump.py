"""
sql/schema.dump.sql is the schema: a fresh deploy of HEAD and an upgrade from the previous tag
both produce exactly it (normalised `pg_dump --schema-only --schema=pgflight`). A change to the
SQL that does not regenerate the dump fails here, and the dump's diff shows every schema change
in review.
"""

from __future__ import annotations

import difflib

from pgflight import migrate
from plan_support import ROOT, previous_tag

DUMP = ROOT / "sql" / "schema.dump.sql"


def _assert_matches(actual: str, how: str) -> None:
    expected = DUMP.read_text()
    if actual == expected:
        return
    diff = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "sql/schema.dump.sql (committed)", how, lineterm="", n=2
    )
    shown = "\n".join(list(diff)[:80])
    raise AssertionError(
        f"{how} does not match sql/schema.dump.sql. If the schema change is intended, regenerate the"
        f" dump with `scripts/dump_schema` and commit it with the change.\n{shown}"
    )


def test_a_fresh_deploy_produces_the_committed_dump(dsn: str) -> None:
    _assert_matches(migrate.dump_schema(dsn), "a fresh deploy of HEAD")


def test_an_upgrade_from_the_previous_tag_produces_the_committed_dump(empty_dsn: str) -> None:
    tag = previous_tag()
    migrate.deploy(empty_dsn, to=tag)
    migrate.deploy(empty_dsn)
    _assert_matches(migrate.dump_schema(empty_dsn), f"an upgrade from {tag} to HEAD")
