"""Shared by the client's tests against the real server: recording and response-losing
httpx transports, and small waits. (The scripted stand-in for the service is in
clients/python/tests/scripted.py, with the client's own tests.)"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from svc_client import SvcError

BROWSER_UA = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)


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
