"""
Fixtures for driving the inspector: the app served by uvicorn on a free localhost port in a
thread, and a real headless Chromium (the distribution's /usr/bin/chromium) through Playwright.
Screenshots go to out/ui-shots/ (ignored by git).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from pgflight.inspector import create_app

SHOTS = Path(__file__).resolve().parent.parent / "out" / "ui-shots"


@dataclass
class Served:
    """An inspector being served: its base URL and the app (for the CSRF token of a browser session)."""

    url: str
    app: Any
    server: uvicorn.Server
    thread: threading.Thread

    def token(self, page: Any) -> str:
        """The CSRF token of `page`'s browser session (its session cookie), as its pages carry it."""
        sid = next(c["value"] for c in page.context.cookies() if c["name"] == "pgflight_session")
        return str(self.app.state.csrf_of(sid))

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_in_thread(dsn: str, **options: Any) -> Served:
    """Serve the inspector for `dsn` on 127.0.0.1 (`options` go to create_app) and wait until it answers."""
    app = create_app(dsn, **options)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the inspector did not start")
        time.sleep(0.02)
    return Served(f"http://127.0.0.1:{port}", app, server, thread)


@pytest.fixture
def serve() -> Iterator[Callable[[str], Served]]:
    started: list[Served] = []

    def _serve(dsn: str, **options: Any) -> Served:
        s = serve_in_thread(dsn, **options)
        started.append(s)
        return s

    yield _serve
    for s in started:
        s.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


def shot(page: Any, name: str) -> Path:
    """Save a screenshot of the page as out/ui-shots/<name>.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
