"""The paths of what browsers load: the script, the dashboard, shared dashboards, this
document."""

from __future__ import annotations

from typing import Any

from svc.http.openapi.parts import _errors, _param
from svc.settings import Settings


def page_paths(settings: Settings) -> dict[str, Any]:
    def html(summary: str, *params: dict[str, Any]) -> dict[str, Any]:
        ok = {"description": "HTML.", "content": {"text/html": {"schema": {"type": "string"}}}}
        return {"get": {"summary": summary, "parameters": list(params), "responses": {"200": ok}}}

    return {
        "/svc/js": {
            "get": {
                "summary": "The browser script",
                "responses": {
                    "200": {
                        "description": "JavaScript.",
                        "content": {"application/javascript": {"schema": {"type": "string"}}},
                    }
                },
            },
            "head": {
                "summary": "The browser script's headers",
                "responses": {"200": {"description": "Headers only."}},
            },
        },
        "/svc/js/{extensions}": {
            "parameters": [
                _param(
                    "extensions",
                    "path",
                    "Comma-separated opt-in extensions, any order: 404, downloads, engagement, "
                    "outbound, vitals (tracker/README.md).",
                    True,
                )
            ],
            "get": {
                "summary": "The browser script with opt-in extensions",
                "responses": {
                    "200": {
                        "description": "JavaScript.",
                        "content": {"application/javascript": {"schema": {"type": "string"}}},
                    },
                    **_errors(settings, 404),
                },
            },
            "head": {
                "summary": "The extended browser script's headers",
                "responses": {"200": {"description": "Headers only."}, **_errors(settings, 404)},
            },
        },
        "/": html("The dashboard (sign in with a secret key or the admin token)"),
        "/dashboard": html("The dashboard"),
        "/dashboard/assets/{path}": {
            "get": {
                "summary": "The dashboard's hashed, immutable assets",
                "parameters": [_param("path", "path", "Asset file.", True)],
                "responses": {"200": {"description": "A file."}, **_errors(settings, 404)},
            }
        },
        "/share/{token}": html(
            "A read-only public dashboard", _param("token", "path", "A share token.", True)
        ),
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1."}},
            }
        },
    }
