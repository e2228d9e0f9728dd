"""The HTTP server's own answers as CONTRACT's JSON errors, for every route.

:class:`JsonErrorProtocol` is :class:`~svc.http.server.deadlines.SlowClientProtocol` whose
answers are ``{"ok": false, "error": {...}}`` with ``connection: close``: a request the parser
refuses (a JSON 400 naming the part), a request line and headers past ``SVC_MAX_HEADER_BYTES``
(431; 414 for the URL alone), an application that fails before answering (500). It is the base
of the fast path for POST /analytics (:mod:`svc.http.server.fast_path`), and the protocol of
``svcm serve`` on its own when that is switched off.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import httptools
import msgspec
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from svc.http.server.deadlines import SlowClientProtocol

log = logging.getLogger(__name__)

_INTERNAL_BODY = msgspec.json.encode(
    {
        "ok": False,
        "error": {
            "code": "internal_error",
            "message": "an internal error occurred; it has been logged",
        },
    }
)


async def send_500(send: Any) -> None:
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
        setattr(cycle, "send_500_response", functools.partial(send_500, cycle.send))  # noqa: B010
        super()._start_asgi_task(cycle, app)
