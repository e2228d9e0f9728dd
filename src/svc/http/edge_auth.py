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
  every :data:`~svc.http.edge_keyring.STORED_SECONDS` (so a revocation through another node
  of the same metadata store takes effect within that time; through this node, at once) and
  at once for a key id not known yet (at most once a second).

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

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Final

from svc.errors import ApiError, Conflict
from svc.http.common import error_response
from svc.http.edge_keyring import SECRETS_FILE, EdgeSecrets
from svc.http.edge_replays import ReplayGuard
from svc.http.edge_signature import _PREFIX, WINDOW_SECONDS, EdgeVisitor, verify
from svc.http.limits import _bearer, _known, _query_param, _resolve
from svc.meta import edge_secrets as stored_secrets
from svc.settings import Settings

if TYPE_CHECKING:
    from svc.cluster.shared import SharedReplays


__all__ = ["EdgeAuth", "with_edge_auth"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

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
