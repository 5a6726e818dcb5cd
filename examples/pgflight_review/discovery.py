"""
Find the legal documents a review covers, and read them safely.

With no paths, the machine's own: ``/usr/share/common-licenses/*``, every
``/usr/share/doc/*/copyright`` and the license files of the installed Python packages. With
paths, the given files and every file under the given directories.

Nothing here raises on bad input: a file that cannot be read, is binary, empty, over the size
cap, not a regular file, or has a name that is not valid UTF-8 is returned among the skipped
documents with a reason; a non-UTF-8 text is decoded in the encoding charset-normalizer detects
(among the common legacy ones; latin-1 when it finds none) and says so. Two paths to one
file (symlinks, hard links) yield one document.
"""

from __future__ import annotations

import codecs
import glob
import hashlib
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Final

from pgflight_review.licences import package_licence_files

#: Documents larger than this many bytes are skipped as huge.
MAX_BYTES: Final = 2_000_000
#: Bytes inspected for NULs and control characters when deciding a file is binary.
_SNIFF_BYTES: Final = 8192
#: Share of control characters (other than tab, newline, CR, FF, ESC, BS) above which text is binary.
_MAX_CONTROL_SHARE: Final = 0.10
_TEXT_CONTROLS: Final = frozenset(b"\t\n\r\f\b\x1b")
#: Legacy encodings a non-UTF-8 licence text may be in, for charset-normalizer to choose from.
LEGACY_ENCODINGS: Final = (
    "cp1252",
    "latin_1",
    "iso8859_15",
    "iso8859_2",
    "cp1251",
    "koi8_r",
    "shift_jis",
    "euc_jp",
    "gb18030",
    "big5",
    "euc_kr",
)

COMMON_LICENSES: Final = "/usr/share/common-licenses"
DOC_COPYRIGHT_GLOB: Final = "/usr/share/doc/*/copyright"
_PY_LICENSE_GLOBS: Final = (
    "*.dist-info/LICEN[CS]E*",
    "*.dist-info/COPYING*",
    "*.dist-info/NOTICE*",
    "*.dist-info/licenses/**/*",
    "*.dist-info/license_files/**/*",
    "*.egg-info/LICEN[CS]E*",
)


class UnreadableDocument(Exception):
    """A document cannot be reviewed; `reason` says why, for the report's skipped list."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class DecodedText:
    """
    A document's text as the reviewer sees it.

    :ivar encoding: ``utf-8``, ``utf-8-sig``, ``utf-16`` or ``latin-1``.
    :ivar note: why the text is not plain UTF-8 (e.g. "not valid UTF-8; decoded as latin-1"), or None.
    """

    text: str
    encoding: str
    note: str | None
    sha256: str
    size: int

    @property
    def lines(self) -> list[str]:
        """
        The lines without terminators; line 1 is ``lines[0]``.

        Lines end at ``\n`` (and ``\r\n``) only, as editors, ``grep -n`` and ``wc -l`` count them:
        ``str.splitlines`` would also break at form feeds and other separators, which old license
        texts (GPL-1, LGPL-2.1) contain, and every citation after one would point at the wrong line.
        """
        return split_lines(self.text)


def split_lines(text: str) -> list[str]:
    """Split `text` into lines at ``\n`` / ``\r\n`` only; a final newline adds no empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


@dataclass(frozen=True)
class Document:
    """
    One document to review.

    :ivar path: absolute path as found (symlinks not resolved), valid UTF-8.
    :ivar size: bytes on disk.
    :ivar sha256: hex digest of the raw bytes.
    :ivar key: idempotency key of the child step: stable for the same path and content.
    :ivar line_count: number of lines of the decoded text.
    """

    path: str
    size: int
    sha256: str
    key: str
    line_count: int
    encoding: str = "utf-8"
    note: str | None = None


@dataclass(frozen=True)
class Skipped:
    """A path that was not reviewed, and why."""

    path: str
    reason: str


@dataclass
class Discovery:
    """Result of `discover`: the documents to review (sorted by path) and the skipped paths."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def idempotency_key(path: str, sha256: str) -> str:
    """
    The child step's idempotency key for a document.

    :param path: the document's path, as in `Document.path`.
    :param sha256: hex digest of its content.
    :return: ``review-doc:<40 hex>``; the same path with the same content always gets the same key,
        and an edited file gets a new one, so a re-run reviews exactly what changed.
    """
    digest = hashlib.sha256(path.encode("utf-8") + b"\0" + sha256.encode("ascii")).hexdigest()
    return f"review-doc:{digest[:40]}"


def _huge(size: int) -> str:
    """The reason a document over the cap is skipped: 'huge: 2,050,085 bytes, over the 2,000,000-byte cap'."""
    return f"huge: {size:,} bytes, over the {MAX_BYTES:,}-byte cap"


def _is_binary(sample: bytes) -> bool:
    if b"\0" in sample:
        return True
    if not sample:
        return False
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS)
    return controls / len(sample) > _MAX_CONTROL_SHARE


def decode(data: bytes, path: str = "<bytes>") -> DecodedText:
    """
    Decode a document's bytes, refusing what is not reviewable text.

    :param data: the raw file content.
    :param path: used in error messages only.
    :return: the text; UTF-8 (with or without BOM) and UTF-16 with BOM are decoded as such,
        anything else as latin-1 with a note.
    :raises UnreadableDocument: empty or whitespace-only, binary (NUL bytes or mostly control
        characters), over `MAX_BYTES`.
    """
    size = len(data)
    digest = hashlib.sha256(data).hexdigest()
    if size > MAX_BYTES:
        raise UnreadableDocument(path, _huge(size))
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise UnreadableDocument(path, f"binary: broken UTF-16 ({exc.reason})") from None
        return _checked(DecodedText(text, "utf-16", "UTF-16 text", digest, size), path)
    if _is_binary(data[:_SNIFF_BYTES]):
        raise UnreadableDocument(path, "binary: NUL bytes or mostly control characters")
    if data.startswith(codecs.BOM_UTF8):
        return _checked(
            DecodedText(data[3:].decode("utf-8", "replace"), "utf-8-sig", None, digest, size), path
        )
    try:
        return _checked(DecodedText(data.decode("utf-8"), "utf-8", None, digest, size), path)
    except UnicodeDecodeError as exc:
        import charset_normalizer  # here: only a non-UTF-8 text needs it

        best = charset_normalizer.from_bytes(data, cp_isolation=list(LEGACY_ENCODINGS)).best()
        encoding = best.encoding if best is not None else "latin_1"
        text = str(best) if best is not None else data.decode("latin-1")
        if encoding in ("cp1252", "latin_1", "iso8859_15"):
            encoding = "latin-1" if encoding == "latin_1" else encoding
        note = f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); decoded as {encoding}"
        return _checked(DecodedText(text, encoding, note, digest, size), path)


def _checked(decoded: DecodedText, path: str) -> DecodedText:
    if not decoded.text.strip():
        raise UnreadableDocument(path, "empty" if decoded.size == 0 else "empty: whitespace only")
    return decoded


def read_document(path: str, *, expected_sha256: str | None = None) -> DecodedText:
    """
    Read and decode one document, as the review step does when it starts.

    :param path: the document's path.
    :param expected_sha256: when given, the content must still be the one discovered.
    :raises UnreadableDocument: missing, not a regular file, unreadable, over the cap, binary,
        empty, or changed since discovery.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UnreadableDocument(path, f"unreadable: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnreadableDocument(path, "not a regular file")
    if st.st_size > MAX_BYTES:
        raise UnreadableDocument(path, _huge(st.st_size))
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UnreadableDocument(path, f"unreadable: {exc.strerror or exc}") from None
    decoded = decode(data, path)
    if expected_sha256 is not None and decoded.sha256 != expected_sha256:
        raise UnreadableDocument(path, "changed since discovery (content hash differs)")
    return decoded


def python_license_files(search_path: Iterable[str] | None = None) -> list[str]:
    """
    License files of the installed Python packages.

    :param search_path: directories to look in; default the ``site-packages`` / ``dist-packages``
        entries of `sys.path`.
    :return: paths of the files the packages' ``License-File`` metadata lists, then of
        ``*.dist-info/LICENSE*``, ``licenses/**``, ``COPYING*``, ``NOTICE*`` ... files (for packages
        whose metadata lists none); repeats are dropped by `discover`.
    """
    dirs = [
        p
        for p in (sys.path if search_path is None else search_path)
        if p.rstrip("/").endswith(("site-packages", "dist-packages"))
    ]
    found: list[str] = []
    for dist in metadata.distributions(path=dirs):
        info = getattr(dist, "_path", None)  # PathDistribution's dist-info folder
        if info is not None:
            found.extend(package_licence_files(info))  # what the package's License-File fields list
    for d in dict.fromkeys(os.path.abspath(d) for d in dirs):
        for pattern in _PY_LICENSE_GLOBS:
            found.extend(
                p
                for p in glob.glob(os.path.join(glob.escape(d), pattern), recursive=True)
                if not os.path.isdir(p)
            )
    return found


def default_sources() -> list[str]:
    """:return: the machine's own legal documents: common licenses, package copyrights, Python licenses."""
    return (
        glob.glob(os.path.join(COMMON_LICENSES, "*")) + glob.glob(DOC_COPYRIGHT_GLOB) + python_license_files()
    )


def _walk(path: str, skipped: list[Skipped]) -> Iterator[str]:
    """Files under `path` (recursively, following directory symlinks once), or `path` itself."""
    if not os.path.isdir(path):
        yield path
        return
    seen_dirs: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(
        path,
        followlinks=True,
        onerror=lambda e: skipped.append(
            Skipped(os.fsdecode(e.filename or path), f"unreadable directory: {e.strerror}")
        ),
    ):
        try:
            st = os.stat(root)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:
            dirs[:] = []  # a symlink loop or a second way into a directory already walked
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        dirs.sort()
        for name in sorted(files):
            yield os.path.join(root, name)


def discover(paths: Sequence[str] | None = None) -> Discovery:
    """
    List the documents to review.

    :param paths: files and directories (searched recursively); None or empty for the machine's
        own legal documents (`default_sources`).
    :return: documents sorted by path, de-duplicated by file identity (device, inode; a real
        file's path is kept over a symlink's), and the
        skipped paths with their reasons. Never raises for a bad file.
    """
    result = Discovery()
    candidates: list[str] = []
    for given in paths or default_sources():
        candidates.extend(_walk(os.path.abspath(given), result.skipped))
    seen: set[tuple[int, int]] = set()
    # real files before symlinks, so of two paths to one file the link is the one dropped
    for path in sorted(dict.fromkeys(candidates), key=lambda p: (os.path.islink(p), p)):
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            result.skipped.append(Skipped(shown, "file name is not valid UTF-8"))
            continue
        try:
            st = os.stat(path)
        except OSError as exc:
            reason = "dangling symlink" if os.path.islink(path) else f"unreadable: {exc.strerror or exc}"
            result.skipped.append(Skipped(path, reason))
            continue
        identity = (st.st_dev, st.st_ino)
        if identity in seen:
            continue  # another path to a file already listed
        seen.add(identity)
        try:
            decoded = read_document(path)
        except UnreadableDocument as exc:
            result.skipped.append(Skipped(path, exc.reason))
            continue
        result.documents.append(
            Document(
                path=path,
                size=decoded.size,
                sha256=decoded.sha256,
                key=idempotency_key(path, decoded.sha256),
                line_count=len(decoded.lines),
                encoding=decoded.encoding,
                note=decoded.note,
            )
        )
    result.documents.sort(key=lambda d: d.path)
    result.skipped.sort(key=lambda s: s.path)
    return result
