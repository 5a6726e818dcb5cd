"""
Prometheus metrics: /metrics of the inspector and `pgflight metrics --port`, parsed with
prometheus_client's own parser, each value checked against a count in SQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

import inspector_support as scenario
from core_helpers import scalar
from inspector_browser import _free_port, serve  # noqa: F401  (fixture)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(text: str) -> Samples:
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def _check_against_sql(m: Samples, conn: psycopg.Connection[Any]) -> None:
    def count(where: str) -> float:
        return float(scalar(conn, f"select count(*) from pgflight.run_events where {where}"))

    assert m[("pgflight_claims_total", ())] == count("reason = 'claimed'")
    assert m[("pgflight_completions_total", ())] == count("to_status = 'succeeded'")
    assert m[("pgflight_failures_total", ())] == count(
        "to_status in ('failed', 'lease_expired', 'timed_out', 'dead_letter')"
    )
    assert m[("pgflight_reclaims_total", ())] == count("reason = 'lease_expired'") == 1
    assert m[("pgflight_dead_lettered_total", ())] == count("to_status = 'dead_letter'") == 1
    assert m[("pgflight_stale_writes_refused_total", ())] == count("reason = 'stale_result_rejected'") == 1
    assert m[("pgflight_dead_letters", ())] == scalar(conn, "select count(*) from pgflight.dead_letters") == 1
    gated = (("recipe", "gated"), ("workspace", "acme"))
    assert m[("pgflight_parked", gated)] == 1
    assert m[("pgflight_queue_ready", gated)] == 0
    spend = conn.execute(
        "select count(*), sum(input_tokens), sum(output_tokens), sum(usd)::float8 from pgflight.costs"
    ).fetchone()
    assert spend is not None
    model = (("model", "claude-haiku-4-5"), ("workspace", "acme"))
    assert m[("pgflight_model_calls_today", model)] == spend[0] == 2
    assert m[("pgflight_input_tokens_today", model)] == spend[1]
    assert m[("pgflight_output_tokens_today", model)] == spend[2]
    assert m[("pgflight_usd_today", model)] == pytest.approx(spend[3])
    assert m[("pgflight_workers_alive", ())] == 2
    assert 0 <= m[("pgflight_notification_queue_usage", ())] < 1
    assert ("pgflight_oldest_xmin_age", (("source", "transactions"),)) in m
    assert m[("pgflight_sweep_lag_seconds", ())] == 0


def test_the_inspectors_metrics_match_sql_counts(dsn: str, conn: psycopg.Connection[Any], serve: Any) -> None:
    scenario.build(conn)
    served = serve(scenario.login_dsn(dsn, scenario.READER))
    m = _samples(_get(served.url + "/metrics"))
    _check_against_sql(m, conn)

    # a queued retry shows as ready work with an age, and counters only grow
    conn.execute("select pgflight.retry_step(step_id) from pgflight.dead_letters")
    time.sleep(0.05)
    m2 = _samples(_get(served.url + "/metrics"))
    fatal = (("recipe", "fatal"), ("workspace", "globex"))
    assert m2[("pgflight_queue_ready", fatal)] == 1
    assert m2[("pgflight_oldest_ready_age_seconds", fatal)] > 0
    assert m2[("pgflight_dead_letters", ())] == 0
    assert m2[("pgflight_claims_total", ())] == m[("pgflight_claims_total", ())]
    assert m2[("pgflight_dead_lettered_total", ())] == 1


def test_pgflight_metrics_serves_the_same_figures(
    dsn: str, conn: psycopg.Connection[Any], tmp_path: Any
) -> None:
    scenario.build(conn)
    port = _free_port()
    env = os.environ | {"PGFLIGHT_DSN": scenario.login_dsn(dsn, scenario.READER)}
    log = tmp_path / "metrics.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pgflight.cli", "metrics", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                text = _get(f"http://127.0.0.1:{port}/metrics")
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "pgflight metrics did not answer"
                time.sleep(0.1)
        _check_against_sql(_samples(text), conn)
    finally:
        proc.terminate()
        proc.wait(10)


def _status(port: int, host_header: str | None) -> int:
    """The HTTP status of GET /metrics with this Host header (None: no Host header at all)."""
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.putrequest("GET", "/metrics", skip_host=True)
        if host_header is not None:
            c.putheader("Host", host_header)
        c.endheaders()
        return c.getresponse().status
    finally:
        c.close()


def test_pgflight_metrics_answers_only_to_its_own_host_names(dsn: str, tmp_path: Any) -> None:
    """
    DNS rebinding: a page on evil.example whose name resolves to 127.0.0.1 sends
    `Host: evil.example` and gets 421, not the metrics; loopback names, the bound host and the
    `--allow-host` names are served. A wildcard bind without `--allow-host` refuses to start.
    """
    port = _free_port()
    env = os.environ | {"PGFLIGHT_DSN": scenario.login_dsn(dsn, scenario.READER)}
    log = tmp_path / "metrics.log"
    cmd = [sys.executable, "-m", "pgflight.cli", "metrics", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--allow-host", "metrics.internal"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                first = _status(port, f"127.0.0.1:{port}")
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "pgflight metrics did not answer"
                time.sleep(0.1)
        assert first == 200
        for name in (f"localhost:{port}", "localhost", f"[::1]:{port}", f"metrics.internal:{port}"):
            assert _status(port, name) == 200, name
        for name in (f"evil.example:{port}", "evil.example", "127.0.0.1.evil.example", "", None):
            assert _status(port, name) == 421, name
    finally:
        proc.terminate()
        proc.wait(10)
    refused = subprocess.run(
        [sys.executable, "-m", "pgflight.cli", "metrics", "--host", "0.0.0.0", "--port", str(_free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--allow-host" in refused.stderr + refused.stdout
