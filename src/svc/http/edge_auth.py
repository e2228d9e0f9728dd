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
    x-svc-edge-nonce      random, new for every request the edge forwards (optional)
    x-svc-edge-signature  ``v1=`` and the hex HMAC of the lines (joined by ``\\n``):
                          ``svc-edge-v1``, kid, ts, method, path and query, hex SHA-256 of the
                          body, Authorization, User-Agent, ip, country, region, city, and the
                          nonce when there is one

:class:`EdgeAuth`, the outermost ASGI middleware of ``svcm serve``, verifies them on
POST /analytics: a known secret, a signature that matches in constant time, a timestamp within
:data:`WINDOW_SECONDS` of the origin's clock, a valid address, and a credential (the request's
key) whose project is in the secret's scope. The secrets (:class:`EdgeSecrets`), looked up by
the key id the edge sends, are:

- ``SVC_EDGE_SECRET`` (comma-separated): any project;
- the lines of ``<data dir>/edge-secrets``: ``<key id> <secret> <project,project,...|*>
  [provider] [created]``, or the older ``<secret> [project] [provider] [created]``, which is
  read as any project (what it meant before secrets had scopes);
- the secrets registered over the API (``POST /projects/{id}/edge-secrets``, kept in the
  metadata store by :mod:`svc.meta.edge_secrets`): that project alone. They are read again
  every :data:`STORED_SECONDS` (so a revocation through another node of the same metadata
  store takes effect within that time; through this node, at once) and at once for a key id
  not known yet (at most once a second).

Only then is the request taken as the visitor's: its client address becomes the
signed address (so the visitor hash, the per-address rate limits and the address-based geo
use it) and the signed location is its geo (``scope["svc.edge_geo"]``, read by
:func:`svc.http.analytics.handle`); X-Forwarded-For and the platforms' own location headers
are dropped from such a request. A request whose signature does not verify, or whose key's
project is not in its secret's scope (a key of another project, an unknown key, the admin
token for a scoped secret), is served exactly as if it had none: its edge headers are ignored,
counted (:attr:`EdgeAuth.refused`; out of scope also in :attr:`EdgeAuth.out_of_scope`) and
logged at most once a minute.

The body is read (up to ``SVC_MAX_BODY_BYTES``) before the limits see the request, to check
its hash; it is then handed on unchanged. A verified request is served once: its signature is
remembered (:class:`ReplayGuard`) until its timestamp leaves the window, and the same
signature again is a replay, answered 409 ``conflict`` (field ``x-svc-edge-signature``) with
nothing stored, and counted (:attr:`EdgeAuth.replayed`). Without that, a captured request
sent again within the window would store its events again, as the signed visitor's (the
browser script's events carry no ``eventId`` to deduplicate them). The edge signs a new nonce
with every request, so two requests it forwards never share a signature, even when they are
the same in the same second. The memory is this process's: the edge-to-origin leg should be
HTTPS all the same.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from svc.credentials import edge_key_id
from svc.errors import ApiError, Conflict
from svc.http.common import error_response
from svc.http.limits import _bearer, _known, _query_param, _resolve
from svc.ingestion.enrich.geo import Geo, geo_from_headers
from svc.meta import edge_secrets as stored_secrets
from svc.settings import Settings

if TYPE_CHECKING:
    from svc.cluster.shared import SharedReplays

__all__ = [
    "STORED_SECONDS",
    "WINDOW_SECONDS",
    "EdgeAuth",
    "EdgeSecrets",
    "EdgeVisitor",
    "ReplayGuard",
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
#: How old the metadata store's secrets may be before they are read again (s).
STORED_SECONDS: Final = 5.0
#: A secret and its scope: the projects it may sign for (None: every project).
Keyed = tuple[bytes, frozenset[str] | None]
#: How many signatures :class:`ReplayGuard` keeps at most (measured: 195 bytes each, 39 MB in
#: all): every signed request of the last 240 s up to about 830 a second, the oldest
#: forgotten first beyond.
REPLAY_MEMORY: Final = 200_000
#: The longest nonce taken (the edge sends 32 hex digits).
MAX_NONCE: Final = 128


#: ``svc_edge_<id>_<random>`` names its key id; any other secret has the id ``''``.
key_id = edge_key_id


@dataclass(frozen=True, slots=True)
class EdgeVisitor:
    """What a verified request says of its visitor."""

    address: str
    geo: Geo | None  # None: no country from the edge (the origin locates the address)
    scope: frozenset[str] | None = None  # the projects its secret may sign for; None: all
    signature: bytes = b""  # the request's verified signature (what a replay repeats)
    ts: int = 0  # its signed time, Unix seconds


class ReplayGuard:
    """The signatures of the verified requests whose time is still within the window: the
    same signature again is a replay.

    Each is kept until its signed time leaves the window (``ts`` + :data:`WINDOW_SECONDS`;
    after that :func:`verify` refuses it as stale anyway), in a set and a queue in arrival
    order; at most ``capacity`` are kept, the oldest forgotten first beyond (counted in
    :attr:`forgotten_early`: the only way a replay can pass). Not thread-safe: the event loop's
    alone."""

    def __init__(self, capacity: int = REPLAY_MEMORY) -> None:
        self.capacity = capacity
        self.forgotten_early = 0
        self._seen: set[bytes] = set()
        self._queue: deque[tuple[float, bytes]] = deque()

    def __len__(self) -> int:
        return len(self._seen)

    def first(self, signature: bytes, until: float, now: float | None = None) -> bool:
        """True the first time ``signature`` is offered (then kept until ``until``, Unix
        seconds), False while it is kept."""
        t = time.time() if now is None else now
        queue, seen = self._queue, self._seen
        while queue and queue[0][0] < t:
            seen.discard(queue.popleft()[1])
        if signature in seen:
            return False
        while len(queue) >= self.capacity:
            seen.discard(queue.popleft()[1])
            self.forgotten_early += 1
        seen.add(signature)
        queue.append((until, signature))
        return True


class EdgeSecrets:
    """The secrets edges may sign with, each with its scope (see the module docstring): the
    setting's, those of the data directory's ``edge-secrets`` file, read again when it changes
    (looked at once a second, and at once for a key id it does not know), and those of the
    metadata store (``stored``: a function that reads them, called in a worker thread by
    :meth:`refresh`)."""

    def __init__(
        self,
        setting: str,
        path: Path | None = None,
        stored: Callable[[], list[stored_secrets.EdgeSecret]] | None = None,
    ) -> None:
        self._fixed: dict[str, list[Keyed]] = {}
        for raw in setting.split(","):
            secret = raw.strip()
            if secret:
                self._fixed.setdefault(key_id(secret), []).append((secret.encode(), None))
        self.path = path
        self._filed: dict[str, list[Keyed]] = {}
        self._stamp: tuple[int, int] | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()
        self.stored = stored
        self._stored: dict[str, list[Keyed]] = {}
        self._stored_at = float("-inf")  # when the store was last read (monotonic)
        self._loading: asyncio.Future[None] | None = None

    def candidates(self, kid: str) -> list[Keyed]:
        # a key id not known yet may have just been registered: look at the file at once
        known = kid in self._fixed or kid in self._stored
        self._reload(force=not known and kid not in self._filed)
        return self._fixed.get(kid, []) + self._filed.get(kid, []) + self._stored.get(kid, [])

    def configured(self) -> bool:
        self._reload()
        return bool(self._fixed or self._filed or self._stored)

    async def refresh(self, kid: str) -> None:
        """Read the metadata store's secrets again, in a worker thread: waited for when
        ``kid`` is unknown and they are older than a second (a secret just registered); in the
        background, the request going on with the secrets known, when they are older than
        :data:`STORED_SECONDS`. One read at a time; a failed read keeps what was known."""
        if self.stored is None:
            return
        age = time.monotonic() - self._stored_at
        unknown = kid not in self._fixed and kid not in self._filed and kid not in self._stored
        wait = unknown and age >= _RELOAD_SECONDS
        if not wait and age < STORED_SECONDS:
            return
        if self._loading is None or self._loading.done():
            self._loading = asyncio.ensure_future(asyncio.to_thread(self.load_stored))
        if wait:
            await asyncio.shield(self._loading)

    def load_stored(self) -> None:
        """Read the metadata store's secrets now (blocking: a worker thread, or after a
        registration or revocation through this node, so that it takes effect at once)."""
        if self.stored is None:
            return
        started = time.monotonic()
        try:
            records = self.stored()
        except Exception as exc:  # the store is down, or not migrated yet: keep what is known
            log.warning("cannot read the edge secrets of the metadata store: %s", exc)
            self._stored_at = started
            return
        stored: dict[str, list[Keyed]] = {}
        for r in records:
            stored.setdefault(r.id, []).append((r.secret.encode(), frozenset((r.project_id,))))
        self._stored, self._stored_at = stored, started

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
            self._filed, self._stamp = parse_secrets_file(text), stamp


def parse_secrets_file(text: str) -> dict[str, list[Keyed]]:
    """The secrets of an ``edge-secrets`` file by key id: ``<key id> <secret>
    <project,project,...|*> [provider] [created]`` (the secret's own key id first, then its
    scope), or the older ``<secret> [project] [provider] [created]``, which signs for any
    project. Blank lines and lines starting with ``#`` are skipped."""
    filed: dict[str, list[Keyed]] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) >= 3 and fields[0] and key_id(fields[1]) == fields[0]:
            scope = None if fields[2] == "*" else frozenset(p for p in fields[2].split(",") if p)
            filed.setdefault(fields[0], []).append((fields[1].encode(), scope))
        else:
            filed.setdefault(key_id(fields[0]), []).append((fields[0].encode(), None))
    return filed


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
    nonce: str = "",
) -> str:
    """The hex signature of a request (the edge's ``edge/src/sign.ts``, in Python); the nonce
    is the last line when there is one."""
    lines = [
        f"svc-edge-{VERSION}",
        kid,
        ts,
        method.upper(),
        target,
        body_sha256,
        authorization,
        user_agent,
        *fields,
    ]
    if nonce:
        lines.append(nonce)
    text = "\n".join(lines)
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
    nonce = edge.get(b"nonce", "")
    if version != VERSION or not signature or not ts.isdigit() or len(ts) > 12:
        return None
    if len(nonce) > MAX_NONCE:
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
    scopes: list[frozenset[str] | None] = []
    for key, scope in keys:  # every key is tried: the time taken does not tell which matched
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
            nonce=nonce,
        )
        if hmac.compare_digest(expected, signature):
            matched = True
            scopes.append(scope)
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
    allowed = (
        None
        if any(scope is None for scope in scopes)
        else frozenset().union(*(s for s in scopes if s is not None))
    )
    return EdgeVisitor(address, geo, allowed, bytes.fromhex(signature), int(ts))


class EdgeAuth:
    """ASGI middleware (outermost): POST /analytics with verified edge headers is served as the
    visitor's request (see the module docstring); everything else passes untouched."""

    def __init__(
        self,
        app: Any,
        secrets: EdgeSecrets,
        max_body_bytes: int,
        project_of: Callable[[Scope], Awaitable[str | None]] | None = None,
    ) -> None:
        self.app = app
        self.secrets = secrets
        self.max_body_bytes = max_body_bytes
        #: The project of a request's credential (None: none, or not a valid one); without
        #: it, only secrets of every project verify.
        self.project_of = project_of
        self.verified = 0
        self.refused = 0
        self.out_of_scope = 0
        #: Verified requests whose signature had been served before: answered 409.
        self.replayed = 0
        self.replays = ReplayGuard()
        #: With several nodes, the signatures served by any of them (svc.cluster.shared);
        #: this process's own guard when Redis is out of reach.
        self.shared_replays: SharedReplays | None = None
        self._warned_at: dict[str, float] = {}  # per kind of warning: when, monotonic

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/analytics"
            and any(name == _SIGNATURE for name, _ in scope["headers"])
        ):
            scope, receive, refusal = await self._check(scope, receive)
            if refusal is not None:
                await error_response(refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _warn(self, kind: str, message: str, *args: object) -> None:
        """Log ``message`` at most once a minute for each ``kind``."""
        now = time.monotonic()
        if now - self._warned_at.get(kind, float("-inf")) > 60:
            self._warned_at[kind] = now
            log.warning(message, *args)

    async def _check(
        self, scope: Scope, receive: Receive
    ) -> tuple[Scope, Receive, ApiError | None]:
        """The request as the visitor's when its edge headers verify, else as it came; with
        the error to answer instead when it is a replay."""
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
        if whole:
            await self.secrets.refresh(_header(scope, b"x-svc-edge-kid"))
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
            if visitor is not None and visitor.scope is not None:
                project = None if self.project_of is None else await self.project_of(scope)
                if project not in visitor.scope:
                    self.out_of_scope += 1
                    visitor = None
        if visitor is None:
            self.refused += 1
            self._warn(
                "refused",
                "POST /analytics with edge headers that do not verify (unknown secret, bad "
                "signature, clock off by more than %d s, a body over the limit, or a key "
                "of a project the secret may not sign for): the headers are ignored (%d so "
                "far, %d of them out of the secret's scope)",
                WINDOW_SECONDS,
                self.refused,
                self.out_of_scope,
            )
            return scope, replay, None
        if not await self._first(visitor):
            self.replayed += 1
            self._warn(
                "replayed",
                "POST /analytics with a signed edge request received before (a replay "
                "within the %d s window): answered 409, nothing stored (%d so far)",
                WINDOW_SECONDS,
                self.replayed,
            )
            conflict = Conflict(
                "this request, signed by an edge, was received before: a signed request is "
                f"served once (a replay within its {WINDOW_SECONDS} s window); nothing was "
                "stored",
                field="x-svc-edge-signature",
            )
            return scope, replay, conflict
        self.verified += 1
        scope = dict(scope)
        scope["client"] = (visitor.address, 0)
        scope["headers"] = [
            (name, value)
            for name, value in scope["headers"]
            if name not in _DROPPED and not name.startswith(_PREFIX)
        ]
        scope["svc.edge_geo"] = visitor.geo
        return scope, replay, None

    async def _first(self, visitor: EdgeVisitor) -> bool:
        """Whether the request's signature is served for the first time."""
        until = visitor.ts + WINDOW_SECONDS
        if self.shared_replays is not None:
            first = await self.shared_replays.first(visitor.signature, until)
            if first is not None:
                return first
        return self.replays.first(visitor.signature, until)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return ""


def with_edge_auth(app: Any, settings: Settings) -> EdgeAuth:
    """``app`` behind :class:`EdgeAuth`, with the secrets of ``settings``, of the data
    directory's file and of the application's metadata store (``app`` is the Starlette
    application of :func:`svc.app.create_app` or a wrapper of it with ``.app``; its
    ``state.edge_secrets`` is set, for the API that registers and revokes secrets, and
    ``state.edge_auth``, whose counts /internal/metrics reports)."""
    inner = app
    while not hasattr(inner, "state") and hasattr(inner, "app"):
        inner = inner.app
    state = getattr(inner, "state", None)
    runtime = getattr(state, "runtime", None)
    meta = getattr(runtime, "meta", None)
    stored = None if meta is None else (lambda: stored_secrets.all_secrets(meta))
    secrets = EdgeSecrets(settings.edge_secret, settings.data_dir / SECRETS_FILE, stored)
    if state is not None:
        state.edge_secrets = secrets
    project_of = None if runtime is None else _project_of(runtime)
    auth = EdgeAuth(app, secrets, settings.max_body_bytes, project_of)
    shared = getattr(runtime, "shared", None)
    if shared is not None:
        auth.shared_replays = shared.replays
    if state is not None:
        state.edge_auth = auth  # its counts, for /internal/metrics
    return auth


def _project_of(runtime: Any) -> Callable[[Scope], Awaitable[str | None]]:
    """The project of a request's credential, as the limits find it (a Bearer header, else a
    ``key`` in the query): from the key cache, else verified in a worker thread."""

    async def project_of(scope: Scope) -> str | None:
        auth = runtime.auth
        if auth is None:
            return None
        header = _header(scope, b"authorization")
        if header:
            token = _bearer(header.encode("latin-1"))
        else:
            token = _query_param(scope.get("query_string") or b"", "key")
        if not token:
            return None
        principal = _known(auth, token) or await _resolve(auth, token)
        project = None if principal is None else principal.project
        return None if project is None else str(project.id)

    return project_of
