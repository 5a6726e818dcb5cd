"""
Deterministic clause detection over the lines of a legal document.

This is the "reading" the offline review model does: given the lines it obtained through the
`read_lines` tool, it finds risky clauses (copyleft, patent retaliation, advertising duties, ...),
each cited by line range and a verbatim quote, and names the license family of the document.

Matching runs over the lines joined with newlines; a space in a rule's pattern matches any run of
whitespace and comment markers (``#``, ``*``, ``//``, ...), so a clause wrapped over several lines of
a license text or a source-code header is still found, and its match is mapped back to the lines
it spans. Everything here is a pure function of the lines: same text, same findings.

Debian machine-readable copyright files (``License: GPL-2+`` fields) are read field by field: the
license expression names the family directly, and an expression nobody here recognises, whose
text does not identify a known family either, is flagged as unknown or custom terms.
"""

from __future__ import annotations

import functools
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final, Literal, get_args

import snowballstemmer  # type: ignore[import-untyped]

Severity = Literal["high", "medium", "low"]
Category = Literal[
    "strong_copyleft",
    "network_copyleft",
    "weak_copyleft",
    "patent_retaliation",
    "patent_grant",
    "indemnification",
    "termination",
    "audit",
    "governing_law",
    "arbitration",
    "non_commercial",
    "field_of_use",
    "advertising",
    "attribution",
    "trademark",
    "export_control",
    "warranty_disclaimer",
    "limitation_of_liability",
    "unknown_terms",
]

#: The fixed category list the `flag` tool accepts, in report order.
CATEGORIES: Final[tuple[str, ...]] = get_args(Category)
CATEGORY_TITLES: Final[dict[str, str]] = {
    "strong_copyleft": "Strong copyleft",
    "network_copyleft": "Network copyleft",
    "weak_copyleft": "Weak copyleft",
    "patent_retaliation": "Patent retaliation (licence ends on a patent suit)",
    "patent_grant": "Patent grant",
    "indemnification": "Indemnification",
    "termination": "Automatic termination",
    "audit": "Audit or inspection right",
    "governing_law": "Governing law or venue",
    "arbitration": "Arbitration or class-action waiver",
    "non_commercial": "Non-commercial restriction",
    "field_of_use": "Field-of-use restriction",
    "advertising": "Advertising clause",
    "attribution": "Attribution or notice duty",
    "trademark": "Trademark or endorsement",
    "export_control": "Export control",
    "warranty_disclaimer": "Warranty disclaimer",
    "limitation_of_liability": "Limitation of liability",
    "unknown_terms": "Unknown or custom terms",
}
SEVERITIES: Final[tuple[str, ...]] = get_args(Severity)
#: The severity a category's clauses have unless a rule says otherwise.
CATEGORY_SEVERITY: Final[dict[str, str]] = {
    "strong_copyleft": "high",
    "network_copyleft": "high",
    "weak_copyleft": "medium",
    "patent_retaliation": "high",
    "patent_grant": "low",
    "indemnification": "high",
    "termination": "medium",
    "audit": "high",
    "governing_law": "medium",
    "arbitration": "high",
    "non_commercial": "high",
    "field_of_use": "high",
    "advertising": "medium",
    "attribution": "low",
    "trademark": "low",
    "export_control": "medium",
    "warranty_disclaimer": "low",
    "limitation_of_liability": "low",
    "unknown_terms": "medium",
}
#: Categories a lawyer should look at: their clauses make a document need review.
HIGH_CATEGORIES: Final = frozenset(c for c, s in CATEGORY_SEVERITY.items() if s == "high")
#: Boilerplate nearly every licence has (warranty disclaimer, limitation of liability): folded in reports.
ROUTINE_CATEGORIES: Final = frozenset({"warranty_disclaimer", "limitation_of_liability"})

#: Categories the offline model cannot judge reliably: precision or recall under 0.8 on the final
#: (only scored) part of the held-out sentences (examples/tests/eval/heldout) when last measured.
#: A test fails when this list and the measurement disagree.
OFFLINE_UNRELIABLE: Final[dict[str, str]] = {
    "non_commercial": "held-out precision 0.57, recall 0.80",
}


def unreliable_note(model: str) -> str:
    """
    The report's line on what the offline model cannot judge (empty for another model).

    :param model: the model the run used, as the report's header names it (``offline`` for the
        offline model).
    """
    if model != "offline" or not OFFLINE_UNRELIABLE:
        return ""
    named = "; ".join(f"{CATEGORY_TITLES[c]} ({why})" for c, why in OFFLINE_UNRELIABLE.items())
    return (
        "The offline model reads clauses by rules and cannot judge these reliably: "
        f"{named}. For a real reader, run the review with --model anthropic."
    )


UNKNOWN_FAMILY: Final = "unknown"
#: Longest quote a finding carries, in characters.
MAX_QUOTE_CHARS: Final = 480
#: Most lines one finding cites (merging stops there); the flag tool accepts more.
MAX_FINDING_LINES: Final = 30
#: Findings of one category in one paragraph, or closer than this many lines, are merged into one.
MERGE_GAP_LINES: Final = 2

# A space in a pattern: whitespace, or a line break followed by a comment marker / Debian "." line.
_SEP: Final = r"(?:[\s#*>;%!]|//|--|\n[ \t]*\.(?=[ \t]*\n))+"
_QUOTES: Final = "[`'\"\u201c\u201d\u2018\u2019]*"


def _rx(pattern: str, *, case: bool = False) -> re.Pattern[str]:
    """Compile a rule pattern: every space becomes `_SEP`; case-insensitive unless `case`."""
    return re.compile(pattern.replace(" ", _SEP), re.MULTILINE | (0 if case else re.IGNORECASE))


@dataclass(frozen=True)
class Finding:
    """
    One flagged clause.

    :ivar line_start: first cited line, 1-based, inclusive.
    :ivar line_end: last cited line, inclusive.
    :ivar quote: text taken verbatim (whitespace collapsed) from the cited lines.
    :ivar rule: name of the rule that matched, for explanations and tests.
    """

    category: str
    severity: str
    line_start: int
    line_end: int
    quote: str
    rule: str


@dataclass(frozen=True)
class Analysis:
    """
    The result of reading one document.

    :ivar family: the primary license family (first one declared or titled), or ``"unknown"``.
    :ivar families: every family identified, primary first.
    :ivar family_line: the line the primary family was identified from (0 when unknown).
    """

    family: str
    families: tuple[str, ...]
    family_line: int
    findings: tuple[Finding, ...]
    line_count: int

    def by_category(self) -> dict[str, int]:
        """:return: number of findings per category, categories without findings omitted."""
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.category] = counts.get(f.category, 0) + 1
        return counts


@dataclass(frozen=True)
class _Rule:
    name: str
    #: lower-case single words one of which every match contains: the regex runs only on the
    #: lines around their occurrences (python's `re` has no fast scan for case-insensitive
    #: alternations, so this is what keeps a 1 MB document well under a second).
    needles: tuple[str, ...]
    category: str
    severity: str
    pattern: re.Pattern[str]
    #: False for boilerplate (references, disclaimers): only the first occurrence of each
    #: distinct wording is kept, so a copyright file repeating a GPL notice 40 times gets one flag.
    repeatable: bool = True


def _rule(
    name: str,
    needles: tuple[str, ...],
    category: str,
    severity: str,
    pattern: str,
    *,
    repeatable: bool = True,
    case: bool = False,
) -> _Rule:
    return _Rule(name, needles, category, severity, _rx(pattern, case=case), repeatable)


_GAP = r"[\s\S]{0,160}?"  # a bounded stretch of any text inside one sentence

RULES: Final[tuple[_Rule, ...]] = (
    # --- strong copyleft -------------------------------------------------------------------
    _rule(
        "gpl3_entire_work",
        ("entire",),
        "strong_copyleft",
        "high",
        r"license the entire work, as a whole, under this License",
    ),
    _rule(
        "gpl3_corresponding_source",
        ("corresponding",),
        "strong_copyleft",
        "high",
        r"convey(?:ing)? (?:the )?object code (?:in|under the terms of)" + _GAP + r"Corresponding Source",
    ),
    _rule(
        "gpl2_whole_work",
        ("whole",),
        "strong_copyleft",
        "high",
        r"to be licensed as a whole at no charge to all third parties under the terms of this License",
    ),
    _rule(
        "gpl2_source_code",
        ("machine-readable",),
        "strong_copyleft",
        "high",
        r"Accompany it with the complete corresponding machine-readable source code",
    ),
    _rule(
        "gpl_reference",
        ("gnu",),
        "strong_copyleft",
        "high",
        r"(?:under|terms of|licensed under|subject to) (?:the )?(?:terms )?(?:of )?(?:the )?"
        r"GNU General Public License(?! (?:exception|runtime))",
        repeatable=False,
    ),
    _rule(
        "gpl_short_reference",
        ("gpl",),
        "strong_copyleft",
        "high",
        r"(?:under|licensed under|released under|distributed under|terms of) (?:the )?"
        r"GPL(?:v?[123](?:\.0)?)?\b"
        r"(?! (?:compatible|exception))",
        repeatable=False,
    ),
    _rule("gfdl_copyleft", ("precisely",), "strong_copyleft", "medium", r"under precisely this License"),
    _rule(
        "cc_share_alike",
        ("sharealike",),
        "strong_copyleft",
        "medium",
        r"\b(?-i:ShareAlike)\b(?! Compatible)",
        repeatable=False,
    ),
    _rule(
        "spdx_gpl",
        ("spdx",),
        "strong_copyleft",
        "high",
        r"SPDX-License-Identifier: (?:GPL|GFDL|CC-BY-SA)-",
        case=True,
    ),
    # --- network copyleft ------------------------------------------------------------------
    _rule(
        "agpl_remote_interaction",
        ("remotely",),
        "network_copyleft",
        "high",
        r"interacting with it remotely through a (?:computer )?network",
    ),
    _rule(
        "agpl_reference",
        ("affero",),
        "network_copyleft",
        "high",
        r"(?:under|terms of|licensed under) (?:the )?GNU Affero General Public License",
        repeatable=False,
    ),
    _rule(
        "agpl_short_reference",
        ("agpl",),
        "network_copyleft",
        "high",
        r"(?:under|licensed under|released under) (?:the )?AGPL",
        repeatable=False,
    ),
    _rule(
        "sspl_service",
        ("service",),
        "network_copyleft",
        "high",
        r"(?:offer|make) (?:the functionality of )?the Program[^.]{0,80}?as a service",
    ),
    _rule(
        "spdx_agpl",
        ("spdx",),
        "network_copyleft",
        "high",
        r"SPDX-License-Identifier: AGPL-",
        case=True,
    ),
    # --- weak copyleft ---------------------------------------------------------------------
    _rule(
        "lgpl_reference",
        ("gnu",),
        "weak_copyleft",
        "medium",
        r"(?:under|terms of|licensed under) (?:the )?(?:terms )?(?:of )?(?:the )?"
        r"GNU (?:Lesser|Library) (?:General )?Public License",
        repeatable=False,
    ),
    _rule(
        "lgpl_short_reference",
        ("lgpl",),
        "weak_copyleft",
        "medium",
        r"(?:under|licensed under|released under) (?:the )?LGPL",
        repeatable=False,
    ),
    _rule(
        "lgpl_modified_library",
        ("library",),
        "weak_copyleft",
        "medium",
        r"The modified work must itself be a software library",
    ),
    _rule(
        "lgpl_terms_of_choice",
        ("choice",),
        "weak_copyleft",
        "medium",
        r"(?:distribute that work|convey a Combined Work) under terms of your choice",
    ),
    _rule(
        "mpl_file_copyleft",
        ("must", "governed"),
        "weak_copyleft",
        "medium",
        r"(?:must be under the terms of this License|are governed by the terms of this License)",
    ),
    _rule(
        "mpl_larger_work",
        ("larger",),
        "weak_copyleft",
        "medium",
        r"distribute a Larger Work under terms of Your choice",
    ),
    _rule(
        "mpl_reference",
        ("mozilla", "eclipse", "development"),
        "weak_copyleft",
        "medium",
        r"(?:under|terms of|subject to) (?:the )?(?:terms of )?(?:the )?"
        r"(?:Mozilla|Eclipse|Common) (?:Public|Development and Distribution) License",
        repeatable=False,
    ),
    _rule(
        "epl_source_available",
        ("agreement",),
        "weak_copyleft",
        "medium",
        r"(?:it )?must be made available under this Agreement",
    ),
    _rule(
        "spdx_weak",
        ("spdx",),
        "weak_copyleft",
        "medium",
        r"SPDX-License-Identifier: (?:LGPL|MPL|EPL|CDDL)-",
        case=True,
    ),
    # --- patents ---------------------------------------------------------------------------
    _rule(
        "patent_retaliation",
        ("patent",),
        "patent_retaliation",
        "high",
        r"(?:institutes?|initiates?|brings?|files?|commences?) (?:a )?(?:patent (?:litigation"
        r"|lawsuit|action|claim)"
        r"|(?:litigation|lawsuit|action|claim)" + _GAP + r"(?:patent|infring))",
    ),
    _rule(
        "patent_assertion_termination",
        ("patent",),
        "patent_retaliation",
        "high",
        r"asserting a patent infringement claim|patent licenses? granted[^.]{0,200}?shall terminate",
    ),
    _rule(
        "patent_grant",
        ("patent",),
        "patent_grant",
        "low",
        r"(?:grants? (?:to )?(?:You|you|each recipient)" + _GAP + r"patent licen[cs]e"
        r"|Grant of Patent License|royalty-free patent licen[cs]e|under Patent Claims"
        r"|essential patent claims|patent licen[cs]e (?:to|under) )",
    ),
    # --- indemnification -----------------------------------------------------------------------
    _rule(
        "indemnify",
        ("indemnif", "harmless"),
        "indemnification",
        "high",
        r"(?:\bindemnify\b|\bindemnification\b (?:obligation|of)|hold (?:\w+ ){0,4}harmless)",
    ),
    # --- termination -------------------------------------------------------------------------------
    _rule(
        "automatic_termination",
        ("terminat",),
        "termination",
        "medium",
        r"(?:terminates? automatically|automatically terminate|terminate (?:immediately|automatically)"
        r"|(?:will|shall) terminate (?:immediately )?(?:if|upon|without notice)"
        r"|terminates? (?:immediately|without (?:prior )?notice)"
        r"|terminate (?:\w+ ){1,3}(?:immediately|without (?:prior )?notice))",
    ),
    # --- audit -------------------------------------------------------------------------------------
    _rule(
        "audit_right",
        ("audit", "inspect"),
        "audit",
        "high",
        r"(?:(?:right|entitled|permitted) to (?:\w+ ){0,2}(?:audit|inspect)"
        r"|\b(?:may|shall|will) (?:\w+ ){0,2}(?:audit|inspect) (?:your|the licensee|licensee|its|the)"
        r"|\baudit (?:your|the licensee|licensee's|of your) (?:\w+ ){0,3}(?:use|records|books"
        r"|compliance|systems)"
        r"|(?:books|records)[^.]{0,80}?(?:available for|subject to) (?:audit|inspection))",
    ),
    # --- governing law, venue ----------------------------------------------------------------------
    _rule(
        "governing_law",
        ("governed", "construed", "laws", "jurisdiction", "venue", "courts"),
        "governing_law",
        "medium",
        r"(?:(?:governed|construed|interpreted) (?:by|under|in accordance with)[^.]{0,80}?\blaws? of"
        r"|(?:governed|construed) by (?:the )?(?:substantive )?laws"
        r"|(?:exclusive )?(?:jurisdiction|venue) (?:of|in|for)[^.]{0,80}?\bcourts?"
        r"|(?:brought|litigated|resolved) (?:only |exclusively )?in the (?:\w+ ){0,4}courts? of"
        r"|submit to the (?:\w+ ){0,2}jurisdiction)",
    ),
    # --- arbitration, class actions ----------------------------------------------------------------
    _rule(
        "arbitration",
        ("arbitrat",),
        "arbitration",
        "high",
        r"(?:(?:settled|resolved|submitted|determined|decided|referred) (?:\w+ ){0,2}(?:by"
        r"|to) (?:final |binding )*arbitration"
        r"|binding arbitration|arbitration (?:administered|under the rules|in accordance with|shall))",
    ),
    _rule(
        "class_action_waiver",
        ("class", "jury", "individual"),
        "arbitration",
        "high",
        r"(?:waives? (?:\w+ ){0,4}(?:class|jury)|class(?:-| )action|on an individual basis"
        r"|not as a plaintiff or class member)",
    ),
    # --- warranty / liability --------------------------------------------------------------
    _rule(
        "warranty_disclaimer",
        ("warrant", "provided", "basis", "without"),
        "warranty_disclaimer",
        "low",
        r"(?:WITHOUT ANY WARRANTY|without warranty of any kind|WITHOUT WARRANTIES OR CONDITIONS"
        r"|DISCLAIMS? ALL WARRANTIES|Disclaimer of Warranty|NO WARRANTY|WARRANTIES[^.]{0,120}? ARE DISCLAIMED"
        r"|provided (?:by [^.]{0,80}? )?"
        + _QUOTES
        + r"as(?:-| )is"
        + _QUOTES
        + r"|"
        + _QUOTES
        + r"as(?:-| )is"
        + _QUOTES
        + r" (?:basis|without))",
        repeatable=False,
    ),
    _rule(
        "liability_limitation",
        ("liab",),
        "limitation_of_liability",
        "low",
        r"(?:IN NO EVENT[^.]{0,200}? (?:BE )?LIABLE|Limitation of Liability"
        r"|(?:shall|will) not be (?:held )?liable|LIABLE TO YOU FOR DAMAGES"
        r"|without liability of any kind)",
        repeatable=False,
    ),
    # --- attribution / notices ---------------------------------------------------------------
    _rule(
        "notice_in_all_copies",
        ("notice", "credit", "altered", "retain", "reproduce"),
        "attribution",
        "low",
        r"(?:copyright notice and this permission notice (?:shall be included|appear) in all copies"
        r"|above copyright notice(?:s)? and this permission notice(?:s)? appear in all copies"
        r"|Redistributions of source code must retain|Redistributions in binary form must reproduce"
        r"|This notice may not be removed or altered|keep intact all (?:the )?notices"
        r"|must (?:retain|reproduce|include) (?:the )?(?:above )?copyright notice"
        r"|readable copy of the attribution notices|You must give appropriate credit"
        r"|must cause any modified files to carry prominent notices"
        r"|must carry prominent notices stating|Altered source versions must be plainly marked)",
        repeatable=False,
    ),
    # --- advertising -----------------------------------------------------------------------
    _rule(
        "advertising_clause",
        ("advertising",),
        "advertising",
        "medium",
        r"(?:All advertising materials mentioning features or use of this software must display"
        r"|advertising materials,? and other materials related to such distribution and use acknowledge)",
    ),
    _rule(
        "end_user_acknowledgment",
        ("end-user",),
        "advertising",
        "medium",
        r"end-user documentation included with the redistribution, if any, must include the following"
        r" acknowledge?ment",
    ),
    # --- non-commercial, field of use ------------------------------------------------------------
    _rule(
        "non_commercial",
        ("commercial",),
        "non_commercial",
        "high",
        r"(?:(?<!commercial\x20and\x20)(?<!commercial\x20or\x20)\bnon-?commercial (?:use|purposes?|only)"
        r"|\b(?-i:NonCommercial)\b|not for commercial (?:use|purposes)"
        r"|(?:may|must|shall) not (?:be )?(?:used|use it"
        r"|use the software) (?:\w+ ){0,2}for (?:any )?commercial"
        r"|commercial use is (?:prohibited|not permitted|forbidden)"
        r"|for (?:personal|private) (?:(?:and|or) non-?commercial )?(?:use|purposes) only)",
    ),
    _rule(
        "no_sale",
        ("fee", "sold"),
        "non_commercial",
        "medium",
        r"(?:You may not charge a fee for this Package itself|may not be sold|must not be sold"
        r"|\bNeither\b[^.]{0,160}?\bmay be sold)",
    ),
    _rule(
        "field_of_use",
        (
            "evil",
            "educational",
            "academic",
            "research",
            "evaluation",
            "military",
            "weapon",
            "surveillance",
            "nuclear",
        ),
        "field_of_use",
        "high",
        r"(?:shall be used for Good, not Evil"
        r"|for (?:educational|academic|research|evaluation)(?: (?:and|or) (?:educational|academic|research))?"
        r" (?:use|purposes) only"
        r"|(?:may|must|shall) not (?:be )?used? (?:\w+ ){0,3}(?:in|for) (?:any )?(?:military"
        r"|weapons?|surveillance|nuclear)"
        r"|(?:not (?:licensed|permitted) for|prohibited from) use in (?:\w+ ){0,3}(?:military"
        r"|weapons?|nuclear))",
    ),
    _rule(
        "no_derivatives",
        ("noderiv", "derivative"),
        "field_of_use",
        "medium",
        r"\bNoDerivatives\b|\bNo Derivative Works\b",
    ),
    # --- trademark -------------------------------------------------------------------------
    _rule(
        "trademark_not_granted",
        ("trade",),
        "trademark",
        "low",
        r"(?:does not grant (?:any rights in the |permission to use the )?trade ?(?:names|marks)"
        r"|no (?:rights?|license) (?:is granted )?(?:to use )?(?:the )?trademarks?"
        r"|trademark (?:rights|license) (?:are|is) not (?:licensed|granted))",
    ),
    _rule(
        "endorsement",
        ("endorse", "promote"),
        "trademark",
        "low",
        r"(?:be used to endorse or promote products|be used in advertising or otherwise to promote)",
        repeatable=False,
    ),
    # --- export control --------------------------------------------------------------------
    _rule(
        "export_control",
        ("export", "wassenaar", "bureau", "eccn"),
        "export_control",
        "medium",
        r"(?:export (?:control|administration|regulations?|laws?|restrictions?)|re-?export"
        r"|Wassenaar|Bureau of Industry and Security|Commerce Control List|\bECCN\b)",
    ),
    _rule(
        "cryptographic_software",
        ("cryptographic", "residence"),
        "export_control",
        "low",
        r"country of residence may have restrictions",
        repeatable=False,
    ),
)

# --- license families ------------------------------------------------------------------------


def _versioned(kind: str, version: str) -> re.Pattern[str]:
    """A reference naming a GNU license and its version: "GNU Lesser General Public License, version 2.1"."""
    name = "GNU General Public License" if kind == "General" else f"GNU {kind} General Public License"
    return _rx(
        name + r"(?: as published by the Free Software Foundation)?[;,]?(?: either)? version " + version
    )


# Full-text and reference signatures; the earliest match names the primary family.
_FAMILY_SIGNATURES: Final[tuple[tuple[str, str, re.Pattern[str]], ...]] = (
    ("AGPL-3.0", "affero", _rx(r"GNU AFFERO GENERAL PUBLIC LICENSE", case=True)),
    ("AGPL-3.0", "affero", _rx(r"(?:under|terms of) (?:the )?GNU Affero General Public License")),
    ("LGPL-3.0", "lesser", _rx(r"GNU LESSER GENERAL PUBLIC LICENSE Version 3")),
    ("LGPL-2.1", "lesser", _rx(r"GNU LESSER GENERAL PUBLIC LICENSE Version 2\.1")),
    ("LGPL-2.0", "library", _rx(r"GNU LIBRARY GENERAL PUBLIC LICENSE Version 2")),
    ("LGPL-3.0", "lesser", _versioned("Lesser", r"3")),
    ("LGPL-2.1", "lesser", _versioned("Lesser", r"2\.1")),
    ("LGPL-2.0", "library", _versioned("Library", r"2")),
    ("LGPL", "gnu", _rx(r"(?:under|terms of) (?:the )?GNU (?:Lesser|Library) General Public License")),
    ("GPL-3.0", "general", _rx(r"GNU GENERAL PUBLIC LICENSE Version 3")),
    ("GPL-2.0", "general", _rx(r"GNU GENERAL PUBLIC LICENSE Version 2")),
    ("GPL-1.0", "general", _rx(r"GNU GENERAL PUBLIC LICENSE Version 1")),
    ("GPL-3.0", "general", _versioned("General", r"3")),
    ("GPL-2.0", "general", _versioned("General", r"2")),
    ("GPL-1.0", "general", _versioned("General", r"1")),
    ("GPL", "general", _rx(r"(?:under|terms of) (?:the )?GNU General Public License")),
    ("MPL-2.0", "mozilla", _rx(r"Mozilla Public License,? (?:Version|v\.) 2\.0")),
    ("MPL-1.1", "mozilla", _rx(r"Mozilla Public License,? (?:Version|v\.) 1\.1")),
    ("EPL-2.0", "eclipse", _rx(r"Eclipse Public License,? (?:-|Version|v\.?) ?2\.0")),
    ("EPL-1.0", "eclipse", _rx(r"Eclipse Public License,? (?:-|Version|v\.?) ?1\.0")),
    ("CDDL-1.0", "development", _rx(r"COMMON DEVELOPMENT AND DISTRIBUTION LICENSE")),
    ("Apache-2.0", "apache", _rx(r"Apache License,? (?:Version|v\.?) ?2\.0")),
    ("Apache-1.1", "apache", _rx(r"Apache Software License,? Version 1\.1")),
    ("GFDL-1.3", "documentation", _rx(r"GNU Free Documentation License,? Version 1\.3")),
    ("GFDL-1.2", "documentation", _rx(r"GNU Free Documentation License,? Version 1\.2")),
    ("GFDL-1.1", "documentation", _rx(r"GNU Free Documentation License,? Version 1\.1")),
    ("Artistic-2.0", "artistic", _rx(r"Artistic License 2\.0")),
    ("Artistic-1.0", "artistic", _rx(r"The " + _QUOTES + r"Artistic License" + _QUOTES + r"(?! 2)")),
    ("PSF-2.0", "python", _rx(r"PYTHON SOFTWARE FOUNDATION LICENSE(?: VERSION 2)?")),
    ("BSL-1.0", "boost", _rx(r"Boost Software License,? (?:-|Version) ?1\.0")),
    ("OFL-1.1", "font", _rx(r"SIL OPEN FONT LICENSE Version 1\.1")),
    ("CC0-1.0", "cc0", _rx(r"CC0 1\.0 Universal|Creative Commons Zero")),
    (
        "CC-BY",
        "creative",
        _rx(  # refined by _cc_family
            r"(?:Creative Commons (?:Legal Code )?Attribution"
            r"(?:(?:-| )(?:NonCommercial|ShareAlike|NoDerivatives|NoDerivs))*"
            r" \d\.\d (?:International |Unported |Generic )?(?:Public )?License"
            r"|(?i:licensed under) (?:a |the )?Creative Commons Attribution)",
            case=True,
        ),
    ),
    ("Unlicense", "unencumbered", _rx(r"free and unencumbered software released into the public domain")),
    (
        "public-domain",
        "domain",
        _rx(r"(?:placed|released|dedicated?|put|is|are|be) (?:in|into|to) the public domain"),
    ),
    ("OpenSSL", "openssl", _rx(r"developed by the OpenSSL Project")),
    ("MIT", "granted", _rx(r"Permission is hereby granted, free of charge, to any person obtaining a copy")),
    (
        "ISC",
        "permission",
        _rx(
            r"Permission to use, copy, modify, and(?:/or)? distribute this software for any purpose"
            r" with or without fee is hereby granted"
        ),
    ),
    ("MIT", "permission", _rx(r"Permission to use, copy, modify, distribute, and sell this software")),
    (
        "HPND",
        "permission",
        _rx(
            r"Permission to use, copy, modify,? (?:and|and/or) distribute this software and its"
            r" documentation for any purpose"
        ),
    ),
    (
        "TCL",
        "permission",
        _rx(r"hereby grant permission to use, copy, modify, distribute, and license this software"),
    ),
    (
        "COMMON",
        "common-licenses",
        _rx(r"/usr/share/common-licenses/[\w.+-]*\w"),
    ),  # the file names the license
    ("Zlib", "origin", _rx(r"The origin of this software must not be misrepresented")),
    (
        "BSD",
        "redistribution",
        _rx(
            r"Redistribution and use in source and binary forms(?:, with or without modification,)?"
            r" are permitted"
        ),
    ),  # refined by _bsd_family
)

# Debian short names (License: fields) -> family; first match wins, so specific names come first.
_SHORT_NAMES: Final[tuple[tuple[re.Pattern[str], str], ...]] = tuple(
    (re.compile(p, re.IGNORECASE), fam)
    for p, fam in (
        (r"^agpl", "AGPL-3.0"),
        (r"^lgpl-?v?2\.1|^lgpl-?2\.1", "LGPL-2.1"),
        (r"^lgpl-?v?2", "LGPL-2.0"),
        (r"^lgpl-?v?3", "LGPL-3.0"),
        (r"^lgpl", "LGPL"),
        (r"^gpl-?v?1", "GPL-1.0"),
        (r"^gpl-?v?2", "GPL-2.0"),
        (r"^gpl-?v?3", "GPL-3.0"),
        (r"^gpl\b", "GPL"),
        (r"^gfdl[-a-z]*-?1\.1", "GFDL-1.1"),
        (r"^gfdl[-a-z]*-?1\.2", "GFDL-1.2"),
        (r"^gfdl[-a-z]*-?1\.3", "GFDL-1.3"),
        (r"^gfdl", "GFDL"),
        (r"^mpl-?1\.1", "MPL-1.1"),
        (r"^mpl-?2", "MPL-2.0"),
        (r"^mpl", "MPL"),
        (r"^epl-?1", "EPL-1.0"),
        (r"^epl-?2", "EPL-2.0"),
        (r"^cddl", "CDDL-1.0"),
        (r"^apache-?1\.1", "Apache-1.1"),
        (r"^apache", "Apache-2.0"),
        (r"^(?:expat|mit|x11)\b", "MIT"),
        (r"^bsd-?1", "BSD-1-Clause"),
        (r"^bsd-?2", "BSD-2-Clause"),
        (r"^bsd-?3", "BSD-3-Clause"),
        (r"^bsd-?4", "BSD-4-Clause"),
        (r"^bsd\b", "BSD"),
        (r"^isc\b", "ISC"),
        (r"^(?:psf|python)", "PSF-2.0"),
        (r"^zlib", "Zlib"),
        (r"^cc0", "CC0-1.0"),
        (r"^cc-by-nc-nd", "CC-BY-NC-ND"),
        (r"^cc-by-nc-sa", "CC-BY-NC-SA"),
        (r"^cc-by-nc", "CC-BY-NC"),
        (r"^cc-by-nd", "CC-BY-ND"),
        (r"^cc-by-sa", "CC-BY-SA"),
        (r"^cc-by", "CC-BY"),
        (r"^(?:public[- ]?domain|pd)\b|public-domain", "public-domain"),
        (r"^unlicense", "Unlicense"),
        (r"^artistic-?2", "Artistic-2.0"),
        (r"^artistic", "Artistic-1.0"),
        (r"^(?:bsl|boost)", "BSL-1.0"),
        (r"^ofl", "OFL-1.1"),
        (r"^(?:openssl|ssleay)", "OpenSSL"),
        (r"^postgresql", "PostgreSQL"),
        (r"^hpnd", "HPND"),
        (r"^(?:fsful|fsfap|fsf-unlimited|permissive-fsf)", "FSF-permissive"),
        (r"^ftl\b", "FTL"),
        (r"^(?:openldap|oldap)", "OLDAP-2.8"),
        (r"^curl\b", "curl"),
        (r"^libpng", "Libpng"),
        (r"^vim\b", "Vim"),
        (r"^unicode", "Unicode"),
    )
)
_SOURCE_OFFER_RULES: Final = frozenset({"gpl2_source_code", "gpl3_corresponding_source"})
_COPYLEFT_FAMILY_PREFIXES: Final = ("GPL", "AGPL", "LGPL", "MPL", "EPL", "CDDL", "GFDL", "CC-BY-SA")
_SHORT_NAME: Final = re.compile(r"[\w.+~/-]+")
_LICENSE_FIELD: Final = re.compile(r"^License:[ \t]*(\S.*?)[ \t]*$")
_EXCEPTION: Final = re.compile(r"\s+with\s+.*?exception\b|\s+with\s+\S+", re.IGNORECASE)
_LICENSING_WORDS: Final = re.compile(
    r"licen[cs]e|permission|permitted|copyright|redistribut|all rights reserved|terms and conditions"
    r"|proprietary and confidential|unauthori[sz]ed copying",
    re.IGNORECASE,
)


def family_from_short_name(name: str) -> str | None:
    """
    Map one Debian/SPDX license short name (``GPL-2+``, ``Expat``, ``BSD-3-clause``) to a family.

    :param name: a single name, without ``or``/``and`` operators; ``with ... exception`` is ignored.
    :return: the family, or None when the name is not one of the known families.
    """
    bare = _EXCEPTION.sub("", name.strip()).strip().rstrip("+").strip()
    for pattern, family in _SHORT_NAMES:
        if pattern.search(bare):
            return family
    return None


def split_license_expression(expression: str) -> list[str]:
    """:return: the single license names of a ``License:`` expression (split on or/and/commas)."""
    parts = re.split(r"\s+(?:or|and)\s+|\s*[,|]\s*|\s*;\s*", expression.strip(), flags=re.IGNORECASE)
    return [p for p in (x.strip("() ") for x in parts) if p]


_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: Lines of context on each side of a needle within which a rule's regex is run.
_WINDOW_LINES: Final = 5


class _Text:
    """The document as one string with a map from character offsets back to 1-based lines."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)
        self.text = "\n".join(self.lines)
        self._windows: dict[tuple[str, ...], list[tuple[int, int]]] = {}
        self.starts: list[int] = []
        offset = 0
        for line in self.lines:
            self.starts.append(offset)
            offset += len(line) + 1

    @functools.cached_property
    def lower(self) -> str:
        """The text lower-cased (ASCII only: same offsets as `text`)."""
        return self.text.translate(_ASCII_LOWER)

    def line_of(self, offset: int) -> int:
        return max(1, bisect_right(self.starts, offset))

    def windows(self, needles: tuple[str, ...]) -> list[tuple[int, int]]:
        """Character ranges of the lines within _WINDOW_LINES of any needle occurrence, merged."""
        cached = self._windows.get(needles)
        if cached is not None:
            return cached
        hit_lines: set[int] = set()
        for needle in needles:
            pos = self.lower.find(needle)
            while pos >= 0:
                hit_lines.add(self.line_of(pos))
                pos = self.lower.find(needle, pos + len(needle))
        ranges: list[tuple[int, int]] = []
        for line in sorted(hit_lines):
            first, last = max(1, line - _WINDOW_LINES), min(len(self.lines), line + _WINDOW_LINES)
            start, end = self.starts[first - 1], self.starts[last - 1] + len(self.lines[last - 1])
            if ranges and start <= ranges[-1][1] + 1:
                ranges[-1] = (ranges[-1][0], end)
            else:
                ranges.append((start, end))
        self._windows[needles] = ranges
        return ranges

    def span_lines(self, start: int, end: int) -> tuple[int, int]:
        return self.line_of(start), self.line_of(max(start, end - 1))


def collapse(text: str) -> str:
    """:return: `text` with every run of whitespace replaced by one space, stripped."""
    return " ".join(text.split())


def cited_text(lines: Sequence[str], line_start: int, line_end: int) -> str:
    """:return: lines `line_start..line_end` (1-based, inclusive) joined and whitespace-collapsed."""
    return collapse(" ".join(lines[line_start - 1 : line_end]))


# A sentence ends at ". ", "! ", "? " (not after an abbreviation or a lone letter or number), at a
# blank line, at a Debian " ." line, or before a DEP-5 field ("License: ...").
_SENTENCE_END: Final = re.compile(r"[.!?](?=[\s)\]'\"]|$)|\n[ \t]*\.?[ \t]*(?=\n)|\n(?=[A-Z][\w-]*:[ \t])")
_ABBREVIATION: Final = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|Inc|Ltd|Co|Corp|vs|No|U\.S|U\.S\.A|v|Sec|cf|St|Dr|Mr|Ms|al|Ver)"
    r"|\b[A-Za-z]|(?:^|\s)\d)$"
)
#: How far a sentence is looked for around a match, in characters each way.
_SENTENCE_REACH: Final = 900


def _is_end(text: str, m: re.Match[str]) -> bool:
    if text[m.start()] not in ".!?":
        return True
    return not (text[m.start()] == "." and _ABBREVIATION.search(text[max(0, m.start() - 8) : m.start()]))


def sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """
    The whole sentence(s) around ``text[start:end]``, as character offsets.

    :return: (first character after the previous sentence's end, just past this sentence's end).
    """
    lo = max(0, start - _SENTENCE_REACH)
    first = lo if lo > 0 else 0
    for m in _SENTENCE_END.finditer(text, lo):  # not endpos=start: a lookahead must see past it
        if m.start() >= start:
            break
        if m.end() <= start and _is_end(text, m):
            first = m.end()
    last = min(len(text), end + _SENTENCE_REACH)
    for m in _SENTENCE_END.finditer(text, max(end - 1, start), last):
        if m.start() >= end - 1 and _is_end(text, m):
            last = m.end()
            break
    while first < start and text[first].isspace():
        first += 1
    return first, max(last, end)


def _quote_span(text: _Text, start: int, end: int) -> tuple[int, int]:
    """The sentence around a match, cut to about `MAX_QUOTE_CHARS` around the match when longer."""
    first, last = sentence_span(text.text, start, end)
    if len(collapse(text.text[first:last])) <= MAX_QUOTE_CHARS:
        return first, last
    if end - first <= MAX_QUOTE_CHARS:  # keep the sentence's start, cut its tail
        last = min(last, first + MAX_QUOTE_CHARS)
    else:
        room = max(0, (MAX_QUOTE_CHARS - (end - start)) // 2)
        first, last = max(first, start - room), min(last, end + room)
    while first > 0 and first < start and not text.text[first - 1].isspace():
        first += 1  # start at a word
    while last < len(text.text) and last > end and not text.text[last].isspace():
        last -= 1  # end at a word
    return first, last


def _quote_for(text: _Text, start: int, end: int) -> str:
    """The collapsed text of a span, at most `MAX_QUOTE_CHARS` long; always in its cited lines."""
    quote = collapse(text.text[start:end])
    return quote if len(quote) <= MAX_QUOTE_CHARS else quote[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0]


#: Words that make a sentence about another licence a mention rather than this text's own clause:
#: history ("previously distributed under the GPL"), comparison, compatibility, examples.
MENTION: Final = re.compile(
    r"\b(?:previously|formerly|originally|historically|earlier (?:versions?|releases?)"
    r"|prior (?:versions?|releases?)"
    r"|older (?:versions?|releases?)|used to be|no longer|re-?licen[cs]|compatib|incompatib|unlike"
    r"|differs? from|see also|in contrast"
    r"|similar to|whereas|(?:was|were|had been) (?:\w+ )?(?:distributed|released|licen[cs]ed|available)"
    r"|(?:link|combine|combining|linking) (?:\w+ ){0,6}with (?:a |any )?(?:work|library|software"
    r"|code|program)s?"
    r" (?:\w+ )?(?:licen[cs]ed|released|distributed|covered) under"
    r"|does not (?:require|apply|contain|impose|include)|is not (?:licen[cs]ed|distributed|released|subject)"
    r"|not (?:licen[cs]ed|distributed|released) under|nothing in this)",
    re.IGNORECASE,
)
#: Words that make a sentence naming another licence an example of it, not this text's terms.
EXAMPLE: Final = re.compile(r"\b(?:for (?:example|instance)|e\.g\.|such as|like the)", re.IGNORECASE)
#: A copyleft licence offered as one choice among others: softened to medium.
ALTERNATIVE: Final = re.compile(
    r"\b(?:alternatively|dual[- ]licen[cs]|at your (?:option|choice),? (?:under|the terms of|either)"
    r"|may (?:alternatively|also|instead) be (?:distributed|used|licen[cs]ed|redistributed))",
    re.IGNORECASE,
)
_PATENT_SUIT: Final = re.compile(r"patent (?:litigation|infringement|suit|claim)|litigation", re.I)
_MENTION_CATEGORIES: Final = frozenset(CATEGORIES) - ROUTINE_CATEGORIES - {"attribution"}


def is_mention(sentence: str, *, names_a_licence: bool = False) -> bool:
    """
    :param names_a_licence: the clause found is a reference to a licence by name, which an
        example ("for example, the GPL requires ...") only mentions.
    :return: whether a sentence only mentions a licence or clause (history, comparison,
        compatibility, example) rather than stating this text's own terms.
    """
    text = collapse(sentence)
    return bool(MENTION.search(text) or (names_a_licence and EXAMPLE.search(text)))


def _license_fields(text: _Text) -> list[tuple[int, str, int]]:
    """Debian ``License:`` fields: (line, expression, last line of the license text that follows)."""
    fields: list[tuple[int, str, int]] = []
    lines = text.lines
    for i, line in enumerate(lines):
        m = _LICENSE_FIELD.match(line)
        if not m:
            continue
        end = i + 1
        while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
            end += 1
        fields.append((i + 1, m.group(1), end))
    return fields


def _bsd_family(text: _Text, start: int) -> str:
    window = collapse(text.text[start : start + 1800]).lower()
    if "advertising materials" in window:
        return "BSD-4-Clause"
    if "endorse or promote" in window:
        return "BSD-3-Clause"
    return "BSD-2-Clause"


def _cc_family(text: _Text, start: int) -> str:
    head = collapse(text.text[start : start + 200])
    m = re.search(
        r"Attribution((?:[- ](?:NonCommercial|ShareAlike|NoDerivatives|NoDerivs))*)\s*(\d\.\d)?",
        head,
        re.IGNORECASE,
    )
    if not m:
        return "CC-BY"
    suffix = "".join(
        {"noncommercial": "-NC", "sharealike": "-SA", "noderivatives": "-ND", "noderivs": "-ND"}[p.lower()]
        for p in re.findall(r"NonCommercial|ShareAlike|NoDerivatives|NoDerivs", m.group(1), re.IGNORECASE)
    )
    return f"CC-BY{suffix}" + (f"-{m.group(2)}" if m.group(2) else "")


def _text_families(text: _Text, start: int = 0, end: int | None = None) -> list[tuple[int, str]]:
    """Families named by signatures in text[start:end], as (offset, family), in text order."""
    stop = len(text.text) if end is None else end
    found: list[tuple[int, str]] = []
    for family, needle, pattern in _FAMILY_SIGNATURES:
        windows = [
            (max(a, start), min(b, stop)) for a, b in text.windows((needle,)) if b > start and a < stop
        ]
        for m in (m for a, b in windows for m in pattern.finditer(text.text, a, b)):
            offset = m.start()
            if family == "BSD":
                family_found = _bsd_family(text, offset)
            elif family == "CC-BY":
                family_found = _cc_family(text, offset)
            elif family == "COMMON":
                named = family_from_short_name(m.group(0).rsplit("/", 1)[1])
                if named is None:
                    continue
                family_found = named
            else:
                family_found = family
            found.append((offset, family_found))
            break  # the first occurrence of each signature is enough
    found.sort()
    return found


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def identify_family(lines: Sequence[str]) -> tuple[str, tuple[str, ...], int]:
    """
    Name the license family of a document.

    Debian ``License:`` fields win (the first one is the primary family, usually the ``Files: *``
    paragraph); otherwise the earliest full-text title or reference signature.

    :return: (primary family or ``"unknown"``, all families found, line of the primary evidence).
    """
    return _identify(_Text(lines))


def _specific(families: tuple[str, ...]) -> tuple[str, ...]:
    """Drop an unversioned family ("GPL") when a version of it ("GPL-3.0") was named too."""
    return tuple(f for f in families if not any(o.startswith(f + "-") for o in families))


def _resolved_fields(text: _Text) -> list[tuple[int, str, list[tuple[str, str | None]], bool]]:
    """
    Debian ``License:`` fields with each name resolved to a family: by its short name, else by the
    text of the stand-alone paragraph that defines that name (wherever it is), else None.

    :return: (line, expression, [(name, family or None)], whether the expression is made of short
        names rather than free text) per field, in document order.
    """
    fields = _license_fields(text)
    defined: dict[str, str | None] = {}
    for line_no, expression, end in fields:
        if end > line_no and expression.lower() not in defined:
            para = _text_families(
                text, text.starts[line_no - 1], text.starts[end - 1] + len(text.lines[end - 1])
            )
            defined[expression.lower()] = para[0][1] if para else None
    resolved: list[tuple[int, str, list[tuple[str, str | None]], bool]] = []
    for line_no, expression, _ in fields:
        names = split_license_expression(expression)
        if all(_SHORT_NAME.fullmatch(_EXCEPTION.sub("", n)) for n in names):
            resolved.append(
                (
                    line_no,
                    expression,
                    [(n, family_from_short_name(n) or defined.get(n.lower())) for n in names],
                    True,
                )
            )
        else:  # free text after "License:" (older copyright files): its paragraph says which license
            resolved.append((line_no, expression, [(expression, defined.get(expression.lower()))], False))
    return resolved


def _identify(text: _Text) -> tuple[str, tuple[str, ...], int]:
    families: list[tuple[int, str]] = []
    fields = _resolved_fields(text)
    for line_no, _, names, _ in fields:
        families.extend((line_no, f) for _, f in names if f)
    dep5 = any(line.startswith("Format:") for line in text.lines[:3])
    if dep5 and fields and fields[0][3] and not any(f for _, f in fields[0][2]):
        # a machine-readable file whose first field (the "Files: *" paragraph) names a license
        # nobody here knows: unclassified, whatever other files are under
        ordered = _unique(f for _, f in families)
        return UNKNOWN_FAMILY, _specific(ordered), 0
    if not families:
        families = [(text.line_of(off), fam) for off, fam in _text_families(text)]
    if not families:
        return UNKNOWN_FAMILY, (), 0
    specific = _specific(_unique(f for _, f in families))
    primary = families[0]
    if primary[1] not in specific:
        primary = next(p for p in families if p[1] in specific and p[1].startswith(primary[1] + "-"))
    return primary[1], (primary[1], *(f for f in specific if f != primary[1])), primary[0]


def _license_field_findings(text: _Text) -> list[Finding]:
    """Findings from Debian ``License:`` fields: copyleft families named, unknown custom names."""
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for line_no, expression, names, _ in _resolved_fields(text):
        dual = len(names) > 1 and bool(re.search(r"\sor\s", expression, re.IGNORECASE))
        has_permissive_alternative = dual and any(
            f is not None and not f.startswith(_COPYLEFT_FAMILY_PREFIXES) for _, f in names
        )
        quote = collapse(text.lines[line_no - 1])
        defines_text = line_no < len(text.lines) and text.lines[line_no][:1] in (" ", "\t")
        for name, family in names:
            if family is None:
                key = ("unknown_terms", name.lower())
                if defines_text and key not in seen:  # flagged where the custom terms are written
                    seen.add(key)
                    out.append(
                        Finding("unknown_terms", "low", line_no, line_no, quote, "license_field_unknown")
                    )
                continue
            category = (
                "network_copyleft"
                if family.startswith("AGPL")
                else "weak_copyleft"
                if family.startswith(("LGPL", "MPL", "EPL", "CDDL"))
                else "strong_copyleft"
                if family.startswith(("GPL", "GFDL", "CC-BY-SA", "CC-BY-NC-SA"))
                else "field_of_use"
                if "-NC" in family or "-ND" in family
                else None
            )
            if category is None:
                continue
            severity = {"network_copyleft": "high", "strong_copyleft": "high"}.get(category, "medium")
            if severity == "high" and (has_permissive_alternative or _EXCEPTION.search(name)):
                severity = "medium"  # a permissive alternative or a linking exception softens it
            key = (category, f"{family}|{severity}")
            if key in seen:
                continue
            seen.add(key)
            out.append(Finding(category, severity, line_no, line_no, quote, "license_field"))
    return out


def _rule_findings(text: _Text) -> list[Finding]:
    out: list[Finding] = []
    for rule in RULES:
        seen_wording: set[str] = set()
        matches = (
            m
            for start, end in text.windows(rule.needles)
            for m in rule.pattern.finditer(text.text, start, end)
        )
        for m in matches:
            if m.end() == m.start():
                continue
            wording = collapse(m.group(0)).lower()
            if not rule.repeatable:
                if wording in seen_wording:
                    continue
                seen_wording.add(wording)
            first, last = _quote_span(text, m.start(), m.end())
            sentence = text.text[first:last]
            if rule.category in _MENTION_CATEGORIES and is_mention(
                sentence, names_a_licence=rule.name.endswith("_reference")
            ):
                continue
            severity = rule.severity
            if rule.category in ("strong_copyleft", "network_copyleft") and ALTERNATIVE.search(sentence):
                severity = "medium"
            if rule.category == "termination" and _PATENT_SUIT.search(sentence):
                continue  # termination on a patent suit: patent retaliation, flagged by its own rule
            if _near_miss(rule.category, sentence):
                continue
            line_start, line_end = text.span_lines(first, last)
            out.append(
                Finding(
                    rule.category, severity, line_start, line_end, _quote_for(text, first, last), rule.name
                )
            )
    return out


# --- clauses by their meaning ------------------------------------------------------------------
#
# The rules above know the wordings of the licences they were written on. The rules below read a
# clause by its meaning instead: each sentence (and each part of it between semicolons) is cut into
# words, every word reduced to its stem by the Snowball English stemmer (``terminates``,
# ``terminated``, ``termination`` -> ``termin``; British and American spellings folded), and a rule
# asks whether the clause holds one word of each of its concepts: "the licence" + "ends" +
# "on a breach" is automatic termination however it is worded. Negation is part of the meaning:
# a negator just before a rule's key concept ("does not terminate", "no patent licence is
# granted") and a permission where a restriction is needed ("commercial use is permitted", "for
# any purpose") make the clause not that category.

# A snowball stemmer keeps the word it works on in the object: two threads sharing one raise
# IndexError or return another word's stem, so each thread (the worker runs recipes in threads)
# has its own.
_STEMMERS: Final = threading.local()
_WORD: Final = re.compile(r"\bnon?-[a-z]+|[a-z]+(?:'[a-z]+)?")  # "non-exclusive", "no-charge": one word
_BRITISH: Final = (
    (re.compile(r"licenc"), "licens"),
    (re.compile(r"(?<=[a-z]{3})is(e|ed|es|ing|ation)$"), r"iz\1"),
)
_NEGATORS: Final = frozenset({"not", "no", "never", "nothing", "neither", "nor", "without", "cannot", "none"})


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """The stem of one lower-case word, British spellings folded to American."""
    word = word.removesuffix("'s").replace("n't", "").replace("-", "")
    for pattern, repl in _BRITISH:
        word = pattern.sub(repl, word)
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))


def stems(text: str) -> list[str]:
    """The stems of the words of `text`, in order ("Licences ended" -> ["licens", "end"])."""
    return [_stem(w) for w in _WORD.findall(text.lower())]


@dataclass(frozen=True)
class _Concept:
    """Words (or phrases) of one meaning, as stem tuples; matched anywhere in a clause."""

    phrases: tuple[tuple[str, ...], ...]

    @functools.cached_property
    def by_first(self) -> dict[str, tuple[tuple[str, ...], ...]]:
        """The phrases by their first stem (a clause's words are looked up, not every phrase)."""
        out: dict[str, list[tuple[str, ...]]] = {}
        for phrase in self.phrases:
            out.setdefault(phrase[0], []).append(phrase)
        return {k: tuple(v) for k, v in out.items()}

    def positions(self, words: list[str], index: dict[str, list[int]]) -> list[int]:
        """Where in `words` (indexed by stem in `index`) a phrase of the concept starts, in order."""
        out: list[int] = []
        by_first = self.by_first
        for first in by_first.keys() & index.keys():
            for phrase in by_first[first]:
                n = len(phrase)
                out.extend(i for i in index[first] if n == 1 or tuple(words[i : i + n]) == phrase)
        return sorted(out)


def _concept(words: str) -> _Concept:
    """A concept from ``"word|other word|..."``: alternatives separated by ``|``."""
    return _Concept(tuple(tuple(stems(alt)) for alt in words.split("|") if alt.strip()))


@dataclass(frozen=True)
class _Meaning:
    name: str
    category: str
    severity: str
    #: every concept must occur in the clause; the first is the key concept negation is looked for at
    needs: tuple[_Concept, ...]
    #: near-miss wording (permissions, negations, other subjects): a clause matching it is not this category
    unless: re.Pattern[str] | None = None
    #: a negator within this many words before the key concept makes the clause not this category
    #: (0: the rule's meaning is itself a restriction, negation is looked for by its concepts)
    negatable: int = 3
    #: at most this many words between the key concept and the second one (0: anywhere in the clause)
    near: int = 0

    def matches(self, clause: str, words: list[str], index: dict[str, list[int]]) -> bool:
        hits = [c.positions(words, index) for c in self.needs]
        if not all(hits):
            return False
        if self.negatable and all(
            any(w in _NEGATORS for w in words[max(0, i - self.negatable) : i]) for i in hits[0]
        ):
            return False
        if self.near and len(hits) > 1 and not any(abs(i - j) <= self.near for i in hits[0] for j in hits[1]):
            return False
        return not (self.unless and self.unless.search(clause))


def _meaning(
    name: str,
    category: str,
    *needs: str,
    unless: str | None = None,
    negatable: int = 3,
    near: int = 0,
    severity: str | None = None,
) -> _Meaning:
    return _Meaning(
        name,
        category,
        severity or CATEGORY_SEVERITY[category],
        tuple(_concept(n) for n in needs),
        re.compile(unless, re.IGNORECASE) if unless else None,
        negatable,
        near,
    )


# Shared concepts, as word lists.
_PROHIBIT = (
    "not|no|never|prohibit|prohibited|forbid|forbidden|exclude|excluded|barred|unauthorised|only|solely"
    "|restrict|restricted|requires a separate|requires a paid|requires a commercial"
)
_PERMITTED = (
    r"\b(?:is|are) (?:hereby )?(?:permitted|allowed|granted|free)\b"
    r"(?!\s+(?:only|provided|if|solely|on condition))"
    r"|\bany purpose\b|\bnot required\b|\bno (?:restrictions?|limitations?|conditions)\b|\bnothing in\b"
    r"|\bfree to\b|\bappreciated\b|\bwithout (?:any )?restrictions?\b|\bincluding commercial"
    r"|\bmay (?:sell|charge|use it|run|freely)\b|\bare available from\b|\bimposes? no\b"
)
_BREACH = (
    "breach|violate|violation|fail|failure|comply|compliance|non-compliance|automatically|automatic"
    "|immediately|immediate|without notice|at any time|insolvent|circumvent|attempt|misuse|any term"
)
_LOSS = (
    "terminate|termination|end|ends|ended|come to an end|cease|lapse|revoke|void|cancel|forfeit"
    "|withdraw|lose|loss of|taken away|takes away|no longer valid"
)
_RIGHTS = "licence|license|right|rights|agreement|permission|access|grant|eula|authorisation|subscription"
_PATENT = "patent|patents"
_SUIT = (
    "sue|suit|lawsuit|litigation|claim|claims|allege|alleging|assert|action|counterclaim|cross-claim"
    "|court|proceeding"
)
_SOURCE = "source code|source form|source|corresponding source"
_SAME_TERMS = (
    "same licence|same license|this licence|this license|these terms|same terms|these same|copyleft"
    "|same freedoms|as a whole|no other licence|no other terms|under this"
)
_SHARE = (
    "distribute|redistribute|convey|pass on|hand on|release|released|publish|recipient|receive|receives"
    "|offer|made available|make available|provide|supply|give"
)

MEANINGS: Final[tuple[_Meaning, ...]] = (
    # copyleft: sharing the work obliges sharing its source on the same terms
    _meaning(
        "meaning_network_copyleft",
        "network_copyleft",
        "network|remotely|remote|server|hosted|as a service|software-as-a-service|saas|web interface"
        "|interact",
        _SOURCE,
        _SHARE + "|entitled|access",
        unless=r"without (?:publishing|releasing|sharing|offering)|does not count|not count as",
    ),
    _meaning(
        "meaning_weak_copyleft",
        "weak_copyleft",
        "file|files|library|component|larger work|larger program|link|links|linking|combined|relink",
        _SAME_TERMS + "|source form|source code|source",
        "any licence|any license|terms of your choice|any terms|other files|larger|proprietary|application"
        "|file by file|relink|library itself|component",
        unless=r"\bfree to relicen|no conditions|imposes? no|may be under any|you add to|"
        r"including proprietary terms",
    ),
    _meaning(
        "meaning_strong_copyleft",
        "strong_copyleft",
        _SAME_TERMS + "|same licence as the original",
        _SOURCE + "|adaptations|derivative|modified|modification|derived|based on|incorporate",
        _SHARE + "|licensed|carry|entitled|shared",
        unless=r"without source|terms (?:of )?your choice|any terms you choose|compatible with"
        r"|not licen[cs]ed under|no conditions|free to relicen|network|remote|server|hosted|as a service"
        r"|\bfiles?\b|librar|larger|link|component|\bwarrant|liab|patent|trademark|notice|credit|"
        r"\bexport|terminat",
        negatable=2,
    ),
    # patents
    _meaning(
        "meaning_patent_retaliation",
        "patent_retaliation",
        _LOSS + "|withdrawn|revoked|loses|forfeits|cancelled",
        _PATENT + "|infringe|infringes|infringement",
        _SUIT + "|sues|start patent litigation|take legal action|takes legal action|legal action|pursue",
        unless=r"\bnothing in\b|does not (?:terminate|end)|retains? the right to enforce",
    ),
    _meaning(
        "meaning_patent_non_assert",
        "patent_grant",
        "not to assert|not assert|never assert|covenant not to sue|non-assert",
        _PATENT,
        negatable=0,
    ),
    _meaning(
        "meaning_patent_grant",
        "patent_grant",
        _PATENT + "|patent claims|patent rights|essential patents",
        "grant|grants|license|licenses|licensed|licence|right|rights|practise|practice|licensable",
        unless=r"\bno patent licen|\bnot grant|nothing (?:herein|in this)"
        r"|(?:patent|rights) (?:rights )?(?:are |is )?(?:expressly )?reserved|no representation"
        r"|does not infringe|\bsue\b|\bsuit\b|lawsuit|litigation|withdrawn|revoked|terminat|cancel|forfeit"
        r"|\blos[et]\b|\bends?\b|cease|\balleg|\basserts?\b|\bclaim(?:s|ing)? (?:in court|that)",
        negatable=2,
    ),
    # indemnity: one party pays for the other's losses from third-party claims
    _meaning(
        "meaning_indemnify",
        "indemnification",
        "indemnify|indemnified|indemnification|hold harmless|hold free from liability|defend|reimburse"
        "|compensate|make good|cover the costs|pay our costs|pay any damages|pay the costs|indemnity",
        "claim|claims|loss|losses|cost|costs|damages|expense|lawsuit|sue|sues|breach|judgment|settlement"
        "|fees|liability",
        unless=r"not (?:be )?(?:required|obliged|obligated) to indemnif|no (?:party|one) (?:shall|will|is) "
        r"(?:be )?(?:obliged|required)|will not owe|not responsible for any damage",
    ),
    # termination: the licence ends by itself on a breach (or at the licensor's will, without notice)
    _meaning(
        "meaning_termination",
        "termination",
        _LOSS + "|terminated|revoked|voids|cancelled|ceases|lapses|suspend|cease to exist",
        _RIGHTS + "|you",
        _BREACH,
        unless=r"(?:does|shall|will) not (?:terminate|end|lapse|expire)|perpetual|irrevocable|reinstat"
        r"|by giving|days'? (?:prior )?(?:written )?notice"
        r"|(?:upon|on|with) (?:\w+ ){0,3}(?:written )?notice to"
        r"|patent|infring",
    ),
    # audit: the licensor may look into the licensee's records, systems or use
    _meaning(
        "meaning_audit",
        "audit",
        "audit|auditor|auditors|inspect|inspection|examine|examination|verify|verification|check"
        "|compliance review|review",
        "record|records|book|books|premises|system|systems|facilities|installations|installed|usage|use"
        "|deployment|compliance|accounts|copies|number of users|number of|quantity|fees due",
        "may|right|entitled|permit|shall|will|must|agree|cooperate|access|reserve|request",
        unless=r"\bnever\b|audit (?:report|log|trail)|source code|you may (?:audit|inspect|review|check)",
    ),
    # governing law and venue: a named place's law or courts
    _meaning(
        "meaning_governing_law",
        "governing_law",
        "law|laws|court|courts|jurisdiction|venue|competence",
        "govern|governed|governs|applies|apply|subject to|interpreted|construed|exclusively|exclusive|sole"
        "|heard|filed|brought|consent|submit|lies|place of jurisdiction|competent",
        unless=r"comply with (?:all )?(?:applicable )?laws|laws applicable|mandatory law|does not choose"
        r"|any jurisdiction|all jurisdictions|export|sanction|trade[- ]control|customs|tax law"
        r"|\bpermitted by (?:applicable )?law",
    ),
    # arbitration and waivers of class actions or juries
    _meaning(
        "meaning_arbitration",
        "arbitration",
        "arbitration|arbitrator|arbitral|arbitrate",
        "resolve|resolved|settle|decided|decide|determined|submit|submitted|refer|referred|award"
        "|tribunal|binding|final|finally|claims|dispute|disputes|controversy|controversies",
        unless=r"\bno arbitration|nothing (?:\w+ ){0,4}requires? (?:you )?to arbitrate"
        r"|not (?:be )?required to arbitrate|bus arbitration|arbitration (?:protocol|logic|scheme)",
    ),
    _meaning(
        "meaning_class_waiver",
        "arbitration",
        "class|collective|representative|mass|consolidated|joined|jury|individual capacity|individual basis",
        "action|actions|proceeding|proceedings|claim|claims|member|trial|suit|arbitration",
        "waive|waives|give up|gives up|not|only|excluded|exclude|no|individual",
        unless=r"does not restrict class|no arbitration clause",
        negatable=0,
    ),
    # non-commercial: no use that earns money
    _meaning(
        "meaning_non_commercial",
        "non_commercial",
        "commercial|commercially|revenue|revenue-generating|profit|for-profit|monetary|monetise|sell|sold"
        "|sale|rent|lease|fee|paid|business|businesses|money|charge",
        _PROHIBIT,
        "use|used|exploit|exploitation|sell|sold|incorporate|incorporated|redistribution|redistribute"
        "|appear|provide|generate|services|product|organisations|licensed",
        unless=_PERMITTED + r"|\bliab|\bdamage|\bwarrant|\bindemn|\bdefend|no (?:price|charge)\b",
        negatable=0,
    ),
    _meaning(
        "meaning_personal_only",
        "non_commercial",
        "personal|private|non-profit|noncommercial|non-commercial|hobby",
        "only|solely|exclusively|licensed for|free for",
        unless=_PERMITTED,
        negatable=0,
    ),
    # field of use: the licence covers some uses or users only
    _meaning(
        "meaning_field_of_use",
        "field_of_use",
        "nuclear|weapon|weapons|military|surveillance|life-support|aircraft|high-risk|academic|research"
        "|education|educational|teaching|evaluation|testing|non-production|gambling|adult"
        "|law-enforcement|internal|medical|diagnosis|trial|demonstration|benchmark|benchmarking",
        "not|only|solely|exclusively|prohibited|forbidden|excluded|exclude|no other purpose|never|restricted",
        unless=_PERMITTED + r"|useful for|no restrictions|any field|\bliab|\bwarrant|"
        r"\bexport|sanction|embargo",
        negatable=0,
    ),
    _meaning(
        "meaning_no_derivatives",
        "field_of_use",
        "derivative works|derivative work|modify|adapt|translate|create derivative",
        "may not|must not|shall not|not permitted|prohibited|forbidden|no right",
        unless=_PERMITTED + r"|source code|same licen|this licen[cs]e|renamed|name",
        negatable=0,
        near=6,
    ),
    # advertising: promotion of a product must credit the authors
    _meaning(
        "meaning_advertising",
        "advertising",
        "advertising|advertisement|advertisements|promotional|promoting|marketing|press release"
        "|brochure|brochures|public announcement",
        "must|shall|required|requires|requirement",
        "display|acknowledge|acknowledgement|credit|mention|state|include|contain|show|notice|words",
        unless=r"not required|removed|endorse|displays advertisements|no (?:\w+ ){0,2}obligation",
        negatable=2,
    ),
    # attribution: copies keep the notices or credit the author
    _meaning(
        "meaning_attribution",
        "attribution",
        "credit|cite|acknowledge|attribution|copyright notice|this notice|these notices|all notices"
        "|notice file|the notice|legal notices|the notices|copyright notices|notices of|authorship"
        "|author's name|copyright line|copy of this licence|copy of this license|permission statement"
        "|changed them|name of the author|the date of the change",
        "must|shall|required|requires|keep|retain|preserve|preserved|include|accompany|carry|do not remove"
        "|give|intact|give credit",
        unless=r"not required|appreciated|without keeping|no credit|is not needed|are listed|advertis"
        r"|promot|endorse|trademark|marketing|publicity|announcement|brochure|press release",
        negatable=2,
    ),
    # trademark: names, logos and endorsement are not licensed
    _meaning(
        "meaning_trademark",
        "trademark",
        "trademark|trademarks|trade mark|marks|logo|logos|brand|brand names|trade dress|service marks"
        "|name|names|branded",
        "not|no|requires a separate|excluded|exclusive property|renamed|confused|without written permission"
        "|endorse|sponsorship|affiliation|approves|nothing",
        unless=r"may use the (?:\w+ )?name|compatible with|respective owners|was renamed|renamed from",
        negatable=0,
    ),
    _meaning(
        "meaning_endorsement",
        "trademark",
        "endorse|endorsement|approves|approve|sponsorship|sponsor|affiliation|affiliated",
        "not|no|without|imply|implies|suggest",
        negatable=0,
    ),
    # export control
    _meaning(
        "meaning_export_control",
        "export_control",
        "export|exported|re-exported|exports|embargo|embargoed|sanctions|sanctioned|denied-parties"
        "|denied parties|dual-use|trade-control|encryption|cryptographic|abroad|across borders"
        "|cuba|iran|north korea|syria",
        "law|laws|regulation|regulations|restriction|restrictions|subject|comply|prohibited|violation"
        "|country|countries|rules|licence required|license required|not|government|person",
        unless=r"no encryption|not subject to export|export (?:\w+ )?(?:reports?|data|files?) to|"
        r"\bexport to (?:csv|pdf|json)|without restriction",
        negatable=0,
    ),
    # warranty disclaimer: the work comes with no promise
    _meaning(
        "meaning_warranty_disclaimer",
        "warranty_disclaimer",
        "warranty|warranties|warrant|guarantee|guarantees|representation|representations|promises|promise"
        "|assurance|implied conditions|conditions, representations|as is|as available|as it stands"
        "|with all faults",
        "no|not|disclaim|disclaims|without|excluded|exclude|as is|as available|as it stands|with all faults"
        "|own risk",
        unless=r"not affected|\brefund|comes with a (?:\w+ )?(?:year|month)|will perform|warrants that"
        r"(?! (?:\w+ ){0,3}not)",
        negatable=0,
    ),
    # limitation of liability: the licensor owes nothing, or at most a cap
    _meaning(
        "meaning_liability_limitation",
        "limitation_of_liability",
        "liability|liable|responsible|responsibility|accountable|answerable|compensation|damages",
        "no|not|never|exclude|excluded|limit|limited|capped|cap|exceed|under no circumstances|bear no",
        "licensor|provider|company|vendor|authors|author|contributors|copyright holders|we|our|us|licensor's"
        "|damages|aggregate|total",
        unless=r"nothing in (?:\w+ ){0,3}limits|fully liable|unlimited|remain liable|remains liable"
        r"|indemnif|hold (?:\w+ ){0,3}(?:harmless|free)",
        negatable=0,
        near=8,
    ),
)

#: Near-misses: a sentence that names a category's subject only to deny or waive it ("you are not
#: required to indemnify", "contains no arbitration clause", "you may audit the source code") is
#: not a clause of that category, whichever rule found it.
_NEAR_MISS: Final[dict[str, re.Pattern[str]]] = {
    category: re.compile(pattern, re.IGNORECASE)
    for category, pattern in {
        "indemnification": r"not (?:be )?(?:required|obliged|obligated) to (?:\w+ ){0,2}indemnif"
        r"|no (?:party|one) (?:shall|will|is) (?:be )?(?:obliged|required)",
        "audit": r"\byou may (?:\w+ ){0,2}(?:audit|inspect)|\bnever (?:\w+ ){0,2}(?:audit|inspect)"
        r"|audit (?:report|log|trail)",
        "arbitration": r"\bno arbitration|does not (?:restrict|prohibit|waive) class"
        r"|nothing (?:\w+ ){0,4}requires? (?:\w+ ){0,2}to arbitrate|not (?:be )?required to arbitrate",
        "termination": r"(?:does|shall|will) not (?:terminate|end|lapse|expire)|\bperpetual and irrevocable",
        "non_commercial": r"commercial use is (?:permitted|allowed)|including commercial"
        r"|does not restrict commercial|nothing in (?:\w+ ){0,4}restricts commercial",
        "export_control": r"not subject to export|contains no (?:encryption|cryptograph)",
        "governing_law": r"does not choose (?:any|a) (?:governing )?law",
    }.items()
}


def _near_miss(category: str, sentence: str) -> bool:
    pattern = _NEAR_MISS.get(category)
    return bool(pattern and pattern.search(collapse(sentence)))


_CLAUSE_END: Final = re.compile(r";")


def _clauses(text: _Text) -> Iterable[tuple[int, int]]:
    """Character spans of the sentences of the text and of their parts between semicolons."""
    start = 0
    ends = [m.end() for m in _SENTENCE_END.finditer(text.text) if _is_end(text.text, m)]
    for end in [*ends, len(text.text)]:
        if end <= start:
            continue
        yield start, end
        parts = [m.end() for m in _CLAUSE_END.finditer(text.text, start, end)]
        if parts:
            lo = start
            for p in [*parts, end]:
                yield lo, p
                lo = p
        start = end


#: Folders of known licence texts besides the SPDX list's (Debian's copies of the common licences).
REFERENCE_FOLDERS: Final = (Path("/usr/share/common-licenses"),)
#: A clause is a known licence's own text when at least this share of its five-word runs occur in
#: the reference texts (wrapping, numbering and a substituted holder name leave most runs intact).
STANDARD_SHARE: Final = 0.5
_RUN_WORD: Final = re.compile(r"[a-z0-9]+")


def _shingles(text: str) -> list[int]:
    """Hashes of the text's runs of five consecutive words (lower case, punctuation dropped)."""
    words = _RUN_WORD.findall(text.casefold())
    return [hash(tuple(words[i : i + 5])) for i in range(len(words) - 4)]


@functools.cache
def _reference() -> frozenset[int]:
    """Five-word runs of every known licence text: the SPDX licence list's texts (the `spdx`
    package, CC0) and the folders of :data:`REFERENCE_FOLDERS` that exist."""
    runs: set[int] = set()
    data = resources.files("spdx") / "data"
    for item in data.iterdir():
        if item.name.endswith(".txt"):
            runs.update(_shingles(item.read_bytes().decode("utf-8", errors="replace")))
    for folder in REFERENCE_FOLDERS:
        if folder.is_dir():
            for f in folder.iterdir():
                if f.is_file():
                    runs.update(_shingles(f.read_text(encoding="utf-8", errors="replace")))
    return frozenset(runs)


def is_standard(clause: str) -> bool:
    """Whether `clause` is a known licence's own wording (see :data:`STANDARD_SHARE`)."""
    runs = _shingles(clause)
    if not runs:
        return False
    reference = _reference()
    return sum(r in reference for r in runs) >= STANDARD_SHARE * len(runs)


def _meaning_findings(text: _Text, *, known_family: bool) -> list[Finding]:
    """Findings of the meaning rules: one per category per clause (a sentence or a part of it).
    In a document of a known family, the licence's own wording is left to that family's rules:
    only clauses that are no known licence's text (terms added to it) are read by meaning."""
    out: list[Finding] = []
    done: set[tuple[str, int, int]] = set()
    for start, end in _clauses(text):
        clause = collapse(text.text[start:end])
        if len(clause) < 12 or (known_family and is_standard(clause)):
            continue
        words = stems(clause)
        index: dict[str, list[int]] = {}
        for i, w in enumerate(words):
            index.setdefault(w, []).append(i)
        for rule in MEANINGS:
            if not rule.needs[0].positions(words, index) or not rule.matches(clause, words, index):
                continue
            if rule.category in _MENTION_CATEGORIES and is_mention(clause):
                continue
            if _near_miss(rule.category, clause):
                continue
            while start < end and text.text[start].isspace():
                start += 1
            line_start, line_end = text.span_lines(start, end)
            if (rule.category, line_start, line_end) in done:
                continue
            done.add((rule.category, line_start, line_end))
            out.append(
                Finding(
                    rule.category,
                    rule.severity,
                    line_start,
                    line_end,
                    _quote_for(text, start, end),
                    rule.name,
                )
            )
    return out


def _merged_quote(a: str, b: str, cited: str) -> str:
    """One quote for two merged findings: the one holding the other, else both when they are
    one stretch of the cited text and short enough, else the first."""
    if b in a:
        return a
    if a in b and len(b) <= MAX_QUOTE_CHARS:
        return b
    for first, second in ((a, b), (b, a)):
        joined = f"{first} {second}"
        if len(joined) <= MAX_QUOTE_CHARS and joined.casefold() in cited.casefold():
            return joined
    return a


def _merge(findings: list[Finding], text: _Text) -> list[Finding]:
    """Merge findings of one category and severity in one paragraph (a Debian " ." line ends one)
    or within MERGE_GAP_LINES, up to MAX_FINDING_LINES."""
    merged: list[Finding] = []
    for f in sorted(findings, key=lambda f: (CATEGORIES.index(f.category), f.line_start, f.line_end)):
        last = merged[-1] if merged else None
        if (
            last
            and (last.category, last.severity) == (f.category, f.severity)
            and max(last.line_end, f.line_end) - last.line_start < MAX_FINDING_LINES
            and (
                f.line_start <= last.line_end + MERGE_GAP_LINES
                or not any(line.strip() in ("", ".") for line in text.lines[last.line_end : f.line_start - 1])
            )
        ):
            line_end = max(last.line_end, f.line_end)
            quote = _merged_quote(last.quote, f.quote, cited_text(text.lines, last.line_start, line_end))
            merged[-1] = Finding(f.category, f.severity, last.line_start, line_end, quote, last.rule)
        else:
            merged.append(f)
    return merged


def _unknown_terms(text: _Text) -> list[Finding]:
    """One unknown-terms finding at the first line with licensing language, for unclassified text."""
    for i, line in enumerate(text.lines):
        if _LICENSING_WORDS.search(line):
            return [
                Finding(
                    "unknown_terms",
                    "medium",
                    i + 1,
                    i + 1,
                    _quote_for(text, text.starts[i], text.starts[i] + len(line)),
                    "unclassified_terms",
                )
            ]
    return []


def analyze(lines: Sequence[str]) -> Analysis:
    """
    Read a document: identify its license family and flag every risky clause with a citation.

    :param lines: the document's lines without line terminators; line 1 is ``lines[0]``.
        Lines the reader could not obtain may be passed as empty strings.
    :return: the family and the findings, sorted by line then category. Each finding's quote
        occurs (whitespace-collapsed) in its cited lines, as the `flag` tool requires.
    """
    return _analyze(tuple(lines))


@functools.lru_cache(maxsize=8)
def _analyze(lines: tuple[str, ...]) -> Analysis:
    """`analyze`, cached: the offline policy reads the same document again at each of its turns."""
    text = _Text(lines)
    family, families, family_line = _identify(text)
    # a known licence's text is read by the rules written on it, and the terms added to it by
    # meaning; custom terms (EULAs, service terms, data licences, licences nobody here names) are
    # read by meaning throughout
    raw = _rule_findings(text) + _meaning_findings(text, known_family=family != UNKNOWN_FAMILY)
    if family.startswith(("LGPL", "MPL")):
        # the LGPL's own source-offer clauses are the weak (library-scoped) kind
        raw = [
            Finding("weak_copyleft", "medium", f.line_start, f.line_end, f.quote, f.rule)
            if f.rule in _SOURCE_OFFER_RULES
            else f
            for f in raw
        ]
    findings = _merge(raw + _license_field_findings(text), text)
    if family == UNKNOWN_FAMILY and not any(f.category == "unknown_terms" for f in findings):
        findings += _unknown_terms(text)
    findings.sort(key=lambda f: (f.line_start, CATEGORIES.index(f.category), f.line_end))
    return Analysis(family, families, family_line, tuple(findings), len(text.lines))


@functools.lru_cache(maxsize=4)
def _cached_text(lines: tuple[str, ...]) -> _Text:
    return _Text(lines)


#: Longest sentence context the report shows for a finding, in characters.
MAX_CONTEXT_CHARS: Final = 900


def expand_to_sentences(
    lines: Sequence[str], line_start: int, line_end: int, quote: str
) -> tuple[str, int, int]:
    """
    A finding's quote grown to the whole sentence(s) it sits in, for the report: a model may
    quote a fragment cut at a line end.

    :return: (the sentences, whitespace-collapsed, at most `MAX_CONTEXT_CHARS`; their first and
        last line). The cited lines themselves when the quote cannot be located in them.
    """
    text = _cached_text(tuple(lines))
    lo = text.starts[max(0, line_start - 1)] if text.starts else 0
    hi = text.starts[line_end - 1] + len(text.lines[line_end - 1]) if 0 < line_end <= len(text.lines) else lo
    words = quote.split()
    pattern = r"\s+".join(re.escape(w) for w in words[:12]) if words else ""
    m = re.search(pattern, text.text[lo:hi], re.IGNORECASE) if pattern else None
    if m is None:
        return cited_text(lines, line_start, line_end)[:MAX_CONTEXT_CHARS], line_start, line_end
    start = lo + m.start()
    end = max(start + len(m.group(0)), min(hi, start + len(quote)))
    first, last = sentence_span(text.text, start, end)
    if len(text.text[first:last]) > MAX_CONTEXT_CHARS * 2:
        first, last = max(first, start - MAX_CONTEXT_CHARS // 2), min(last, end + MAX_CONTEXT_CHARS // 2)
    a, b = text.span_lines(first, last)
    return collapse(text.text[first:last])[:MAX_CONTEXT_CHARS], min(a, line_start), max(b, line_end)
