"""What every handler shares: JSON responses, credentials, the client address, body limits."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from svc.auth import Principal
from svc.errors import ApiError, InvalidRequest, PayloadTooLarge
from svc.runtime import Runtime

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()

CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Expose-Headers": "Retry-After, X-Svc-Dropped, RateLimit-Limit, "
    "RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, Svc-Quota-Warning, X-Request-Id",
    "Access-Control-Max-Age": "86400",
}


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return _encoder.encode(content)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


def error_response(exc: ApiError, cors: bool = True) -> Response:
    headers = dict(exc.headers)
    if cors:
        headers.update(CORS_HEADERS)
    return json_response(exc.body(), exc.status, headers)


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def runtime_of_app(app: Any) -> Runtime:
    runtime: Runtime = app.state.runtime
    return runtime


to_thread = asyncio.to_thread


async def resolve_token(runtime: Runtime, token: str | None) -> Principal:
    """The principal of a token: from the key cache at once (no thread hop), else from the
    metadata store in a worker thread."""
    auth = runtime.authenticator
    if token is not None:
        principal = auth.resolve_cached(token)
        if principal is not None:
            return principal
    return await asyncio.to_thread(auth.resolve, token)


async def principal_of(request: Request) -> Principal:
    """The caller, from ``Authorization: Bearer``; 401 without a valid credential."""
    runtime = runtime_of(request)
    return await resolve_token(
        runtime, runtime.authenticator.bearer(request.headers.get("authorization"))
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The body, read with a hard cap: 413 as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise PayloadTooLarge(f"the body is larger than {limit} bytes")
        except ValueError as exc:
            raise InvalidRequest("bad Content-Length header", field="Content-Length") from exc
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request, limit: int = 64 * 1024) -> dict[str, Any]:
    data = await read_body(request, limit)
    if not data.strip():
        return {}
    try:
        doc = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:  # too deep: 400 (docs/limits.md)
        raise InvalidRequest(f"the body is not valid JSON: {exc}", field="body") from exc
    except UnicodeDecodeError as exc:  # invalid UTF-8 inside a string
        raise InvalidRequest("the body holds invalid UTF-8", field="body") from exc
    if not isinstance(doc, dict):
        raise InvalidRequest("the body must be a JSON object", field="body")
    return doc


class TrustedProxies:
    """Decides the client address: the peer, or X-Forwarded-For when the peer is trusted."""

    def __init__(self, cidrs: Sequence[str]) -> None:
        self.networks = [ipaddress.ip_network(c.strip(), strict=False) for c in cidrs if c.strip()]

    def client_address(self, peer: str, forwarded_for: str | None) -> str:
        if not self.networks or not forwarded_for or not self.trusts(peer):
            return peer
        # The right-most address that is not a trusted proxy is the client.
        for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
            if not self.trusts(hop):
                return hop
        return peer

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self.networks)
