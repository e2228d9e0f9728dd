"""The document itself: its info, components and every path, gathered from the path
tables of this package and of the other ``*_doc`` modules of svc.http."""

from __future__ import annotations

from typing import Any

from svc import __version__
from svc.http.accounts_paths_doc import account_paths
from svc.http.dropped_doc import dropped_paths
from svc.http.mail import openapi_paths as mail_paths
from svc.http.openapi.ingestion_paths import analytics_path
from svc.http.openapi.page_paths import page_paths
from svc.http.openapi.parts import RANGE_PARAMS, _busy, _busy_too, _errors, _json, _param, _ref
from svc.http.openapi.project_paths import project_paths
from svc.http.openapi.report_paths import report_paths
from svc.http.openapi.schemas import schemas
from svc.http.overview_doc import overview_paths
from svc.http.saved_doc import saved_paths
from svc.http.sso_doc import sso_paths
from svc.settings import Settings


def _paths(settings: Settings) -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"bearer": []}]
    return {
        "/analytics": analytics_path(settings, secured),
        **report_paths(settings, secured),
        **_busy_too(overview_paths(settings, secured, (_errors, _json, _param))),  # overview_doc
        "/export": {
            "get": {
                "summary": "Raw events of a range as NDJSON, CSV or Parquet",
                "security": secured,
                "parameters": [
                    *RANGE_PARAMS,
                    _param("format", "query", "ndjson (default), csv or parquet."),
                ],
                "responses": {
                    "200": {
                        "description": "The events, oldest first.",
                        "content": {
                            "application/x-ndjson": {"schema": {"type": "string"}},
                            "text/csv": {"schema": {"type": "string"}},
                            "application/vnd.apache.parquet": {
                                "schema": {"type": "string", "format": "binary"}
                            },
                        },
                    },
                    **_errors(settings, 400, 401, 403, 404),
                    **_busy(),
                },
            }
        },
        "/health": {
            "get": {
                "summary": "Readiness and diagnostics (no credential)",
                "responses": {
                    "200": _json("Health", "Accepting events."),
                    "503": _json("Health", "Cannot accept events."),
                },
            }
        },
        "/internal/backup": {  # svc.http.backup; docs/operations.md, Backups and restore
            "post": {
                "summary": "Take a backup (admin token; body: to, keep?, full?)",
                "security": secured,
                "responses": {
                    "201": {"description": "The backup's manifest."},
                    **_errors(settings, 400, 401, 403, 409),
                },
            },
            "get": {
                "summary": "List the backups in `to` (admin token)",
                "security": secured,
                "responses": {
                    "200": {"description": "The backups' manifests."},
                    **_errors(settings, 400, 401, 403),
                },
            },
        },
        "/internal/lake": {  # svc.http.lake; docs/operations.md, Raw-event lake
            "post": {
                "summary": "Write a finished UTC day to the raw-event lake now (admin token; "
                "body: day, project?)",
                "security": secured,
                "responses": {
                    "200": {"description": "The manifests of the day files written."},
                    **_errors(settings, 400, 401, 403, 409, 503),
                },
            },
        },
        "/internal/nodes": {  # svc.http.nodes; docs/operations.md, Several nodes
            "get": {
                "summary": "The nodes' watermark rows (admin token)",
                "security": secured,
                "responses": {
                    "200": {"description": "`node` (the answering one), `silentSeconds`, `nodes`."},
                    **_errors(settings, 401, 403),
                },
            },
        },
        "/internal/nodes/{node}": {
            "delete": {
                "summary": "Delete the watermark row of a node removed without stopping "
                "(admin token; 409 for the answering node and, without force=true, for a "
                "live one)",
                "security": secured,
                "parameters": [
                    _param("node", "path", "The node's id (`SVC_NODE_ID`).", True),
                    _param(
                        "force",
                        "query",
                        "Delete a row written within `silentSeconds` too.",
                        type="boolean",
                    ),
                ],
                "responses": {
                    "200": {"description": "`deleted`: the row."},
                    **_errors(settings, 400, 401, 403, 404, 409),
                },
            },
        },
        **project_paths(settings, secured),
        **dropped_paths(settings, secured, (_errors, _json, _param)),  # dropped_doc
        **mail_paths(settings, secured, _errors, _param),  # svc.http.mail
        **account_paths(settings, secured, (_errors, _json, _param, _ref)),  # accounts_paths_doc
        **saved_paths(settings, secured, (_errors, _json, _param)),  # saved_doc
        **sso_paths(settings, (_errors, _json, _param, _ref)),  # sso_doc
        **page_paths(settings),
        "/internal/metrics": {
            "get": {
                "summary": "The service's figures for Prometheus (Bearer "
                "SVC_INTERNAL_METRICS_TOKEN; 404 when that is not set); docs/operations.md",
                "responses": {
                    "200": {
                        "description": "Prometheus text exposition (OpenMetrics on request).",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors(settings, 401, 404),
                },
            }
        },
    }


def openapi_document(settings: Settings | None = None) -> dict[str, Any]:
    """The document for a service run with ``settings`` (its body and batch limits)."""
    settings = settings or Settings()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "svc",
            "version": __version__,
            "description": "Cookie-free web analytics. Every error is "
            '{"ok": false, "error": {"code", "message"}}. See docs/api.md.',
        },
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "svc_live_... key or svc_admin_... token",
                },
                "queryKey": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "key",
                    "description": "Public key, browsers only",
                },
            },
        },
        "paths": _paths(settings),
    }
