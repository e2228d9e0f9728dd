"""Shared by the client tests: scripted and recording httpx transports, and small waits."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from svc.client import SvcError

ENDPOINT = "http://svc.test/analytics"
UUID_V4 = r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
BROWSER_UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


@dataclass
class Call:
    request: httpx.Request
    body: bytes
    events: list[dict[str, Any]]
    at: float


def ok(call: Call, **extra: Any) -> httpx.Response:
    """The service's success answer for a batch."""
    return httpx.Response(
        200, json={"ok": True, "ts": int(time.time() * 1000), "accepted": len(call.events), **extra}
    )


def error(status: int, code: str, message: str = "", headers: dict[str, str] | None = None):
    """The service's error answer."""
    return httpx.Response(
        status,
        json={"ok": False, "error": {"code": code, "message": message or code}},
        headers=headers,
    )


Responder = Callable[[Call, int], "httpx.Response | Exception"]


class Script:
    """An ``httpx.MockTransport`` handler: ``responder(call, index)`` returns a response or an
    exception to raise; by default every batch is accepted. Calls are kept in ``calls``."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.calls: list[Call] = []
        self.responder: Responder = responder or (lambda call, i: ok(call))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        call = Call(request, body, json.loads(body)["events"], time.monotonic())
        self.calls.append(call)
        r = self.responder(call, len(self.calls) - 1)
        if isinstance(r, Exception):
            raise r
        return r

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [e for c in self.calls for e in c.events]


class Errors(list[SvcError]):
    """Collects what the client reports to ``on_error``."""

    def __call__(self, error: SvcError) -> None:
        self.append(error)


def until(cond: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def batch_sizes(requests: list[httpx.Request]) -> list[int]:
    return [len(json.loads(r.content)["events"]) for r in requests]


class Recording(httpx.HTTPTransport):
    """Sends to the real server and records every request."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return super().handle_request(request)


class LosesFirstResponse(httpx.HTTPTransport):
    """Sends to the real server, but the first response never reaches the client: the
    connection drops after the service stored the batch (the client must retry)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.Request] = []
        self.responses: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = super().handle_request(request)
        response.read()
        self.responses.append(response.json())
        if len(self.requests) == 1:
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response


class AsyncLosesFirstResponse(httpx.AsyncHTTPTransport):
    """:class:`LosesFirstResponse` for the async client."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.Request] = []
        self.responses: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = await super().handle_async_request(request)
        await response.aread()
        self.responses.append(response.json())
        if len(self.requests) == 1:
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response
