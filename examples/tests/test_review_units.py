"""
The review job's engine-independent parts, on real license texts (tests_py/data/licenses/).

No database: discovery, clause detection, the tools, the offline review policy driven through
whole conversations by a small tool executor, and the report writer.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pgflight_review import clauses, discovery, policy, report, tools
from pgflight_review.clauses import Finding, analyze
from pgflight_review.licences import LicenceMap
from pgflight_review.recipes import document_licence

DATA = Path(__file__).parent / "data" / "licenses"
NON_ASCII_NAME = "MIT licença ü (annotated-types).txt"


def lines_of(name: str) -> list[str]:
    return discovery.read_document(str(DATA / name)).lines


def findings(name: str, category: str) -> list[Finding]:
    return [f for f in analyze(lines_of(name)).findings if f.category == category]


def covers(found: list[Finding], line: int) -> bool:
    return any(f.line_start <= line <= f.line_end for f in found)


# --- clause detection on real texts ------------------------------------------------------------


def test_gpl3_is_strong_copyleft_with_patent_clauses_at_the_right_lines() -> None:
    lines = lines_of("GPL-3")
    a = analyze(lines)
    assert a.family == "GPL-3.0" and a.families == ("GPL-3.0",)
    strong = findings("GPL-3", "strong_copyleft")
    # section 5(c): "You must license the entire work, as a whole, under this License"
    assert lines[221].strip().startswith("c) You must license the entire work")
    assert covers(strong, 222) and all(f.severity == "high" for f in strong)
    grant = findings("GPL-3", "patent_grant")
    assert covers(grant, 487) and "royalty-free" in lines[486]  # the grant
    # section 10: "you may not initiate litigation ... alleging that any patent claim is infringed"
    retaliation = findings("GPL-3", "patent_retaliation")
    assert retaliation and retaliation[0].line_start <= 466 <= retaliation[0].line_end
    assert retaliation[0].severity == "high" and not covers(grant, 466)
    assert "initiate litigation" in lines[465]
    # GPL-3's section 13 only mentions the AGPL: not network copyleft, not a weak copyleft license
    assert not findings("GPL-3", "network_copyleft") and not findings("GPL-3", "weak_copyleft")


def test_terms_added_to_a_known_licence_are_read_by_meaning_and_its_own_wording_is_not() -> None:
    """A known licence with two clauses of its own wording added: the added terms are flagged by
    their meaning, while the licence's sentences get no more findings than its rules give."""
    base = lines_of("BSD")
    before = analyze(base)
    added = [
        "",
        "You shall not use the Software, or any output of it, for any commercial purpose.",
        "",
        "This licence ends automatically and without notice if you fail to comply with any of",
        "these terms.",
    ]
    after = analyze([*base, *added])
    assert before.family == after.family != clauses.UNKNOWN_FAMILY
    n = len(base)
    on_added = {f.category for f in after.findings if f.line_end > n}
    assert {"non_commercial", "termination"} <= on_added
    assert [f for f in after.findings if f.line_end <= n] == list(before.findings)
    # the licence's own sentences are recognised as such, an added one is not
    assert clauses.is_standard(" ".join(base[2:8]))
    assert not clauses.is_standard(added[1])


def test_apache2_patent_grant_and_retaliation_are_separate_findings() -> None:
    lines = lines_of("Apache-2.0")
    assert analyze(lines).family == "Apache-2.0"
    grant = findings("Apache-2.0", "patent_grant")
    retaliation = findings("Apache-2.0", "patent_retaliation")
    assert grant and grant[0].line_start == 74 and "Grant of Patent License" in lines[73]
    assert retaliation and covers(retaliation, 83) and "institute patent litigation" in lines[82]
    # the quote is the whole sentence, from its start on the line before
    assert retaliation[0].quote.startswith("If You institute patent litigation")
    assert retaliation[0].quote.endswith("as of the date such litigation is filed.")
    assert covers(findings("Apache-2.0", "trademark"), 139)
    assert not findings("Apache-2.0", "strong_copyleft") and not findings("Apache-2.0", "weak_copyleft")


def test_bsd_4_clause_advertising_clause_in_a_debian_copyright_file() -> None:
    lines = lines_of("bsdutils.copyright")
    adverts = findings("bsdutils.copyright", "advertising")
    assert covers(adverts, 431) and "All advertising materials" in lines[430]
    assert all(f.severity == "medium" for f in adverts)
    assert "BSD-4-Clause" in analyze(lines).families


def test_agpl_is_network_copyleft() -> None:
    lines = lines_of("AGPL-3.0-section13.excerpt")
    a = analyze(lines)
    assert a.family == "AGPL-3.0"
    network = findings("AGPL-3.0-section13.excerpt", "network_copyleft")
    line = next(i for i, text in enumerate(lines, 1) if "interacting with it remotely" in text)
    assert covers(network, line) and network[0].severity == "high"


@pytest.mark.parametrize(
    ("name", "family", "category", "line"),
    [
        (
            "LGPL-2.1",
            "LGPL-2.1",
            "weak_copyleft",
            167,
        ),  # "The modified work must itself be a software library" (grep -n; the text has form feeds)
        (
            "MPL-2.0",
            "MPL-2.0",
            "weak_copyleft",
            163,
        ),  # 3.1: distribution "must be under the terms of this License"
        ("MPL-2.0", "MPL-2.0", "patent_retaliation", 249),  # 5.2: patent-assertion termination
        ("GPL-2", "GPL-2.0", "strong_copyleft", 100),  # 2(b): "licensed as a whole at no charge"
        ("BSD", "BSD-3-Clause", "trademark", 13),  # "may be used to endorse or promote products"
        (
            "Artistic",
            "Artistic-1.0",
            "non_commercial",
            89,
        ),  # "You may not charge a fee for this Package itself"
        ("GFDL-1.3", "GFDL-1.3", "strong_copyleft", 183),  # "under precisely this License"
        ("vim.copyright", "Vim", "export_control", 483),  # "re-export control laws and regulations"
        ("libxau6.copyright", "MIT", "limitation_of_liability", 17),
        (NON_ASCII_NAME, "MIT", "attribution", 12),
        ("latin1-gpl2-header.txt", "GPL-2.0", "strong_copyleft", 4),
    ],
)
def test_real_texts_family_and_clause_at_line(name: str, family: str, category: str, line: int) -> None:
    a = analyze(lines_of(name))
    assert a.family == family
    assert covers(findings(name, category), line), [f for f in a.findings if f.category == category]


def test_every_finding_quote_occurs_in_its_cited_lines() -> None:
    for path in sorted(DATA.iterdir()):
        try:
            lines = discovery.read_document(str(path)).lines
        except discovery.UnreadableDocument:
            continue
        doc = tools.ReviewDocument(str(path), lines)
        for f in analyze(lines).findings:
            assert f.category in clauses.CATEGORIES and f.severity in clauses.SEVERITIES
            tools.flag(
                doc,
                tools.FlagArgs(
                    category=f.category,
                    severity=f.severity,  # type: ignore[arg-type]
                    quote=f.quote,
                    line_start=f.line_start,
                    line_end=f.line_end,
                ),
            )


def test_unknown_custom_terms_and_debian_license_fields() -> None:
    custom = [
        "Copyright 2020 Example Corp.",
        "",
        "You may use this file only on Tuesdays, with our permission.",
    ]
    a = analyze(custom)
    assert a.family == clauses.UNKNOWN_FAMILY
    assert [(f.category, f.line_start) for f in a.findings] == [("unknown_terms", 1)]
    fmt = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    dep5 = [
        fmt,
        "Files: *",
        "Copyright: 2001 A",
        "License: GPL-2+ or BSD-3-clause",
        "",
        "License: Foo-Custom",
        " Use it, but wear a hat.",
        "",
        "License: AGPL-3+",
    ]
    a = analyze(dep5)
    assert a.family == "GPL-2.0" and a.families == ("GPL-2.0", "BSD-3-Clause", "AGPL-3.0")
    got = {(f.category, f.severity, f.line_start) for f in a.findings}
    # a permissive alternative softens the copyleft; the unknown name is flagged where it is defined
    assert ("strong_copyleft", "medium", 4) in got
    assert ("unknown_terms", "low", 6) in got
    assert ("network_copyleft", "high", 9) in got
    # the "Files: *" license is a custom one: the document is unclassified, whatever else it names
    custom_first = [
        fmt,
        "Files: *",
        "License: Foo-Custom",
        "",
        "Files: x.c",
        "License: MIT",
        "",
        "License: Foo-Custom",
        " Use it, but wear a hat.",
    ]
    a = analyze(custom_first)
    assert a.family == clauses.UNKNOWN_FAMILY and a.families == ("MIT",)
    assert [(f.category, f.line_start) for f in a.findings] == [("unknown_terms", 8)]
    assert clauses.family_from_short_name("GPL-2+ with Autoconf exception") == "GPL-2.0"
    assert clauses.family_from_short_name("Expat") == "MIT"


def test_analysis_is_deterministic() -> None:
    lines = lines_of("GPL-3")
    assert analyze(lines) == analyze(list(lines))


def test_words_are_stemmed_alike_by_threads_at_once() -> None:
    # the worker reviews documents in several threads of one process: each word's stem must be
    # the one a single thread gives, with no IndexError, however the threads interleave
    words = sorted(set(clauses._WORD.findall("\n".join(lines_of("GPL-3")).lower())))
    clauses._stem.cache_clear()
    alone = {w: clauses._stem(w) for w in words}
    failures: list[str] = []

    def stem_all() -> None:
        for w in words:
            try:
                got = clauses._stem(w)
            except Exception as e:  # every failure is collected and asserted below
                failures.append(f"{w}: {e!r}")
            else:
                if got != alone[w]:
                    failures.append(f"{w}: {got} != {alone[w]}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for _ in range(3):
            clauses._stem.cache_clear()
            threads = [threading.Thread(target=stem_all) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(interval)
        clauses._stem.cache_clear()
    assert failures == []


# --- discovery --------------------------------------------------------------------------------


def test_discovery_handles_bad_input_and_dedupes_links(tmp_path: Path) -> None:
    lib = tmp_path / "lib rary"
    shutil.copytree(DATA, lib)
    (lib / "GPL-3 link").symlink_to(lib / "GPL-3")
    os.link(lib / "BSD", lib / "BSD hardlink")
    (lib / "dangling").symlink_to(lib / "missing-file")
    os.mkfifo(lib / "a fifo")
    (lib / "huge.txt").write_bytes(b"x" * (discovery.MAX_BYTES + 1))
    (lib / "spaces.txt").write_bytes(b"  \n\n \t\n")
    (lib / "nested" / "deeper").mkdir(parents=True)
    (lib / "nested" / "deeper" / "ISC").write_text(
        "Permission to use, copy, modify, and/or distribute this software for any\n"
        "purpose with or without fee is hereby granted.\n",
        encoding="utf-8",
    )
    (lib / "loop").symlink_to(lib)
    (lib / "controls.dat").write_bytes(bytes(range(1, 32)) * 40)
    (
        tmp_path / "bad\udcff name.txt".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    ).write_bytes(b"MIT License\n")

    found = discovery.discover([str(lib), str(tmp_path / "no such file"), str(tmp_path)])
    by_name = {Path(d.path).name: d for d in found.documents}
    reasons = {Path(s.path).name: s.reason for s in found.skipped}

    assert "GPL-3" in by_name and "GPL-3 link" not in by_name  # the symlink is the one dropped
    assert ("BSD" in by_name) != ("BSD hardlink" in by_name)
    assert NON_ASCII_NAME in by_name and by_name[NON_ASCII_NAME].line_count == 21
    assert "ISC" in by_name  # recursive
    latin = by_name["latin1-gpl2-header.txt"]
    assert latin.encoding == "cp1252" and latin.note and "not valid UTF-8" in latin.note
    assert reasons["empty.txt"] == "empty"
    assert reasons["spaces.txt"].startswith("empty")
    assert reasons["binary.bin"].startswith("binary")
    assert reasons["controls.dat"].startswith("binary")
    assert reasons["huge.txt"].startswith("huge")
    assert reasons["dangling"] == "dangling symlink"
    assert reasons["a fifo"] == "not a regular file"
    assert reasons["no such file"].startswith("unreadable")
    assert any(r == "file name is not valid UTF-8" for r in reasons.values())
    # each document once, whichever way it was reached (tmp_path walks into lib again, plus the loop)
    assert len(found.documents) == len({d.sha256 + str(os.stat(d.path).st_ino) for d in found.documents})
    paths = [d.path for d in found.documents]
    assert paths == sorted(paths)

    gpl = by_name["GPL-3"]
    assert gpl.sha256 == hashlib.sha256((lib / "GPL-3").read_bytes()).hexdigest()
    assert gpl.key == discovery.idempotency_key(gpl.path, gpl.sha256)
    assert gpl.key != discovery.idempotency_key(str(DATA / "GPL-3"), gpl.sha256)  # path matters
    assert discovery.discover([str(lib)]).documents == discovery.discover([str(lib)]).documents


def test_read_document_refuses_a_changed_file(tmp_path: Path) -> None:
    path = tmp_path / "LICENSE"
    path.write_text("MIT License\n", encoding="utf-8")
    before = discovery.read_document(str(path))
    path.write_text("MIT License, edited\n", encoding="utf-8")
    with pytest.raises(discovery.UnreadableDocument, match="changed since discovery"):
        discovery.read_document(str(path), expected_sha256=before.sha256)


def test_default_sources_cover_the_machine() -> None:
    sources = discovery.default_sources()
    assert any(p.startswith("/usr/share/common-licenses/") for p in sources)
    assert any(p.endswith("/copyright") for p in sources)
    assert discovery.python_license_files() == [] or all(
        ".dist-info" in p or ".egg-info" in p for p in discovery.python_license_files()
    )


# --- tools ------------------------------------------------------------------------------------


def test_tools_read_search_and_validate_flags() -> None:
    doc = tools.ReviewDocument.load(str(DATA / "GPL-3"))
    text = tools.read_lines(doc, tools.ReadLinesArgs(start=470, end=472))
    assert tools.parse_numbered_lines(text) == {470: "", 471: "  11. Patents.", 472: ""}
    assert tools.parse_numbered_lines(
        tools.read_lines(doc, tools.ReadLinesArgs(start=670, end=900))
    ).keys() == {n for n in range(670, doc.line_count + 1)}
    with pytest.raises(tools.ToolError, match="past the end"):
        tools.read_lines(doc, tools.ReadLinesArgs(start=doc.line_count + 1, end=doc.line_count + 5))
    hits = tools.parse_numbered_lines(tools.search(doc, tools.SearchArgs(pattern=r"^\s*11\. patents")))
    assert list(hits) == [471]
    assert tools.search(doc, tools.SearchArgs(pattern="no such phrase anywhere")) == "no match"
    with pytest.raises(tools.ToolError, match="invalid regular expression"):
        tools.run_tool(doc, "search", {"pattern": "(unclosed"})
    ok = tools.run_tool(
        doc,
        "flag",
        {
            "category": "patent_grant",
            "severity": "medium",
            "quote": "11.   PATENTS.",
            "line_start": 470,
            "line_end": 472,
        },
    )
    assert isinstance(ok, tools.FlagArgs)
    for bad, message in [
        (
            {
                "category": "patent_grant",
                "severity": "medium",
                "quote": "royalty",
                "line_start": 471,
                "line_end": 471,
            },
            "does not occur",
        ),
        (
            {
                "category": "vibes",
                "severity": "medium",
                "quote": "Patents",
                "line_start": 471,
                "line_end": 471,
            },
            "invalid arguments",
        ),
        (
            {
                "category": "patent_grant",
                "severity": "urgent",
                "quote": "Patents",
                "line_start": 471,
                "line_end": 471,
            },
            "invalid arguments",
        ),
        (
            {"category": "patent_grant", "severity": "low", "quote": "x", "line_start": 700, "line_end": 701},
            "past the end",
        ),
        (
            {"category": "patent_grant", "severity": "low", "quote": "x", "line_start": 9, "line_end": 3},
            "invalid arguments",
        ),
    ]:
        with pytest.raises(tools.ToolError, match=message):
            tools.run_tool(doc, "flag", bad)
    with pytest.raises(tools.ToolError, match="unknown tool"):
        tools.run_tool(doc, "rm", {})
    assert [s["name"] for s in tools.TOOL_SPECS] == ["read_lines", "search", "flag", "finish"]
    flag_schema = tools.TOOL_SPECS[2]["input_schema"]
    assert set(flag_schema["required"]) == {"category", "severity", "quote", "line_start", "line_end"}


# --- the policy through whole conversations ------------------------------------------------------


def converse(path: Path, *, max_turns: int = 60, break_read: int | None = None) -> dict[str, Any]:
    """
    Drive `review_policy` to the end with a tiny tool executor over the real file.

    :param break_read: answer the read_lines call of this turn with an error result, as a crashed
        or interrupted tool would be reported.
    :return: the request of the last turn, the accepted flags, rejected flags and the summary.
    """
    doc = tools.ReviewDocument.load(str(path))
    request: dict[str, Any] = {
        "system": policy.SYSTEM_PROMPT,
        "tools": tools.TOOL_SPECS,
        "messages": [{"role": "user", "content": policy.task_prompt(str(path), doc.line_count)}],
    }
    accepted: list[tools.FlagArgs] = []
    rejected = 0
    summary = None
    for turn in range(max_turns):
        blocks, stop = policy.review_policy(request)
        assert policy.review_policy(request) == (blocks, stop)  # a pure function of the request
        request["messages"].append({"role": "assistant", "content": blocks})
        if stop == "end_turn":
            return {
                "request": request,
                "flags": accepted,
                "rejected": rejected,
                "summary": summary,
                "turns": turn,
            }
        assert stop == "tool_use"
        results = []
        for b in (b for b in blocks if b["type"] == "tool_use"):
            try:
                if turn == break_read and b["name"] == "read_lines":
                    raise tools.ToolError("tool call interrupted by a worker crash")
                out = tools.run_tool(doc, b["name"], b["input"])
                if isinstance(out, tools.FlagArgs):
                    accepted.append(out)
                    out = "flag recorded"
                if b["name"] == "finish":
                    summary = b["input"]["summary"]
                results.append({"type": "tool_result", "tool_use_id": b["id"], "content": out})
            except tools.ToolError as exc:
                rejected += b["name"] == "flag"
                results.append(
                    {"type": "tool_result", "tool_use_id": b["id"], "content": str(exc), "is_error": True}
                )
        request["messages"].append({"role": "user", "content": results})
    raise AssertionError("the policy did not finish")


def as_findings(flags: list[tools.FlagArgs]) -> list[tuple[str, str, int, int, str]]:
    return [(f.category, f.severity, f.line_start, f.line_end, f.quote) for f in flags]


@pytest.mark.parametrize(
    "name",
    [
        "GPL-3",
        "Apache-2.0",
        "bsdutils.copyright",
        "AGPL-3.0-section13.excerpt",
        NON_ASCII_NAME,
        "latin1-gpl2-header.txt",
    ],
)
def test_policy_reads_through_the_tools_and_flags_what_clauses_finds(name: str) -> None:
    path = DATA / name
    run = converse(path)
    expected = analyze(discovery.read_document(str(path)).lines)
    assert as_findings(run["flags"]) == [
        (f.category, f.severity, f.line_start, f.line_end, f.quote) for f in expected.findings
    ]
    assert run["rejected"] == 0
    assert run["summary"].startswith(expected.family)
    messages = run["request"]["messages"]
    reads = [
        b["input"]
        for m in messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use" and b["name"] == "read_lines"
    ]
    line_count = expected.line_count
    assert reads[0] == {"start": 1, "end": min(policy.CHUNK_LINES, line_count)}
    assert reads[-1]["end"] == line_count  # read to the end, chunk by chunk
    assert len(reads) == -(-line_count // policy.CHUNK_LINES)
    ids = [
        b["id"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"
    ]
    assert len(ids) == len(set(ids))


def test_policy_rereads_an_interrupted_chunk_and_searches_unknown_text(tmp_path: Path) -> None:
    run = converse(DATA / "GPL-3", break_read=1)
    reads = [
        (b["input"]["start"], b["input"]["end"])
        for m in run["request"]["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use" and b["name"] == "read_lines"
    ]
    assert reads == [(1, 200), (201, 400), (201, 400), (401, 600), (601, 674)]
    assert as_findings(run["flags"]) == [
        (f.category, f.severity, f.line_start, f.line_end, f.quote)
        for f in analyze(lines_of("GPL-3")).findings
    ]

    custom = tmp_path / "custom terms.txt"
    custom.write_text(
        "Acme Widget terms\n\nYou may run this program on one computer.\n"
        "Copyright 2024 Acme. Redistribution requires our written permission.\n",
        encoding="utf-8",
    )
    run = converse(custom)
    searches = [
        b["input"]["pattern"]
        for m in run["request"]["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use" and b["name"] == "search"
    ]
    assert searches == list(policy.SEARCH_PATTERNS)
    assert [(f.category, f.line_start) for f in run["flags"]] == [("unknown_terms", 4)]
    assert run["summary"].startswith("no known license family")


def test_policy_ends_the_turn_after_finish_and_ids_are_deterministic() -> None:
    first = converse(DATA / "BSD")
    second = converse(DATA / "BSD")
    assert first["request"] == second["request"]
    last = first["request"]["messages"][-1]
    assert last["role"] == "assistant" and all(b["type"] == "text" for b in last["content"])
    assert first["turns"] == 3  # turns 0-2: read, flag, finish; turn 3: end_turn


# --- the report -------------------------------------------------------------------------------


#: The header of the test reports.
TEST_RUN = report.RunInfo(
    run_id=77, date="2026-01-02 03:04 UTC", engine_version="9.9", model="offline", host="box", chaos_kills=3
)


def report_results() -> list[dict[str, Any]]:
    """Reviews of three real texts through the policy and the tools, plus odd and failed ones."""
    results: list[dict[str, Any]] = []
    for name in ["GPL-3", "Apache-2.0", "bsdutils.copyright"]:
        run = converse(DATA / name)
        lines = lines_of(name)
        family, families, source = document_licence(str(DATA / name), lines)
        where = LicenceMap.of(lines, family)
        flags = []
        for f in run["flags"]:
            flag = f.model_dump()
            flag["family"] = where.family_at(f.line_start)
            flag["context"], flag["context_start"], flag["context_end"] = clauses.expand_to_sentences(
                lines, f.line_start, f.line_end, f.quote
            )
            flags.append(flag)
        results.append(
            {
                "path": str(DATA / name),
                "family": family,
                "family_source": source,
                "families": families,
                "flags": flags,
                "summary": run["summary"],
                "status": "succeeded",
                "step_id": 40 + len(results),
            }
        )
    results.append(
        {
            "path": "/tmp/odd <script>alert('x')</script>|pipe.txt",
            "family": "unknown",
            "flags": [
                {
                    "category": "audit",
                    "severity": "high",
                    "quote": "a | b <b>",
                    "line_start": 2,
                    "line_end": 2,
                }
            ],
            "summary": "no known license family",
        }
    )
    results.append({"path": "/srv/gone.txt", "status": "dead_letter", "error": "worker killed 3 times"})
    return results


def test_report_summary_first_families_folded_routine_and_the_run_header(tmp_path: Path) -> None:
    results = report_results()
    skipped = [
        discovery.Skipped("/x/empty.txt", "empty"),
        {"path": "/x/big.bin", "reason": "huge: 3000000 bytes"},
    ]
    audit = {"steps": 6, "attempts": 8, "retries": 2, "reclaimed_attempts": 1, "stale_writes_rejected": 1}
    files = report.write_report(tmp_path / "out", results, audit, skipped, run=TEST_RUN)

    md = files.markdown.read_text(encoding="utf-8")
    # the header, then the summary before anything per document
    assert md.index("Run 77 · 2026-01-02 03:04 UTC · pgflight 9.9 · model offline · host box") < md.index(
        "## Summary"
    )
    assert "`scripts/pgflight show 77`" in md and "`scripts/pgflight trace 40`" in md
    assert md.index("## Summary") < md.index("## Needs a lawyer's look") < md.index("## By licence family")
    needs = md.split("## Needs a lawyer's look")[1].split("## By licence family")[0]
    assert "### Strong copyleft" in needs and f"`{DATA / 'GPL-3'}` (GPL-3.0): lines 222-223" in needs
    assert "### Patent retaliation" in needs and "Apache-2.0" in needs
    assert "### Audit or inspection right (1 document)" in needs  # the odd document, escaped below
    # routine clauses are folded into one line per document, never listed with the rest
    gpl3 = md.split(f"#### `{DATA / 'GPL-3'}`")[1].split("####")[0]
    assert (
        "- folded: " in gpl3
        and "warranty disclaimer, lines 44-45, " in gpl3
        and "**low** Warranty" not in gpl3
    )
    # quotes are whole sentences: the Apache patent clause from "If You institute" to "is filed."
    apache = md.split(f"#### `{DATA / 'Apache-2.0'}`")[1].split("####")[0]
    assert (
        "If You institute patent litigation" in apache
        and "as of the date such litigation is filed." in apache
    )
    # a DEP-5 finding names its own stanza's licence when it differs from the document's
    bsd = md.split(f"#### `{DATA / 'bsdutils.copyright'}`")[1].split("####")[0]
    assert "(under BSD-4-Clause)" in bsd or "(under GPL-" in bsd
    assert "| /srv/gone.txt | dead_letter | worker killed 3 times |" in md
    assert "| /x/empty.txt | empty |" in md and "huge: 3000000 bytes" in md
    assert "| Workers killed by --chaos (SIGKILL) before the report | 3 |" in md
    assert "| Reclaimed attempts (lease expired) | 1 |" in md

    page = files.html.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert '<meta name="viewport"' in page and 'id="toc"' in page and "@media (max-width:640px)" in page
    assert 'href="#r-strong_copyleft"' in page and 'id="r-strong_copyleft"' in page
    assert page.count("<details>") == sum(1 for r in results[:3] if r["flags"])  # one fold per document
    assert 'href="file://' in page and "#:~:text=" in page  # links open the document at the clause

    with files.csv.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert set(rows[0]) == set(report.CSV_COLUMNS)
    assert len(rows) == sum(
        len(r.get("flags", [])) for r in results if r.get("status", "succeeded") == "succeeded"
    )
    assert all(r["citation"].startswith(r["path"] + ":") for r in rows)
    assert {r["family"] for r in rows if r["path"].endswith("bsdutils.copyright")} > {"GPL-2.0-or-later"}


def test_form_feeds_do_not_shift_citations(tmp_path: Path) -> None:
    """Old license texts separate pages with form feeds: lines are counted at newlines only."""
    body = (
        "Some preamble.\n\f\n"
        "Copyright notice page.\x0c more text.\n"
        "THERE IS NO WARRANTY FOR THE PROGRAM, TO THE EXTENT PERMITTED BY APPLICABLE LAW.\n"
    )
    path = tmp_path / "paged.txt"
    path.write_text(body)
    lines = discovery.read_document(path).lines
    assert len(lines) == body.count("\n") == 4
    assert lines[3].startswith("THERE IS NO WARRANTY")
    for f in analyze(lines).findings:
        cited = " ".join(lines[f.line_start - 1 : f.line_end])
        assert f.quote.split()[0] in cited, f"{f.category} cites {f.line_start}-{f.line_end}, not its quote"
    assert any(f.category == "warranty_disclaimer" and f.line_start == 4 for f in analyze(lines).findings)


def test_the_progress_line_keeps_its_figures_whole_at_80_columns() -> None:
    import io

    from rich.console import Console

    from pgflight_review.job import progress_display

    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True, color_system=None)
    progress = progress_display(console)
    task = progress.add_task(
        "run",
        total=10_000,
        of="4,321/10,000",
        rate="12.3 docs/s",
        eta="4620s",
        alive=4,
        retries="17",
        reclaimed="3",
        kills=" · killed 2",
    )
    progress.update(task, completed=4321)
    console.print(progress.make_tasks_table(progress.tasks))
    (line,) = buf.getvalue().splitlines()
    assert len(line) <= 80
    for figure in ("4,321/10,000", "12.3 docs/s", "ETA 4620s", "0:00:00", "workers 4"):
        assert figure in line, line


def test_the_headline_counts_system_packages_under_ordinary_copyleft_apart() -> None:
    from pgflight_review.report import DocumentResult, FlagRecord, RunInfo, build, render_markdown

    gpl = FlagRecord(
        category="strong_copyleft", severity="high", quote="GNU General Public", line_start=1, line_end=1
    )
    indemnity = FlagRecord(
        category="indemnification", severity="high", quote="indemnify", line_start=3, line_end=3
    )
    docs = [
        DocumentResult(
            path="/usr/share/doc/bash/copyright", family="GPL-3.0", status="succeeded", flags=[gpl]
        ),
        DocumentResult(
            path="/usr/share/common-licenses/GPL-2", family="GPL-2.0", status="succeeded", flags=[gpl]
        ),
        # a system package with more than copyleft, and copyleft outside the system's notices: both count
        DocumentResult(
            path="/usr/share/doc/vendor-tool/copyright",
            family="custom",
            status="succeeded",
            flags=[gpl, indemnity],
        ),
        DocumentResult(
            path="/srv/contracts/acme-sdk/LICENSE", family="GPL-3.0", status="succeeded", flags=[gpl]
        ),
    ]
    report = build(docs, [], {}, RunInfo(model="offline"), "Review")
    assert (report.needs_review, report.system_copyleft) == (2, 2)
    listed = {d.path for reason in report.reasons for d, _ in reason.documents}
    assert listed == {"/usr/share/doc/vendor-tool/copyright", "/srv/contracts/acme-sdk/LICENSE"}
    assert "2 documents need a lawyer's look (2 system packages under ordinary copyleft" in render_markdown(
        report
    )
