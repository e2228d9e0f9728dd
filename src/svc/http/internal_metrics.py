"""GET /internal/metrics: the service's figures for Prometheus (docs/operations.md).

Off unless ``SVC_INTERNAL_METRICS_TOKEN`` is set (the path answers 404 as if it did not
exist); then it wants ``Authorization: Bearer <that token>``: 401 ``missing_api_key`` without
an Authorization header, 401 ``invalid_api_key`` with any other (another scheme, no token,
another token), as every route of docs/api.md answers. Its path is
not the API's ``/metrics``, whose answers are a project's analytics.

Nearly every figure is read when the scrape comes, from the counters the service keeps anyway
(the ones /health reports: :func:`svc.http.health.health_report`, which also probes the
event store and the metadata store, in a worker thread), by a custom collector
(:mod:`svc.http.internal_collector`): nothing is added to the hot path for them. The
per-request figures (answers by route and status, the ingestion latency, the reads'
durations) are kept by :mod:`svc.http.observe`. The process's memory, CPU and file
descriptors come from the client library's process collector.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.exposition import choose_encoder
from starlette.requests import Request
from starlette.responses import Response

from svc.errors import InvalidApiKey, MissingApiKey, NotFound
from svc.http.common import error_response, runtime_of
from svc.http.health import health_report
from svc.http.internal_collector import ServiceCollector
from svc.runtime import Runtime

PATH = "/internal/metrics"
MIN_TOKEN_CHARS = 16


def check_token(token: str) -> None:
    """Refuse a token too short to be a secret (at start-up: :func:`svc.app.create_app`)."""
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"setting SVC_INTERNAL_METRICS_TOKEN: at least {MIN_TOKEN_CHARS} characters "
            "(a long random string, such as `openssl rand -hex 24` makes)"
        )


async def get_internal_metrics(request: Request) -> Response:
    """The figures in the exposition format the scrape accepts (Prometheus text or
    OpenMetrics); 404 when the route is off, 401 (with a ``WWW-Authenticate: Bearer``
    challenge) without the token, as the module's documentation says."""
    state = request.app.state
    token: str = state.settings.internal_metrics_token
    if not token:  # off: as if the route did not exist
        return error_response(NotFound(f"no route for {request.method} {request.url.path}"))
    header = request.headers.get("authorization")
    challenge = {"WWW-Authenticate": 'Bearer realm="svc internal metrics"'}
    if not header:
        return error_response(
            MissingApiKey(
                "send `Authorization: Bearer <SVC_INTERNAL_METRICS_TOKEN>`", headers=challenge
            )
        )
    scheme, _, given = header.partition(" ")
    given = given.strip()
    if scheme.lower() != "bearer" or not given:  # malformed, as svc.auth.Auth.bearer says
        return error_response(
            InvalidApiKey(
                "the Authorization header must be `Bearer <SVC_INTERNAL_METRICS_TOKEN>`",
                headers=challenge,
            )
        )
    if not hmac.compare_digest(given.encode(), token.encode()):
        return error_response(
            InvalidApiKey("not the token of SVC_INTERNAL_METRICS_TOKEN", headers=challenge)
        )
    exposition: Exposition | None = getattr(state, "exposition", None)
    if exposition is None:
        exposition = state.exposition = Exposition(runtime_of(request), state)
    runtime = exposition.runtime
    report = await asyncio.to_thread(health_report, runtime)  # probes the stores: a thread
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    # the rest is read here, on the event loop, where the counters change
    body = exposition.render(report, encoder)
    return Response(body, headers={"Content-Type": content_type, "Cache-Control": "no-store"})


class Exposition:
    """The registry of one service: its collector, the process's, the platform's and the
    garbage collector's."""

    def __init__(self, runtime: Runtime, state: Any) -> None:
        self.runtime = runtime
        self.collector = ServiceCollector(runtime, state)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    def render(self, report: dict[str, Any], encoder: Any) -> bytes:
        self.collector.report = report
        try:
            body: bytes = encoder(self.registry)
        finally:
            self.collector.report = None
        return body
