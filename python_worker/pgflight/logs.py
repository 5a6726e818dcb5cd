"""
Log output of the CLI and the worker: human lines (default) or JSON, one object per line
(``pgflight --log-format json …`` or ``PGFLIGHT_LOG_FORMAT=json``), for log shippers.

A JSON line has ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the extra fields a
call passed (``log.info(..., extra={...})``), and ``exc_type`` / ``exc`` when an exception is
attached. The CLI's one-line failures become ``{"level": "ERROR", "logger": "pgflight.cli", ...}``.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_format = "text"
# attributes every LogRecord has: the rest are a caller's extra fields
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")})
        if record.exc_info and record.exc_info[0] is not None:
            out["exc_type"] = record.exc_info[0].__name__
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def set_format(name: str) -> None:
    """Choose text or json for every later :func:`setup` (the CLI's --log-format)."""
    global _format
    if name not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {name!r}")
    _format = name


def is_json() -> bool:
    """True when `--log-format json` chose one JSON object per log line."""
    return _format == "json"


def setup(level: str | int = "INFO") -> None:
    """Send the root logger to stderr in the chosen format (replacing earlier handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if is_json() else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)


def error_line(message: str, **fields: Any) -> str:
    """The JSON line of a CLI failure."""
    record = logging.makeLogRecord(
        {"name": "pgflight.cli", "levelname": "ERROR", "levelno": 40, "msg": message}
    )
    record.__dict__.update(fields)
    return JsonFormatter().format(record)


def report_error(message: str, exc: BaseException, console: Any) -> None:
    """Print a CLI failure on stderr: a JSON line, or ``error: message`` on the rich `console`."""
    if is_json():
        print(error_line(message, error_type=type(exc).__name__), file=sys.stderr)
    else:
        from rich.markup import escape

        console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
