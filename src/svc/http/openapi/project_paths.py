"""The paths of projects, their keys and their edge secrets: /projects and its
sub-paths."""

from __future__ import annotations

from typing import Any

from svc.http.openapi.base import JSON
from svc.http.openapi.parts import _errors, _json, _param, _ref
from svc.settings import Settings

PROJECT_ID = _param("project_id", "path", "Project id, `svc_proj_<name>`.", True)
KEY_ID = _param("key_id", "path", "Key id, `key_...` (not the key itself).", True)
EDGE_SECRET_ID = _param(
    "secret_id", "path", "Edge secret id, `<id>` of `svc_edge_<id>_<random>`.", True
)


def project_paths(settings: Settings, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    def op(summary: str, responses: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"summary": summary, "security": secured, **more, "responses": responses}

    def body(name: str, required: bool = True) -> dict[str, Any]:
        return {"required": required, "content": {JSON: {"schema": _ref(name)}}}

    return {
        "/projects": {
            "post": op(
                "Create a project and its public and secret keys (admin token)",
                {
                    "201": _json(
                        "Project", "The project, with `keys` {public, secret} in clear, once."
                    ),
                    **_errors(settings, 400, 401, 403, 409),
                },
                requestBody=body("ProjectInput"),
            ),
            "get": op(
                "List projects (admin: all; secret key: its own; a session: those it reaches, "
                "settings only where it may manage)",
                {"200": _json("Projects", "The projects."), **_errors(settings, 401, 403)},
            ),
        },
        "/projects/{project_id}": {
            "parameters": [PROJECT_ID],
            "get": op(
                "One project with its keys and this month's usage",
                {"200": _json("Project", "The project."), **_errors(settings, 401, 403, 404)},
            ),
            "patch": op(
                "Change timezone, domains, options (or plan, admin only)",
                {
                    "200": _json("Project", "The changed project."),
                    **_errors(settings, 400, 401, 403, 404),
                },
                requestBody=body("ProjectInput"),
            ),
            "delete": op(
                "Delete a project, its keys and events (admin token)",
                {"200": {"description": "Deleted."}, **_errors(settings, 401, 403, 404)},
            ),
        },
        "/projects/{project_id}/keys": {
            "parameters": [PROJECT_ID],
            "get": op(
                "List keys (never clear values)",
                {"200": _json("Keys", "The keys."), **_errors(settings, 401, 403, 404)},
            ),
            "post": op(
                "Create a key (public, secret or share)",
                {
                    "201": _json("Key", "The key, with `key` in clear, once."),
                    **_errors(settings, 400, 401, 403, 404),
                },
                requestBody=body("KeyInput", required=False),
            ),
        },
        "/projects/{project_id}/keys/{key_id}": {
            "parameters": [PROJECT_ID, KEY_ID],
            "delete": op(
                "Revoke a key",
                {"200": _json("Key", "The revoked key."), **_errors(settings, 401, 403, 404)},
            ),
        },
        "/projects/{project_id}/keys/{key_id}/rotate": {
            "parameters": [PROJECT_ID, KEY_ID],
            "post": op(
                "Replace a key: the new one is shown once, the old one is revoked",
                {
                    "201": _json("Key", "The new key, with `key` in clear and `replaces`."),
                    **_errors(settings, 401, 403, 404, 409),
                },
            ),
        },
        "/projects/{project_id}/edge-secrets": {
            "parameters": [PROJECT_ID],
            "get": op(
                "List the project's edge secrets (never their values)",
                {
                    "200": _json("EdgeSecrets", "The edge secrets."),
                    **_errors(settings, 401, 403, 404),
                },
            ),
            "post": op(
                "Register a new edge secret that signs for this project alone (docs/edge.md)",
                {
                    "201": _json("EdgeSecret", "The secret, with `secret` in clear, once."),
                    **_errors(settings, 400, 401, 403, 404),
                },
                requestBody=body("EdgeSecretInput", required=False),
            ),
        },
        "/projects/{project_id}/edge-secrets/{secret_id}": {
            "parameters": [PROJECT_ID, EDGE_SECRET_ID],
            "delete": op(
                "Revoke an edge secret: what it signs is ignored from then on",
                {"200": {"description": "Revoked."}, **_errors(settings, 401, 403, 404)},
            ),
        },
    }
