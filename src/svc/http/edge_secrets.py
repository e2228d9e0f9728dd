"""/projects/{id}/edge-secrets: register, list and revoke the secrets an edge signs with.

Admin token, or the project's own secret key (scope ``manage``): a key of another project, a
public key or a share key gets 403. A secret registered here signs for that project alone
(svc.http.edge_auth); it is shown once, in the answer that creates it. Registration and
revocation take effect on this node at once, on other nodes of the same metadata store
within svc.http.edge_keyring.STORED_SECONDS.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from svc.errors import InvalidRequest
from svc.http.common import json_body, json_response, principal_of
from svc.meta import edge_secrets
from svc.meta.store import MetaStore


def _meta(request: Request) -> MetaStore:
    meta: MetaStore = request.app.state.runtime.meta
    return meta


async def _allowed(request: Request) -> str:
    project_id: str = request.path_params["project_id"]
    principal = await principal_of(request)
    principal.require("manage", project_id)
    return project_id


def _now_known(request: Request) -> None:
    """Let this node's edge check (when it runs one) see the change at once."""
    secrets = getattr(request.app.state, "edge_secrets", None)
    if secrets is not None:
        secrets.load_stored()


async def create_edge_secret(request: Request) -> Response:
    project_id = await _allowed(request)
    body = await json_body(request)
    unknown = sorted(set(body) - {"provider"})
    if unknown:
        raise InvalidRequest(f"unknown field `{unknown[0]}`; allowed: provider", field=unknown[0])
    provider = body.get("provider", "")
    if provider not in edge_secrets.PROVIDERS:
        raise InvalidRequest(
            "`provider` must be one of " + ", ".join(p for p in edge_secrets.PROVIDERS if p),
            field="provider",
        )

    def work() -> dict[str, Any]:
        record = edge_secrets.create(_meta(request), project_id, provider)
        _now_known(request)
        return {**record.to_json(), "secret": record.secret}

    created = await asyncio.to_thread(work)
    return json_response(created, 201)


async def list_edge_secrets(request: Request) -> Response:
    project_id = await _allowed(request)
    records = await asyncio.to_thread(edge_secrets.list_for, _meta(request), project_id)
    return json_response({"edgeSecrets": [r.to_json() for r in records]})


async def revoke_edge_secret(request: Request) -> Response:
    project_id = await _allowed(request)
    secret_id: str = request.path_params["secret_id"]

    def work() -> dict[str, Any]:
        record = edge_secrets.revoke(_meta(request), project_id, secret_id)
        _now_known(request)
        return {"ok": True, "revoked": record.id}

    revoked = await asyncio.to_thread(work)
    return json_response(revoked)
