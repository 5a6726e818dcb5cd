"""
One version everywhere a user reads it: `pgflight --version`, the installed package's metadata
and the schema release it deploys (the latest tag of sqitch.plan, the CHANGELOG's newest heading).
A bug report that quotes `pgflight --version` then names the schema the database runs.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pgflight
from plan_support import latest_tag

ROOT = Path(__file__).resolve().parent.parent


def test_package_version_is_the_latest_schema_tag_and_changelog_release() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    releases = re.findall(r"^## v(\S+) ", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert pgflight.__version__ == project["version"]
    assert latest_tag() == f"@v{project['version']}"
    assert releases[0] == project["version"]
