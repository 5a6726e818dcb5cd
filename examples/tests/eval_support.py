"""
The clause evaluation set (examples/tests/eval/texts): licence texts and excerpts, each with a
``<name>.labels`` sidecar listing the lines a reviewer expects flagged and the categories::

    # comment
    12 indemnification
    14-15 arbitration,governing_law

Unlisted lines expect nothing. Scoring per category: a finding is a true positive when its line
range overlaps a labelled span of its category in the same text (precision = true positives /
findings); a labelled span is recalled when some finding of its category overlaps it (recall =
recalled spans / spans). This set is the TUNING set: the clause rules were written and tuned on
its texts, so its figures measure how well the rules remember them, not how well they read.

The HELD-OUT set (examples/tests/eval/heldout/sentences.json, see its README) is never used to
write or tune rules: 270 independently worded sentences, at least ten positives per category
plus near-misses (negations, permissions), split once, before the rules were improved, into a
``dev`` part (may be read while improving the rules) and a ``final`` part (only scored). Scoring
per category: a sentence is a true positive when the model flags the category and the sentence
expects it, a false alarm when it flags a category the sentence does not expect, a miss when an
expected category is not flagged.

Run as a script to print the tables for the offline model (tuning, held-out dev, held-out final)::

    .venv/bin/python examples/tests/eval_support.py
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pgflight_review.clauses import CATEGORIES, analyze
from pgflight_review.discovery import split_lines

EVAL_DIR = Path(__file__).parent / "eval" / "texts"
#: Held out: never used to write or tune the clause rules; only scored.
HELDOUT_FILE = Path(__file__).parent / "eval" / "heldout" / "sentences.json"

#: (category, line_start, line_end) findings of one text.
Found = list[tuple[str, int, int]]


@dataclass
class Labelled:
    name: str
    lines: list[str]
    spans: list[tuple[str, int, int]]  # (category, first, last)


def load_set(folder: Path = EVAL_DIR) -> list[Labelled]:
    """Every text of the set with its labels (a text without a sidecar expects no findings)."""
    out: list[Labelled] = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".labels":
            continue
        spans: list[tuple[str, int, int]] = []
        sidecar = path.with_name(path.name + ".labels")
        for raw in sidecar.read_text().splitlines() if sidecar.exists() else []:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            where, cats = line.split()
            first, _, last = where.partition("-")
            for cat in cats.split(","):
                if cat not in CATEGORIES:
                    raise ValueError(f"{sidecar}: unknown category {cat!r}")
                spans.append((cat, int(first), int(last or first)))
        out.append(Labelled(path.name, split_lines(path.read_text(encoding="utf-8")), _joined(spans)))
    return out


def _joined(spans: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Adjacent labelled lines of one category are one span (one clause over several lines)."""
    merged: list[tuple[str, int, int]] = []
    for cat, a, b in sorted(spans):
        if merged and merged[-1][0] == cat and a <= merged[-1][2] + 1:
            merged[-1] = (cat, merged[-1][1], max(b, merged[-1][2]))
        else:
            merged.append((cat, a, b))
    return merged


@dataclass
class Score:
    findings: int = 0
    true_positives: int = 0
    spans: int = 0
    recalled: int = 0
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.true_positives / self.findings if self.findings else 1.0

    @property
    def recall(self) -> float:
        return self.recalled / self.spans if self.spans else 1.0


def _overlaps(a: int, b: int, c: int, d: int) -> bool:
    return a <= d and c <= b


def score(texts: Iterable[Labelled], model: Callable[[list[str]], Found]) -> dict[str, Score]:
    """Score `model` (lines -> findings) over the set, per category."""
    scores = {c: Score() for c in CATEGORIES}
    for t in texts:
        found = model(t.lines)
        for cat, a, b in found:
            s = scores[cat]
            s.findings += 1
            if any(c == cat and _overlaps(a, b, x, y) for c, x, y in t.spans):
                s.true_positives += 1
            else:
                s.false_alarms.append(f"{t.name}:{a}-{b}")
        for cat, x, y in t.spans:
            s = scores[cat]
            s.spans += 1
            if any(c == cat and _overlaps(a, b, x, y) for c, a, b in found):
                s.recalled += 1
            else:
                s.misses.append(f"{t.name}:{x}-{y}")
    return scores


def offline_model(lines: list[str]) -> Found:
    return [(f.category, f.line_start, f.line_end) for f in analyze(lines).findings]


def overall_recall(scores: dict[str, Score]) -> float:
    spans = sum(s.spans for s in scores.values())
    return sum(s.recalled for s in scores.values()) / spans if spans else 1.0


def table(scores: dict[str, Score]) -> str:
    rows = [f"{'category':26} {'findings':>8} {'TP':>4} {'prec':>6} {'spans':>6} {'recall':>6}"]
    for cat, s in scores.items():
        if s.findings or s.spans:
            rows.append(
                f"{cat:26} {s.findings:8} {s.true_positives:4} {s.precision:6.2f} {s.spans:6} {s.recall:6.2f}"
            )
    rows.append(f"overall recall {overall_recall(scores):.3f}")
    return "\n".join(rows)


@dataclass(frozen=True)
class Sentence:
    """One held-out sentence: the category it was written for, its part, what it expects."""

    group: str
    part: str  # "dev" or "final"
    expect: frozenset[str]
    text: str


def load_heldout(part: str | None = None) -> list[Sentence]:
    """The held-out sentences (HELD OUT: never used to write or tune rules), of one part or all."""
    data = json.loads(HELDOUT_FILE.read_text(encoding="utf-8"))
    out: list[Sentence] = []
    for item in data["items"]:
        for cat in [item["group"], *item["expect"]]:
            if cat not in CATEGORIES:
                raise ValueError(f"{HELDOUT_FILE}: unknown category {cat!r}")
        if item["part"] not in ("dev", "final"):
            raise ValueError(f"{HELDOUT_FILE}: part must be dev or final, not {item['part']!r}")
        if part is None or item["part"] == part:
            out.append(Sentence(item["group"], item["part"], frozenset(item["expect"]), item["text"]))
    return out


def sentence_categories(text: str) -> set[str]:
    """The categories the offline model flags in one sentence read as a whole document."""
    return {f.category for f in analyze(split_lines(text)).findings}


def score_heldout(
    sentences: Iterable[Sentence], model: Callable[[str], set[str]] = sentence_categories
) -> dict[str, Score]:
    """Score `model` (text -> categories) per category over held-out sentences."""
    scores = {c: Score() for c in CATEGORIES}
    for n, t in enumerate(sentences):
        found = model(t.text)
        if t.group != "unknown_terms":
            found.discard("unknown_terms")
        where = f"{t.part}#{n} {t.text[:70]}"
        for cat in found:
            s = scores[cat]
            s.findings += 1
            if cat in t.expect:
                s.true_positives += 1
            else:
                s.false_alarms.append(where)
        for cat in t.expect:
            s = scores[cat]
            s.spans += 1
            if cat in found:
                s.recalled += 1
            else:
                s.misses.append(where)
    return scores


def overall_precision(scores: dict[str, Score]) -> float:
    findings = sum(s.findings for s in scores.values())
    return sum(s.true_positives for s in scores.values()) / findings if findings else 1.0


def heldout_table(scores: dict[str, Score], label: str) -> str:
    """Precision and recall per category of a held-out part (`spans` are expected sentences)."""
    return (
        f"{label}\n"
        + table(scores).replace(" spans", "  sents", 1)
        + f"\noverall precision {overall_precision(scores):.3f}"
    )


def unreliable_heldout(scores: dict[str, Score], floor: float = 0.8) -> dict[str, tuple[float, float]]:
    """Categories whose held-out precision or recall is under `floor`: (precision, recall)."""
    return {
        c: (round(s.precision, 2), round(s.recall, 2))
        for c, s in scores.items()
        if s.precision < floor or s.recall < floor
    }


if __name__ == "__main__":
    import sys

    result = score(load_set(), offline_model)
    print("TUNING set (the rules were written on these texts: memory, not reading)")
    print(table(result))
    if "-v" in sys.argv:
        for cat, s in result.items():
            for m in s.misses:
                print("miss", cat, m)
            for fa in s.false_alarms:
                print("false alarm", cat, fa)
    print()
    print(heldout_table(score_heldout(load_heldout("dev")), "HELD-OUT dev part (may be read)"))
    print()
    final = score_heldout(load_heldout("final"))
    print(heldout_table(final, "HELD-OUT final part (only scored)"))
    print("under 0.8 on the final part:", unreliable_heldout(final))
    if "--dev-failures" in sys.argv:  # the dev part only: the final part's failures are not shown
        for cat, s in score_heldout(load_heldout("dev")).items():
            for m in s.misses:
                print("dev miss", cat, m)
            for fa in s.false_alarms:
                print("dev false alarm", cat, fa)


def anthropic_model(lines: list[str]) -> Found:
    """
    The real model on one text (needs ANTHROPIC_API_KEY): one Messages call with the review's
    system prompt, the numbered text and the review tools; its ``flag`` calls are the findings.
    """
    import anthropic

    from pgflight_review.policy import SYSTEM_PROMPT
    from pgflight_review.tools import TOOL_SPECS, format_numbered

    client = anthropic.Anthropic()
    model = os.environ.get("PGFLIGHT_ANTHROPIC_MODEL", "claude-sonnet-4-5")
    text = format_numbered(list(enumerate(lines, start=1)))
    reply = client.messages.create(
        model=model,
        max_tokens=4096,
        system=SYSTEM_PROMPT,
        tools=[t for t in TOOL_SPECS if t["name"] == "flag"],  # type: ignore[misc]
        messages=[{"role": "user", "content": f"The whole document, numbered:\n{text}\nFlag every clause."}],
    )
    return [
        (b.input["category"], int(b.input["line_start"]), int(b.input["line_end"]))  # type: ignore[index]
        for b in reply.content
        if b.type == "tool_use" and b.name == "flag" and b.input.get("category") in CATEGORIES  # type: ignore[union-attr]
    ]
