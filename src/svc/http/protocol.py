"""POST /analytics answered inside the HTTP protocol (``svcm serve``).

uvicorn turns every request into an ASGI scope (``httptools.parse_url``, an ``asyncio.Event``, a
``RequestResponseCycle``), starts a task that walks the application's ``receive`` and ``send``
messages and writes each response in two writes after checking every header with two regular
expressions: on a single-event POST /analytics this was about half of the event loop's time
(docs/benchmarks.md). :class:`AnalyticsProtocol` is uvicorn's httptools protocol (with the
slow-client deadlines of :mod:`svc.limits.timeouts`) that recognises ``POST /analytics`` (with
or without a query string) in the parser's callbacks and serves it itself:

* the request line and headers are collected by the parser callbacks as uvicorn does, but no
  URL parsing, no cycle, no event: an :class:`Exchange` holds the body as it arrives;
* the same application is called (the limits middleware, then the POST /analytics fast path
  and its ``handle()``), with a small scope of the keys they read, a ``receive`` that returns
  the body at once when it is there (it nearly always is) and a ``send`` that writes the whole
  response (status line, ``date``, headers, body) in one write, byte for byte what uvicorn
  writes;
* pipelined requests are answered in order (reading pauses while one waits, as uvicorn does);
  HTTP/1.0, ``Connection: close``, the body deadline (408) and 413 behave as before.

Anything else (other paths and methods, ``Expect: 100-continue``, upgrades, URLs in absolute
form or percent-encoded, a concurrency limit reached) goes through uvicorn unchanged. The
connection's keep-alive timeout is a number checked by the deadline sweeper instead of a timer
per response.

Off with ``SVC_FAST_INGEST_PROTOCOL=false`` (then uvicorn serves POST /analytics through
the ASGI fast path, as before).

Both ways, the protocol is a :class:`JsonErrorProtocol`: what the protocol answers itself (a
request the parser refuses, a head past ``SVC_MAX_HEADER_BYTES``, an application that fails
before answering) is CONTRACT's JSON error, for every route, with ``connection: close``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from typing import Any

import httptools
import msgspec
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from svc.limits.timeouts import SlowClientProtocol
from svc.settings import Settings

log = logging.getLogger(__name__)

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
        await _send_500(self.send)

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


# errors of the protocol itself -------------------------------------------------------------

_INTERNAL_BODY = msgspec.json.encode(
    {
        "ok": False,
        "error": {
            "code": "internal_error",
            "message": "an internal error occurred; it has been logged",
        },
    }
)


async def _send_500(send: Any) -> None:
    """The JSON 500 of an application that failed before answering; the connection closes."""
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(_INTERNAL_BODY)),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _INTERNAL_BODY, "more_body": False})


class _HeadTooLarge(Exception):
    """Raised in a parser callback: the request line and headers pass ``max_header_bytes``."""

    def __init__(self, url: bool) -> None:
        super().__init__("the URL is too long" if url else "the request headers are too large")
        self.url = url


# words of llhttp's error messages -> the part of the request they name
_PARTS = (
    ("content-length", "Content-Length"),
    ("transfer-encoding", "Transfer-Encoding"),
    ("header", "headers"),
    ("method", "method"),
    ("url", "url"),
    ("version", "version"),
)


def _refusal(exc: BaseException, limit: int) -> tuple[int, str, str, str] | None:
    """(status, code, message, field) of a request the parser refused; None when the cause is
    an error of ours (a callback that failed)."""
    cause: BaseException | None = exc
    if isinstance(exc, httptools.HttpParserCallbackError):
        cause = exc.__context__
    if isinstance(cause, _HeadTooLarge):
        if cause.url:
            return 414, "uri_too_long", f"the URL is longer than {limit} bytes", "url"
        return (
            431,
            "request_header_fields_too_large",
            f"the request line and headers are larger than {limit} bytes",
            "headers",
        )
    if isinstance(cause, UnicodeDecodeError):  # uvicorn reads the path as ASCII
        return 400, "invalid_request", "the URL must be ASCII (percent-encode the rest)", "url"
    if isinstance(cause, httptools.HttpParserError):
        reason = str(cause) or "malformed request"
        low = reason.lower()
        field = next((name for word, name in _PARTS if word in low), "request")
        return 400, "invalid_request", f"the request is not valid HTTP: {reason}", field
    return None


class JsonErrorProtocol(SlowClientProtocol):
    """:class:`SlowClientProtocol` whose own answers are CONTRACT's JSON errors, for every
    route: a request the parser refuses (a bad ``Content-Length``, both ``Content-Length``
    and ``Transfer-Encoding``, a malformed line or header) is a JSON 400 naming the part; a
    request line and headers past ``max_header_bytes`` a JSON 431 (414 for the URL alone),
    read no further; an application that fails before answering a JSON 500. Each closes the
    connection and says so (``connection: close``).

    The bound on the head: the URL is checked as it arrives; the headers (which the parser
    gathers before handing each one over) are counted by the bytes received while the head
    is incomplete, so a head is cut off within one read (at most 256 KiB) of the bound, and
    checked exactly once complete."""

    max_header_bytes: int = 64 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = b""
        self._svc_in_head = True  # the bytes arriving are a request's line and headers
        self._svc_head_bytes = 0

    def data_received(self, data: bytes) -> None:
        # uvicorn's, with the bound on the head and JSON refusals
        self._unset_keepalive_if_required()
        if self._svc_in_head:
            self._svc_head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as exc:
            self._svc_refuse(exc)
            return
        if self._svc_in_head and self._svc_head_bytes > self.max_header_bytes:
            self._svc_refuse(_HeadTooLarge(len(self.url) > self.max_header_bytes))

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > self.max_header_bytes:
            raise _HeadTooLarge(url=True)

    def on_headers_complete(self) -> None:
        self._svc_head_complete()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._svc_in_head = True
        self._svc_head_bytes = 0

    def _svc_head_complete(self) -> None:
        """At the end of a head: checked exactly when the bytes received might pass the
        bound (raised in the parser's callback, answered by ``data_received``)."""
        self._svc_in_head = False
        if self._svc_head_bytes > self.max_header_bytes:
            size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
            if size > self.max_header_bytes:
                raise _HeadTooLarge(url=False)
        self._svc_head_bytes = 0

    def send_400_response(self, msg: str) -> None:
        self._svc_answer(400, "invalid_request", msg, "request")

    def _svc_refuse(self, exc: BaseException) -> None:
        refusal = _refusal(exc, self.max_header_bytes)
        if refusal is None:
            self.logger.error("Exception in the HTTP protocol\n", exc_info=exc.__context__ or exc)
            refusal = (500, "internal_error", "an internal error occurred; it has been logged", "")
        else:
            log.info("refused a request: %s", refusal[2])
        self._svc_answer(*refusal)

    def _svc_answer(self, status: int, code: str, message: str, field: str) -> None:
        """Answer a request the protocol refuses, then close the connection (the parser
        cannot go on)."""
        self._svc_disarm()
        self._svc_in_head = False
        transport = self.transport
        if transport.is_closing():
            return
        cycle: Any = self.cycle
        if cycle is not None and not cycle.response_complete:
            if not cycle.more_body:
                # a request before this one is being answered: close after its answer
                cycle.keep_alive = False
                self.flow.pause_reading()
                return
            if cycle.response_started:
                transport.close()
                return
            cycle.disconnected = True  # the application's answer, if any, goes nowhere
            cycle.message_event.set()
        error: dict[str, str] = {"code": code, "message": message}
        if field:
            error["field"] = field
        body = msgspec.json.encode({"ok": False, "error": error})
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.append(b"%s: %s\r\n" % (name, value))
        content.append(
            b"content-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n" % len(body)
        )
        content.append(body)
        transport.write(b"".join(content))
        transport.close()

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        # uvicorn's own 500 (an application failing before it answers) in the JSON shape
        setattr(cycle, "send_500_response", functools.partial(_send_500, cycle.send))  # noqa: B010
        super()._start_asgi_task(cycle, app)


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


def analytics_protocol(settings: Settings) -> type[HttpToolsProtocol]:
    """The protocol class of ``svcm serve`` when POST /analytics is answered in the
    protocol: with the settings' client deadlines and bound on request heads."""
    return _configured(AnalyticsProtocol, settings)


def json_error_protocol(settings: Settings) -> type[HttpToolsProtocol]:
    """The protocol class of ``svcm serve`` when POST /analytics goes through uvicorn's ASGI
    layer: the same deadlines, bound on heads and JSON errors, without the fast path."""
    return _configured(JsonErrorProtocol, settings)


def _configured(base: type[JsonErrorProtocol], settings: Settings) -> type[HttpToolsProtocol]:
    return type(
        base.__name__,
        (base,),
        {
            "header_timeout": float(settings.client_header_timeout_seconds),
            "body_timeout": float(settings.client_body_timeout_seconds),
            "max_header_bytes": int(settings.max_header_bytes),
        },
    )
