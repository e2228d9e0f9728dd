"""The HTTP server's deadlines for slow clients: uvicorn's protocol with the rule of
:mod:`svc.limits.timeouts` (a deadline for a request's headers and one for its body).

uvicorn closes idle keep-alive connections, but a client that opens a connection and sends
its headers or body a byte at a time holds a connection (and a request task) for as long as
it likes. This protocol gives each request ``header_timeout`` seconds from its first byte (or
from the connection's opening) to finish its headers and ``body_timeout`` seconds after that to
finish its body. Past a deadline the client gets 408 ``request_timeout`` when it had started a
request and no answer has begun, and the connection is closed (counted in
:data:`svc.limits.timeouts.COUNTS`).

A request costs two writes of a number (no timer of its own: a timer per request costs more
than the rest of the check); one timer per event loop sweeps the open connections twice a
second.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from svc.limits.timeouts import COUNTS

log = logging.getLogger(__name__)


def _response_408(seconds: float) -> bytes:
    body = (
        '{"ok":false,"error":{"code":"request_timeout","message":"the request was not '
        f'received within {seconds:g} seconds"}}}}'
    ).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
    )


_LIVE: set[SlowClientProtocol] = set()
_SWEEPERS: dict[asyncio.AbstractEventLoop, asyncio.TimerHandle] = {}
SWEEP_SECONDS = 0.5


def _sweep(loop: asyncio.AbstractEventLoop) -> None:
    """Cut off the connections of this loop past their deadline; again in a moment while any
    connection is open. One timer for all connections: a request only writes a number."""
    now = loop.time()
    live = False
    for protocol in list(_LIVE):
        if protocol.loop is not loop:
            continue
        live = True
        deadline = protocol._svc_deadline
        if deadline and now >= deadline:
            protocol._svc_expired()
        idle = protocol._svc_idle
        if idle and now >= idle:  # a keep-alive timeout kept as a number (fast_path)
            protocol._svc_idle = 0.0
            protocol.timeout_keep_alive_handler()
    if live:
        _SWEEPERS[loop] = loop.call_later(SWEEP_SECONDS, _sweep, loop)
    else:
        _SWEEPERS.pop(loop, None)


class SlowClientProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` with header and body deadlines (class attributes; 0: none),
    enforced within ``SWEEP_SECONDS`` of passing."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._svc_deadline = 0.0  # loop time; 0: none
        self._svc_phase = ""
        self._svc_started = False
        # loop time past which an idle keep-alive connection is closed; 0: none (uvicorn's
        # own timer does it here; a subclass may keep the timeout as this number instead)
        self._svc_idle = 0.0

    def _svc_arm(self, phase: str, seconds: float) -> None:
        self._svc_phase = phase
        self._svc_deadline = self.loop.time() + seconds if seconds > 0 else 0.0

    def _svc_disarm(self) -> None:
        self._svc_deadline = 0.0
        self._svc_phase = ""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._svc_started = False
        self._svc_arm("headers", self.header_timeout)
        _LIVE.add(self)
        if self.loop not in _SWEEPERS:
            _SWEEPERS[self.loop] = self.loop.call_later(SWEEP_SECONDS, _sweep, self.loop)

    def connection_lost(self, exc: Exception | None) -> None:
        _LIVE.discard(self)
        self._svc_disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._svc_started = True
        if self._svc_phase != "headers":
            self._svc_arm("headers", self.header_timeout)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        method = self.scope.get("method", "GET")
        if method in ("GET", "HEAD", "OPTIONS"):
            self._svc_disarm()
        else:
            self._svc_arm("body", self.body_timeout)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._svc_disarm()
        self._svc_started = False

    def _svc_expired(self) -> None:
        phase = self._svc_phase
        self._svc_disarm()
        transport = self.transport
        if transport.is_closing():
            return
        COUNTS[phase] += 1
        cycle = self.cycle if phase == "body" else None
        answer = (phase == "headers" and self._svc_started) or (
            cycle is not None and not cycle.response_started
        )
        if answer:
            seconds = self.header_timeout if phase == "headers" else self.body_timeout
            transport.write(_response_408(seconds))
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the handler's answer, if any, goes nowhere
            cycle.message_event.set()
        log.debug("closed a connection slow to send its request %s", phase)
        transport.close()
