"""Lambda@Edge and the bodies CloudFront does not give a function whole (docs/edge.md, "Bodies
the function does not see whole"): at viewer-request CloudFront gives at most 40 KB of a body
and sets ``inputTruncated``. Such a body is not judged at the edge, and goes on to the origin
as the viewer sent it, unsigned; one that declares more than the origin's limit gets 413 at
the edge. Run with the Lambda@Edge bundle under the CloudFront stand-in (edge/test/cloudfront.mjs)
at viewer-request, in front of an origin of its own (the unsigned requests all come from
loopback: the session's origin limits loopback to 5 a minute)."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.edge.support import EDGE, SECRET, Edge, built, require_runtimes, start, visitor_headers
from tests.support import Server

VIEWER_LIMIT = 40 * 1024  # what CloudFront gives a viewer-request function of a body
FORGED = {  # a client's own x-svc-edge-* headers: never passed on
    "x-svc-edge-ip": "8.8.8.8",
    "x-svc-edge-country": "FR",
    "x-svc-edge-ts": "1",
    "x-svc-edge-signature": "v1=" + "0" * 64,
}


@pytest.fixture(scope="module")
def own_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("lambda-origin") / "data", env={"SVC_EDGE_SECRET": SECRET}
    ).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def viewer(own_origin: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    """The Lambda@Edge bundle associated with the viewer-request event."""
    require_runtimes()
    tmp = tmp_path_factory.mktemp("lambda-viewer")
    config = {
        "SVC_ORIGIN": own_origin.url,
        "SVC_EDGE_SECRET": SECRET,
        "EVENT_TYPE": "viewer-request",
    }
    edge = start("lambda-edge", built("lambda-edge", tmp, config), tmp, config)
    yield edge
    edge.stop()


def new_project(origin: Server) -> tuple[str, str, str]:
    body = origin.create_project("lam-" + uuid.uuid4().hex[:10])
    return body["id"], body["keys"]["public"], body["keys"]["secret"]


def batch(n: int, event: str = "page_view", tag: str = "") -> bytes:
    """``n`` events of about 1.6 KB each (a long but valid URL)."""
    pad = "p" * 1500
    return json.dumps(
        [{"event": event, "url": f"https://acme.test/{tag}{i}/{pad}"} for i in range(n)]
    ).encode()


def post(edge: Edge, key: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(
        edge.url + "/analytics",
        content=body,
        headers={
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "user-agent": BROWSER_UA,
            **headers,
        },
        timeout=30,
    )


def rejected(origin: Server) -> Any:
    """The origin's counts of rejected events (by reason)."""
    return origin.health()["pipeline"]["rejected"]


def test_a_body_over_40_kb_goes_to_the_origin_unjudged_and_unsigned(
    viewer: Edge, own_origin: Server
) -> None:
    pid, public, secret = new_project(own_origin)
    body = batch(30, tag="big")
    assert len(body) > VIEWER_LIMIT
    visitor = visitor_headers("lambda-edge", "81.2.69.160", "DE")
    r = post(viewer, public, body, {**visitor, **FORGED})
    assert r.status_code == 200, r.text
    # the function returned the request: CloudFront (the stand-in) sent it to the origin
    assert r.headers["x-test-cloudfront"] == "origin"
    assert "svc-edge" not in r.headers
    assert r.json()["accepted"] == 30
    # a small body through the same edge is judged and signed as usual
    small = post(viewer, public, batch(2, tag="small"), visitor)
    assert small.status_code == 200, small.text
    assert small.headers["svc-edge"] == "lambda-edge; forwarded"
    own_origin.wait_loaded()
    events = own_origin.events(pid, secret)
    big = [e for e in events if "/big" in e["url"]]
    signed = [e for e in events if "/small" in e["url"]]
    assert len(big) == 30 and len(signed) == 2
    # unsigned, the forged headers ignored: the origin saw CloudFront's (loopback) address,
    # no country; the signed ones are the visitor's, located by the platform
    assert {e["country"] for e in big} == {""}
    assert {e["country"] for e in signed} == {"DE"}
    assert {e["visitor_id"] for e in big}.isdisjoint({e["visitor_id"] for e in signed})


def test_a_bad_body_over_40_kb_gets_the_origins_own_answer(
    viewer: Edge, own_origin: Server
) -> None:
    _, public, _ = new_project(own_origin)
    body = batch(30, event="")
    before = rejected(own_origin)
    r = post(viewer, public, body, visitor_headers("lambda-edge", "81.2.69.161"))
    assert r.headers["x-test-cloudfront"] == "origin"
    # what the edge answers for a smaller one: 400, accepted 0, each event named
    assert r.status_code == 400, r.text
    answer = r.json()
    assert answer["ok"] is False and answer["error"]["code"] == "invalid_request"
    assert answer["accepted"] == 0 and len(answer["rejected"]) == 30
    assert answer["rejected"][0]["error"]["field"] == "event"
    assert rejected(own_origin) != before
    # a small bad one never reaches the origin
    before = rejected(own_origin)
    small = post(viewer, public, batch(2, event=""), visitor_headers("lambda-edge", "81.2.69.161"))
    assert small.status_code == 400 and small.headers["svc-edge"] == "lambda-edge; answered"
    assert small.json()["accepted"] == 0
    assert rejected(own_origin) == before


def test_a_body_declared_over_the_limit_gets_413_at_the_edge(
    viewer: Edge, own_origin: Server
) -> None:
    _, public, _ = new_project(own_origin)
    before = rejected(own_origin)
    body = b"[" + b" " * (1024 * 1024) + b"]"
    r = post(viewer, public, body, visitor_headers("lambda-edge", "81.2.69.162"))
    assert r.status_code == 413, r.text
    assert r.headers["svc-edge"] == "lambda-edge; answered"
    assert "x-test-cloudfront" not in r.headers
    error = r.json()["error"]
    assert error["code"] == "payload_too_large" and "1048576" in error["message"]
    assert rejected(own_origin) == before


def invoke(bundle: Path, tmp: Path, request: dict[str, Any]) -> dict[str, Any]:
    """The handler's result for one CloudFront viewer-request event document."""
    event = {
        "Records": [
            {
                "cf": {
                    "config": {
                        "distributionDomainName": "d111111abcdef8.cloudfront.net",
                        "distributionId": "EDFDVBD6EXAMPLE",
                        "eventType": "viewer-request",
                        "requestId": "svc-invoke",
                    },
                    "request": {
                        "clientIp": "203.0.113.178",
                        "method": "POST",
                        "uri": "/analytics",
                        "querystring": "key=svc_live_" + "k" * 30,
                        **request,
                    },
                }
            }
        ]
    }
    path = tmp / f"event-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(event))
    out = subprocess.run(
        ["node", str(EDGE / "test" / "cloudfront.mjs"), str(bundle), "--invoke", str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def test_event_documents_without_the_whole_body(tmp_path: Path) -> None:
    """The function's result for events of the documented shape: a truncated body, or none
    given (an association without IncludeBody), goes on unjudged, less the x-svc-edge-*
    headers; a body given whole is judged."""
    require_runtimes()
    bundle = built("lambda-edge", tmp_path, {"SVC_ORIGIN": "http://127.0.0.1:9"})

    def headers(length: int) -> dict[str, list[dict[str, str]]]:
        return {
            "content-length": [{"key": "Content-Length", "value": str(length)}],
            "content-type": [{"key": "Content-Type", "value": "text/plain"}],
            "x-svc-edge-ip": [{"key": "X-Svc-Edge-Ip", "value": "8.8.8.8"}],
        }

    truncated = invoke(
        bundle,
        tmp_path,
        {
            "headers": headers(50_000),
            "body": {
                "action": "read-only",
                "data": base64.b64encode(b"[" * VIEWER_LIMIT).decode(),
                "encoding": "base64",
                "inputTruncated": True,
            },
        },
    )
    assert truncated["uri"] == "/analytics"  # the request itself: CloudFront sends it on
    assert "x-svc-edge-ip" not in truncated["headers"]
    assert truncated["headers"]["content-length"][0]["value"] == "50000"
    absent = invoke(bundle, tmp_path, {"headers": headers(120)})
    assert absent["uri"] == "/analytics" and "x-svc-edge-ip" not in absent["headers"]
    # declared over the limit, given or not: the origin's 413, from the edge
    for request in (
        {"headers": headers(2_000_000)},
        {
            "headers": headers(2_000_000),
            "body": {"data": "W10=", "encoding": "base64", "inputTruncated": True},
        },
    ):
        too_large = invoke(bundle, tmp_path, request)
        assert too_large["status"] == "413", too_large
        body = json.loads(base64.b64decode(too_large["body"]))
        assert body["error"]["code"] == "payload_too_large"
    # given whole: judged here (an empty batch is the origin's 400)
    whole = invoke(
        bundle,
        tmp_path,
        {
            "headers": headers(2),
            "body": {"data": "W10=", "encoding": "base64", "inputTruncated": False},
        },
    )
    assert whole["status"] == "400"
    assert json.loads(base64.b64decode(whole["body"]))["error"]["field"] == "events"
