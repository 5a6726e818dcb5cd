"""
Code, comments, tests and docs state rules in words, not by pointing outside the repository: no
file outside the 0.9 upgrade bridge and CHANGELOG.md names a tracker entry by number ("issue" and
a number) or a section of a design document kept elsewhere ("DESIGN" and a section sign, or its
file name), and no test module is named after a past piece of work (``test_<subject>_s6.py``).
Invariants are cited by their number in docs/state_machine.md, failure cases by their code in
docs/scenarios.md.

Left out: sql/upgrade/ (the 0.9 plan's scripts, kept as they were deployed, so that a 0.9
database can be brought to that plan's end before the re-baselined plan is recorded),
docs/options.md (generated from the SQL's option catalogue) and CHANGELOG.md (its past sections
are history by design). No database needed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TRACKER = re.compile(r"\b" + "iss" + r"ues?\s+#?\d+", re.IGNORECASE)
DESIGN_DOC = re.compile("DES" + r"IGN(\s*§|\.md\b)")
PAST_WORK_MODULE = re.compile(r"(^|/)test_\w*_s\d+\.py$")

EXCLUDED_PREFIXES = ("sql/upgrade/",)
# docs/options.md is generated from the SQL option catalogue (scripts/options_doc.py): it changes with sql/
EXCLUDED_FILES = {"CHANGELOG.md", "docs/options.md"}
# legitimately external texts: licence texts quoted verbatim by the example application's fixtures
ALLOWED_PREFIXES = ("examples/tests/data/licenses/", "examples/tests/eval/texts/")
SKIPPED_DIRS = {".git", ".venv", "node_modules", "dist", "__pycache__", ".mypy_cache", ".ruff_cache"}


def _files() -> list[str]:
    """Tracked and new (not ignored) files, relative to the checkout's root."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        return sorted({p for p in out.decode().split("\0") if p and (ROOT / p).is_file()})
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        return sorted(
            str(p.relative_to(ROOT))
            for p in ROOT.rglob("*")
            if p.is_file() and not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)
        )


def _checked(path: str) -> bool:
    return not (path in EXCLUDED_FILES or path.startswith(EXCLUDED_PREFIXES + ALLOWED_PREFIXES))


def _offences(path: str, text: str) -> list[str]:
    found = []
    for no, line in enumerate(text.splitlines(), 1):
        for pattern in (TRACKER, DESIGN_DOC):
            found += [f"{path}:{no}: {m.group(0)!r}" for m in pattern.finditer(line)]
    return found


def test_no_file_outside_the_bridge_points_at_a_tracker_entry_or_an_outside_design_section() -> None:
    offences = []
    files = [p for p in _files() if _checked(p)]
    assert len(files) > 100, "the checkout's files were not found"
    for path in files:
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # images and other binary files
            continue
        offences += _offences(path, text)
    assert not offences, "state the rule in words instead:\n" + "\n".join(offences)


def test_no_test_module_is_named_after_past_work() -> None:
    named = [
        p for p in _files() if p.startswith(("tests_py/", "examples/tests/")) and PAST_WORK_MODULE.search(p)
    ]
    assert not named, f"name these test modules by what they test: {named}"


# the word and the document's name are split so that this file does not match itself
WORD, DOC = "iss" + "ue", "DES" + "IGN"


@pytest.mark.parametrize(
    ("line", "offends"),
    [
        (f"a claim renews the row at most once a second ({WORD} 18)", True),
        (f"see {WORD.title()} #12 for the background", True),
        (f"({WORD}s 3 and 4)", True),
        (f"the targets of {DOC} §8", True),
        (f"read ../shared/{DOC}.md first", True),
        ("a token never issued to the attempt is refused", False),
        (f"https://github.com/psycopg/psycopg/{WORD}s/123", False),
        ("invariant 7 of docs/state_machine.md", False),
        (f"the {WORD} of a fencing token", False),
    ],
)
def test_the_patterns_catch_references_and_spare_plain_words(line: str, offends: bool) -> None:
    assert bool(_offences("x", line)) is offends


def test_the_check_leaves_out_only_the_history_it_means_to() -> None:
    assert not _checked("sql/upgrade/from-0.9/deploy/functions/claim_batch.sql")
    assert _checked("sql/deploy/functions/claim_batch.sql")
    assert not _checked("CHANGELOG.md")
    assert _checked("sqitch.plan")
    assert not _checked("docs/options.md")
    assert _checked("docs/state_machine.md")
    assert _checked("tests_sql/claim_batch/returns_at_most_n_by_priority_then_age.sql")
    assert _checked("python_worker/pgflight/sql_helpers.py")
    assert PAST_WORK_MODULE.search("tests_py/test_attack_s7.py")
    assert not PAST_WORK_MODULE.search("tests_py/test_hot_path_attacks.py")
