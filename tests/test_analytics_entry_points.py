"""POST /analytics has one handler (svc.http.analytics.handle) and three ways in, which give
the same answers: the HTTP server's fast path (svc.http.server.fast_path, the default of
``svcm serve``), the raw ASGI fast path (``SVC_FAST_INGEST_PROTOCOL=false``) and the
Starlette route (``create_app`` served by uvicorn as it is)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server, admin_token

# The Starlette application as it is, without the fast path or the limits before it.
ROUTE = (
    "import sys, uvicorn; from svc.settings import Settings; from svc.app import create_app; "
    "port = int(sys.argv[1]); "
    "settings = Settings.from_env(host='127.0.0.1', port=port, data_dir=sys.argv[2]); "
    "uvicorn.run(create_app(settings), host='127.0.0.1', port=port, log_level='warning', "
    "lifespan='on', proxy_headers=False, server_header=False)"
)
EVENT = {"event": "page_view", "url": "https://parity.test/pricing", "sessionId": "s1"}
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
# headers that differ by time or by what stands before the handler (the limits' headers)
# x-request-id: each answer's own, from svcm serve's request observer (the Starlette route's
# server, create_app as it is, has none; tests/test_internal_metrics.py checks the ids)
UNCOMPARED = {"date", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "x-request-id"}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    token = admin_token()  # one admin token, so that its requests are the same bytes
    ways = {
        "server fast path": Server(tmp_path_factory.mktemp("way-protocol") / "data"),
        "ASGI fast path": Server(
            tmp_path_factory.mktemp("way-asgi") / "data",
            env={"SVC_FAST_INGEST_PROTOCOL": "false"},
        ),
        "Starlette route": Server(tmp_path_factory.mktemp("way-route") / "data", program=ROUTE),
    }
    try:
        for srv in ways.values():
            srv.admin_token = token
            srv.start()
        yield ways
    finally:
        for srv in ways.values():
            srv.stop()


def cases(keys: dict[str, str], admin: str) -> dict[str, dict[str, Any]]:
    """Requests (httpx keyword arguments), in the order they are sent."""
    public, secret = keys["public"], keys["secret"]

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    return {
        "one event": {"headers": bearer(public), "json": EVENT},
        "batch with a bad event": {
            "headers": bearer(secret),
            "json": [EVENT, {"event": "", "url": "/"}, {**EVENT, "sessionId": "s2"}],
        },
        "events object": {"headers": bearer(secret), "json": {"events": [EVENT]}},
        "one bad event": {"headers": bearer(public), "json": {"event": "signup"}},
        "malformed JSON": {"headers": bearer(public), "content": b'{"event": '},
        "empty body": {"headers": bearer(public), "content": b""},
        "no credential": {"json": EVENT},
        "unknown key": {"headers": bearer("svc_live_" + "x" * 32), "json": EVENT},
        "not a bearer": {"headers": {"Authorization": "Basic eDp5"}, "json": EVENT},
        "public key in the URL": {"params": {"key": public}, "json": EVENT},
        "secret key in the URL": {"params": {"key": secret}, "json": EVENT},
        "another project": {
            "headers": bearer(public),
            "json": {**EVENT, "projectId": "svc_proj_other"},
        },
        "bot": {"headers": {**bearer(public), "User-Agent": GOOGLEBOT}, "json": EVENT},
        "admin, no project": {"headers": bearer(admin), "json": EVENT},
        "admin, project in the event": {
            "headers": bearer(admin),
            "json": {**EVENT, "projectId": "svc_proj_parity"},
        },
        "admin, project in the URL": {
            "headers": bearer(admin),
            "params": {"projectId": "svc_proj_parity"},
            "json": EVENT,
        },
        "admin, unknown project": {
            "headers": bearer(admin),
            "json": {**EVENT, "projectId": "svc_proj_nope"},
        },
        "eventId": {"headers": bearer(public), "json": {**EVENT, "eventId": "e-1"}},
        "eventId again": {"headers": bearer(public), "json": {**EVENT, "eventId": "e-1"}},
        "body too large": {"headers": bearer(public), "content": b" " * (1024 * 1024 + 1)},
        "too many events": {"headers": bearer(secret), "json": [EVENT] * 1001},
    }


def answer(response: httpx.Response, keys: dict[str, str]) -> tuple[int, list[Any], Any]:
    """Status, headers and body, with what differs between servers (time, keys) masked."""
    headers = sorted(
        (name, value) for name, value in response.headers.items() if name not in UNCOMPARED
    )
    text = response.text.replace(keys["public"], "K").replace(keys["secret"], "S")
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    if isinstance(body, dict) and isinstance(body.get("ts"), int):
        body["ts"] = "<ts>"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body["error"].pop("requestId", None)  # and so the length may differ
        headers = [(n, "-" if n == "content-length" else v) for n, v in headers]
    return response.status_code, headers, body


def test_every_way_in_gives_the_same_answers(servers: dict[str, Server]) -> None:
    answers: dict[str, dict[str, tuple[int, list[Any], Any]]] = {}
    for way, srv in servers.items():
        keys = srv.create_project("parity", domains=["parity.test"])["keys"]
        answers[way] = {}
        with httpx.Client(base_url=srv.url, headers={"User-Agent": BROWSER_UA}) as client:
            for name, request in cases(keys, srv.admin_token).items():
                response = client.post("/analytics", **request)
                answers[way][name] = answer(response, keys)
    first, *others = servers
    for name, expected in answers[first].items():
        for way in others:
            assert answers[way][name] == expected, f"{name}: {way} differs from {first}"
    seen = {name: status for name, (status, _, _) in answers[first].items()}
    assert seen["one event"] == seen["batch with a bad event"] == 200
    assert seen["one bad event"] == seen["malformed JSON"] == 400
    assert seen["no credential"] == seen["unknown key"] == 401
    assert seen["secret key in the URL"] == seen["another project"] == 403
    assert seen["body too large"] == seen["too many events"] == 413
    assert dict(answers[first]["bot"][1])["x-svc-dropped"] == "bot"
    for way, srv in servers.items():
        assert "Traceback" not in srv.log(), way
