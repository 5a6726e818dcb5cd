"""
The main job end to end: ``pgflight review`` as a real command against the test database, with
real worker processes (and, under ``--chaos``, real SIGKILLs), checked from the database and the
report files.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgflight import db
from pgflight.db.audit import run_audit
from pgflight.testing import assert_replays
from pgflight_review import discovery, job
from pgflight_review.clauses import analyze
from pgflight_review.licences import LicenceMap
from pgflight_review.recipes import document_licence

DATA = Path(__file__).parent / "data" / "licenses"
NON_ASCII_NAME = "MIT licença ü (annotated-types).txt"


def review(dsn: str, tmp: Path, *args: str, timeout_s: float = 150) -> subprocess.CompletedProcess[str]:
    """
    Run `pgflight review ARGS` with PGFLIGHT_DSN=dsn; fail with its output unless it exits 0 (all
    reviewed) or 5 (all reviewed, some files skipped).
    """
    env = dict(os.environ, PGFLIGHT_DSN=dsn, COLUMNS="160")
    proc = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "review", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode not in (0, 5):
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(tmp.rglob("worker-*.log")))
        pytest.fail(f"review exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}\n{logs}")
    return proc


def the_run(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "select id from pgflight.runs where recipe = 'review_library' order by id desc"
    ).fetchone()
    assert row is not None
    return int(row[0])


def documents(conn: psycopg.Connection[Any], run_id: int) -> dict[str, Any]:
    """The review_document children of the run's root, by document path."""
    root = conn.execute("select root_step_id from pgflight.runs where id = %s", [run_id]).fetchone()
    assert root is not None
    children = [c for c in db.children_results(conn, root[0]) if c.recipe == "review_document"]
    return {c.result["path"]: c for c in children if c.status == "succeeded"}


def test_review_of_the_shipped_library_flags_gpl3_with_cited_lines_and_audits_from_the_db(
    dsn: str, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    proc = review(dsn, tmp_path, str(DATA), "--workers", "2", "--out", str(out))
    assert "succeeded" in proc.stdout and str(out / "report.html") in proc.stdout
    assert proc.returncode == 5 and "2 files skipped" in proc.stderr  # binary.bin, empty.txt

    with psycopg.connect(dsn, autocommit=True) as conn:
        run_id = the_run(conn)
        assert db.run_status(conn, run_id).status == "succeeded"
        docs = documents(conn, run_id)
        audit = run_audit(conn, run_id)
        model_calls = conn.execute(
            "select count(*) from pgflight.costs where run_id = %s", [run_id]
        ).fetchone()

    found = discovery.discover([str(DATA)])
    assert sorted(docs) == sorted(d.path for d in found.documents) and len(docs) == 14
    # every document reviewed through the tools: the flags are what clause detection finds in the
    # text the model read, each with its lines
    for path, child in docs.items():
        expected = analyze(discovery.read_document(path).lines)
        got = [
            (f["category"], f["severity"], f["line_start"], f["line_end"], f["quote"])
            for f in child.result["flags"]
        ]
        assert got == [
            (f.category, f.severity, f.line_start, f.line_end, f.quote) for f in expected.findings
        ], path
        lines = discovery.read_document(path).lines
        assert child.result["family"] == document_licence(path, lines)[0]
        # each flag names the licence of the DEP-5 stanza it sits in (the document's elsewhere)
        where = LicenceMap.of(lines, child.result["family"])
        assert all(f["family"] == where.family_at(f["line_start"]) for f in child.result["flags"])

    gpl3 = docs[str(DATA / "GPL-3")].result
    assert gpl3["family"] == "GPL-3.0" and gpl3["summary"].startswith("GPL-3.0")

    def at(category: str, line: int, severity: str | None = None) -> bool:
        return any(
            f["category"] == category
            and f["line_start"] <= line <= f["line_end"]
            and (severity is None or f["severity"] == severity)
            for f in gpl3["flags"]
        )

    assert at("strong_copyleft", 222, "high")  # 5(c) "You must license the entire work, as a whole"
    assert at("patent_retaliation", 466, "high")  # 10: "you may not initiate litigation ... patent claim"
    assert at("patent_grant", 487)  # 11: the contributor's patent grant
    assert docs[str(DATA / "AGPL-3.0-section13.excerpt")].result["family"] == "AGPL-3.0"
    assert any(
        f["category"] == "network_copyleft"
        for f in docs[str(DATA / "AGPL-3.0-section13.excerpt")].result["flags"]
    )
    assert docs[str(DATA / NON_ASCII_NAME)].result["family"] == "MIT"  # spaces and non-ASCII in the name
    assert docs[str(DATA / "latin1-gpl2-header.txt")].result["family"] == "GPL-2.0"  # not UTF-8

    # the report: findings with file:line citations, skipped documents with reasons, the audit
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    strong = next(
        f
        for f in gpl3["flags"]
        if f["category"] == "strong_copyleft" and f["line_start"] <= 222 <= f["line_end"]
    )
    cite = f"{DATA / 'GPL-3'}:{strong['line_start']}-{strong['line_end']}"
    gpl3_md = md.split(f"#### `{DATA / 'GPL-3'}`")[1].split("####")[0]
    assert (
        f"lines {strong['line_start']}-{strong['line_end']}: c) You must license the entire work" in gpl3_md
    )
    assert f'<a href="file://{DATA / "GPL-3"}#:~:text=c%29%20You%20must%20license%20the">' in html
    assert f"Run {run_id} · " in md and "`scripts/pgflight show" in md
    assert f"{DATA / 'binary.bin'} | binary" in md and f"{DATA / 'empty.txt'} | empty" in md
    with open(out / "flags.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == sum(len(c.result["flags"]) for c in docs.values())
    assert any(r["citation"] == cite and r["category"] == "strong_copyleft" for r in rows)
    assert any(r["path"] == str(DATA / NON_ASCII_NAME) for r in rows)
    # the audit section is the database's count (no retries here: nobody was killed)
    assert model_calls is not None and audit.model_calls == model_calls[0] > 14
    assert f"| Model calls | {audit.model_calls} |" in md
    assert f"| Steps | {audit.steps} |" in md and audit.steps == 16  # 14 documents, root, reconcile
    assert audit.steps_unfinished == 0 and audit.dead_letters == 0 and audit.steps_succeeded_twice == 0

    # every recorded document review replays clean against the review's tools as they are now
    # (pgflight.testing: no model call, nothing written; the recipe module rebuilds each document's tools)
    with psycopg.connect(dsn, autocommit=True) as conn:
        reports = [assert_replays(conn, child.step_id) for child in docs.values()]
    assert all(r.tool_calls > 0 and r.skipped == 0 for r in reports)


def test_the_same_command_continues_an_unfinished_run_and_starts_anew_after_it_ended(
    dsn: str, tmp_path: Path
) -> None:
    inp = job.library_input(discovery.discover([str(DATA / "BSD")]), tmp_path, "offline", "offline")
    with psycopg.connect(dsn, autocommit=True) as conn:
        first, resumed = job.submit(conn, inp, max_attempts=3, lease_s=5)
        assert not resumed
        assert job.submit(conn, inp, max_attempts=3, lease_s=5) == (first, True)  # interrupted: continue
        db.cancel_run(conn, first, actor="test", reason="test")
        second, resumed = job.submit(conn, inp, max_attempts=3, lease_s=5)
        assert second != first and not resumed  # ended: the same command reviews again


def make_library(folder: Path, n: int) -> list[Path]:
    """`n` distinct documents made from the shipped texts (each with its own header line)."""
    sources = [p for p in sorted(DATA.iterdir()) if p.name not in ("binary.bin", "empty.txt")]
    folder.mkdir()
    made = []
    for i in range(n):
        src = sources[i % len(sources)]
        dst = folder / f"{i:03d} {src.name}"
        dst.write_bytes(f"Copy {i} of {src.name}\n".encode() + src.read_bytes())
        made.append(dst)
    return made


def add_bad_input(folder: Path) -> None:
    """Files the review must skip with a reason, without crashing: huge, dangling, bad name, binary."""
    (folder / "huge.txt").write_bytes(b"Permission is hereby granted.\n" * (discovery.MAX_BYTES // 30 + 1))
    (folder / "gone").symlink_to(folder / "does-not-exist")
    with open(os.fsencode(folder) + b"/latin1-name-\xe9.txt", "wb") as fh:
        fh.write(b"MIT License\n")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)


def test_c_chaos_review_of_200_documents_ends_with_a_clean_audit(dsn: str, tmp_path: Path) -> None:
    made = make_library(tmp_path / "library", 200)
    add_bad_input(tmp_path / "library")
    out = tmp_path / "report"
    proc = review(
        dsn,
        tmp_path,
        str(tmp_path / "library"),
        "--workers",
        "2",
        "--chaos",
        "--chaos-interval",
        "1.5",
        "--out",
        str(out),
        timeout_s=170,
    )
    assert "workers killed" in proc.stdout

    with psycopg.connect(dsn, autocommit=True) as conn:
        run_id = the_run(conn)
        audit = run_audit(conn, run_id)
        docs = documents(conn, run_id)
        per_step = conn.execute(
            "select max(a.result ->> 'path'), count(*) filter (where a.status = 'succeeded'),"
            "       count(*) filter (where a.status = 'lease_expired')"
            "  from pgflight.steps s join pgflight.step_attempts a on a.step_id = s.id"
            " where s.run_id = %s and s.recipe = 'review_document' group by s.id",
            [run_id],
        ).fetchall()
        reclaimed = conn.execute(
            "select count(*) from pgflight.step_attempts where run_id = %s and status = 'lease_expired'",
            [run_id],
        ).fetchone()

    assert audit.status == "succeeded"
    assert sorted(docs) == sorted(str(p) for p in made)  # no document missing
    assert len(per_step) == 200 and all(n == 1 for _, n, _ in per_step)  # none reviewed twice
    assert audit.steps == 202 and audit.steps_succeeded == 202 and audit.steps_unfinished == 0
    assert audit.dead_letters == 0 and audit.steps_succeeded_twice == 0
    assert reclaimed is not None and audit.reclaimed_attempts == reclaimed[0] > 0  # the kills were felt
    assert audit.retries >= audit.reclaimed_attempts
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "200 of 200 documents reviewed, 0 not reviewed, 4 skipped before review" in md
    # the report's audit counts the workers --chaos killed before the report was written
    killed_line = next(line for line in md.splitlines() if line.startswith("| Workers killed by --chaos"))
    assert int(killed_line.split("|")[2]) > 0
    for reason in (
        "huge.txt | huge:",
        "gone | dangling symlink",
        "| file name is not valid UTF-8",
        "blob.bin | binary",
    ):
        assert reason in md
    # a document whose agent was killed mid-review resumed from its transcript: same flags as its text
    killed = [path for path, _, lost in per_step if lost]
    assert killed
    for path in killed[:20]:
        expected = analyze(discovery.read_document(path).lines)
        assert [(f["category"], f["line_start"], f["line_end"]) for f in docs[path].result["flags"]] == [
            (f.category, f.line_start, f.line_end) for f in expected.findings
        ], path
    shutil.rmtree(tmp_path / "library")
