"""
Which licence governs which lines: DEP-5 stanzas, SPDX expressions, Python package metadata.

::

    spdx("GPL-2+ or Expat")                  # 'GPL-2.0-or-later OR MIT'
    stanzas = dep5_stanzas(lines)            # [] unless a machine-readable copyright file
    LicenceMap(lines).family_at(120)         # the licence of the stanza line 120 sits in
    package_licence(".../x.dist-info/LICENSE")   # metadata first: 'MIT', or None

Debian's machine-readable copyright files (DEP-5) are read with python-debian's ``copyright``
module, stanza by stanza: a ``Files:`` stanza's ``License:`` expression governs its own lines, a
stand-alone ``License:`` stanza (the full text of a short name) is that licence. Short names are
normalised to SPDX with ``license-expression`` and its SPDX licence list (Debian's ``GPL-2+``,
``Expat``, ``BSD-3-clause`` become ``GPL-2.0-or-later``, ``MIT``, ``BSD-3-Clause``); a name the
list does not know stays as ``LicenseRef-<name>``.

A Python package's licence comes from its metadata first (``License-Expression``, then a short
``License`` field, then ``License ::`` classifiers), read with `importlib.metadata`; its licence
files are the evidence second.
"""

from __future__ import annotations

import functools
import logging
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

from debian import copyright as dep5
from debian.deb822 import Deb822
from license_expression import ExpressionError, Licensing, get_spdx_licensing  # type: ignore[import-untyped]

# python-debian logs every old-style Format URL it corrects ("Fixing Format URL"): not our news
logging.getLogger("debian.copyright").setLevel(logging.ERROR)

#: Debian short names that are not SPDX ids (nor aliases the SPDX list knows), as SPDX ids.
DEBIAN_NAMES: Final[dict[str, str]] = {
    "expat": "MIT",
    "mit/x11": "MIT",
    "x11": "X11",
    "psf": "PSF-2.0",
    "python": "PSF-2.0",
    "python-2.0": "Python-2.0",
    "artistic": "Artistic-1.0-Perl",
    "perl": "Artistic-1.0-Perl OR GPL-1.0-or-later",
    "zope": "ZPL-2.1",
    "apache": "Apache-2.0",
    "bsd": "BSD-3-Clause",
    "bsd-2": "BSD-2-Clause",
    "bsd-3": "BSD-3-Clause",
    "bsd-4": "BSD-4-Clause",
    "isc": "ISC",
    "mpl": "MPL-2.0",
    "cc0": "CC0-1.0",
    "boost": "BSL-1.0",
    "ofl": "OFL-1.1",
    "ssleay": "SSLeay-standalone",
    "unicode": "Unicode-DFS-2016",
    "gfdl-niv": "GFDL-1.2-no-invariants-or-later",
}
#: ``License ::`` trove classifiers (their last part) as SPDX ids.
CLASSIFIERS: Final[dict[str, str]] = {
    "MIT License": "MIT",
    "MIT No Attribution License (MIT-0)": "MIT-0",
    "BSD License": "BSD-3-Clause",
    "Apache Software License": "Apache-2.0",
    "ISC License (ISCL)": "ISC",
    "Python Software Foundation License": "PSF-2.0",
    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "GNU General Public License v2 or later (GPLv2+)": "GPL-2.0-or-later",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "GNU General Public License v3 or later (GPLv3+)": "GPL-3.0-or-later",
    "GNU Lesser General Public License v2 (LGPLv2)": "LGPL-2.0-only",
    "GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
    "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "GNU Lesser General Public License v3 or later (LGPLv3+)": "LGPL-3.0-or-later",
    "GNU Affero General Public License v3": "AGPL-3.0-only",
    "GNU Affero General Public License v3 or later (AGPLv3+)": "AGPL-3.0-or-later",
    "The Unlicense (Unlicense)": "Unlicense",
    "Zope Public License": "ZPL-2.1",
    "Eclipse Public License 2.0 (EPL-2.0)": "EPL-2.0",
    "Academic Free License (AFL)": "AFL-3.0",
    "Historical Permission Notice and Disclaimer (HPND)": "HPND",
}
_GNU_VERSION: Final = re.compile(r"^((?:A|L)?GPL|GFDL|LGPLLR)-?v?(\d)(\.\d)?(\+?)$", re.IGNORECASE)
_EXCEPTION: Final = re.compile(r"\s+with\s+(.+?)(?:\s+exception)?$", re.IGNORECASE)
_OPERATOR: Final = re.compile(r"(\s+(?:or|and)\s+|\s*[,|]\s*(?:(?:or|and)\s+)?)", re.IGNORECASE)


@functools.cache
def _licensing() -> Licensing:
    return get_spdx_licensing()


def _one_name(name: str) -> str:
    """A single Debian or SPDX short name (perhaps ``with X exception``) as an SPDX expression."""
    name = name.strip().strip("()")
    exception = ""
    if m := _EXCEPTION.search(name):
        name, exc = name[: m.start()].strip(), m.group(1).strip()
        known = "exception" in exc.lower() and not _licensing().unknown_license_keys(
            _licensing().parse(f"MIT WITH {exc}", validate=False)
        )
        exception = f" WITH {exc}" if known else f" WITH LicenseRef-{_ref(exc)}-exception"
    lower = name.lower()
    if lower in DEBIAN_NAMES:
        return DEBIAN_NAMES[lower] + exception
    if m := _GNU_VERSION.match(name):
        kind, major, minor, plus = m.groups()
        kind = kind.upper()
        base = f"{kind}-{major}{minor or '.0'}"
        if kind in ("GPL", "LGPL", "AGPL", "GFDL"):
            return f"{base}-{'or-later' if plus else 'only'}{exception}"
        return base + exception
    # as written, then "MPL-2" as "MPL-2.0", then "MIT License" as "MIT"
    for candidate in (name, f"{name}.0", re.sub(r"\s+licen[cs]e$", "", name, flags=re.IGNORECASE)):
        try:
            parsed = _licensing().parse(candidate, validate=False)
        except ExpressionError:
            continue
        if parsed is not None and not _licensing().unknown_license_keys(parsed):
            return str(parsed.render()) + exception
    return f"LicenseRef-{_ref(name)}{exception}"


def _ref(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-") or "unknown"


@functools.lru_cache(maxsize=4096)
def spdx(expression: str) -> str:
    """
    A licence expression (Debian ``License:`` synopsis, SPDX, a metadata ``License`` field) as an
    SPDX expression; names the SPDX list does not know become ``LicenseRef-<name>``.

    :return: e.g. ``GPL-2.0-or-later OR MIT``; ``""`` for an empty expression.
    """
    text = " ".join(expression.split())
    if not text:
        return ""
    parts = _OPERATOR.split(text)
    out: list[str] = []
    for i, part in enumerate(parts):
        if i % 2:
            op = part.strip().strip(",|").strip().upper() or "OR"
            out.append("AND" if op.startswith("AND") or part.strip() == "," else "OR")
        elif part.strip():
            out.append(_one_name(part))
    while out and out[-1] in ("AND", "OR"):
        out.pop()
    return " ".join(out)


def is_known(expression: str) -> bool:
    """:return: whether every licence of an SPDX expression is on the SPDX list (no LicenseRef)."""
    return bool(expression) and "LicenseRef-" not in expression


# --- DEP-5 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stanza:
    """
    One paragraph of a DEP-5 file.

    :ivar kind: ``header``, ``files`` or ``license`` (a stand-alone licence text).
    :ivar first_line: 1-based, inclusive; :ivar last_line: inclusive.
    :ivar files: the ``Files:`` patterns (files stanzas).
    :ivar synopsis: the ``License:`` first line as written; :ivar licence: it in SPDX.
    :ivar has_text: the ``License:`` field carries the licence text itself.
    """

    kind: str
    first_line: int
    last_line: int
    files: tuple[str, ...]
    synopsis: str
    licence: str
    has_text: bool
    license_line: int  # the line of the License: field, 0 without one


def _paragraph_ranges(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) 1-based lines of the blank-line separated paragraphs (comment lines kept)."""
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for n, line in enumerate(lines, start=1):
        if line.strip():
            if start is None:
                start = n
        elif start is not None:
            ranges.append((start, n - 1))
            start = None
    if start is not None:
        ranges.append((start, len(lines)))
    return ranges


def is_dep5(lines: Sequence[str]) -> bool:
    """:return: whether the text is a machine-readable (DEP-5) copyright file: its first paragraph
    is a header python-debian's ``copyright`` module accepts (a known ``Format:``)."""
    ranges = _paragraph_ranges(lines)
    if not ranges or not lines[ranges[0][0] - 1].lower().startswith("format:"):
        return False
    head = [ln for ln in lines[ranges[0][0] - 1 : ranges[0][1]] if not ln.startswith("#")]
    try:
        return bool(dep5.Copyright(sequence=head, strict=False).header.format)
    except (dep5.NotMachineReadableError, ValueError):
        return False


def dep5_stanzas(lines: Sequence[str]) -> list[Stanza]:
    """Cached `_dep5_stanzas` (a review asks for one document's stanzas several times)."""
    return list(_dep5_cached(tuple(lines)))


@functools.lru_cache(maxsize=16)
def _dep5_cached(lines: tuple[str, ...]) -> tuple[Stanza, ...]:
    return tuple(_dep5_stanzas(lines))


def _dep5_stanzas(lines: Sequence[str]) -> list[Stanza]:
    """
    The stanzas of a DEP-5 file with their line ranges and SPDX licences; ``[]`` for any other text.

    Each paragraph is parsed by python-debian (``Deb822`` and ``copyright.License``); a paragraph
    it cannot read is left out (its lines then belong to no stanza).
    """
    if not is_dep5(lines):
        return []
    out: list[Stanza] = []
    for first, last in _paragraph_ranges(lines):
        chunk = [line for line in lines[first - 1 : last] if not line.startswith("#")]
        try:
            para = Deb822(chunk)
        except ValueError:
            continue
        if not para:
            continue
        keys = {k.lower() for k in para}
        kind = "header" if "format" in keys else "files" if "files" in keys else "license"
        if kind == "license" and "license" not in keys:
            continue
        synopsis, has_text, license_line = "", False, 0
        if "license" in keys:
            lic = dep5.License.from_str(para["License"])
            if lic is not None:
                synopsis, has_text = lic.synopsis, bool((lic.text or "").strip())
            license_line = next(
                (n for n in range(first, last + 1) if lines[n - 1].lower().startswith("license:")), first
            )
        files = tuple(para.get("Files", "").split()) if kind == "files" else ()
        out.append(Stanza(kind, first, last, files, synopsis, spdx(synopsis), has_text, license_line))
    return out


@dataclass
class LicenceMap:
    """The licence each line of a document is under: its DEP-5 stanza's, else the document's."""

    stanzas: list[Stanza]
    document: str  # the document's own licence (primary family), for lines outside stanzas

    @classmethod
    def of(cls, lines: Sequence[str], document: str) -> LicenceMap:
        return cls(dep5_stanzas(lines), document)

    def stanza_at(self, line: int) -> Stanza | None:
        i = bisect_right([s.first_line for s in self.stanzas], line) - 1
        if i >= 0 and self.stanzas[i].first_line <= line <= self.stanzas[i].last_line:
            return self.stanzas[i]
        return None

    def family_at(self, line: int) -> str:
        """The licence of the stanza `line` sits in (a header without ``License:`` has the
        document's), else the document's."""
        stanza = self.stanza_at(line)
        if stanza is None or not stanza.licence:
            return self.document
        return stanza.licence

    def primary(self) -> str | None:
        """The licence of the ``Files: *`` stanza (else the first files stanza's), None without stanzas."""
        files = [s for s in self.stanzas if s.kind == "files" and s.licence]
        star = next((s for s in files if "*" in s.files), None)
        chosen = star or (files[0] if files else None)
        return chosen.licence if chosen else None


# --- Python packages ------------------------------------------------------------------------------


def _dist_info(path: str) -> Path | None:
    for parent in Path(path).parents:
        if parent.name.endswith((".dist-info", ".egg-info")):
            return parent
    return None


def package_licence(path: str) -> str | None:
    """
    The licence of the installed Python package a licence file belongs to, from its metadata:
    ``License-Expression``, else a ``License`` field that is a known short expression, else the
    ``License ::`` classifiers.

    :param path: a file inside a ``*.dist-info`` (or ``*.egg-info``) directory.
    :return: an SPDX expression, or None when the file is not a package's or its metadata says nothing.
    """
    info = _dist_info(path)
    if info is None:
        return None
    try:
        meta = metadata.PathDistribution(info).metadata
    except (OSError, ValueError):
        return None
    if meta is None:
        return None
    expression = (meta.get_all("License-Expression") or [""])[0]
    if expression:
        return spdx(expression)
    field = (meta.get_all("License") or [""])[0].strip()
    if field and "\n" not in field and len(field) <= 80:
        normalised = spdx(field)
        if is_known(normalised):
            return normalised
    named = [
        CLASSIFIERS.get(c.split("::")[-1].strip())
        for c in meta.get_all("Classifier") or []
        if c.startswith("License ::")
    ]
    known = list(dict.fromkeys(n for n in named if n))
    return " OR ".join(known) if known else None


def package_licence_files(dist_info: str | Path) -> list[str]:
    """
    :param dist_info: a ``*.dist-info`` directory.
    :return: the licence files its ``License-File`` metadata lists, where they exist
        (``licenses/<name>`` since metadata 2.4, ``<name>`` before).
    """
    info = Path(dist_info)
    try:
        names = metadata.PathDistribution(info).metadata.get_all("License-File") or []
    except (OSError, ValueError, AttributeError):
        return []
    found: list[str] = []
    for name in names:
        candidate = next((c for c in (info / "licenses" / name, info / name) if c.is_file()), None)
        if candidate is not None:
            found.append(str(candidate))
    return found
