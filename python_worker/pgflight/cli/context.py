"""
What every ``pgflight`` command shares: the consoles, the database address, the connection, JSON
mode, and the one error printer with its exit codes.

A command reaches the database through :func:`current` ::

    cli = current(as_json)
    with cli.connect() as conn:
        ...

and reports a failure by raising: :class:`CliError` (with its own exit code and hint), a
:class:`~pgflight.errors.PgflightError`, or a driver error. :func:`report` prints any of them as
an ``error:`` line (message and SQLSTATE) and a ``hint:`` line naming a CLI command, and returns
the documented exit code (:data:`EXIT_CODES`).
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict
from rich.console import Console
from rich.markup import escape

from pgflight import errors, logs
from pgflight.embedded import Cluster, EmbeddedError, command_name
from pgflight.migrate import MigrationError

#: Exit codes of every command (also in ``pgflight --help``).
OK: Final = 0
FAILED: Final = 1  # refused by the engine, or the run / work waited for did not succeed
USAGE: Final = 2  # bad arguments (also the engine's 22023)
NO_DATABASE: Final = 3  # database not running or unreachable, or schema not deployed
NOT_FOUND: Final = 4  # unknown run, step, workspace (ZF003)
PARTIAL: Final = 5  # done, but some input was skipped (review)
INTERRUPTED: Final = 130  # SIGINT; SIGTERM gives 143
EXIT_CODES: Final = (
    "Exit codes: 0 done; 1 refused, or the run did not succeed; 2 bad arguments; "
    "3 database not running, unreachable or without the pgflight schema (run pgflight migrate); "
    "4 not found; 5 done, but some input was skipped; 130 / 143 interrupted by SIGINT / SIGTERM."
)

# SQL function names in the engine's hints, as the CLI command that does the same.
_COMMAND_OF: Final = {
    "retry_step": "pgflight retry STEP",
    "replay_from": "pgflight replay STEP",
    "fork_agent": "pgflight fork STEP --at K",
    "cancel_run": "pgflight cancel RUN",
    "cancel_step": "pgflight cancel RUN",
    "approve": "pgflight approve STEP",
    "submit_run": "pgflight submit",
    "submit_runs": "pgflight submit --from-jsonl",
    "run_status": "pgflight show RUN",
    "create_workspace": "pgflight submit --workspace",
    "install_schedules": "pgflight migrate",
}
_FUNCTION_RX: Final = re.compile(r"\b(?:pgflight\.)?(" + "|".join(_COMMAND_OF) + r")\b(?:\([^)]*\))?")


class CliError(RuntimeError):
    """A failure to report as one line, with an optional hint and its exit code."""

    def __init__(self, message: str, *, hint: str | None = None, code: int = FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


def usage(message: str, hint: str | None = None) -> CliError:
    """A bad argument (exit 2)."""
    return CliError(message, hint=hint, code=USAGE)


@dataclass
class Cli:
    """The state one command runs with (one per process, made by the root callback)."""

    verbose: bool = False
    json: bool = False
    out: Console = field(default_factory=lambda: Console(highlight=False))
    err: Console = field(default_factory=lambda: Console(stderr=True, highlight=False))
    _dsn: str | None = None

    def dsn(self) -> str:
        """
        The database: ``PGFLIGHT_DSN`` if set, else the running embedded cluster.

        :raises CliError: the embedded cluster is not running (exit 3).
        """
        if self._dsn is None:
            external = os.environ.get("PGFLIGHT_DSN") or None
            if external:
                self._dsn = external
            else:
                cluster = Cluster()
                if not cluster.running():
                    raise CliError(
                        f"the database is not running ({cluster.folder})",
                        hint=f"start it with `{command_name()} db up`, or set PGFLIGHT_DSN",
                        code=NO_DATABASE,
                    )
                self._dsn = cluster.dsn()
            if self.verbose:
                self.err.print(f"[dim]database: {escape(self.where())}[/]", soft_wrap=True)
        return self._dsn

    def where(self) -> str:
        """Which database, for people: the source and the address, never the password."""
        dsn = self.dsn()
        source = "PGFLIGHT_DSN" if os.environ.get("PGFLIGHT_DSN") else f"embedded ({Cluster().folder})"
        return f"{source}: {describe(dsn)}"

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection[Any]]:
        """An autocommit connection through the PgBouncer-safe connect (no prepared statements)."""
        from pgflight.db.connection import connect

        with connect(self.dsn(), application_name="pgflight-cli") as conn:
            yield conn


def describe(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN (no password)."""
    try:
        p = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(unparsable DSN)"
    host = str(p.get("host") or "localhost")
    user = f"{p['user']}@" if p.get("user") else ""
    return f"{user}{host}:{p.get('port') or 5432}/{p.get('dbname') or p.get('user') or ''}"


_CURRENT: list[Cli] = []


def current(as_json: bool | None = None) -> Cli:
    """The process's :class:`Cli` (one command per process); ``as_json`` sets JSON mode when given."""
    if not _CURRENT:
        _CURRENT.append(Cli())
    cli = _CURRENT[0]
    if as_json is not None:
        cli.json = as_json
    return cli


class Interrupted(Exception):
    """SIGINT or SIGTERM reached the command (raised by :func:`on_signal`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def code(self) -> int:
        """130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


def on_signal(signum: int, frame: FrameType | None) -> None:
    """Signal handler: raise :class:`Interrupted` once (a second signal is ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Interrupted(signum)


def as_command(hint: str) -> str:
    """A server hint with SQL function names replaced by the CLI commands that do the same."""
    prog = command_name()
    return _FUNCTION_RX.sub(lambda m: f"`{prog}{_COMMAND_OF[m.group(1)].removeprefix('pgflight')}`", hint)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _no_schema(e: psycopg.Error) -> bool:
    state = e.sqlstate or ""
    # 3F000 invalid schema, 42883 undefined function, 42P01 undefined table naming pgflight
    return state in ("3F000", "42883", "42P01") and "pgflight" in str(e)


def classify(e: BaseException) -> tuple[str, str | None, int]:
    """(message, hint, exit code) of an expected failure; raises `e` again for a bug."""
    if isinstance(e, CliError):
        return e.message, e.hint, e.code
    if isinstance(e, errors.PgflightError):
        code = {"22023": USAGE, "ZF003": NOT_FOUND}.get(e.sqlstate, FAILED)
        return f"{e.message} [{e.sqlstate}]", as_command(e.hint) if e.hint else None, code
    if isinstance(e, psycopg.OperationalError):
        return (
            f"cannot reach the database: {_first_line(e)}",
            f"check it with `{command_name()} db status`",
            NO_DATABASE,
        )
    if isinstance(e, psycopg.Error):
        if _no_schema(e):
            return (
                f"the database has no pgflight schema ({_first_line(e)})",
                f"deploy it with `{command_name()} migrate`",
                NO_DATABASE,
            )
        if isinstance(e, psycopg.errors.InsufficientPrivilege):
            return (
                f"{_first_line(e)} [{e.sqlstate}]",
                "this login's lane may not do this: acting on runs takes an operator login"
                " (pgflight_operator), reading a reader's; PGFLIGHT_DSN names the login (docs/security.md)",
                FAILED,
            )
        hint = e.diag.message_hint if e.diag else None
        return f"{_first_line(e)} [{e.sqlstate}]", as_command(hint) if hint else None, FAILED
    if isinstance(e, EmbeddedError):
        return _first_line(e), None, NO_DATABASE
    if isinstance(e, MigrationError):
        return _first_line(e), None, FAILED
    raise e


EXPECTED: Final[tuple[type[BaseException], ...]] = (
    CliError,
    errors.PgflightError,
    psycopg.Error,
    EmbeddedError,
    MigrationError,
)


def report(e: BaseException, err: Console | None = None) -> int:
    """
    Print an expected failure as ``error:`` (and ``hint:``) lines, or as one JSON line under
    ``--log-format json``; :return: its exit code.
    """
    message, hint, code = classify(e)
    if logs.is_json():  # --log-format json: one JSON object a line, for log shippers
        fields = {"error_type": type(e).__name__, "exit_code": code} | ({"hint": hint} if hint else {})
        print(logs.error_line(message, **fields), file=sys.stderr, flush=True)
        return code
    err = err or Console(stderr=True, highlight=False)
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    if hint:
        err.print(f"[dim]hint:[/] {escape(hint)}", soft_wrap=True)
    sys.stderr.flush()
    return code
