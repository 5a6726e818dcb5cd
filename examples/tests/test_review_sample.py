"""
The sample library of ``pgflight review --sample N``: generated documents with a known answer,
the same bytes for the same seed, and a score of a report's flags against the answers.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from test_review_job import DATA, review

from pgflight_review import report
from pgflight_review.discovery import read_document
from pgflight_review.sample import ANSWERS, CHECK_FILE, CLAUSES, make_sample, score

SOURCES = [str(DATA / name) for name in ("GPL-3", "Apache-2.0", "BSD", "bsdutils.copyright")]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_seed_makes_the_same_documents_and_each_answer_points_at_its_clause(tmp_path: Path) -> None:
    lib = make_sample(tmp_path / "a", 40, seed=7, sources=SOURCES)
    again = make_sample(tmp_path / "b", 40, seed=7, sources=SOURCES)
    other = make_sample(tmp_path / "c", 40, seed=8, sources=SOURCES)
    first = _tree(lib.docs)
    assert len(first) == 40 and first == _tree(again.docs)
    assert first != _tree(other.docs)
    answers = json.loads(lib.answers_file.read_text())["documents"]
    sentences = {" ".join(text.split()): cats for cats, text in CLAUSES}
    kinds = set()
    for doc in answers:
        lines = read_document(doc["path"]).lines
        assert 1 <= len(doc["clauses"]) <= 4
        for clause in doc["clauses"]:
            text = " ".join(lines[clause["line_start"] - 1 : clause["line_end"]])
            assert text == clause["text"] and sentences[text] == tuple(clause["expect"])
            assert not lines[clause["line_start"] - 2].strip() and not lines[clause["line_end"]].strip()
            kinds.add(bool(clause["expect"]))
        assert doc["expect"] == sorted({c for cl in doc["clauses"] for c in cl["expect"]})
    assert kinds == {True, False}  # positives and near-misses both occur
    # a second run over the same folder rewrites nothing (the same command continues the same run)
    mtimes = {p: p.stat().st_mtime_ns for p in lib.docs.rglob("*.txt")}
    make_sample(tmp_path / "a", 40, seed=7, sources=SOURCES)
    assert mtimes == {p: p.stat().st_mtime_ns for p in lib.docs.rglob("*.txt")}


def _flags_csv(path: Path, rows: list[tuple[str, str, int, int]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(report.CSV_COLUMNS)
        for p, cat, a, b in rows:
            w.writerow([p, "x", cat, "high", a, b, f"{p}:{a}", "q"])
    return path


def test_the_score_counts_recalled_clauses_and_false_alarms_on_inserted_lines_only(tmp_path: Path) -> None:
    answers = {
        "seed": 1,
        "documents": [
            {
                "path": "/s/1.txt",
                "expect": ["audit"],
                "clauses": [
                    {"line_start": 10, "line_end": 11, "expect": ["audit"], "text": "a"},
                    {"line_start": 20, "line_end": 20, "expect": [], "text": "near miss"},
                ],
            },
            {
                "path": "/s/2.txt",
                "expect": ["arbitration", "indemnification"],
                "clauses": [
                    {"line_start": 5, "line_end": 6, "expect": ["arbitration"], "text": "b"},
                    {"line_start": 30, "line_end": 32, "expect": ["indemnification"], "text": "c"},
                ],
            },
        ],
    }
    (tmp_path / ANSWERS).write_text(json.dumps(answers))
    flags = _flags_csv(
        tmp_path / "flags.csv",
        [
            ("/s/1.txt", "audit", 11, 12),  # overlaps the audit clause: recalled, right
            ("/s/1.txt", "audit", 20, 20),  # on the near-miss: a false alarm
            ("/s/1.txt", "strong_copyleft", 100, 120),  # the base text's own: not scored
            ("/s/2.txt", "arbitration", 1, 5),  # overlaps: recalled
            ("/s/2.txt", "unknown_terms", 30, 30),  # a document-level judgement: not scored
        ],
    )
    check = score(tmp_path / ANSWERS, flags)
    assert (check.by_category["audit"].expected, check.by_category["audit"].recalled) == (1, 1)
    assert (check.by_category["audit"].findings, check.by_category["audit"].true) == (2, 1)
    assert check.by_category["indemnification"].recalled == 0
    assert check.recall == pytest.approx(2 / 3) and check.precision == pytest.approx(2 / 3)
    assert check.documents_all_found == 1  # the first; the second misses its indemnity
    assert "recall 0.667" in check.lines()[0] and "Indemnification recall 0.00" in check.lines()[1]


def test_review_sample_reviews_the_generated_folder_and_prints_the_check(dsn: str, tmp_path: Path) -> None:
    out = tmp_path / "report"
    proc = review(dsn, tmp_path, "--sample", "12", "--workers", "2", "--out", str(out))
    assert "12 documents made from" in proc.stderr and "found 12 documents to review" in proc.stderr
    assert "documents: 12 submitted, 12 reviewed" in proc.stdout
    check = json.loads((out / CHECK_FILE).read_text())
    assert check["documents"] == 12
    assert (
        f"(recall {check['recall']:.3f})" in proc.stdout
        and f"(precision {check['precision']:.3f})" in proc.stdout
    )
    # the figures are those of the report's own flags.csv
    assert score(out / "sample" / ANSWERS, out / "flags.csv").as_dict() == check


def test_review_sample_takes_no_paths() -> None:
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "review", "--sample", "3", str(DATA)],
        env=dict(os.environ, PGFLIGHT_DSN="postgresql:///not-reached"),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 2 and "--sample makes its own documents" in proc.stderr
