"""
The worker libraries of conformance/clients/: which there are, and whether each can run here.

A client is a directory with an executable `worker` (its conformance worker program) and,
optionally, a `check` script that exits 0 when the client can run on this machine and otherwise
prints why (no node, not built). A client that cannot run is skipped with that reason, unless
PGFLIGHT_CONFORMANCE_REQUIRE=1 (CI), where it fails.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLIENTS_DIR = ROOT / "conformance" / "clients"
CLIENTS = sorted(d.name for d in CLIENTS_DIR.iterdir() if (d / "worker").is_file())
TS_DIR = ROOT / "clients" / "typescript"


def unusable(client: str) -> str | None:
    """None when the client's worker program can run here, else why not (its `check` script says)."""
    check = CLIENTS_DIR / client / "check"
    if not check.exists():
        return None
    p = subprocess.run([str(check)], capture_output=True, text=True, timeout=30)
    return None if p.returncode == 0 else (p.stdout + p.stderr).strip() or f"{check} failed"


def require(client: str) -> None:
    """Skip the test (or fail it under PGFLIGHT_CONFORMANCE_REQUIRE=1) when `client` cannot run here."""
    reason = unusable(client)
    if reason is None:
        return
    if os.environ.get("PGFLIGHT_CONFORMANCE_REQUIRE") == "1":
        pytest.fail(f"the {client} client cannot run: {reason}")
    pytest.skip(f"the {client} client cannot run here: {reason}")
