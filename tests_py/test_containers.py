"""
The schema deploys into a stock PostgreSQL container (testcontainers), for machines with Docker.

Skipped, with the reason, where no Docker engine answers.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator

import psycopg
import pytest

from pgflight import migrate


def _docker_reason() -> str | None:
    """None if a Docker engine answers a ping, else why not (probed in a child process)."""
    probe = "import docker; c = docker.from_env(timeout=3); c.ping(); c.close()"
    try:
        r = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", probe],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "no Docker engine answers (ping timed out)"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return f"no Docker engine answers ({last[:160]})"
    return None


@pytest.fixture(scope="module")
def container_dsn() -> Iterator[str]:
    reason = _docker_reason()
    if reason:
        pytest.skip(reason)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:17", driver=None) as pg:
            yield pg.get_connection_url()


def test_deploy_and_revert_in_a_container(container_dsn: str) -> None:
    migrate.deploy(container_dsn)  # pg_cron absent: the change says so and continues
    with psycopg.connect(container_dsn, autocommit=True) as c:
        assert c.execute("select to_regnamespace('pgflight') is not null").fetchone() == (True,)
    migrate.revert(container_dsn)
    with psycopg.connect(container_dsn, autocommit=True) as c:
        assert c.execute("select to_regnamespace('pgflight') is not null").fetchone() == (False,)
