"""The ASGI middleware that applies the limits before a handler does any work.

For each request to a limited route it finds the client address and the credential (no body
is read, no store is touched for a recently verified credential) and then:

1. failed authentications: an address whose failures bucket is empty gets 429 unless its
   credential was verified recently (a flood of bad keys never reaches the metadata store);
2. token buckets: POST /analytics per client address and project and per project; reads per
   credential; /projects per credential (429 ``rate_limited``);
3. the monthly quota: ingestion for a project known to be over its quota gets 429
   ``quota_exceeded`` before its body is read (the exact check is the reservation in
   :meth:`svc.ingestion.service.IngestService.ingest`).

Answers that pass carry the ``RateLimit-*`` headers of the tightest bucket and, for ingestion
from the warning share of the quota, ``Svc-Quota-Warning``. A 401 answer takes a token from
the address's failures bucket. A client that goes away mid-request ends the request quietly.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc import credentials
from svc.auth import Principal
from svc.errors import ApiError, RateLimited
from svc.http.common import error_response
from svc.limits.bucket import Decision, TokenBuckets, check_all, decide
from svc.limits.core import (
    AUTH_FAILURES_IP,
    INGEST_IP,
    INGEST_PROJECT,
    MANAGE_CREDENTIAL,
    READ_KEY,
    Limits,
)
from svc.limits.quota import current_month
from svc.meta.store import Project

INGEST, READ, MANAGE = 1, 2, 3
MAX_TOKEN = 256

_WHAT = {
    INGEST_IP: "events from one address to a project",
    INGEST_PROJECT: "events to a project",
    READ_KEY: "reads with one credential",
    MANAGE_CREDENTIAL: "project management requests with one credential",
    AUTH_FAILURES_IP: "failed authentications from one address",
}


def classify(method: str, path: str) -> int:
    """Which limits a route has: INGEST, READ, MANAGE or 0 (none)."""
    if method == "OPTIONS":
        return 0
    if path == "/analytics":
        return INGEST if method == "POST" else 0
    if path == "/metrics" or path.startswith("/metrics/") or path == "/export":
        return READ if method == "GET" else 0
    if path == "/projects" or path.startswith("/projects/"):
        return MANAGE
    return 0


def credential_id(token: str) -> str:
    """A short stable digest of a credential: buckets never hold a clear key."""
    return hashlib.blake2b(token.encode(), digest_size=12).hexdigest()


def with_limits(app: Any) -> LimitsMiddleware:
    """``app`` behind the limits: the Starlette application of :func:`svc.app.create_app`, or
    a wrapper of it (with ``.app``) such as the POST /analytics fast path, which the limits must
    come before."""
    inner = app
    while not hasattr(inner, "state") and hasattr(inner, "app"):
        inner = inner.app
    return LimitsMiddleware(app, inner.state.limits, inner.state)


class LimitsMiddleware:
    """ASGI middleware (outermost: ahead of every handler and of the ingestion fast path)."""

    def __init__(self, app: ASGIApp, limits: Limits, state: Any) -> None:
        self.app = app
        self.limits = limits
        self.state = state  # the Starlette app's state: runtime, proxies
        buckets = limits.buckets
        self.ingest_ip = buckets.get(INGEST_IP)
        self.ingest_project = buckets.get(INGEST_PROJECT)
        self.read_key = buckets.get(READ_KEY)
        self.manage = buckets.get(MANAGE_CREDENTIAL)
        self.auth_failures = buckets.get(AUTH_FAILURES_IP)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = classify(scope["method"], scope["path"]) if scope["type"] == "http" else 0
        try:
            if kind:
                await self._limited(kind, scope, receive, send)
            else:
                await self.app(scope, receive, send)
        except ClientDisconnect:
            return  # the client went away (or was cut off for being slow): nobody to answer

    async def _limited(self, kind: int, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state
        auth = state.runtime.auth
        if auth is None:  # not started yet
            await self.app(scope, receive, send)
            return
        limits, remote = self.limits, self.limits.remote
        authorization = forwarded = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"x-forwarded-for":
                forwarded = value
        token = _bearer(authorization)
        query = scope["query_string"]
        if token is None and kind == INGEST and query and authorization is None:
            token = _query_param(query, "key")
        peer = scope["client"][0] if scope.get("client") else ""
        proxies = state.proxies
        address = (
            proxies.client_address(peer, forwarded.decode("latin-1") if forwarded else None)
            if proxies.networks
            else peer
        )
        now = time.monotonic()
        principal = _known(auth, token) if token else None

        gate = self.auth_failures
        if gate is not None and principal is None:
            level = (
                gate.level(address, now)
                if remote is None
                else await remote.peek(gate, address, now)
            )
            if level < 1.0:
                gate.denied += 1
                await self._refuse(decide(gate.rule, level, False), scope, receive, send)
                return

        checks: list[tuple[TokenBuckets, str]] = []
        project: Project | None = None
        month = ""
        if kind == INGEST:
            if principal is None and token:
                principal = await _resolve(auth, token)
            project_id = None
            if principal is not None:
                project = principal.project
                if project is not None:
                    project_id = project.id
                elif principal.is_admin and query:
                    project_id = _query_param(query, "projectId")
            if project_id:
                if self.ingest_ip is not None:
                    checks.append((self.ingest_ip, f"{address}|{project_id}"))
                if self.ingest_project is not None:
                    checks.append((self.ingest_project, project_id))
        elif token:
            buckets = self.read_key if kind == READ else self.manage
            if buckets is not None:
                checks.append((buckets, credential_id(token)))

        decision: Decision | None = None
        if checks:
            decision = (
                check_all(checks, now) if remote is None else await remote.check_all(checks, now)
            )
            if not decision.allowed:
                await self._refuse(decision, scope, receive, send)
                return
        quotas = limits.quotas
        if project is not None:
            month = current_month()
            if quotas.exhausted(project, month):
                quotas.refused_requests += 1
                exc = quotas.exceeded(project, time.time_ns() // 1_000_000)
                await error_response(exc)(scope, receive, send)
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                extra: list[tuple[bytes, bytes]] = []
                if decision is not None:
                    extra += decision.raw_headers()
                if project is not None and status == 200:
                    warning = quotas.warning(project, month)
                    if warning is not None:
                        extra.append((b"svc-quota-warning", warning.encode()))
                if extra:
                    message["headers"] = [*message.get("headers", ()), *extra]
                if status == 401 and gate is not None:
                    if remote is None:
                        gate.charge(address, time.monotonic())
                    else:
                        await remote.charge(gate, address, time.monotonic())
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _refuse(self, decision: Decision, scope: Scope, receive: Receive, send: Send) -> None:
        rule = decision.rule
        wait = max(1, math.ceil(decision.retry_after))
        exc = RateLimited(
            f"too many {_WHAT.get(rule.name, 'requests')}: at most {rule.burst} at once and "
            f"{_rate_text(rule.rate)} ({rule.setting}); retry in {wait} s",
            headers=decision.headers(),
        )
        await error_response(exc)(scope, receive, send)


def _rate_text(rate: float) -> str:
    if rate >= 1:
        return f"{rate:g} a second"
    if rate * 60 >= 1:
        return f"{rate * 60:g} a minute"
    return f"{rate * 3600:g} an hour"


def _bearer(header: bytes | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(b" ")
    token = token.strip()
    if scheme.lower() != b"bearer" or not token or len(token) > MAX_TOKEN:
        return None
    return token.decode("latin-1")


def _query_param(query: bytes, name: str) -> str | None:
    for key, value in parse_qsl(query.decode("latin-1")):
        if key == name:
            return value if len(value) <= MAX_TOKEN else None
    return None


def _known(auth: Any, token: str) -> Principal | None:
    """The principal of a credential verified recently (the key cache, or the admin token),
    without touching the metadata store; None when unknown or invalid."""
    resolve_cached = getattr(auth, "resolve_cached", None)
    if resolve_cached is not None:
        try:
            known: Principal | None = resolve_cached(token)
        except ApiError:
            return None
        return known
    principal: Principal | None = auth.cached(token)
    if principal is not None:
        return principal
    if credentials.same_secret(credentials.hash_secret(token), auth.admin_token_hash):
        return Principal("admin", None, None, frozenset(("ingest", "read", "manage")))
    return None


async def _resolve(auth: Any, token: str) -> Principal | None:
    """Verify a credential the cache does not know (in a worker thread, as the handler would;
    the handler then finds it in the cache)."""
    try:
        principal: Principal = await asyncio.to_thread(auth.resolve, token)
    except ApiError:
        return None
    except Exception:  # the handler meets the same failure and answers it
        return None
    return principal
