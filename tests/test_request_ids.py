"""Each request's id (svc.http.observe) and the log lines (svc.http.logs).

Against the real server (its stderr goes to a file, so its logs are JSON lines): the
``X-Request-Id`` of every answer, kept when sane, in every error body and in the log lines of
its request. In-process: the log formats, and what the observer costs per request.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from svc.app import create_app
from svc.errors import InvalidRequest, request_id
from svc.http.logs import JsonFormatter, RequestIdFilter, TextFormatter, uses_json
from svc.http.observe import HEADER, RequestObserver, RequestStats
from svc.http.server import fast_path
from svc.settings import Settings
from tests.conftest import BROWSER_UA
from tests.support import Server


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(
        tmp_path_factory.mktemp("request-ids") / "data", env={"SVC_LOG_LEVEL": "debug"}
    ).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def keys(srv: Server) -> dict[str, str]:
    keys: dict[str, str] = srv.create_project("ids")["keys"]
    return keys


def test_every_answer_has_a_request_id_and_errors_say_it(srv: Server, keys: dict[str, str]) -> None:
    ua = {"User-Agent": BROWSER_UA}
    ok = srv.send(keys["public"], {"event": "page_view", "url": "/x"}, headers=ua)
    again = srv.send(keys["public"], {"event": "page_view", "url": "/y"}, headers=ua)
    assert ok.status_code == again.status_code == 200
    assert len(ok.headers["x-request-id"]) == 16
    assert "X-Request-Id" in ok.headers["access-control-expose-headers"]  # browsers read it
    assert ok.headers["x-request-id"] != again.headers["x-request-id"]
    # the fast path's errors, the limits', Starlette's and the handlers'
    errors = [
        srv.send(keys["public"], {"event": "page_view"}, headers=ua),  # 400
        srv.send("svc_live_" + "A" * 30, {"event": "page_view", "url": "/"}),  # 401
        httpx.get(srv.url + "/metrics?from=2020-01-01"),  # 401
        httpx.get(srv.url + "/metrics", headers={"Authorization": "Bearer " + keys["secret"]}),
        httpx.get(srv.url + "/nope"),  # 404
        httpx.put(srv.url + "/health"),  # 405
        httpx.post(srv.url + "/projects", json={"name": "Bad Name"}, headers=srv.admin()),
    ]
    for r in errors:
        assert r.status_code >= 400
        assert r.json()["error"]["requestId"] == r.headers["x-request-id"], r.text


def test_a_sane_incoming_request_id_is_kept(srv: Server, keys: dict[str, str]) -> None:
    given = "edge-7f3a:01HZX.ab_c/d+e=@f"
    r = httpx.get(srv.url + "/nope", headers={"X-Request-Id": given})
    assert r.headers["x-request-id"] == given
    assert r.json()["error"]["requestId"] == given
    posted = srv.send(
        keys["public"], {"event": "page_view"}, headers={"X-Request-Id": given}
    )  # the fast path
    assert posted.json()["error"]["requestId"] == given == posted.headers["x-request-id"]
    for insane in ("x" * 129, "two words", "a\tb", "<script>", "é"):
        r = httpx.get(srv.url + "/nope", headers={"X-Request-Id": insane.encode()})
        assert r.headers["x-request-id"] != insane
        assert len(r.headers["x-request-id"]) == 16


def test_a_batch_names_the_request_once(srv: Server, keys: dict[str, str]) -> None:
    batch = [{"event": "page_view", "url": "/ok"}, {"event": "", "url": "/bad"}]
    r = srv.send(keys["secret"], batch, headers={"User-Agent": BROWSER_UA})
    assert r.status_code == 200
    assert "requestId" not in r.json()["rejected"][0]["error"]
    none = srv.send(keys["secret"], [{"event": ""}], headers={"User-Agent": BROWSER_UA})
    assert none.status_code == 400
    body = none.json()
    assert body["error"]["requestId"] == none.headers["x-request-id"]
    assert "requestId" not in body["rejected"][0]["error"]


# logs ------------------------------------------------------------------------------------


def _log_lines(srv: Server) -> list[dict[str, Any]]:
    assert srv.log_path is not None
    lines = [line for line in srv.log_path.read_text().splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    return parsed


def test_logs_are_json_lines_with_the_request_id(srv: Server) -> None:
    given = "trace-me-0042"
    r = httpx.get(
        srv.url + "/projects/svc_proj_gone", headers={**srv.admin(), "X-Request-Id": given}
    )
    assert r.status_code == 404
    deadline = time.monotonic() + 10
    while True:
        lines = _log_lines(srv)  # every line is JSON
        mine = [line for line in lines if line.get("requestId") == given]
        if mine or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert mine, lines[-5:]
    access = mine[-1]
    assert access["logger"] == "svc.requests" and access["level"] == "debug"
    assert access["route"] == "/projects/{project_id}" and access["status"] == 404
    assert access["method"] == "GET" and access["durationMs"] >= 0
    assert access["time"].endswith("Z")
    assert "svc_proj_gone" not in json.dumps(mine)  # the template, not the path
    # uvicorn's own lines come through the same handler
    assert any(line["logger"].startswith("uvicorn") for line in lines)


def test_json_and_text_formats_in_process() -> None:
    assert uses_json("auto", io.StringIO())  # not a terminal
    assert not uses_json("text", io.StringIO())
    assert uses_json("json", io.StringIO())
    main, other = os.openpty()
    try:
        with os.fdopen(other, "w", closefd=False) as tty:
            assert not uses_json("auto", tty)  # a person reads it
    finally:
        os.close(main)
        os.close(other)
    with pytest.raises(ValueError, match="SVC_LOG_FORMAT"):
        uses_json("yaml", io.StringIO())

    record = logging.LogRecord("svc.x", logging.ERROR, __file__, 1, "a %s", ("b",), None)
    token = request_id.set("rid-1")
    try:
        RequestIdFilter().filter(record)
    finally:
        request_id.reset(token)
    record.project = "p"  # as extra= sets it
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "a b" and line["requestId"] == "rid-1"
    assert line["level"] == "error" and line["logger"] == "svc.x" and line["project"] == "p"
    assert TextFormatter().format(record).endswith("svc.x: a b [request rid-1]")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = logging.LogRecord("svc", logging.ERROR, __file__, 1, "x", None, sys.exc_info())
    assert "RuntimeError: boom" in json.loads(JsonFormatter().format(failed))["exception"]


def test_error_bodies_carry_the_request_id_only_inside_a_request() -> None:
    assert "requestId" not in InvalidRequest("x").body()["error"]
    token = request_id.set("abc")
    try:
        assert InvalidRequest("x", field="f").body()["error"] == {
            "code": "invalid_request",
            "message": "x",
            "field": "f",
            "requestId": "abc",
        }
    finally:
        request_id.reset(token)


# the cost on the hot path ----------------------------------------------------------------


def test_the_observer_costs_little_per_request(tmp_path: Path) -> None:
    """What RequestObserver adds to a request, timed in-process around an application that
    answers at once (docs/operations.md quotes the figure printed here)."""
    headers = [
        (b"host", b"x"),
        (b"user-agent", BROWSER_UA.encode()),
        (b"authorization", b"Bearer svc_live_" + b"A" * 30),
        (b"content-type", b"application/json"),
        (b"content-length", b"60"),
    ]
    scope = {"type": "http", "method": "POST", "path": "/analytics", "headers": headers}
    start = {"type": "http.response.start", "status": 200, "headers": [(b"a", b"b")]}
    body = {"type": "http.response.body", "body": b"{}"}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send(dict(start))
        await send(body)

    async def receive() -> dict[str, Any]:
        return {}

    async def send(message: Any) -> None:
        return None

    plain = create_app(Settings(data_dir=tmp_path))
    observed = RequestObserver(app, RequestStats(), plain.routes)

    async def run(target: Any, n: int) -> float:
        started = time.perf_counter()
        for _ in range(n):
            await target(scope, receive, send)
        return time.perf_counter() - started

    async def measure() -> tuple[float, float]:
        n = 20_000
        await run(app, 1000)
        await run(observed, 1000)
        bare = min([await run(app, n) for _ in range(5)])
        wrapped = min([await run(observed, n) for _ in range(5)])
        return bare / n, wrapped / n

    bare, wrapped = asyncio.run(measure())
    added_us = (wrapped - bare) * 1e6
    print(f"\nobserver: {added_us:.2f} µs a request (bare app {bare * 1e6:.2f} µs)")
    assert added_us < 25  # generous: ~2 µs here; a shared machine may be slow


def test_the_fast_path_writes_request_ids_without_caching_them() -> None:
    """The HTTP server's fast path caches its checked header lines; a request id is new each
    time (checked by the observer), so it is written as it is: no cache miss per request."""
    protocol = SimpleNamespace(access_log=False, server_state=SimpleNamespace(default_headers=[]))
    exchange = fast_path.Exchange(protocol, {}, keep_alive=True)  # type: ignore[arg-type]
    exchange._start(200, [(b"content-length", b"2")])
    cached = len(fast_path._LINES)
    for i in range(100):
        exchange._start(200, [(b"content-length", b"2"), (HEADER, b"%016x" % i)])
    assert exchange._head.endswith(b"content-length: 2\r\nx-request-id: 0000000000000063\r\n\r\n")
    assert len(fast_path._LINES) == cached


def test_an_unhandled_error_is_logged_by_route_not_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The log line of a 500 names the route's template: a path may hold a share token."""
    from starlette.requests import Request

    from svc.app import unexpected_error

    app = create_app(Settings(data_dir=tmp_path))
    route = next(r for r in app.routes if getattr(r, "path", "") == "/share/{token}")
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/share/svc_share_SECRET",
        "headers": [],
        "query_string": b"",
        "route": route,
        "app": app,
    }
    token = request_id.set("rid-500")
    try:
        with caplog.at_level(logging.ERROR, logger="svc"):
            try:
                raise RuntimeError("boom")
            except RuntimeError as exc:
                answer = asyncio.run(unexpected_error(Request(scope), exc))
    finally:
        request_id.reset(token)
    assert answer.status_code == 500
    assert json.loads(bytes(answer.body))["error"]["requestId"] == "rid-500"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "GET /share/{token}" in logged and "SECRET" not in logged
