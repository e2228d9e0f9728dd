"""The ASGI middleware that applies the limits (:mod:`svc.limits`: the rules, buckets, plans
and quotas) to requests, before a handler does any work.

For each request to a limited route it finds the client address and the credential (no body
is read, no store is touched for a recently verified credential) and then:

1. failed authentications: an address whose failures bucket is empty gets 429 unless its
   credential was verified recently (in the key cache, or valid here in the last ten minutes
   and not revoked since: good keys behind a busy address are not locked out); a flood of
   bad keys never reaches the metadata store;
2. token buckets: POST /analytics per client address and project and per project; reads per
   credential; /projects per credential (429 ``rate_limited``);
3. the monthly quota: ingestion for a project known to be over its quota gets 429
   ``quota_exceeded`` before its body is read (the exact check is the reservation in
   :meth:`svc.ingestion.service.IngestService.ingest`).

Each POST /analytics refused in 2 or 3 is counted for its project and UTC day
(:meth:`svc.ingestion.dropped.DropCounts.refuse`: one counter increment), what
GET /projects/{id}/dropped answers as ``refused``.

Answers that pass carry the ``RateLimit-*`` headers of the tightest bucket and, for ingestion
from the warning share of the quota, ``Svc-Quota-Warning``. A 401 answer takes a token from
the address's failures bucket. A client that goes away mid-request ends the request quietly.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ipaddress
import math
import time
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from svc import credentials
from svc.accounts.tokens import SESSION_PREFIX, well_formed
from svc.auth import Principal
from svc.errors import ApiError, RateLimited
from svc.http.common import error_response
from svc.ingestion.outcomes import Refusal
from svc.limits.bucket import Decision, TokenBuckets, admit_two
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
MEMO_SECONDS = 1.0

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


@functools.lru_cache(maxsize=65_536)
def address_key(address: str) -> str:
    """The key of a client address in the per-address buckets: an IPv4 address as it is, an
    IPv6 address as its /64 network (one subscriber's share: its host bits are free to
    change), an IPv4-mapped IPv6 address as its IPv4 address."""
    try:
        ip = ipaddress.IPv6Address(address.split("%", 1)[0])
    except ValueError:
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return ip.packed[:8].hex() + "::/64"


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
        self.quotas = limits.quotas
        self.attention = limits.quotas.attention
        self.quota_seen = limits.quotas.quota_seen
        self.remote = limits.remote
        self.runtime = state.runtime
        self.proxies = state.proxies
        self._memo: dict[bytes | str, tuple[float, Principal, str]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            kind = 0
        elif scope["path"] == "/analytics":
            kind = INGEST if scope["method"] == "POST" else 0
        else:
            kind = classify(scope["method"], scope["path"])
        auth = self.runtime.auth if kind else None
        if auth is None:  # not a limited route (or not started yet)
            try:  # noqa: SIM105 (a context manager costs more on the hot path)
                await self.app(scope, receive, send)
            except ClientDisconnect:
                pass  # the client went away (or was cut off for being slow): nobody to answer
            return
        remote = self.remote
        authorization = forwarded = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"x-forwarded-for":
                forwarded = value
        query = scope["query_string"]
        now = time.monotonic()
        # the credential as sent: the Authorization header, or a public key in the URL
        raw: bytes | str | None = authorization
        if raw is None and kind == INGEST and query:
            raw = _query_param(query, "key")
        token: str | None = None
        principal: Principal | None = None
        if raw is not None:
            memo = self._memo.get(raw)
            if memo is not None and memo[0] > now:
                principal, token = memo[1], memo[2]
            else:
                token = _bearer(raw) if isinstance(raw, bytes) else raw
                if token:
                    principal = _known(auth, token)
                    if principal is not None:
                        self._remember(raw, token, principal, now)
        client = scope.get("client")
        address = client[0] if client else ""
        proxies = self.proxies
        if proxies.networks:
            address = proxies.client_address(
                address, forwarded.decode("latin-1") if forwarded else None
            )
        if ":" in address:
            address = address_key(address)

        gate = self.auth_failures
        if gate is not None and principal is None:
            level = (
                gate.level(address, now)
                if remote is None
                else await remote.peek(gate, address, now)
            )
            if level < 1.0 and not (
                token and (_vouched(auth, token) or await _signed_in(auth, token))
            ):
                gate.denied += 1
                await self._refuse(Decision(False, gate.rule, level), scope, receive, send)
                return

        decision: Decision | None = None
        project: Project | None = None
        project_id: str | None = None
        if kind == INGEST:
            if principal is None and token and raw is not None:
                principal = await _resolve(auth, token)
                if principal is not None:
                    self._remember(raw, token, principal, now)
            if principal is not None:
                project = principal.project
                if project is not None:
                    project_id = project.id
                elif principal.is_admin and query:
                    project_id = _query_param(query, "projectId")
            if project_id:
                per_ip, per_project = self.ingest_ip, self.ingest_project
                if remote is None:
                    if per_ip is not None and per_project is not None:
                        decision = admit_two(
                            per_ip, f"{address}|{project_id}", per_project, project_id, now
                        )
                    elif per_ip is not None:
                        decision = per_ip.check(f"{address}|{project_id}", now)
                    elif per_project is not None:
                        decision = per_project.check(project_id, now)
                else:
                    checks: list[tuple[TokenBuckets, str]] = []
                    if per_ip is not None:
                        checks.append((per_ip, f"{address}|{project_id}"))
                    if per_project is not None:
                        checks.append((per_project, project_id))
                    if checks:
                        decision = await remote.check_all(checks, now)
        elif token:
            buckets = self.read_key if kind == READ else self.manage
            if buckets is not None:
                key = credential_id(token)
                decision = (
                    buckets.check(key, now)
                    if remote is None
                    else await remote.check_all([(buckets, key)], now)
                )
        if decision is not None and not decision.allowed:
            if project_id:  # ingestion's, counted per project and day, as requests
                self.runtime.ingest.drops.refuse(
                    project_id, Refusal.RATE_LIMIT, time.time_ns() // 1_000_000
                )
            await self._refuse(decision, scope, receive, send)
            return

        warn = False
        month = ""
        quotas = self.quotas
        # a closer look only for a project near or at its quota, or not seen since the start
        if project is not None and (
            project.id in self.attention or project.id not in self.quota_seen
        ):
            quota = quotas.plans.quota_of(project)
            if quota > 0:
                month = current_month()
                used = quotas.peek(project.id, month)
                if used >= quota and token:
                    # the memo may be a second old: refuse on the project as it is now, and
                    # when it is not known at once, let ingestion's exact check decide
                    fresh = _known(auth, token)
                    if fresh is not None and fresh.project is not None:
                        project = fresh.project
                        quota = quotas.plans.quota_of(project)
                        if raw is not None:
                            self._remember(raw, token, fresh, now)
                    else:
                        used = -1  # not known at once: never refused here
                if 0 < quota <= used:
                    quotas.refused_requests += 1
                    ms = time.time_ns() // 1_000_000
                    self.runtime.ingest.drops.refuse(project.id, Refusal.QUOTA, ms)
                    exc = quotas.exceeded(project, ms)
                    await error_response(exc)(scope, receive, send)
                    return
                # the answer may cross the warning share: look again when it leaves
                warn = quotas.warning_percent > 0 and (used + quotas.margin) * 100 >= (
                    quota * quotas.warning_percent
                )
        watch = gate is not None and principal is None  # a 401 costs the address a token
        if decision is not None and kind == INGEST and decision.level * 2 >= decision.rule.burst:
            decision = None  # ingestion answers carry RateLimit-* from half the burst used
        if decision is None and not warn and not watch:
            try:  # noqa: SIM105
                await self.app(scope, receive, send)
            except ClientDisconnect:
                pass
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                extra = decision.raw_headers() if decision is not None else []
                if warn and status == 200 and project is not None:
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

        try:  # noqa: SIM105
            await self.app(scope, receive, send_with_headers)
        except ClientDisconnect:
            pass

    def _remember(self, raw: bytes | str, token: str, principal: Principal, now: float) -> None:
        """Keep a verified credential's principal for a second, by the credential as sent: the
        next requests skip parsing and hashing it. Used only to choose buckets; the handler
        authenticates every request itself."""
        if len(self._memo) >= 10_000:
            self._memo.clear()
        self._memo[raw] = (now + MEMO_SECONDS, principal, token)

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


def _vouched(auth: Any, token: str) -> bool:
    """Whether the credential was verified valid here a while ago (svc.auth.VOUCH_SECONDS):
    the gate lets it through, so that the bad keys of a busy address (a NAT, an office) never
    lock out its good ones once they fall out of the key cache. The handler authenticates."""
    vouches_for = getattr(auth, "vouches_for", None)
    return vouches_for is not None and bool(vouches_for(token))


async def _signed_in(auth: Any, token: str) -> bool:
    """Whether ``token`` is a valid session now: a signed-in person passes the failed-
    authentication gate as a verified key does (an address's bad keys, behind a proxy
    everyone's, must not lock its people out). Only a well-formed session token is looked up
    (one indexed read of the metadata store); the handler authenticates it again."""
    if not well_formed(token, SESSION_PREFIX):
        return False
    return await _resolve(auth, token) is not None


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
