"""
The engine apart from its example application: the `review` command comes from the
`pgflight_review` package through entry point group ``pgflight.cli``, and importing the engine or
its CLI registers no recipe (a worker runs only the recipes of the modules it is given).
"""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_engine_and_its_cli_registers_no_recipe() -> None:
    code = (
        "import pgflight, pgflight.cli, pgflight.worker, pgflight.db, pgflight.recipes as r\n"
        "import sys\n"
        "assert 'pgflight_review.cli' in sys.modules, 'the review plugin was not loaded'\n"
        "print(','.join(r.REGISTRY.names()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_review_is_a_plugin_command_of_pgflight() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "review", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Review a library of legal documents" in proc.stdout
