"""The HTTP protocol's own answers (issue 16, items 7 and 11): a request the parser refuses
(a bad Content-Length, both Content-Length and Transfer-Encoding, a malformed header), a URL
or headers past ``SVC_MAX_HEADER_BYTES`` (an 8 MB header was read whole) and a 500 all answer
CONTRACT's JSON error and say ``connection: close`` when they close the connection; with the
fast ingestion protocol on and off."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.server import ServerState

from svc.app import unexpected_error
from svc.http.server import analytics_protocol, json_error_protocol
from svc.settings import Settings
from tests.support import Server


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose POST /analytics goes through uvicorn (the fast protocol off)."""
    data = tmp_path_factory.mktemp("hostile-plain") / "data"
    srv = Server(data, env={"SVC_FAST_INGEST_PROTOCOL": "false"}).start()
    yield srv
    srv.stop()


def exchange(port: int, data: bytes, idle: float = 2.0) -> tuple[bytes, float]:
    """Send ``data`` (as much as the server takes) and read until it closes the connection:
    the answer and how long it took."""
    started = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    out = b""
    try:
        # refused before its end: the answer is still to read
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        sock.settimeout(idle)
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
    finally:
        sock.close()
    return out, time.monotonic() - started


def json_answer(answer: bytes, status: int) -> dict[str, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer[:300]
    headers = head.lower()
    assert b"content-type: application/json" in headers, head
    assert b"connection: close" in headers, head
    length = int(re.search(rb"content-length: (\d+)", headers).group(1))  # type: ignore[union-attr]
    doc: dict[str, Any] = json.loads(body[:length])
    assert doc["ok"] is False and doc["error"]["code"] and doc["error"]["message"], doc
    return doc


@pytest.mark.parametrize("mode", ["on", "off"])
def test_protocol_errors_are_json(mode: str, server: Server, plain_server: Server) -> None:
    srv = server if mode == "on" else plain_server
    for path in (b"/analytics", b"/health", b"/projects"):
        method = b"GET" if path == b"/health" else b"POST"
        head = method + b" " + path + b" HTTP/1.1\r\nHost: x\r\n"
        answer, _ = exchange(srv.port, head + b"Content-Length: x1\r\n\r\n{}")
        assert json_answer(answer, 400)["error"]["field"] == "Content-Length"
        both = b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        answer, _ = exchange(srv.port, head + both)
        assert json_answer(answer, 400)["error"]["field"] in ("Content-Length", "Transfer-Encoding")
    answer, _ = exchange(srv.port, b"GET /health HTTP/1.1\r\nHo st: x\r\n\r\n")
    assert json_answer(answer, 400)["error"]["field"] == "headers"
    # a 4 MB URL: 414, refused once past the bound, not read to its end
    url = b"/analytics?key=" + b"a" * (4 * 1024 * 1024)
    answer, took = exchange(srv.port, b"POST " + url + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert json_answer(answer, 414)["error"]["field"] == "url"
    # an 8 MB header: 431, on every route
    for path in (b"/analytics", b"/health"):
        big = b"X-Big: " + b"a" * (8 * 1024 * 1024) + b"\r\n"
        answer, took = exchange(
            srv.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n"
        )
        assert json_answer(answer, 431)["error"]["field"] == "headers"
        assert took < 5
    # many small headers past the bound, all in one write, alike
    many = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(1000))
    answer, _ = exchange(srv.port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    json_answer(answer, 431)
    # within the bound: served as before
    fine = b"X-Fine: " + b"a" * 30_000 + b"\r\n"
    answer, _ = exchange(
        srv.port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + fine + b"Connection: close\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert "Traceback" not in srv.log()


def test_the_header_bound_is_a_setting() -> None:
    assert Settings().max_header_bytes == 64 * 1024
    small = Settings.from_env({"SVC_MAX_HEADER_BYTES": "1000"})
    assert analytics_protocol(small).max_header_bytes == 1000  # type: ignore[attr-defined]
    assert json_error_protocol(small).max_header_bytes == 1000  # type: ignore[attr-defined]


# a 500 says that it closes the connection -------------------------------------------------


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.out = b""
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out += bytes(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.1", 5555), "sockname": ("127.0.0.1", 8080)}.get(name, default)


async def serve_once(app: Any, request: bytes, fast: bool) -> Transport:
    config = uvicorn.Config(app, http="httptools", lifespan="off", access_log=False)
    config.load()
    cls = analytics_protocol(Settings()) if fast else json_error_protocol(Settings())
    state = ServerState()
    protocol = cls(
        config=config, server_state=state, app_state={}, _loop=asyncio.get_running_loop()
    )  # type: ignore[call-arg]
    transport = Transport()
    protocol.connection_made(transport)
    protocol.data_received(request)
    for _ in range(50):
        await asyncio.sleep(0.01)
        if transport.closed:
            break
    protocol.connection_lost(None)
    return transport


def test_a_500_closes_the_connection_and_says_so() -> None:
    async def boom(request: Request) -> Response:
        raise RuntimeError("boom")

    app = Starlette(
        routes=[Route("/boom", boom, methods=["GET", "POST"])],
        exception_handlers={Exception: unexpected_error},
    )

    async def raw_failing(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raise RuntimeError("boom")

    async def main() -> None:
        # the application's own 500 (Starlette raises again after it, uvicorn closes)
        for fast in (True, False):
            transport = await serve_once(app, b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n", fast)
            doc = json_answer(transport.out, 500)
            assert doc["error"]["code"] == "internal_error"
            assert transport.closed
        # an application failing before it answers: the protocol's 500, in the JSON shape,
        # on POST /analytics (answered in the protocol) and any other route (uvicorn's cycle)
        for fast in (True, False):
            for request in (
                b"POST /analytics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n",
            ):
                transport = await serve_once(raw_failing, request, fast)
                assert json_answer(transport.out, 500)["error"]["code"] == "internal_error"
                assert transport.closed

    asyncio.run(main())
