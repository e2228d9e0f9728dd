"""POST /analytics answered inside the HTTP protocol (svc.http.server.fast_path).

Against real servers: the same raw requests to one server with the protocol on and one with it
off give the same bytes (status, headers, body; the date and timestamps aside); pipelining,
keep-alive, bodies in pieces, slow clients, big bodies and the routes it leaves to uvicorn.
In-process, with a fake transport: the connection mechanics (keep-alive timeout, shutdown, a
lost connection, a failing application).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from svc.http.analytics import AnalyticsFastPath
from svc.http.server import AnalyticsProtocol, Exchange, SlowClientProtocol, analytics_protocol
from svc.settings import Settings
from tests.conftest import BROWSER_UA
from tests.support import Server

UA = BROWSER_UA.encode()
EVENT = json.dumps({"event": "page_view", "url": "https://a.test/", "sessionId": "s1"}).encode()
ENV = {
    # the per-address limits follow X-Forwarded-For, so each case has buckets of its own
    "SVC_TRUSTED_PROXIES": "127.0.0.1/32",
    "SVC_RATE_LIMIT_INGEST_PER_IP": "1:3",
    "SVC_CLIENT_HEADER_TIMEOUT_SECONDS": "1",
    "SVC_CLIENT_BODY_TIMEOUT_SECONDS": "1",
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Two servers alike but for the protocol: "on" (the default) and "off"."""
    out: dict[str, Server] = {}
    try:
        for mode, value in (("on", "true"), ("off", "false")):
            data = tmp_path_factory.mktemp(f"proto-{mode}") / "data"
            out[mode] = Server(data, env={**ENV, "SVC_FAST_INGEST_PROTOCOL": value}).start()
        yield out
    finally:
        for srv in out.values():
            srv.stop()


@pytest.fixture(scope="module")
def keys(servers: dict[str, Server]) -> dict[str, dict[str, str]]:
    """The keys of a project of the same name on both servers."""
    return {mode: srv.create_project("proto")["keys"] for mode, srv in servers.items()}


def request(
    body: bytes = EVENT,
    *,
    key: str | None,
    url: bytes = b"/analytics",
    version: bytes = b"1.1",
    extra: bytes = b"",
    ua: bytes = UA,
    address: str = "",
) -> bytes:
    head = b"POST " + url + b" HTTP/" + version + b"\r\nHost: x\r\nUser-Agent: " + ua + b"\r\n"
    if key:
        head += b"Authorization: Bearer " + key.encode() + b"\r\n"
    if address:
        head += b"X-Forwarded-For: " + address.encode() + b"\r\n"
    head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    return head + extra + b"\r\n" + body


def exchange(
    port: int, *parts: bytes, pause: float = 0.0, idle: float = 0.6, first: float = 10.0
) -> bytes:
    """Send ``parts`` (``pause`` seconds apart) on one connection; everything read until the
    server closes it or, once it has answered, says nothing for ``idle`` seconds. Its first
    answer may take up to ``first`` seconds (a loaded machine; the first event of a server
    loads the user-agent rules)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        for i, part in enumerate(parts):
            if i and pause:
                time.sleep(pause)
            sock.sendall(part)
        sock.settimeout(first)
        out = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
            sock.settimeout(idle)
        return out
    finally:
        sock.close()


def masked(answer: bytes) -> bytes:
    answer = re.sub(rb"date: [^\r]+", b"date: -", answer)
    answer = re.sub(rb'"ts":\d+', b'"ts":0', answer)
    # each answer's own id (svc.http.observe), in its header and error body
    answer = re.sub(rb'(x-request-id: |"requestId":")[0-9a-f]{16}', rb"\1-", answer)
    return re.sub(rb"(ratelimit-reset|retry-after): \d+", rb"\1: -", answer)


def responses(answer: bytes) -> list[bytes]:
    """The status lines of the responses in ``answer``, in order."""
    return re.findall(rb"HTTP/1\.1 \d+ [^\r]*", answer)


def cases(key: dict[str, str]) -> dict[str, list[bytes]]:
    """Raw requests (each case on a connection of its own) whose answers must be identical.
    Each case comes from an address of its own."""
    pub, sec = key["public"], key["secret"]

    def req(body: bytes = EVENT, case: str = "", **kw: Any) -> bytes:
        kw.setdefault("key", pub)
        return request(body, address=f"10.0.0.{ord(case)}", **kw)

    big = b"x" * (1024 * 1024 + 1)
    chunked = (
        b"POST /analytics HTTP/1.1\r\nHost: x\r\nUser-Agent: " + UA + b"\r\n"
        b"Authorization: Bearer " + pub.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    return {
        "one event": [req(case="a")],
        "HTTP/1.0": [req(case="b", version=b"1.0")],
        "HTTP/1.0 keep-alive": [req(case="c", version=b"1.0", extra=b"Connection: keep-alive\r\n")],
        "connection close": [req(case="d", extra=b"Connection: close\r\n") + req(case="d")],
        "key in the URL": [req(case="e", key=None, url=b"/analytics?key=" + pub.encode())],
        "empty query": [req(case="f", url=b"/analytics?")],
        "secret key in the URL": [req(case="g", key=None, url=b"/analytics?key=" + sec.encode())],
        "no key": [req(case="h", key=None)],
        "bad key": [req(case="i", key="svc_live_" + "A" * 32)],
        "bot": [req(case="j", ua=b"curl/8.0")],
        "invalid event": [req(b'{"event":1}', case="k")],
        "not JSON": [req(b"{", case="l")],
        "empty body": [req(b"", case="m")],
        "batch with a rejected event": [req(b"[" + EVENT + b',{"x":1}]', case="n")],
        "bad content-length": [req(case="o").replace(b"Content-Length: ", b"Content-Length: x")],
        "rate limited": [req(case="p") * 5],
        "pipelined": [req(case="q") + req(b'{"event":1}', case="q") + req(case="q")],
        "pipelined with other routes": [
            req(case="r")
            + b"OPTIONS /analytics HTTP/1.1\r\nHost: x\r\n\r\n"
            + b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
            + req(case="r")
        ],
        "413 then keep-alive": [req(big, case="s") + req(case="s")],
        "chunked": [chunked + b"%x\r\n" % len(EVENT) + EVENT + b"\r\n0\r\n\r\n"],
        "chunked, too big": [chunked + (b"10000\r\n" + b" " * 65536 + b"\r\n") * 17 + b"0\r\n\r\n"],
        "expect 100-continue": [req(case="t", extra=b"Expect: 100-continue\r\n")],
        "percent-encoded path": [req(case="u", url=b"/analytic%73")],
        "absolute URL": [req(case="v", url=b"http://x/analytics")],
        "fragment": [req(case="w", url=b"/analytics?a=1#frag")],
        "GET /analytics": [b"GET /analytics HTTP/1.1\r\nHost: x\r\n\r\n"],
    }


def test_same_bytes_with_the_protocol_on_and_off(
    servers: dict[str, Server], keys: dict[str, dict[str, str]]
) -> None:
    def answer(mode: str) -> dict[str, bytes]:
        port = servers[mode].port
        return {name: masked(exchange(port, *parts)) for name, parts in cases(keys[mode]).items()}

    # the two servers side by side: each exchange ends after its idle wait, which overlap
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = dict(zip(("on", "off"), pool.map(answer, ("on", "off")), strict=True))
    for name, on in answers["on"].items():
        off = answers["off"][name]
        # the keys differ between the servers (and so the message naming one, if any)
        on = on.replace(keys["on"]["public"].encode(), b"K").replace(
            keys["on"]["secret"].encode(), b"S"
        )
        off = off.replace(keys["off"]["public"].encode(), b"K").replace(
            keys["off"]["secret"].encode(), b"S"
        )
        assert on == off, f"{name}:\n on: {on[:3000]!r}\noff: {off[:3000]!r}"
        assert on.startswith(b"HTTP/1.1 "), f"{name}: {on[:200]!r}"
    on = answers["on"]
    ok, bad = b"HTTP/1.1 200 OK", b"HTTP/1.1 400 Bad Request"
    assert responses(on["pipelined"]) == [ok, bad, ok]
    assert responses(on["pipelined with other routes"]) == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 204 No Content",
        b"HTTP/1.1 404 Not Found",
        b"HTTP/1.1 200 OK",
    ]
    assert responses(on["rate limited"])[-1] == b"HTTP/1.1 429 Too Many Requests"
    assert b"x-svc-dropped: " in on["bot"]
    assert responses(on["connection close"]) == [b"HTTP/1.1 200 OK"]
    assert b"connection: close\r\n" in on["HTTP/1.0"]
    assert responses(on["413 then keep-alive"]) == [
        b"HTTP/1.1 413 Request Entity Too Large",
        b"HTTP/1.1 200 OK",
    ]
    assert responses(on["chunked, too big"]) == [b"HTTP/1.1 413 Request Entity Too Large"]
    assert responses(on["expect 100-continue"]) == [b"HTTP/1.1 100 Continue", b"HTTP/1.1 200 OK"]
    for mode, srv in servers.items():
        assert "Traceback" not in srv.log(), mode


def test_keep_alive_connection_serves_many_requests(
    servers: dict[str, Server], keys: dict[str, dict[str, str]]
) -> None:
    srv, key = servers["on"], keys["on"]["public"]
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        for i in range(6):
            sock.sendall(request(key=key, address=f"10.9.1.{i}"))
            answer = b""
            while not answer.endswith(b"}"):
                chunk = sock.recv(65536)
                assert chunk, f"closed after {i} requests"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
            assert answer.count(b"HTTP/1.1") == 1
    finally:
        sock.close()


def test_a_body_in_several_writes(
    servers: dict[str, Server], keys: dict[str, dict[str, str]]
) -> None:
    srv, key = servers["on"], keys["on"]["public"]
    whole = request(key=key, address="10.9.2.1")
    head, body = whole.split(b"\r\n\r\n", 1)
    parts = [head[:20], head[20:] + b"\r\n\r\n", body[:5], body[5:17], body[17:]]
    answer = exchange(srv.port, *parts, pause=0.05)
    assert responses(answer) == [b"HTTP/1.1 200 OK"], answer
    # a big body (over uvicorn's 64 KiB read-ahead) in pieces, with its own answer
    props = {f"k{i}": "v" * 2000 for i in range(50)}
    event = {"event": "page_view", "url": "https://a.test/", "properties": props}
    batch = json.dumps([event] * 4).encode()
    assert len(batch) > 3 * 65536
    whole = request(batch, key=key, address="10.9.2.2")
    pieces = [whole[i : i + 50_000] for i in range(0, len(whole), 50_000)]
    answer = exchange(srv.port, *pieces, pause=0.02)
    assert responses(answer) == [b"HTTP/1.1 200 OK"], answer
    assert b'"accepted":4' in answer


def test_a_slow_body_meets_the_deadline(
    servers: dict[str, Server], keys: dict[str, dict[str, str]]
) -> None:
    srv, key = servers["on"], keys["on"]["public"]
    before = srv.health()["limits"]["clientTimeouts"].get("body", 0)
    started = time.monotonic()
    answer = exchange(srv.port, request(key=key, address="10.9.3.1")[:-10], idle=5)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"request_timeout"' in answer
    assert responses(answer) == [b"HTTP/1.1 408 Request Timeout"]
    assert 0.8 < time.monotonic() - started < 4
    # headers never finished: 408 too
    answer = exchange(srv.port, b"POST /analytics HTTP/1.1\r\nHost: x\r\n", idle=5)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert srv.health()["limits"]["clientTimeouts"]["body"] >= before + 1
    # the server goes on
    assert responses(exchange(srv.port, request(key=key, address="10.9.3.2"))) == [
        b"HTTP/1.1 200 OK"
    ]


def test_a_body_over_a_mebibyte_is_413(
    servers: dict[str, Server], keys: dict[str, dict[str, str]]
) -> None:
    srv, key = servers["on"], keys["on"]["public"]
    big = request(b"[" + b" " * (1024 * 1024) + b"]", key=key, address="10.9.4.1")
    answer = exchange(srv.port, big)
    assert responses(answer) == [b"HTTP/1.1 413 Request Entity Too Large"]
    assert b'"payload_too_large"' in answer
    exactly = request(b"[" + b" " * (1024 * 1024 - 2) + b"]", key=key, address="10.9.4.2")
    answer = exchange(srv.port, exactly)
    assert len(responses(answer)) == 1 and b"payload_too_large" not in answer, answer


def test_other_routes_are_uvicorns(servers: dict[str, Server]) -> None:
    srv = servers["on"]
    answer = exchange(srv.port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert responses(answer) == [b"HTTP/1.1 200 OK"] and b'"ready":true' in answer
    answer = exchange(srv.port, b"OPTIONS /analytics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert responses(answer) == [b"HTTP/1.1 204 No Content"]
    assert b"access-control-allow-origin: *" in answer.lower()
    answer = exchange(srv.port, b"GET /svc/js HTTP/1.1\r\nHost: x\r\n\r\n")
    assert responses(answer) == [b"HTTP/1.1 200 OK"]
    answer = exchange(
        srv.port, b"POST /analyticsx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    )
    assert responses(answer) == [b"HTTP/1.1 404 Not Found"]


def test_the_setting_switches_it_off() -> None:
    class App:  # stands for an application the fast path stepped aside from
        pass

    fast = AnalyticsFastPath.__new__(AnalyticsFastPath)
    from svc.cli.serve import protocol_class

    on = protocol_class(Settings.from_env({}), fast)
    off = protocol_class(Settings.from_env({"SVC_FAST_INGEST_PROTOCOL": "false"}), fast)
    aside = protocol_class(Settings.from_env({}), App())  # the fast path stepped aside
    assert issubclass(on, AnalyticsProtocol)
    assert issubclass(off, SlowClientProtocol) and not issubclass(off, AnalyticsProtocol)
    assert issubclass(aside, SlowClientProtocol) and not issubclass(aside, AnalyticsProtocol)
    assert Settings().fast_ingest_protocol is True


# in-process: the protocol with a fake transport ---------------------------------------------


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.out = b""
        self.writes = 0
        self.closed = False
        self.paused = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out += bytes(data)
        self.writes += 1

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.1", 5555), "sockname": ("127.0.0.1", 8080)}.get(name, default)


class Recorder:
    """An ASGI application answering POST /analytics with its body, after ``delay``."""

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.delay = delay
        self.fail = fail
        self.scopes: list[dict[str, Any]] = []
        self.gone = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.scopes.append(scope)
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone += 1
                return
            body += message["body"]
            if not message["more_body"]:
                break
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("boom")
        headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def connect(
    app: Any, keep_alive: int = 5, settings: Settings | None = None
) -> tuple[AnalyticsProtocol, Transport]:
    config = uvicorn.Config(
        app,
        http="httptools",
        lifespan="off",
        timeout_keep_alive=keep_alive,
        access_log=False,
        proxy_headers=False,
    )
    config.load()
    cls = analytics_protocol(settings or Settings())
    state = ServerState()
    state.default_headers = [(b"date", b"Thu, 01 Jan 2026 00:00:00 GMT")]
    protocol: AnalyticsProtocol = cls(  # type: ignore[assignment]
        config=config, server_state=state, app_state={}, _loop=asyncio.get_running_loop()
    )
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


def post(body: bytes, extra: bytes = b"") -> bytes:
    return b"POST /analytics HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body),
        extra,
        body,
    )


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def test_in_process_answers_in_one_write_and_in_order() -> None:
    async def main() -> None:
        app = Recorder()
        protocol, transport = connect(app)
        protocol.data_received(post(b"one"))
        assert isinstance(protocol.cycle, Exchange)
        await settle()
        assert transport.out == (
            b"HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\n"
            b"content-type: text/plain\r\ncontent-length: 3\r\n\r\none"
        )
        assert transport.writes == 1
        assert app.scopes[0]["client"] == ("10.0.0.1", 5555)
        assert app.scopes[0]["query_string"] == b""
        # three pipelined, the first slow: answered in order, reading paused meanwhile
        app.delay = 0.05
        transport.out = b""
        protocol.data_received(post(b"a") + b"GET /x HTTP/1.1\r\n\r\n" + post(b"c", b"X: 1\r\n"))
        assert transport.paused
        await asyncio.sleep(0.3)
        assert [m.split(b"\r\n")[-1] for m in transport.out.split(b"HTTP/1.1 ")[1:]] == [
            b"a",
            b"",  # the GET goes through uvicorn (the recorder answers it with no body)
            b"c",
        ]
        assert not transport.paused and not transport.closed
        assert protocol.server_state.total_requests == 4
        protocol.connection_lost(None)

    asyncio.run(main())


def test_in_process_keep_alive_timeout_and_close() -> None:
    async def main() -> None:
        import svc.http.server.deadlines as timeouts

        sweep = timeouts.SWEEP_SECONDS
        timeouts.SWEEP_SECONDS = 0.05
        try:
            protocol, transport = connect(Recorder(), keep_alive=0)
            protocol.data_received(post(b"x"))
            await settle()
            assert transport.out.endswith(b"x") and not transport.closed
            assert protocol.timeout_keep_alive_task is None  # a number, not a timer
            for _ in range(40):
                await asyncio.sleep(0.05)
                if transport.closed:
                    break
            assert transport.closed  # idle past the keep-alive timeout
            protocol.connection_lost(None)
        finally:
            timeouts.SWEEP_SECONDS = sweep
        # HTTP/1.0 and Connection: close end the connection after the answer
        for request_ in (
            post(b"y").replace(b"HTTP/1.1", b"HTTP/1.0"),
            post(b"y", b"Connection: close\r\n"),
        ):
            protocol, transport = connect(Recorder())
            protocol.data_received(request_)
            await settle()
            assert b"connection: close\r\n" in transport.out and transport.closed
            protocol.connection_lost(None)

    asyncio.run(main())


def test_in_process_lost_connection_and_failing_application() -> None:
    async def main() -> None:
        app = Recorder()
        protocol, transport = connect(app)
        whole = post(b"0123456789")
        protocol.data_received(whole[:-4])  # the body is not all there
        await settle()
        assert transport.out == b""
        protocol.connection_lost(None)
        await settle()
        assert app.gone == 1 and transport.out == b""
        # a failing application: a 500 in the JSON shape, and the connection closed
        protocol, transport = connect(Recorder(fail=True))
        protocol.data_received(post(b"z"))
        await settle()
        assert transport.out.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert b"connection: close\r\n" in transport.out
        assert transport.out.endswith(
            b'"code":"internal_error","message":"an internal error occurred; it has been logged"}}'
        )
        assert transport.closed
        protocol.connection_lost(None)
        # shutdown while a request is being answered: answered, then closed
        protocol, transport = connect(Recorder(delay=0.05))
        protocol.data_received(post(b"w"))
        await settle()
        protocol.shutdown()
        assert not transport.closed
        await asyncio.sleep(0.2)
        assert transport.out.endswith(b"w") and b"connection: close" in transport.out
        assert transport.closed
        protocol.connection_lost(None)

    asyncio.run(main())


def test_in_process_leaves_the_rest_to_uvicorn() -> None:
    async def main() -> None:
        for raw, query in (
            (post(b"q").replace(b"/analytics", b"/analytics?key=k&x=1"), b"key=k&x=1"),
            (post(b"q").replace(b"/analytics", b"/analytic%73"), None),
            (post(b"q", b"Expect: 100-continue\r\n"), None),
            (post(b"q").replace(b"POST", b"PUT"), None),
            (post(b"q").replace(b"/analytics", b"/analytics?a#b"), None),
        ):
            app = Recorder()
            protocol, transport = connect(app)
            protocol.data_received(raw)
            fast = isinstance(protocol.cycle, Exchange)
            await settle()
            assert fast == (query is not None), raw
            assert b"HTTP/1.1 200 OK\r\n" in transport.out, (raw, transport.out)
            assert app.scopes[0]["path"] == "/analytics"
            if query is not None:
                assert app.scopes[0]["query_string"] == query
            protocol.connection_lost(None)

    asyncio.run(main())
