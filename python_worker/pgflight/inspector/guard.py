"""
What the inspector checks before any page runs, so that a web page on another site cannot drive it
(DNS rebinding, cross-site requests, framing) and a non-loopback bind has sign-in of its own.

- `Host` must name the inspector: a loopback name (localhost, 127.0.0.1, [::1]), the host it is
  bound to, or a name the operator allowed (``--allow-host``); any other answers 421. A page on
  ``evil.example`` whose name was rebound to 127.0.0.1 sends ``Host: evil.example`` and is refused.
- Every request that is not GET or HEAD must come from the inspector's own origin: an ``Origin``
  header naming the same host (and port) as ``Host``, or, without ``Origin``,
  ``Sec-Fetch-Site: same-origin``. Anything else answers 403.
- Each browser gets a session cookie (a random id; HttpOnly, SameSite=Strict, Path=/, Secure over
  TLS). A link followed from another site arrives without it (SameSite=Strict): such a GET gets a
  page that loads the same address again from the inspector's own origin, so the session is kept,
  not replaced. A form's CSRF token is an HMAC of that id under a key made at start: each browser session
  has its own token, a token read in one browser is worthless in another, and the comparison is
  constant-time (:func:`hmac.compare_digest`).
- With ``auth="login"`` visitors sign in with a database login name and password: the inspector
  opens one connection as that login for the session and every page and action runs on it, so a
  visitor sees and does exactly what the database grants that login. Sessions live in memory
  (the inspector keeps no copy of the password: the open connection is the session), end on
  sign-out, after IDLE_S without a request or LIFETIME_S after sign-in, and the id changes at
  sign-in.
- Every response carries ``Content-Security-Policy`` (script only from the inspector's own static
  files, never inline; ``frame-ancestors 'none'``),
  ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff`` and a same-origin referrer policy.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import html
import ipaddress
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import make_conninfo

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::", "*"})
COOKIE = "pgflight_session"
AUTH_MODES = ("none", "login")
IDLE_S = 30 * 60  # a signed-in session ends after this long without a request
LIFETIME_S = 12 * 3600  # and this long after sign-in in any case
MAX_SESSIONS = 100  # signed-in sessions at once (one database connection each); the oldest goes first
FAILED_WINDOW_S = 300
FAILED_MAX = 10  # failed sign-ins from one client address within FAILED_WINDOW_S before a 429
SAFE_METHODS = frozenset({"GET", "HEAD"})
_SID_RX = re.compile(r"^[A-Za-z0-9_-]{43}$")
_DEFAULT_PORT = {"http": "80", "https": "443"}

SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class Refused(Exception):
    """The inspector will not start with these settings (a non-loopback bind without sign-in)."""


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or address, brackets allowed) reaches only this machine."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_names(bind: str, allow: list[str] | tuple[str, ...] = ()) -> frozenset[str]:
    """
    The names accepted in ``Host``: the loopback names, the bound host unless it is a wildcard
    (0.0.0.0, ::), and the `allow` names (lowercase, without brackets or port).
    """
    names = set(LOOPBACK_NAMES)
    if bind.strip("[]") not in WILDCARDS:
        names.add(bind.strip("[]").lower())
    names.update(a.strip().strip("[]").lower().rstrip(".") for a in allow if a.strip())
    return frozenset(names)


def check_bind(host: str, auth: str, allow: list[str] | tuple[str, ...] = ()) -> None:
    """
    Refuse settings that would expose the inspector: a non-loopback bind without sign-in, a
    wildcard bind without the names visitors use, or an unknown auth mode.

    :raises Refused: with the reason and what to do instead.
    """
    if auth not in AUTH_MODES:
        raise Refused(f"unknown --auth {auth!r}: one of {', '.join(AUTH_MODES)}")
    if is_loopback(host):
        return
    if auth == "none":
        raise Refused(
            f"refusing to serve the inspector on {host}: it would let anyone who can reach that address"
            " act with this database login. Bind 127.0.0.1 (and reach it through an SSH tunnel), or"
            " sign visitors in with --auth login (each visitor signs in with a database login and"
            " password and acts in that login's own lane)"
        )
    if host.strip("[]") in WILDCARDS and not [a for a in allow if a.strip()]:
        raise Refused(
            f"refusing to serve the inspector on {host} without the names visitors reach it by:"
            " give each with --allow-host (requests naming any other host are refused)"
        )


def split_host(header: str) -> str | None:
    """The lowercase host name of a ``Host`` header value (port and brackets removed), or None."""
    value = header.strip().lower()
    if not value or any(c.isspace() or c in "/\\@?#" for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1 :] and not re.fullmatch(r":\d{1,5}", value[end + 1 :])):
            return None
        return value[1:end]
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    return name.rstrip(".") or None


def _netloc(scheme: str, netloc: str) -> str:
    """`netloc` lowercased, without the default port of `scheme`."""
    netloc = netloc.lower()
    default = _DEFAULT_PORT.get(scheme)
    if default and netloc.endswith(":" + default):
        netloc = netloc[: -len(default) - 1]
    return netloc


def same_origin(method: str, headers: dict[str, str], scheme: str) -> bool:
    """
    Whether a request may change something: GET and HEAD always; any other method only with an
    ``Origin`` naming the same host and port as ``Host``, or without ``Origin`` only with
    ``Sec-Fetch-Site: same-origin``.
    """
    if method in SAFE_METHODS:
        return True
    origin = headers.get("origin")
    host = headers.get("host", "")
    if origin is not None:
        if origin.strip().lower() == "null":
            return False
        parts = urlsplit(origin.strip())
        if parts.scheme not in _DEFAULT_PORT or not parts.netloc:
            return False
        return _netloc(parts.scheme, parts.netloc) == _netloc(scheme, host)
    return headers.get("sec-fetch-site", "").strip().lower() == "same-origin"


def new_sid() -> str:
    """A session id: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def cookie_sid(headers: dict[str, str]) -> str | None:
    """The session id in the request's cookie, if it has the shape of one."""
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:
        return None
    morsel = jar.get(COOKIE)
    if morsel is None or not _SID_RX.match(morsel.value):
        return None
    return morsel.value


def set_cookie(sid: str, *, secure: bool, clear: bool = False) -> bytes:
    """The Set-Cookie header value for `sid` (a browser-session cookie), or one that removes it."""
    attrs = "Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")
    if clear:
        return f"{COOKIE}=; Max-Age=0; {attrs}".encode()
    return f"{COOKIE}={sid}; {attrs}".encode()


# --- signed-in sessions -------------------------------------------------------------------------


class SessionEnded(Exception):
    """The visitor's session ended (signed out, expired, or its connection was lost)."""


@dataclass
class Visitor:
    """One signed-in browser session: its login and the connection that acts as that login."""

    login: str
    conn: psycopg.Connection[Any]
    started: float
    seen: float
    lock: threading.Lock = field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The session's connection, one request at a time (the same shape as a pool's)."""
        with self.lock:
            if self.conn.closed or self.conn.broken:
                raise SessionEnded("the database connection of this session was lost")
            yield self.conn


class Sessions:
    """
    Signed-in sessions by id, in memory. Sign-in opens a connection as the visitor's login to the
    database of `base_dsn` (its host, port, database and TLS settings; its own user and password
    are not used); the inspector keeps no copy of the password, and a lost connection
    ends the session.
    """

    def __init__(
        self,
        base_dsn: str,
        connect_kwargs: dict[str, Any],
        configure: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self.base_dsn = base_dsn
        self.connect_kwargs = connect_kwargs
        self.configure = configure
        self._by_id: dict[str, Visitor] = {}
        self._failed: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def throttled(self, client: str) -> bool:
        """Whether `client` failed to sign in FAILED_MAX times within FAILED_WINDOW_S."""
        now = time.monotonic()
        with self._lock:
            q = self._failed.get(client)
            while q and now - q[0] > FAILED_WINDOW_S:
                q.popleft()
            return q is not None and len(q) >= FAILED_MAX

    def sign_in(self, login: str, password: str, client: str) -> str:
        """
        Connect as `login` with `password`; :return: the new session's id.

        :raises psycopg.OperationalError: the database refused the login (counted against `client`).
        """
        conninfo = make_conninfo(self.base_dsn, user=login, password=password)
        try:
            conn = psycopg.connect(conninfo, **self.connect_kwargs)
        except psycopg.OperationalError:
            with self._lock:
                self._failed.setdefault(client, deque()).append(time.monotonic())
            raise
        if self.configure is not None:
            self.configure(conn)
        now = time.monotonic()
        sid = new_sid()
        with self._lock:
            self._by_id[sid] = Visitor(login, conn, now, now)
            extra = len(self._by_id) - MAX_SESSIONS
            oldest = sorted(self._by_id, key=lambda k: self._by_id[k].started)[: max(extra, 0)]
            gone = [self._by_id.pop(k) for k in oldest]
        for v in gone:
            v.conn.close()
        return sid

    def get(self, sid: str | None) -> Visitor | None:
        """The live session `sid` (its last request now), or None; expired ones are closed."""
        now = time.monotonic()
        expired: list[Visitor] = []
        with self._lock:
            for k, v in list(self._by_id.items()):
                if now - v.seen > IDLE_S or now - v.started > LIFETIME_S or v.conn.closed:
                    expired.append(self._by_id.pop(k))
            visitor = self._by_id.get(sid) if sid else None
            if visitor is not None:
                visitor.seen = now
        for v in expired:
            v.conn.close()
        return visitor

    def sign_out(self, sid: str | None) -> None:
        """End session `sid` and close its connection (nothing when there is none)."""
        with self._lock:
            v = self._by_id.pop(sid, None) if sid else None
        if v is not None:
            v.conn.close()

    def close(self) -> None:
        """End every session (at shutdown)."""
        with self._lock:
            gone, self._by_id = list(self._by_id.values()), {}
        for v in gone:
            v.conn.close()


# --- the middleware ------------------------------------------------------------------------------


class Guard:
    """
    ASGI middleware: the security headers on every response, then the Host and same-origin rules,
    then the session cookie (made when the browser has none). The session id is put in
    ``scope["state"]["sid"]`` for the pages.
    """

    def __init__(self, app: Any, *, hosts: frozenset[str], secure: bool) -> None:
        self.app = app
        self.hosts = hosts
        self.secure = secure

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        set_sid: list[bytes] = []

        async def send_guarded(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in SECURITY_HEADERS}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message["headers"] = [*kept, *SECURITY_HEADERS, *((b"set-cookie", c) for c in set_sid)]
            await send(message)

        name = split_host(headers.get("host", ""))
        if name is None:
            await _plain(send_guarded, 400, "refused: the request has no valid Host header")
            return
        if name not in self.hosts:
            await _plain(
                send_guarded,
                421,
                f"refused: this inspector does not answer to the host name {name!r};"
                " open it by the name it was started with (e.g. 127.0.0.1)",
            )
            return
        if not same_origin(scope["method"], headers, scope.get("scheme", "http")):
            await _plain(
                send_guarded,
                403,
                "refused: a request that changes something must come from the inspector's own pages",
            )
            return
        sid = cookie_sid(headers)
        if sid is None and scope["method"] in SAFE_METHODS and headers.get("sec-fetch-site") == "cross-site":
            # a link on another site: the browser kept the SameSite=Strict cookie back. Load the
            # page again from here (a same-origin navigation sends it) rather than replace the
            # session with a new one.
            await _again(send_guarded, scope)
            return
        if sid is None:
            sid = new_sid()
            set_sid.append(set_cookie(sid, secure=self.secure))
        scope.setdefault("state", {})["sid"] = sid
        await self.app(scope, receive, send_guarded)


async def _plain(send: Any, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _again(send: Any, scope: Any) -> None:
    target = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    url = html.escape(target.decode("latin-1"), quote=True)
    body = (
        f'<!doctype html><meta http-equiv="refresh" content="0; url={url}">'
        f'<p><a href="{url}">continue</a></p>'
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def csrf_token(key: bytes, sid: str) -> str:
    """The CSRF token of session `sid`: HMAC-SHA256 of the id under the process's `key`."""
    mac = hmac.new(key, b"csrf:" + sid.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def csrf_ok(key: bytes, sid: str | None, given: str) -> bool:
    """Whether `given` is session `sid`'s token (constant-time)."""
    if not sid or not given:
        return False
    return hmac.compare_digest(given.encode(), csrf_token(key, sid).encode())
