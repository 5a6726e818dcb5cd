"""
A sample library at the seed's size, with a known answer for each document: ``pgflight review
--sample N``.

::

    lib = make_sample(Path("out/review/sample"), 10_000, seed=1)   # documents + answers.json
    ... review lib.docs like any folder ...
    check = score(lib.answers_file, Path("out/review/flags.csv"))   # recall / precision printed

Each document is one of this machine's licence texts (:func:`discovery.default_sources`: the
common licences, the packages' copyright files, the Python packages' licence files) under a
product header, with one to four custom clauses inserted as paragraphs of their own between the
text's paragraphs. The clauses come from :data:`CLAUSES`: sentences written for this sample,
not taken from the rules' tuning texts nor from the held-out evaluation set (so the sample is one
more measure of reading, not of memory), each with the categories a reviewer flags in it; a
near-miss ("commercial use is permitted") expects none. The answer of a document is where each
inserted clause sits (its lines) and what it should be flagged as.

Deterministic: the same seed and the same machine (the same licence texts) make byte-identical
documents, so the same command after a crash finds the same run and continues it.

Scoring (:func:`score`) counts only the inserted clauses, whose answer is known; what the base
texts get flagged is the evaluation set's business. A clause is recalled for a category when a
finding of that category overlaps its lines; a finding that overlaps an inserted clause is a true
positive when the clause expects its category, else a false alarm. ``unknown_terms`` (custom
terms: a document-level judgement) is not scored here.
"""

from __future__ import annotations

import csv
import json
import random
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pgflight_review.clauses import CATEGORIES, CATEGORY_TITLES
from pgflight_review.discovery import discover, read_document

#: (categories a reviewer flags, sentence). Written for this sample; empty categories: a near-miss.
CLAUSES: Final[tuple[tuple[tuple[str, ...], str], ...]] = (
    (
        ("indemnification",),
        "The Customer agrees to hold the Vendor and its officers harmless against "
        "every claim, loss and legal fee that arises from the Customer's use of the Product.",
    ),
    (
        ("indemnification",),
        "Should a third party sue the Licensor over anything you built with the "
        "Software, you will defend that suit at your own expense and pay any damages awarded.",
    ),
    (
        ("indemnification",),
        "You shall indemnify and keep indemnified the Supplier from all liabilities "
        "resulting from a breach of these terms by you or your staff.",
    ),
    (
        ("audit",),
        "Once a year, on ten days' notice, the Licensor may inspect your premises and records "
        "to verify that the number of installations does not exceed the licences purchased.",
    ),
    (
        ("audit",),
        "On request the Licensee shall provide the Vendor with its usage logs and let an "
        "independent accountant examine its books to confirm compliance with this Agreement.",
    ),
    (
        ("audit",),
        "The Company reserves the right to audit your deployment of the Product at any time "
        "during business hours.",
    ),
    (
        ("arbitration",),
        "Any dispute arising out of this Agreement shall be finally settled by binding "
        "arbitration under the rules of the International Chamber of Commerce.",
    ),
    (
        ("arbitration",),
        "You waive any right to bring or join a class action or collective proceeding "
        "against the Licensor; claims may be brought only individually.",
    ),
    (
        ("arbitration",),
        "Disagreements about these terms go to a single arbitrator, whose award is final, "
        "and not to any court.",
    ),
    (
        ("non_commercial",),
        "The Software may be used for personal, educational and research purposes "
        "only, and never to earn money or in the course of a business.",
    ),
    (
        ("non_commercial",),
        "You may not sell the Dataset, rent it, or include it in any product or "
        "service that is offered for a fee.",
    ),
    (
        ("non_commercial",),
        "Use by or for a for-profit organisation requires a separate commercial licence from the Author.",
    ),
    (
        ("field_of_use",),
        "The Product must not be used in the design, construction or operation of "
        "nuclear facilities, weapons systems or life-support devices.",
    ),
    (
        ("field_of_use",),
        "This licence does not extend to use of the Model for surveillance, credit "
        "scoring or the profiling of individuals.",
    ),
    (
        ("termination",),
        "Your rights under this Agreement end at once, without any notice from us, if "
        "you break any of its conditions.",
    ),
    (
        ("termination",),
        "Should the Licensee fail to pay any fee when due, this licence terminates "
        "automatically on the thirtieth day after the due date.",
    ),
    (
        ("governing_law",),
        "This Agreement is governed by the laws of the State of Delaware, and the "
        "courts of Wilmington have exclusive jurisdiction over any dispute.",
    ),
    (("governing_law",), "These terms shall be construed in accordance with the law of England and Wales."),
    (
        ("export_control",),
        "You will not export or re-export the Software to any country under an "
        "embargo of the United States or to any person on a denied-party list.",
    ),
    (
        ("export_control",),
        "The Licensee shall comply with all applicable export and import regulations, "
        "including the Export Administration Regulations, when shipping the Product abroad.",
    ),
    (
        ("network_copyleft",),
        "If you run a modified version of the Program as a service that users reach "
        "over a network, you must offer those users the source code of your version.",
    ),
    (
        ("strong_copyleft",),
        "Any work you distribute that contains the Program or is derived from it "
        "must be released as a whole under this same licence, with its complete source code.",
    ),
    (
        ("weak_copyleft",),
        "Changes you make to the files of the Library must be published under this "
        "licence, but the larger work that merely links to the Library may carry any terms.",
    ),
    (
        ("patent_retaliation",),
        "If you start a lawsuit alleging that the Software infringes one of your "
        "patents, every licence granted to you under this Agreement ends on the day the suit is filed.",
    ),
    (
        ("advertising",),
        "All advertising materials that mention features of this product must display "
        "the acknowledgement: This product includes software developed by Example Labs.",
    ),
    (
        ("attribution",),
        "Every copy you distribute must keep the above copyright notice and a copy of "
        "this notice in its documentation.",
    ),
    (
        ("trademark",),
        "Nothing here grants you any right to use the name, logos or trademarks of the "
        "Licensor, nor to suggest that the Licensor endorses your product.",
    ),
    (
        ("warranty_disclaimer",),
        "The Product is supplied as it is, with every fault, and the Vendor "
        "gives no guarantee that it is fit for any purpose.",
    ),
    (
        ("limitation_of_liability",),
        "In no case shall the total liability of the Supplier exceed the "
        "fees you paid in the twelve months before the claim.",
    ),
    # near-misses: they read like restrictions but restrict nothing a reviewer must see
    ((), "Commercial use of the Software is permitted without any additional fee."),
    ((), "This licence does not terminate when the Licensee changes its name or is acquired."),
    ((), "You may use the Product for any purpose, including in a business."),
    ((), "No audit of your systems will ever be required under this Agreement."),
    ((), "The Licensor will answer questions about these terms by e-mail within five working days."),
    ((), "Updates to the Software are provided free of charge for the first year."),
)

#: Product names for the header a document gets (so no two look alike).
_PRODUCTS: Final = (
    "Atlas Data Platform",
    "Borealis SDK",
    "Cobalt Reporting Suite",
    "Delta Sync Agent",
    "Ember UI Kit",
    "Fjord Analytics",
    "Granite Storage Gateway",
    "Helios Vision Model",
    "Iris Mobile Toolkit",
    "Juniper Build Tools",
    "Kestrel Routing Engine",
    "Lumen Font Family",
    "Mistral Sensor Firmware",
    "Nimbus Cloud Connector",
    "Onyx Payment Module",
    "Pylon Map Tiles",
    "Quartz Scheduling Service",
)
_VENDORS: Final = (
    "Example Labs Ltd",
    "Northwind Software GmbH",
    "Acme Data Inc.",
    "Contoso Systems SA",
    "Fabrikam Research BV",
    "Tailspin Tools Oy",
    "Wide World Importers LLC",
    "Adventure Works AB",
)
ANSWERS: Final = "answers.json"
#: The sample check's figures, written next to the report.
CHECK_FILE: Final = "sample-check.json"
DOCS: Final = "docs"
#: Documents per sub-folder of the sample (a folder of 10,000 files is slow to list).
PER_FOLDER: Final = 1000


@dataclass(frozen=True)
class Inserted:
    """One inserted clause: where it sits (1-based, inclusive) and what a reviewer flags in it."""

    line_start: int
    line_end: int
    expect: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class SampleLibrary:
    """A written sample: its documents' folder, the answers file and how many documents."""

    folder: Path
    docs: Path
    answers_file: Path
    documents: int
    bases: int  # licence texts of this machine the documents are made from


def _bases(sources: Sequence[str] | None) -> list[tuple[str, list[str]]]:
    """(path, lines) of each readable licence text under `sources` (None: this machine's), in path order."""
    found = discover(sources)
    out: list[tuple[str, list[str]]] = []
    for d in found.documents:
        lines = read_document(d.path).lines
        if 3 <= len(lines) <= 4000:  # a realistic contract, not a one-liner nor a whole changelog
            out.append((d.path, lines))
    return out


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=76, break_long_words=False, break_on_hyphens=False)


def compose(
    base: list[str],
    product: str,
    vendor: str,
    year: int,
    clauses: list[tuple[tuple[str, ...], str]],
    rng: random.Random,
) -> tuple[list[str], list[Inserted]]:
    """
    One document: a header naming the product, the base text, and each clause inserted as a
    paragraph of its own at a paragraph break of the base (or at the end when it has none).

    :return: the document's lines and where each clause went.
    """
    header = [
        f"{product} - Licence Terms",
        f"Copyright (c) {year} {vendor}. All rights reserved where not granted below.",
        "",
        f"The {product} is made available under the following terms.",
        "",
    ]
    lines = list(base)
    breaks = [i for i, line in enumerate(lines) if not line.strip()] or [len(lines)]
    places = sorted(
        rng.sample(breaks, k=min(len(clauses), len(breaks)))
        + [len(lines)] * max(0, len(clauses) - len(breaks))
    )
    # insert from the end so that earlier indices stay valid; record paragraphs, then number them
    pieces: list[tuple[int, tuple[str, ...], list[str]]] = []
    for at, (cats, sentence) in zip(places, clauses, strict=True):
        pieces.append((at, cats, _wrapped(sentence)))
    # a machine-readable copyright file (DEP-5) must start with its Format line: no header there
    out: list[str] = [] if base[:1] and base[0].startswith("Format:") else list(header)
    answers: list[Inserted] = []
    cursor = 0
    for at, cats, para in pieces:
        out.extend(lines[cursor:at])
        cursor = at
        out.append("")
        start = len(out) + 1
        out.extend(para)
        answers.append(Inserted(start, len(out), cats, " ".join(para)))
        out.append("")
    out.extend(lines[cursor:])
    return out, answers


def make_sample(
    folder: Path, n: int, *, seed: int = 1, sources: Sequence[str] | None = None
) -> SampleLibrary:
    """
    Write `n` documents under ``folder/docs`` and their answers to ``folder/answers.json``.
    A file whose content is already the one to write is left alone (its mtime too).

    :param sources: files and folders of licence texts to build from; None: this machine's
        (:func:`discovery.default_sources`).
    :raises ValueError: no licence text to build from.
    """
    bases = _bases(sources)
    if not bases:
        raise ValueError("no licence text on this machine to build a sample from")
    rng = random.Random(seed)
    docs = folder / DOCS
    answers: list[dict[str, Any]] = []
    for i in range(1, n + 1):
        base_path, base = bases[rng.randrange(len(bases))]
        chosen = [CLAUSES[rng.randrange(len(CLAUSES))] for _ in range(rng.randint(1, 4))]
        lines, inserted = compose(
            base, rng.choice(_PRODUCTS), rng.choice(_VENDORS), rng.randint(2005, 2026), chosen, rng
        )
        stem = Path(base_path).parent.name if Path(base_path).name == "copyright" else Path(base_path).name
        slug = "".join(c if c.isalnum() or c in "-." else "-" for c in stem)[:40]
        path = docs / f"{(i - 1) // PER_FOLDER:02d}" / f"{i:05d}-{slug}.txt"
        _write_if_changed(path, "\n".join(lines) + "\n")
        answers.append(
            {
                "path": str(path.resolve()),
                "base": base_path,
                "expect": sorted({c for a in inserted for c in a.expect}),
                "clauses": [
                    {
                        "line_start": a.line_start,
                        "line_end": a.line_end,
                        "expect": list(a.expect),
                        "text": a.text,
                    }
                    for a in inserted
                ],
            }
        )
    answers_file = folder / ANSWERS
    _write_if_changed(answers_file, json.dumps({"seed": seed, "documents": answers}, indent=1) + "\n")
    return SampleLibrary(folder, docs, answers_file, n, len(bases))


def _write_if_changed(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- scoring --------------------------------------------------------------------------------------


@dataclass
class CategoryScore:
    expected: int = 0  # inserted clauses expecting the category
    recalled: int = 0  # ... with a finding of the category on their lines
    findings: int = 0  # findings of the category on inserted clauses
    true: int = 0  # ... on a clause that expects it


@dataclass
class SampleCheck:
    """The report's flags against the sample's answers (inserted clauses only)."""

    documents: int
    documents_all_found: int  # documents whose every expected category was flagged on its clauses
    by_category: dict[str, CategoryScore] = field(default_factory=dict)

    @property
    def recall(self) -> float:
        exp = sum(s.expected for s in self.by_category.values())
        return sum(s.recalled for s in self.by_category.values()) / exp if exp else 1.0

    @property
    def precision(self) -> float:
        found = sum(s.findings for s in self.by_category.values())
        return sum(s.true for s in self.by_category.values()) / found if found else 1.0

    def lines(self) -> list[str]:
        """What the command prints: the overall figures, then the categories below 0.8."""
        exp = sum(s.expected for s in self.by_category.values())
        rec = sum(s.recalled for s in self.by_category.values())
        found = sum(s.findings for s in self.by_category.values())
        true = sum(s.true for s in self.by_category.values())
        out = [
            f"sample check: inserted clauses recalled {rec:,}/{exp:,} (recall {self.recall:.3f}), "
            f"findings on them right {true:,}/{found:,} (precision {self.precision:.3f}); "
            f"{self.documents_all_found:,}/{self.documents:,} documents with every expected category flagged"
        ]
        weak = [
            f"{CATEGORY_TITLES.get(c, c)} recall {s.recalled / s.expected:.2f}"
            if s.expected and s.recalled / s.expected < 0.8
            else f"{CATEGORY_TITLES.get(c, c)} precision {s.true / s.findings:.2f}"
            for c, s in self.by_category.items()
            if (s.expected and s.recalled / s.expected < 0.8) or (s.findings and s.true / s.findings < 0.8)
        ]
        if weak:
            out.append("below 0.8: " + "; ".join(weak))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "documents_all_found": self.documents_all_found,
            "recall": round(self.recall, 4),
            "precision": round(self.precision, 4),
            "by_category": {c: vars(s) for c, s in self.by_category.items()},
        }


#: Not scored on the sample: a document-level judgement (custom terms), not a clause's.
UNSCORED: Final = frozenset({"unknown_terms"})


def score(answers_file: Path, flags_csv: Path) -> SampleCheck:
    """Compare flags.csv with the sample's answers (see the module's docstring)."""
    data = json.loads(answers_file.read_text(encoding="utf-8"))
    found: dict[str, list[tuple[str, int, int]]] = {}
    with open(flags_csv, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            found.setdefault(row["path"], []).append(
                (row["category"], int(row["line_start"]), int(row["line_end"]))
            )
    by = {c: CategoryScore() for c in CATEGORIES if c not in UNSCORED}
    all_found = 0
    for doc in data["documents"]:
        flags = found.get(doc["path"], [])
        missed = False
        for clause in doc["clauses"]:
            a, b = clause["line_start"], clause["line_end"]
            on = {c for c, s, e in flags if s <= b and e >= a and c not in UNSCORED}
            for c in clause["expect"]:
                by[c].expected += 1
                if c in on:
                    by[c].recalled += 1
                else:
                    missed = True
            for c in on:
                by[c].findings += 1
                by[c].true += c in clause["expect"]
        all_found += not missed
    return SampleCheck(len(data["documents"]), all_found, by)
