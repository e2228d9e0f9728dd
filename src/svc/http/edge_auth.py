"""Signed edge headers: the visitor's address and location, as an edge (``edge/``) saw them.

An edge in front of svc (Cloudflare Workers, Vercel Edge, Lambda@Edge, Bun; see docs/edge.md)
forwards POST /analytics from its own address, so the origin would see the edge, not the
visitor. The edge therefore sends the visitor's address and location in headers signed with an
HMAC-SHA256 over the request, keyed with a secret the two share:

    x-svc-edge-ip         the visitor's address
    x-svc-edge-country    ISO country code (optional)
    x-svc-edge-region     subdivision code, bare (TX) or whole (US-TX) (optional)
    x-svc-edge-city       the city's name, percent-encoded UTF-8 (optional)
    x-svc-edge-ts         Unix time (s) of the signature
    x-svc-edge-kid        which secret (optional; the ``<id>`` of ``svc_edge_<id>_<random>``)
    x-svc-edge-signature  ``v1=`` and the hex HMAC of the lines (joined by ``\\n``):
                          ``svc-edge-v1``, kid, ts, method, path and query, hex SHA-256 of the
                          body, Authorization, User-Agent, ip, country, region, city

:class:`EdgeAuth`, the outermost ASGI middleware of ``svcm serve``, verifies them on
POST /analytics: a known secret (``SVC_EDGE_SECRET``, comma-separated, and the secrets that
``svcm deploy --edge`` registers in ``<data dir>/edge-secrets``), a signature that matches in
constant time, a timestamp within :data:`WINDOW_SECONDS` of the origin's clock and a valid
address. Only then is the request taken as the visitor's: its client address becomes the
signed address (so the visitor hash, the per-address rate limits and the address-based geo
use it) and the signed location is its geo (``scope["svc.edge_geo"]``, read by
:func:`svc.http.analytics.handle`); X-Forwarded-For and the platforms' own location headers
are dropped from such a request. A request whose signature does not verify is served exactly
as if it had none: its edge headers are ignored, counted (:attr:`EdgeAuth.refused`) and
logged at most once a minute.

The body is read (up to ``SVC_MAX_BODY_BYTES``) before the limits see the request, to check
its hash; it is then handed on unchanged. A request that is replayed within the window is
accepted again (the signature binds its body, key and user agent, so a replay can only repeat
the same events, which ``eventId`` deduplicates); the edge-to-origin leg should be HTTPS.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from svc.ingestion.enrich.geo import Geo, geo_from_headers
from svc.settings import Settings

__all__ = [
    "WINDOW_SECONDS",
    "EdgeAuth",
    "EdgeSecrets",
    "EdgeVisitor",
    "key_id",
    "sign",
    "verify",
    "with_edge_auth",
]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: How far the signature's time may be from the origin's clock (s), either way.
WINDOW_SECONDS: Final = 120
VERSION: Final = "v1"
SECRETS_FILE: Final = "edge-secrets"
_PREFIX: Final = b"x-svc-edge-"
_SIGNATURE: Final = b"x-svc-edge-signature"
# Dropped from a verified request: where else a client or proxy could say who it is.
_DROPPED: Final = frozenset(
    {
        b"x-forwarded-for",
        b"forwarded",
        b"x-real-ip",
        b"cf-connecting-ip",
        b"cf-ipcountry",
        b"cf-region-code",
        b"cf-ipcity",
        b"x-vercel-ip-country",
        b"x-vercel-ip-country-region",
        b"x-vercel-ip-city",
        b"cloudfront-viewer-country",
        b"cloudfront-viewer-country-region",
        b"cloudfront-viewer-city",
    }
)
_RELOAD_SECONDS: Final = 1.0


def key_id(secret: str) -> str:
    """``svc_edge_<id>_<random>`` names its key id; any other secret has the id ``''``."""
    if secret.startswith("svc_edge_"):
        kid, sep, rest = secret[len("svc_edge_") :].partition("_")
        if sep and kid.isalnum() and kid.isascii() and rest.isalnum() and rest.isascii():
            return kid
    return ""


@dataclass(frozen=True, slots=True)
class EdgeVisitor:
    """What a verified request says of its visitor."""

    address: str
    geo: Geo | None  # None: no country from the edge (the origin locates the address)


class EdgeSecrets:
    """The secrets edges may sign with: the setting's, and those registered in the data
    directory's ``edge-secrets`` file (one ``<secret> [project] [provider] [created]`` a line),
    which is read again when it changes (looked at once a second, and at once for a key id
    it does not know)."""

    def __init__(self, setting: str, path: Path | None = None) -> None:
        self._fixed: dict[str, list[bytes]] = {}
        for raw in setting.split(","):
            secret = raw.strip()
            if secret:
                self._fixed.setdefault(key_id(secret), []).append(secret.encode())
        self.path = path
        self._filed: dict[str, list[bytes]] = {}
        self._stamp: tuple[int, int] | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()

    def candidates(self, kid: str) -> list[bytes]:
        # a key id not known yet may have just been registered: look at the file at once
        self._reload(force=kid not in self._fixed and kid not in self._filed)
        return self._fixed.get(kid, []) + self._filed.get(kid, [])

    def configured(self) -> bool:
        self._reload()
        return bool(self._fixed or self._filed)

    def _reload(self, force: bool = False) -> None:
        if self.path is None:
            return
        now = time.monotonic()
        if now - self._checked < _RELOAD_SECONDS and not force:
            return
        with self._lock:
            self._checked = now
            try:
                st = os.stat(self.path)
            except OSError:
                self._filed, self._stamp = {}, None
                return
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                return
            try:
                text = self.path.read_text(encoding="utf-8")
            except (OSError, UnicodeError) as exc:
                log.warning("cannot read the edge secrets in %s: %s", self.path, exc)
                return
            filed: dict[str, list[bytes]] = {}
            for line in text.splitlines():
                fields = line.split()
                if fields and not fields[0].startswith("#"):
                    filed.setdefault(key_id(fields[0]), []).append(fields[0].encode())
            self._filed, self._stamp = filed, stamp


def sign(
    secret: bytes,
    *,
    kid: str,
    ts: str,
    method: str,
    target: str,
    body_sha256: str,
    authorization: str,
    user_agent: str,
    fields: tuple[str, str, str, str],
) -> str:
    """The hex signature of a request (the edge's ``edge/src/sign.ts``, in Python)."""
    text = "\n".join(
        (
            f"svc-edge-{VERSION}",
            kid,
            ts,
            method.upper(),
            target,
            body_sha256,
            authorization,
            user_agent,
            *fields,
        )
    )
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


def _address(value: str) -> str | None:
    try:
        ip = ipaddress.ip_address(value.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def verify(
    secrets: EdgeSecrets,
    *,
    method: str,
    target: str,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    now: float | None = None,
) -> EdgeVisitor | None:
    """The visitor a request's edge headers name, or None unless they verify."""
    edge: dict[bytes, str] = {}
    authorization = user_agent = ""
    for name, value in headers:
        if name.startswith(_PREFIX):
            edge.setdefault(name[len(_PREFIX) :], value.decode("latin-1"))
        elif name == b"authorization" and not authorization:
            authorization = value.decode("latin-1")
        elif name == b"user-agent" and not user_agent:
            user_agent = value.decode("latin-1")
    version, _, signature = edge.get(b"signature", "").partition("=")
    ts = edge.get(b"ts", "")
    if version != VERSION or not signature or not ts.isdigit() or len(ts) > 12:
        return None
    if abs((time.time() if now is None else now) - int(ts)) > WINDOW_SECONDS:
        return None
    kid = edge.get(b"kid", "")
    keys = secrets.candidates(kid)
    if not keys:
        return None
    fields = (
        edge.get(b"ip", ""),
        edge.get(b"country", ""),
        edge.get(b"region", ""),
        edge.get(b"city", ""),
    )
    digest = hashlib.sha256(body).hexdigest()
    matched = False
    for key in keys:  # every key is tried: the time taken does not tell which one matched
        expected = sign(
            key,
            kid=kid,
            ts=ts,
            method=method,
            target=target,
            body_sha256=digest,
            authorization=authorization,
            user_agent=user_agent,
            fields=fields,
        )
        matched |= hmac.compare_digest(expected, signature)
    if not matched:
        return None
    address = _address(fields[0])
    if address is None:
        return None
    geo = None
    if fields[1]:
        geo = geo_from_headers(
            {"cf-ipcountry": fields[1], "cf-region-code": fields[2], "cf-ipcity": fields[3]}
        )
    return EdgeVisitor(address, geo)


class EdgeAuth:
    """ASGI middleware (outermost): POST /analytics with verified edge headers is served as the
    visitor's request (see the module docstring); everything else passes untouched."""

    def __init__(self, app: Any, secrets: EdgeSecrets, max_body_bytes: int) -> None:
        self.app = app
        self.secrets = secrets
        self.max_body_bytes = max_body_bytes
        self.verified = 0
        self.refused = 0
        self._last_warning = float("-inf")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/analytics"
            and any(name == _SIGNATURE for name, _ in scope["headers"])
        ):
            scope, receive = await self._check(scope, receive)
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope, receive: Receive) -> tuple[Scope, Receive]:
        messages: list[Message] = []
        chunks: list[bytes] = []
        size = 0
        whole = False
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if not message.get("more_body", False):
                whole = True
                break
            if size > self.max_body_bytes:
                break  # the handler answers 413; nothing to verify

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        visitor = None
        if whole and self.secrets.configured():
            query = scope.get("query_string") or b""
            raw_path = scope.get("raw_path") or scope["path"].encode()
            target = raw_path.decode("latin-1")
            if query:
                target += "?" + query.decode("latin-1")
            visitor = verify(
                self.secrets,
                method="POST",
                target=target,
                body=b"".join(chunks),
                headers=scope["headers"],
            )
        if visitor is None:
            self.refused += 1
            now = time.monotonic()
            if now - self._last_warning > 60:
                self._last_warning = now
                log.warning(
                    "POST /analytics with edge headers that do not verify (unknown secret, bad "
                    "signature, clock off by more than %d s, or a body over the limit): the "
                    "headers are ignored (%d so far)",
                    WINDOW_SECONDS,
                    self.refused,
                )
            return scope, replay
        self.verified += 1
        scope = dict(scope)
        scope["client"] = (visitor.address, 0)
        scope["headers"] = [
            (name, value)
            for name, value in scope["headers"]
            if name not in _DROPPED and not name.startswith(_PREFIX)
        ]
        scope["svc.edge_geo"] = visitor.geo
        return scope, replay


def with_edge_auth(app: Any, settings: Settings) -> EdgeAuth:
    """``app`` behind :class:`EdgeAuth`, with the secrets of ``settings``."""
    secrets = EdgeSecrets(settings.edge_secret, settings.data_dir / SECRETS_FILE)
    return EdgeAuth(app, secrets, settings.max_body_bytes)
