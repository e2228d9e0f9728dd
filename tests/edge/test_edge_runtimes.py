"""The edge in each real runtime (workerd, edge-runtime, Lambda@Edge's Node module, Bun) in front
of a real origin on loopback: what the issue asks of it, platform by platform."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.edge.support import SECRET, Edge, built, has_location, start, visitor_headers
from tests.support import Server, free_port

_addresses = itertools.count(10)


def fresh_ip() -> str:
    """A public address no other test uses (TEST-NET-3: no country in the geo data)."""
    n = next(_addresses)
    return f"203.0.{n // 250}.{n % 250 + 1}"


def project(origin: Server, edge: Edge) -> tuple[str, str, str]:
    """A new project: (id, public key, secret key)."""
    name = f"{edge.platform.split('-')[0]}-{uuid.uuid4().hex[:10]}"
    body = origin.create_project(name)
    return body["id"], body["keys"]["public"], body["keys"]["secret"]


def post(edge: Edge, key: str, body: Any, headers: dict[str, str], **kw: Any) -> httpx.Response:
    return httpx.post(
        edge.url + "/analytics",
        content=body if isinstance(body, bytes) else json.dumps(body).encode(),
        headers={
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "user-agent": BROWSER_UA,
            **headers,
        },
        timeout=30,
        **kw,
    )


def stored(origin: Server, project_id: str, secret: str) -> list[dict[str, Any]]:
    origin.wait_loaded()
    return origin.events(project_id, secret)


def outcomes(origin: Server) -> dict[str, Any]:
    pipeline: dict[str, Any] = origin.health()["pipeline"]
    return pipeline


def test_event_arrives_with_the_platforms_address_and_location(edge: Edge, origin: Server) -> None:
    pid, public, secret = project(origin, edge)
    if has_location(edge.platform):
        # the platform's location wins over what the origin would find for the address (GB)
        first = visitor_headers(edge.platform, "81.2.69.160", "DE", "BY", "München")
        second = visitor_headers(edge.platform, "81.2.69.161", "DE", "BY", "München")
        expected = ("DE", "DE-BY", "München")
    else:  # Bun knows the address only: the origin locates it
        first = visitor_headers(edge.platform, "8.8.8.8")
        second = visitor_headers(edge.platform, "8.8.4.4")
        expected = ("US", "", "")
    for n, headers in enumerate((first, first, second)):
        r = post(edge, public, {"event": "page_view", "url": f"https://acme.test/{n}"}, headers)
        assert r.status_code == 200, r.text
        assert r.headers["svc-edge"] == f"{edge.platform}; forwarded"
        assert r.headers["server-timing"].startswith("edge;dur=")
        assert ", origin;dur=" in r.headers["server-timing"]
    events = sorted(stored(origin, pid, secret), key=lambda e: e["url"])
    assert len(events) == 3
    for e in events:
        assert (e["country"], e["region"], e["city"]) == expected
    # the visitor is the platform's address: the same for the first two, another for the third
    assert events[0]["visitor_id"] == events[1]["visitor_id"] != events[2]["visitor_id"]


def test_a_public_key_in_the_url_needs_no_preflight(edge: Edge, origin: Server) -> None:
    pid, public, secret = project(origin, edge)
    # what the browser script sends: text/plain (CORS-safelisted: no preflight), ?key=
    r = httpx.post(
        f"{edge.url}/analytics?key={public}",
        content=json.dumps({"event": "page_view", "url": "https://acme.test/beacon"}),
        headers={
            "content-type": "text/plain;charset=UTF-8",
            "origin": "https://acme.test",
            "user-agent": BROWSER_UA,
            **visitor_headers(edge.platform, fresh_ip()),
        },
    )
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == "*"
    assert [e["url"] for e in stored(origin, pid, secret)] == ["https://acme.test/beacon"]
    # a client that does preflight gets the origin's answer from the edge
    pre = httpx.options(edge.url + "/analytics")
    direct = httpx.options(origin.url + "/analytics")
    assert pre.status_code == direct.status_code == 204
    for name, value in direct.headers.items():
        if name.startswith("access-control-"):
            assert pre.headers[name] == value


def test_invalid_input_never_reaches_the_origin(edge: Edge, origin: Server) -> None:
    _, public, _ = project(origin, edge)
    visitor = visitor_headers(edge.platform, fresh_ip())
    before = outcomes(origin)
    cases: list[tuple[bytes, int, str, str | None]] = [
        (json.dumps({"event": "", "url": "/a"}).encode(), 400, "invalid_request", "event"),
        (json.dumps({"event": "x", "url": "nope"}).encode(), 400, "invalid_request", "url"),
        (b'{"event": "x", "url": ', 400, "invalid_request", "body"),
        (b"   ", 400, "invalid_request", "body"),
        (json.dumps([{"event": "x"}, {"url": "/"}]).encode(), 400, "invalid_request", None),
        (
            json.dumps([{"event": "x", "url": "/"}] * 1001).encode(),
            413,
            "payload_too_large",
            "events",
        ),
        (b"[" + b" " * (1024 * 1024) + b"]", 413, "payload_too_large", None),
    ]
    for body, status, code, field in cases:
        r = post(edge, public, body, visitor)
        assert r.status_code == status, (body[:60], r.text)
        assert r.headers["svc-edge"] == f"{edge.platform}; answered"
        assert r.headers["access-control-allow-origin"] == "*"
        error = r.json()["error"]
        assert error["code"] == code and error.get("field") == field, r.text
    missing = httpx.post(edge.url + "/analytics", json={"event": "x", "url": "/"})
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "missing_api_key"
    after = outcomes(origin)
    assert after["rejected"] == before["rejected"]  # nothing of the above reached the origin
    # a batch with one good event goes to the origin, which stores it and names the bad one
    r = post(edge, public, [{"event": "ok", "url": "/"}, {"event": "", "url": "/"}], visitor)
    assert r.status_code == 200 and r.headers["svc-edge"].endswith("forwarded")
    assert r.json()["accepted"] == 1 and r.json()["rejected"][0]["index"] == 1


def test_origin_errors_pass_through(edge: Edge, origin: Server) -> None:
    _, public, secret = project(origin, edge)
    event = {"event": "page_view", "url": "/"}
    unknown = post(edge, "svc_live_" + "u" * 30, event, visitor_headers(edge.platform, fresh_ip()))
    assert unknown.status_code == 401, unknown.text
    assert unknown.json()["error"]["code"] == "invalid_api_key"
    assert unknown.headers["svc-edge"].endswith("forwarded")
    assert unknown.headers["access-control-allow-origin"] == "*"
    exposed = httpx.post(
        f"{edge.url}/analytics?key={secret}",
        content=json.dumps(event),
        headers={"content-type": "text/plain", **visitor_headers(edge.platform, fresh_ip())},
    )
    assert exposed.status_code == 403 and exposed.json()["error"]["code"] == "forbidden"
    # the origin limits each visitor address (5 a minute here): the sixth from one address is
    # refused with its headers, while another address goes on
    busy = visitor_headers(edge.platform, fresh_ip())
    answers = [post(edge, public, event, busy) for _ in range(6)]
    assert [a.status_code for a in answers] == [200] * 5 + [429]
    limited = answers[-1]
    assert limited.json()["error"]["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert "ratelimit-policy" in limited.headers
    other = post(edge, public, event, visitor_headers(edge.platform, fresh_ip()))
    assert other.status_code == 200


def test_forged_edge_headers_are_not_passed_on(edge: Edge, origin: Server) -> None:
    pid, public, secret = project(origin, edge)
    forged = {
        "x-svc-edge-ip": "8.8.8.8",
        "x-svc-edge-country": "FR",
        "x-svc-edge-ts": str(int(time.time())),
        "x-svc-edge-signature": "v1=" + "0" * 64,
        "cf-ipcountry": "FR",
        "x-vercel-ip-country": "FR",
    }
    ip = fresh_ip()  # TEST-NET: no country
    real = visitor_headers(edge.platform, ip, "NL" if has_location(edge.platform) else "")
    r = post(edge, public, {"event": "page_view", "url": "/forged"}, {**forged, **real})
    assert r.status_code == 200, r.text
    [event] = stored(origin, pid, secret)
    assert event["country"] == ("NL" if has_location(edge.platform) else "")


# The default script and a build with an extension: each kept and revalidated on its own
SCRIPTS = ("/svc/js", "/svc/js/engagement")


def test_the_script_is_served_and_revalidated(edge: Edge, origin: Server) -> None:
    direct = {
        path: httpx.get(origin.url + path, headers={"accept-encoding": "identity"})
        for path in SCRIPTS
    }
    assert all(d.status_code == 200 for d in direct.values())
    assert direct["/svc/js"].content != direct["/svc/js/engagement"].content
    # the first request may find the script kept by an earlier one: wait until it is stale
    time.sleep(1.1)
    first = {path: httpx.get(edge.url + path) for path in SCRIPTS}
    for path, answer in first.items():
        assert answer.status_code == 200, (path, answer.text)
        assert answer.headers["svc-edge-cache"] in ("MISS", "REVALIDATED")
        assert answer.content == direct[path].content, path
        assert answer.headers["etag"] == direct[path].headers["etag"]
        assert answer.headers["content-type"].startswith("application/javascript")
        assert answer.headers["cache-control"] == direct[path].headers["cache-control"]
    for path in SCRIPTS:
        etag = first[path].headers["etag"]
        again = httpx.get(edge.url + path, headers={"if-none-match": etag})
        assert again.status_code == 304 and again.headers["svc-edge-cache"] == "HIT", path
        assert again.content == b""
        # the other path's validator is not this one's
        other = first[SCRIPTS[1 - SCRIPTS.index(path)]].headers["etag"]
        assert httpx.get(edge.url + path, headers={"if-none-match": other}).status_code == 200
    time.sleep(1.1)  # kept 1 s in these tests: the next request revalidates with the origin
    for path in SCRIPTS:
        later = httpx.get(edge.url + path)
        assert later.status_code == 200 and later.headers["svc-edge-cache"] == "REVALIDATED"
        assert later.content == direct[path].content
        head = httpx.head(edge.url + path)
        assert head.status_code == 200 and head.content == b""


def test_the_extension_builds_are_kept_by_their_names(edge: Edge, origin: Server) -> None:
    direct = httpx.get(
        origin.url + "/svc/js/engagement,outbound", headers={"accept-encoding": "identity"}
    )
    assert direct.status_code == 200
    # any order, repeats, or the comma percent-encoded: the same build, kept once
    paths = (
        "/svc/js/outbound,engagement",
        "/svc/js/engagement,outbound,engagement",
        "/svc/js/engagement%2Coutbound",
    )
    answers = [httpx.get(edge.url + path) for path in paths]
    for path, answer in zip(paths, answers, strict=True):
        assert answer.status_code == 200, (path, answer.text)
        assert answer.content == direct.content and answer.headers["etag"] == direct.headers["etag"]
    # kept under one path: only the first can be a MISS (the next ones a HIT, or REVALIDATED
    # when the 1 s of these tests passed meanwhile)
    assert [a.headers["svc-edge-cache"] == "MISS" for a in answers[1:]] == [False, False]
    # a well-formed unknown name: the origin's 404 naming it, passed on and never kept
    for _ in range(2):
        unknown = httpx.get(edge.url + "/svc/js/engagement,nope")
        assert unknown.status_code == 404 and unknown.headers["svc-edge"].endswith("forwarded")
        error = unknown.json()["error"]
        assert error["code"] == "not_found" and error["field"] == "extensions"
        assert "`nope`" in error["message"]
    # a list that cannot name an extension: the same 404, answered at the edge
    for bad in (
        "/svc/js/Engagement",
        "/svc/js/engagement,",
        "/svc/js/",
        "/svc/js/a%2Fb",
        "/svc/js/a/b",
    ):
        r = httpx.get(edge.url + bad)
        assert r.status_code == 404, (bad, r.text)
        assert r.headers["svc-edge"].endswith("answered"), bad
        assert r.json()["ok"] is False
        assert (
            r.json()["error"]["code"] == "not_found" and r.json()["error"]["field"] == "extensions"
        )
    assert httpx.get(edge.url + "/svc/jsx").status_code == 404


def test_an_unreachable_origin_gives_503(edge: Edge, tmp_path: Path) -> None:
    config = {
        "SVC_ORIGIN": f"http://127.0.0.1:{free_port()}",  # nothing listens there
        "SVC_EDGE_SECRET": SECRET,
        "SVC_EDGE_TRUSTED_PROXIES": "127.0.0.1/32",
    }
    dead = start(edge.platform, built(edge.platform, tmp_path, config), tmp_path, config)
    try:
        r = post(dead, "svc_live_" + "k" * 30, {"event": "x", "url": "/"}, {})
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "unavailable"
        assert int(r.headers["retry-after"]) > 0
        assert r.headers["access-control-allow-origin"] == "*"
        for path in SCRIPTS:
            script = httpx.get(dead.url + path)
            assert script.status_code == 503 and "retry-after" in script.headers
    finally:
        dead.stop()


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_other_methods_and_paths(edge: Edge, method: str) -> None:
    r = httpx.request(method, edge.url + "/analytics")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    assert httpx.request(method, edge.url + "/metrics").status_code == 404
    if method != "GET":
        for path in SCRIPTS:
            r = httpx.request(method, edge.url + path)
            assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
