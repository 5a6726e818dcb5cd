"""
sql/schema.dump.sql is the schema: a fresh deploy of HEAD and an upgrade from the previous tag
both produce exactly it (normalised `pg_dump --schema-only --schema=pgflight`). A change to the
SQL that does not regenerate the dump fails here, and the dump's diff shows every schema change
in review.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

import pytest

from pgflight import migrate
from plan_support import ROOT, previous_tag

DUMP = ROOT / "sql" / "schema.dump.sql"


def _assert_matches(actual: str, expected: str, how: str, what: str) -> None:
    if actual == expected:
        return
    diff = difflib.unified_diff(expected.splitlines(), actual.splitlines(), what, how, lineterm="", n=2)
    shown = "\n".join(list(diff)[:80])
    raise AssertionError(
        f"{how} does not match {what}. If the schema change is intended, regenerate the"
        f" dump with `scripts/dump_schema` and commit it with the change.\n{shown}"
    )


def test_a_fresh_deploy_and_an_upgrade_from_the_previous_tag_produce_the_committed_dump(
    dsn: str, deployed: Callable[..., str]
) -> None:
    fresh = migrate.dump_schema(dsn)
    tag = previous_tag()
    at_tag = deployed(tag)
    migrate.deploy(at_tag)
    upgraded = migrate.dump_schema(at_tag)
    # whatever pg_dump this machine has, an upgrade ends where a fresh deploy does
    _assert_matches(upgraded, fresh, f"an upgrade from {tag} to HEAD", "a fresh deploy of HEAD")

    committed = DUMP.read_text()
    mine, theirs = migrate.dump_major(fresh), migrate.dump_major(committed)
    if mine != theirs:
        pytest.skip(
            f"sql/schema.dump.sql was made by pg_dump {theirs}, this machine has pg_dump {mine}: another"
            " major prints some objects differently (checked above: upgrade and fresh deploy agree)"
        )
    _assert_matches(fresh, committed, "a fresh deploy of HEAD", "sql/schema.dump.sql (committed)")


def test_the_dump_names_the_pg_dump_major_it_was_made_with() -> None:
    assert migrate.dump_major(DUMP.read_text()) is not None, "regenerate it with scripts/dump_schema"
    dumped = "--\n-- PostgreSQL database dump\n--\n\n-- Dumped from database version 17.2\n"
    dumped += "-- Dumped by pg_dump version 17.2 (Debian 17.2-1)\n\nSET x = 1;\nCREATE SCHEMA s;\n"
    assert migrate.normalise_dump(dumped) == "-- pg_dump major version: 17\n\nCREATE SCHEMA s;\n"
