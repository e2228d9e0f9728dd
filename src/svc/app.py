"""``create_app(settings)``: the ASGI application of svc.

Routes map to thin handlers in :mod:`svc.http`; the lifespan starts and stops the
:class:`~svc.runtime.Runtime`. Every error leaves as CONTRACT's JSON shape, never HTML.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from svc.backup.operations import Operations
from svc.errors import ApiError, MethodNotAllowed, NotFound
from svc.http import (
    analytics,
    dashboard,
    edge_secrets,
    export,
    health,
    internal_metrics,
    metrics,
    overview,
    projects,
)
from svc.http.accounts import ROUTES as ACCOUNT_ROUTES
from svc.http.backup import ROUTES as BACKUP_ROUTES
from svc.http.common import error_response, json_response
from svc.http.dropped import ROUTES as DROPPED_ROUTES
from svc.http.lake import ROUTES as LAKE_ROUTES
from svc.http.logs import show_generated_admin_token
from svc.http.mail import ROUTES as MAIL_ROUTES
from svc.http.nodes import ROUTES as NODE_ROUTES
from svc.http.observe import RequestStats
from svc.http.openapi import openapi_document
from svc.http.saved import ROUTES as SAVED_ROUTES
from svc.http.script import serve_script
from svc.http.sso import ROUTES as SSO_ROUTES
from svc.http.sso import check_settings as check_sso_settings
from svc.limits.core import Limits
from svc.mail import links as mail_links
from svc.projects import ProjectService
from svc.runtime import Runtime
from svc.settings import Settings

log = logging.getLogger("svc")


def create_app(settings: Settings) -> Starlette:
    internal_metrics.check_token(settings.internal_metrics_token)
    mail_links.check_settings(settings)  # mail on needs SVC_BASE_URL (svc.mail.links)
    check_sso_settings(settings)  # single sign-on's settings (svc.accounts.sso)
    runtime = Runtime(settings)
    limits = Limits(settings, runtime.ingest.usage)  # rate limits and quotas (svc.limits)
    runtime.ingest.quotas = limits.quotas
    operations = Operations(runtime)  # the lake, scheduled backups (settings checked here)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await runtime.start()
        if runtime.generated_admin_token:
            show_generated_admin_token(runtime.generated_admin_token)
        operations.start()
        try:
            yield
        finally:
            accounts = getattr(app.state, "accounts", None)  # svc.http.accounts.service_of
            if accounts is not None:
                await accounts.reset_work_done()
            await operations.stop()
            await runtime.stop()
            await limits.close()

    routes = [
        Route("/analytics", analytics.post_analytics, methods=["POST"]),
        Route("/analytics", analytics.preflight, methods=["OPTIONS"]),
        Route("/metrics", metrics.get_metrics, methods=["GET"]),
        Route("/metrics", analytics.preflight, methods=["OPTIONS"]),
        Route("/metrics/timeseries", metrics.get_timeseries, methods=["GET"]),
        Route("/metrics/breakdown", metrics.get_breakdown, methods=["GET"]),
        Route("/metrics/realtime", metrics.get_realtime, methods=["GET"]),
        Route("/metrics/goals", metrics.get_goals, methods=["GET"]),
        Route("/metrics/values", metrics.get_values, methods=["GET"]),
        Route("/metrics/funnel", metrics.get_funnel, methods=["GET"]),
        Route("/metrics/journeys", metrics.get_journeys, methods=["GET"]),
        Route("/metrics/revenue", metrics.get_revenue, methods=["GET"]),
        Route("/metrics/errors", metrics.get_errors, methods=["GET"]),
        Route("/metrics/properties", metrics.get_properties, methods=["GET"]),
        Route("/metrics/vitals", metrics.get_vitals, methods=["GET"]),
        Route("/overview", overview.get_overview, methods=["GET"]),
        Route("/overview/timeseries", overview.get_overview_timeseries, methods=["GET"]),
        Route("/health", health.get_health, methods=["GET"]),
        *BACKUP_ROUTES,
        *LAKE_ROUTES,
        *NODE_ROUTES,  # the nodes' watermark rows (svc.http.nodes)
        Route(internal_metrics.PATH, internal_metrics.get_internal_metrics, methods=["GET"]),
        Route("/export", export.get_export, methods=["GET"]),
        Route("/projects", projects.create_project, methods=["POST"]),
        Route("/projects", projects.list_projects, methods=["GET"]),
        Route("/projects/{project_id}", projects.get_project, methods=["GET"]),
        Route("/projects/{project_id}", projects.update_project, methods=["PATCH"]),
        Route("/projects/{project_id}", projects.delete_project, methods=["DELETE"]),
        Route("/projects/{project_id}/keys", projects.list_keys, methods=["GET"]),
        Route("/projects/{project_id}/keys", projects.create_key, methods=["POST"]),
        Route("/projects/{project_id}/keys/{key_id}", projects.revoke_key, methods=["DELETE"]),
        Route("/projects/{project_id}/keys/{key_id}/rotate", projects.rotate_key, methods=["POST"]),
        *DROPPED_ROUTES,  # what the pipeline dropped, by day and reason (svc.http.dropped)
        *MAIL_ROUTES,  # report and alert subscriptions, unsubscribe, the outbox's state
        *ACCOUNT_ROUTES,  # accounts, teams, invitations, guests, transfers
        *SSO_ROUTES,  # single sign-on with OpenID Connect (svc.http.sso)
        *SAVED_ROUTES,  # saved goals, funnels, segments, annotations (svc.http.saved)
        Route(
            "/projects/{project_id}/edge-secrets",
            edge_secrets.create_edge_secret,
            methods=["POST"],
        ),
        Route(
            "/projects/{project_id}/edge-secrets",
            edge_secrets.list_edge_secrets,
            methods=["GET"],
        ),
        Route(
            "/projects/{project_id}/edge-secrets/{secret_id}",
            edge_secrets.revoke_edge_secret,
            methods=["DELETE"],
        ),
        Route("/svc/js", serve_script, methods=["GET", "HEAD"]),
        Route("/svc/js/{extensions}", serve_script, methods=["GET", "HEAD"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/", dashboard.dashboard_page, methods=["GET"]),
        Route("/dashboard", dashboard.dashboard_page, methods=["GET"]),
        Route("/dashboard/assets/{path:path}", dashboard.dashboard_asset, methods=["GET"]),
        Route("/share/{token}", dashboard.share_page, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            HTTPException: http_exception,
            ApiError: api_error,
            Exception: unexpected_error,
        },
    )
    app.state.runtime = runtime
    app.state.settings = settings
    app.state.projects = ProjectService(runtime)
    app.state.limits = limits
    app.state.operations = operations
    from svc.http.common import TrustedProxies

    app.state.proxies = TrustedProxies(settings.trusted_proxies.split(","))
    app.state.preflights = 0
    app.state.requests = RequestStats()  # counted by svc.http.observe (svcm serve)
    return app


async def openapi(request: Request) -> Response:
    return json_response(openapi_document(request.app.state.settings))


async def http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(NotFound(f"no route for {request.method} {request.url.path}"))
    if exc.status_code == 405:
        return error_response(
            MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
        )
    return error_response(ApiError(str(exc.detail), status=exc.status_code, code="http_error"))


async def api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def unexpected_error(request: Request, exc: Exception) -> Response:
    # the route's template, not the path: a path may hold a share token or a project's id
    route = getattr(request.scope.get("route"), "path", "(no route)")
    log.exception("unhandled error on %s %s", request.method, route)
    # Starlette raises the error again once this answer is sent, and uvicorn then closes the
    # connection: the answer says so.
    return error_response(
        ApiError(
            "an internal error occurred; it has been logged",
            status=500,
            code="internal_error",
            headers={"Connection": "close"},
        )
    )
