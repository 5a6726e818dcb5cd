"""
Helpers for the migration tests: reading sqitch.plan (its tags, the tag an upgrade starts from),
copying the project's sqitch files into a scratch folder, and reworking changes there the way a
maintainer would, so upgrades are tested on every commit whether or not anything was reworked
since the latest tag.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANNER = "pgflight test <test@pgflight.dev>"
# Changes whose deploy scripts define functions, procedures or views (create or replace).
REWORKABLE = re.compile(r"^(functions|internals|views|cron)/")


def plan_entries(root: Path = ROOT) -> list[str]:
    """The plan's changes and tags (tags with their '@'), in order."""
    out = []
    for line in (root / "sqitch.plan").read_text().splitlines():
        if line.strip() and not line.startswith(("%", "#")):
            out.append(line.split()[0])
    return out


def latest_tag(root: Path = ROOT) -> str:
    """The plan's newest tag ('@v0.9.0'): the release HEAD is or builds on."""
    tags = [e for e in plan_entries(root) if e.startswith("@")]
    assert tags, "sqitch.plan has no tag"
    return tags[-1]


def previous_tag(root: Path = ROOT) -> str:
    """
    The release an upgrade starts from: the latest tag that changes follow (the plan reworked
    something since), else the latest tag (HEAD is that release).
    """
    entries = plan_entries(root)
    tags = [i for i, e in enumerate(entries) if e.startswith("@")]
    assert tags, "sqitch.plan has no tag"
    followed = [i for i in tags if i < len(entries) - 1]
    return entries[(followed or tags)[-1]]


def release_project(dest: Path, root: Path = ROOT) -> Path:
    """
    The project of the release before the re-baseline (sqitch.conf, sqitch.plan, sql/) written
    under `dest` from git: the commit sql/upgrade/from-0.9/source_commit names, whose plan the
    bridge continues. Needs the repository's history (not a shallow clone).
    """
    commit = (root / "sql" / "upgrade" / "from-0.9" / "source_commit").read_text().strip()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", commit, "sqitch.conf", "sqitch.plan", "sql"],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert archive.returncode == 0, f"git archive {commit}: {archive.stderr.decode()} (a shallow clone?)"
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, timeout=120)
    os.chmod(dest, 0o755)
    return dest


def copy_project(dest: Path, root: Path = ROOT) -> Path:
    """Copy sqitch.conf, sqitch.plan, sql/ and scripts/gen_sql_scripts.py into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("sqitch.conf", "sqitch.plan"):
        shutil.copy(root / name, dest / name)
    shutil.copytree(root / "sql", dest / "sql")
    (dest / "scripts").mkdir(exist_ok=True)
    shutil.copy(root / "scripts" / "gen_sql_scripts.py", dest / "scripts" / "gen_sql_scripts.py")
    os.chmod(dest, 0o755)
    return dest


def sqitch(root: Path, *args: str) -> str:
    """Run a plan-editing sqitch command (tag, rework) in `root`; return its output."""
    env = {**os.environ, "SQITCH_FULLNAME": "pgflight test", "SQITCH_EMAIL": "test@pgflight.dev"}
    proc = subprocess.run(
        ["sqitch", *args], cwd=root, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, f"sqitch {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def gen_sql_scripts(root: Path) -> None:
    """Run the copy's scripts/gen_sql_scripts.py (it writes revert and verify scripts in `root`)."""
    subprocess.run([sys.executable, str(root / "scripts" / "gen_sql_scripts.py")], check=True, timeout=60)


def mark_bodies(deploy: Path, marker: str) -> None:
    """
    A trivial change to every function body of a deploy script (a comment line after `as $$`),
    and to the script itself (sqitch refuses a deploy script identical to a deployed one).
    """
    text = deploy.read_text()
    text = re.sub(r"(\bas\s+\$(\w*)\$)\n?", rf"\1\n  -- {marker}\n", text, flags=re.I)
    deploy.write_text(text.replace("\n", f"\n-- {marker}\n", 1))


def rework_everything(root: Path, tag: str = "upgrade_test") -> list[str]:
    """
    Tag the plan, then rework every function and view change after that tag, as `sqitch rework`
    does (copy each script to `<change>@<tag>.sql`, add `change [change@tag]` to the plan), with a
    comment added to every function body, and generate the revert and verify scripts. Written in
    Python because sixty `sqitch rework` runs take over a minute; the round-trip test uses sqitch.

    :return: the reworked change names.
    """
    names = [e for e in dict.fromkeys(plan_entries(root)) if REWORKABLE.match(e)]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"@{tag} {now} {PLANNER} # the upgrade test's release"]
    for name in names:
        head, _, base = name.rpartition("/")
        for kind in ("deploy", "revert", "verify"):
            folder = root / "sql" / kind / head
            shutil.copy(folder / f"{base}.sql", folder / f"{base}@{tag}.sql")
        mark_bodies(root / "sql" / "deploy" / head / f"{base}.sql", f"reworked after @{tag}")
        lines.append(f"{name} [{name}@{tag}] {now} {PLANNER} # reworked by the upgrade test")
    with (root / "sqitch.plan").open("a") as f:
        f.write("\n".join(lines) + "\n")
    gen_sql_scripts(root)
    return names
