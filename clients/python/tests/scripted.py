"""Shared by the client's tests: a scripted stand-in for the service (an httpx
MockTransport), the service's answers, and small waits. Also where the repository is."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from svc_client import SvcError

#: The client's folder (clients/python) and the TypeScript client's beside it (clients/js),
#: present in a checkout of the repository.
CLIENT = Path(__file__).resolve().parents[1]
JS = CLIENT.parent / "js"

#: A host that resolves nowhere: requests go to a scripted transport.
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
