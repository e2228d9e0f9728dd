"""The HTTP server's fast path for POST /analytics (``svcm serve``).

A way in, not a handler: :class:`AnalyticsProtocol` calls the same ASGI application uvicorn
calls (signed edge headers, the limits, then :class:`svc.http.analytics.AnalyticsFastPath` and
its :func:`~svc.http.analytics.handle`, the one handler of POST /analytics), so the answers are
the same either way; only uvicorn's ASGI request cycle is skipped.

uvicorn turns every request into an ASGI scope (``httptools.parse_url``, an ``asyncio.Event``, a
``RequestResponseCycle``), starts a task that walks the application's ``receive`` and ``send``
messages and writes each response in two writes after checking every header with two regular
expressions: on a single-event POST /analytics this was about half of the event loop's time
(docs/benchmarks.md). :class:`AnalyticsProtocol` is the server's
:class:`~svc.http.server.json_errors.JsonErrorProtocol` (uvicorn's httptools protocol with the
slow-client deadlines and JSON errors) that recognises ``POST /analytics`` (with or without a
query string) in the parser's callbacks and serves it itself:

* the request line and headers are collected by the parser callbacks as uvicorn does, but no
  URL parsing, no cycle, no event: an :class:`Exchange` holds the body as it arrives;
* the application is called with a small scope of the keys it reads, a ``receive`` that
  returns the body at once when it is there (it nearly always is) and a ``send`` that writes
  the whole response (status line, ``date``, headers, body) in one write, byte for byte what
  uvicorn writes;
* pipelined requests are answered in order (reading pauses while one waits, as uvicorn does);
  HTTP/1.0, ``Connection: close``, the body deadline (408) and 413 behave as before.

Anything else (other paths and methods, ``Expect: 100-continue``, upgrades, URLs in absolute
form or percent-encoded, a concurrency limit reached) goes through uvicorn unchanged. The
connection's keep-alive timeout is a number checked by the deadline sweeper instead of a timer
per response.

Off with ``SVC_FAST_INGEST_PROTOCOL=false`` (then uvicorn serves POST /analytics through
the ASGI fast path, with the same answers).
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from svc.http.observe import HEADER as _REQUEST_ID
from svc.http.server.deadlines import SlowClientProtocol
from svc.http.server.json_errors import JsonErrorProtocol, send_500

_ASGI = {"version": "3.0", "spec_version": "2.3"}
_PATH = b"/analytics"
_PREFIX = b"/analytics?"
_DISCONNECT = {"type": "http.disconnect"}

# (name, value) of a response header -> (kind, "name: value\r\n"): checked once, not per
# response. Kinds: what uvicorn's ``send`` looks for in a header.
_PLAIN, _LENGTH, _CHUNKED, _CLOSE, _CONNECTION = 0, 1, 2, 3, 4
_LINES: dict[tuple[bytes, bytes], tuple[int, bytes]] = {}
_LINES_MAX = 4096


def _line(name: bytes, value: bytes) -> tuple[int, bytes]:
    pair = (name, value)
    known = _LINES.get(pair)
    if known is not None:
        return known
    if HEADER_RE.search(name):
        raise RuntimeError("Invalid HTTP header name.")
    if HEADER_VALUE_RE.search(value):
        raise RuntimeError("Invalid HTTP header value.")
    name = name.lower()
    kind = _PLAIN
    if name == b"content-length":
        kind = _LENGTH
    elif name == b"transfer-encoding" and value.lower() == b"chunked":
        kind = _CHUNKED
    elif name == b"connection":
        tokens = [token.lower().strip() for token in value.split(b",")]
        kind = _CLOSE if b"close" in tokens else _CONNECTION
    known = (kind, b"%s: %s\r\n" % (name, value))
    if len(_LINES) >= _LINES_MAX:
        _LINES.clear()
    _LINES[pair] = known
    return known


class Exchange:
    """One POST /analytics on a connection: what uvicorn's ``RequestResponseCycle`` is to
    other requests, with the same attribute names (``response_started``,
    ``response_complete``, ``disconnected``, ``keep_alive``, ``more_body``,
    ``message_event.set()``) so that uvicorn's and :class:`SlowClientProtocol`'s connection
    code (pipelining, shutdown, deadlines, a lost connection) treats both alike."""

    __slots__ = (
        "_head",
        "_ready",
        "_waiter",
        "chunked",
        "chunks",
        "disconnected",
        "expected",
        "keep_alive",
        "more_body",
        "protocol",
        "response_complete",
        "response_started",
        "scope",
        "size",
    )

    def __init__(self, protocol: AnalyticsProtocol, scope: dict[str, Any], keep_alive: bool):
        self.protocol = protocol
        self.scope = scope
        self.keep_alive = keep_alive
        self.chunks: list[bytes] = []
        self.size = 0  # bytes received and not yet handed to the application
        self.more_body = True
        self.disconnected = False
        self.response_started = False
        self.response_complete = False
        self.chunked: bool | None = None
        self.expected = 0
        self._head = b""
        self._ready = False  # something arrived (body, end, disconnect) since the last receive
        self._waiter: asyncio.Future[None] | None = None

    # uvicorn's connection code calls ``cycle.message_event.set()``
    @property
    def message_event(self) -> Exchange:
        return self

    def set(self) -> None:
        self._ready = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def run(self, app: Any) -> None:
        """Run the application on this request (what uvicorn's ``run_asgi`` does)."""
        protocol = self.protocol
        try:
            result = await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            protocol.logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self.send_500_response()
            else:
                self._abort()
        else:
            if result is not None:
                protocol.logger.error(
                    "ASGI callable should return None, but returned '%s'.", result
                )
                self._abort()
            elif not self.response_started and not self.disconnected:
                protocol.logger.error("ASGI callable returned without starting response.")
                await self.send_500_response()
            elif not self.response_complete and not self.disconnected:
                protocol.logger.error("ASGI callable returned without completing response.")
                self._abort()

    def _abort(self) -> None:
        transport = self.protocol.transport
        if self._head:  # what uvicorn would have written already
            transport.write(self._head)
            self._head = b""
        transport.close()

    async def send_500_response(self) -> None:
        await send_500(self.send)

    async def receive(self) -> dict[str, Any]:
        if not self.disconnected and not self.response_complete:
            protocol = self.protocol
            protocol.flow.resume_reading()
            if not self._ready:
                waiter = self._waiter = protocol.loop.create_future()
                await waiter
            self._ready = False
        if self.disconnected or self.response_complete:
            return _DISCONNECT
        chunks = self.chunks
        body = b"".join(chunks) if chunks else b""
        if chunks:
            self.chunks = []
            self.size = 0
        return {"type": "http.request", "body": body, "more_body": self.more_body}

    async def send(self, message: dict[str, Any]) -> None:
        protocol = self.protocol
        if protocol.flow.write_paused and not self.disconnected:
            await protocol.flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if message["type"] != "http.response.start":
                raise RuntimeError(
                    f"Expected ASGI message 'http.response.start', but got '{message['type']}'."
                )
            self.response_started = True
            self._start(message["status"], message.get("headers", ()))
            return
        if self.response_complete:
            raise RuntimeError(
                f"Unexpected ASGI message '{message['type']}' sent, after response already "
                "completed."
            )
        if message["type"] != "http.response.body":
            raise RuntimeError(
                f"Expected ASGI message 'http.response.body', but got '{message['type']}'."
            )
        body: bytes = message.get("body", b"")
        more_body = message.get("more_body", False)
        if self.chunked:
            out = [b"%x\r\n" % len(body), body, b"\r\n"] if body else []
            if not more_body:
                out.append(b"0\r\n\r\n")
            data = b"".join(out)
        else:
            if len(body) > self.expected:
                raise RuntimeError("Response content longer than Content-Length")
            self.expected -= len(body)
            data = body
        if self._head:  # the status line and headers go out with the (first) body
            data = self._head + data
            self._head = b""
        transport = protocol.transport
        transport.write(data)
        if not more_body:
            if self.expected != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            self.response_complete = True
            self.set()
            if not self.keep_alive:
                transport.close()
            protocol.on_response_complete()

    def _start(self, status: int, headers: Any) -> None:
        """The status line and headers, as uvicorn's ``send`` writes them (kept until the
        body, to go out in one write)."""
        protocol = self.protocol
        if protocol.access_log:
            scope = self.scope
            protocol.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(scope),  # type: ignore[arg-type]
                scope["method"],
                get_path_with_query_string(scope),  # type: ignore[arg-type]
                scope["http_version"],
                status,
            )
        content = [STATUS_LINE[status]]
        close = False
        for name, value in protocol.server_state.default_headers:
            kind, line = _line(name, value)
            content.append(line)
            if kind:
                close = self._special(kind, value) or close
        for name, value in headers:
            if name is _REQUEST_ID:  # svc.http.observe's, checked there; new every time, so
                content.append(b"x-request-id: %s\r\n" % value)  # not for _line's cache
                continue
            kind, line = _line(name, value)
            content.append(line)
            if kind:
                close = self._special(kind, value) or close
        if not self.keep_alive and not close:
            content.append(b"connection: close\r\n")
        if self.chunked is None and status not in (204, 304):
            self.chunked = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        self._head = b"".join(content)

    def _special(self, kind: int, value: bytes) -> bool:
        if kind == _LENGTH:
            if self.chunked is None:
                self.expected = int(value.decode())
                self.chunked = False
        elif kind == _CHUNKED:
            self.expected = 0
            self.chunked = True
        elif kind == _CLOSE:
            self.keep_alive = False
            return True
        return False


class AnalyticsProtocol(JsonErrorProtocol):
    """:class:`JsonErrorProtocol` that serves ``POST /analytics`` without uvicorn's ASGI
    layer (see the module's documentation)."""

    timeout_keep_alive: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._app_state = self.app_state

    # the request line and headers ---------------------------------------------------------

    def on_message_begin(self) -> None:
        # uvicorn builds the scope here; it is built in on_headers_complete, and only for a
        # request that uvicorn serves.
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._svc_started = True
        if self._svc_phase != "headers":
            self._svc_arm("headers", self.header_timeout)

    def on_headers_complete(self) -> None:
        self._svc_head_complete()
        url = self.url
        parser = self.parser
        if url == _PATH:
            query = b""
        elif url.startswith(_PREFIX):
            query = url[11:]
            # what httptools.parse_url reads differently (a fragment) or refuses: uvicorn's
            if b"#" in query or not query.isascii():
                query = None
        else:
            query = None
        limit = self.limit_concurrency
        if (
            query is None
            or parser.get_method() != b"POST"
            or self.expect_100_continue
            or parser.should_upgrade()
            or self.root_path
            or (limit is not None and (len(self.tasks) >= limit or len(self.connections) >= limit))
        ):
            self._uvicorn_headers_complete()
            return
        http_version = parser.get_http_version()
        scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": http_version,
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
            "root_path": "",
            "headers": self.headers,
            "state": self._app_state.copy(),
            "method": "POST",
            "path": "/analytics",
            "raw_path": _PATH,
            "query_string": query,
        }
        exchange = Exchange(self, scope, http_version != "1.0" and parser.should_keep_alive())
        self._svc_arm("body", self.body_timeout)
        existing = self.cycle
        self.cycle = exchange  # type: ignore[assignment]
        if existing is None or existing.response_complete:
            self._start_asgi_task(exchange, self.app)  # type: ignore[arg-type]
        else:  # pipelined: answered after the requests before it
            self.flow.pause_reading()
            self.pipeline.appendleft((exchange, self.app))  # type: ignore[arg-type]

    def _uvicorn_headers_complete(self) -> None:
        """uvicorn's path: the scope its ``on_message_begin`` would have built, then its
        ``on_headers_complete`` (and the deadlines')."""
        url, headers, expect = self.url, self.headers, self.expect_100_continue
        HttpToolsProtocol.on_message_begin(self)
        self.url, self.headers, self.expect_100_continue = url, headers, expect
        self.scope["headers"] = headers
        SlowClientProtocol.on_headers_complete(self)

    # the body ---------------------------------------------------------------------------

    def on_body(self, body: bytes) -> None:
        exchange: Any = self.cycle
        if type(exchange) is not Exchange:
            super().on_body(body)
            return
        if exchange.response_complete:  # answered already (413, 429, ...): dropped
            return
        exchange.chunks.append(body)
        exchange.size += len(body)
        if exchange.size > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        exchange.set()

    def on_message_complete(self) -> None:
        exchange: Any = self.cycle
        if type(exchange) is not Exchange:
            super().on_message_complete()
            return
        if not exchange.response_complete:
            exchange.more_body = False
            exchange.set()
        self._svc_disarm()
        self._svc_started = False
        self._svc_in_head = True
        self._svc_head_bytes = 0

    # running and finishing ----------------------------------------------------------------

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if type(cycle) is not Exchange:
            super()._start_asgi_task(cycle, app)
            return
        if self.config.reset_contextvars:
            task = self.loop.create_task(cycle.run(app), context=contextvars.Context())
        else:
            task = self.loop.create_task(cycle.run(app))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def on_response_complete(self) -> None:
        # uvicorn's, with the keep-alive timeout as a number the sweeper checks instead of a
        # timer armed (and cancelled) per response
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._svc_idle = 0.0
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            self._svc_idle = self.loop.time() + self.timeout_keep_alive

    def _unset_keepalive_if_required(self) -> None:
        self._svc_idle = 0.0
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
