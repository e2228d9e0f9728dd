"""The same POST /analytics-like handler written three ways, for bench/framework_overhead.py.

Each one: checks the bearer key against a dict, reads the body, decodes the JSON event,
checks ``event`` and ``url``, and answers ``{"ok": true, "ts": <ms>}`` with the CORS headers
svc sends. No storage: this measures what the HTTP server and the framework cost.
"""

import time
from typing import Any

import msgspec

KEYS = {"svc_live_benchbenchbenchbenchbench12": "svc_proj_bench"}
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
CORS = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"Retry-After, X-Svc-Dropped"),
]


def _check(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("event"), str)
        and isinstance(doc.get("url"), str)
    )


# raw ASGI ----------------------------------------------------------------------------------


async def raw_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] != "/analytics" or scope["method"] != "POST":
        await _send(send, 404, b'{"ok":false}')
        return
    auth = b""
    for name, value in scope["headers"]:
        if name == b"authorization":
            auth = value
            break
    if KEYS.get(auth[7:].decode()) is None:
        await _send(send, 401, b'{"ok":false}')
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        doc = _decoder.decode(body)
    except msgspec.DecodeError:
        doc = None
    if not _check(doc):
        await _send(send, 400, b'{"ok":false}')
        return
    await _send(send, 200, _encoder.encode({"ok": True, "ts": time.time_ns() // 1_000_000}))


async def _send(send: Any, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *CORS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# Starlette ---------------------------------------------------------------------------------


def _starlette_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    cors = {k.decode(): v.decode() for k, v in CORS}

    def reply(status: int, body: Any) -> Response:
        return Response(_encoder.encode(body), status, cors, media_type="application/json")

    async def analytics(request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        if KEYS.get(auth[7:]) is None:
            return reply(401, {"ok": False})
        body = await request.body()
        try:
            doc = _decoder.decode(body)
        except msgspec.DecodeError:
            doc = None
        if not _check(doc):
            return reply(400, {"ok": False})
        return reply(200, {"ok": True, "ts": time.time_ns() // 1_000_000})

    return Starlette(routes=[Route("/analytics", analytics, methods=["POST"])])


starlette_app = _starlette_app()


# FastAPI + pydantic (optional) -------------------------------------------------------------


def _fastapi_app() -> Any:
    from fastapi import FastAPI, Header, HTTPException
    from fastapi.responses import Response
    from pydantic import BaseModel

    class Event(BaseModel):
        event: str
        url: str
        sessionId: str | None = None
        referrer: str | None = None
        properties: dict[str, str | int | float | bool | None] | None = None

    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    cors = {k.decode(): v.decode() for k, v in CORS}

    @app.post("/analytics")
    async def analytics(event: Event, authorization: str = Header("")) -> Response:
        if KEYS.get(authorization[7:]) is None:
            raise HTTPException(401)
        body = _encoder.encode({"ok": True, "ts": time.time_ns() // 1_000_000})
        return Response(body, 200, cors, media_type="application/json")

    return app


try:
    fastapi_app = _fastapi_app()
except ImportError:  # FastAPI is not a dependency of svc
    fastapi_app = None
