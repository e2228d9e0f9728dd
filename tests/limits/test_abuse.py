"""Abuse: deeply nested JSON, oversized bodies and properties, slow clients."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.limits.helpers import event, post, server
from tests.support import Server


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[Server]:
    s = server(
        tmp_path / "data",
        SVC_CLIENT_HEADER_TIMEOUT_SECONDS="1",
        SVC_CLIENT_BODY_TIMEOUT_SECONDS="1",
    )
    yield s
    s.stop()


def raw(srv: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    return sock


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_deeply_nested_json_is_a_fast_400(srv: Server) -> None:
    p = srv.create_project("nested")
    headers = {
        "Authorization": f"Bearer {p['keys']['public']}",
        "Content-Type": "application/json",
        "User-Agent": BROWSER_UA,
    }
    for body in (
        b"[" * 100_000 + b"]" * 100_000,
        b'{"event":"page_view","url":"/","x":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_001,
    ):
        started = time.perf_counter()
        r = httpx.post(srv.url + "/analytics", content=body, headers=headers)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_request"
        assert time.perf_counter() - started < 2
    admin = {**srv.admin(), "Content-Type": "application/json"}
    r = httpx.post(srv.url + "/analytics", content=b"[" * 100_000, headers=admin)
    assert r.status_code == 400
    r = httpx.patch(srv.url + f"/projects/{p['id']}", content=b"{" * 50_000, headers=admin)
    assert r.status_code == 400
    assert srv.health()["ready"] is True
    assert "Traceback" not in srv.log()


def test_bodies_are_capped_before_parsing(srv: Server) -> None:
    p = srv.create_project("big")
    headers = {"Authorization": f"Bearer {p['keys']['public']}", "User-Agent": BROWSER_UA}
    r = httpx.post(srv.url + "/analytics", content=b"x" * (1024 * 1024 + 1), headers=headers)
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b" " * 65536

    r = httpx.post(srv.url + "/analytics", content=chunks(), headers=headers)
    assert r.status_code == 413
    r = post(srv, p["keys"]["public"], event(properties={"v": "x" * 2049}))
    assert r.status_code == 400 and r.json()["error"]["field"] == "properties.v"
    r = post(srv, p["keys"]["public"], event(properties={f"k{i}": i for i in range(51)}))
    assert r.status_code == 400 and r.json()["error"]["field"] == "properties"
    r = post(srv, p["keys"]["public"], event(properties={"nested": {"a": 1}}))
    assert r.status_code == 400


def test_slow_headers_are_cut_off(srv: Server) -> None:
    sock = raw(srv)
    sock.sendall(b"POST /analytics HTTP/1.1\r\nHost: x\r\n")  # and then nothing
    started = time.monotonic()
    answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"request_timeout"' in answer
    assert 0.8 < time.monotonic() - started < 5
    # a connection that never sends anything is closed without an answer
    idle = raw(srv)
    started = time.monotonic()
    assert read_all(idle) == b""
    assert 0.8 < time.monotonic() - started < 5
    assert srv.health()["limits"]["clientTimeouts"]["headers"] >= 2


def test_slow_body_gets_408(srv: Server) -> None:
    p = srv.create_project("slow")
    sock = raw(srv)
    sock.sendall(
        b"POST /analytics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + p["keys"]["public"].encode() + b"\r\n"
        b"Content-Length: 100\r\n\r\n" + b'{"event":'
    )
    started = time.monotonic()
    answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert 0.8 < time.monotonic() - started < 5
    assert srv.health()["limits"]["clientTimeouts"]["body"] >= 1
    assert "Traceback" not in srv.log()


def test_a_keep_alive_client_is_not_cut_off_between_requests(srv: Server) -> None:
    sock = raw(srv)
    request = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    for _ in range(2):
        sock.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, f"the connection was closed: {answer!r}"
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 ")
        time.sleep(1.5)  # idle longer than the header deadline: keep-alive's timeout applies
    sock.close()
