"""The origin's side of the signed edge headers (svc.http.edge_auth): what it trusts, what it
ignores, and that the edge's signature (edge/src/sign.ts, run in Node) is the one it checks."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.http.edge_keyring import EdgeSecrets, key_id
from svc.http.edge_replays import ReplayGuard
from svc.http.edge_signature import WINDOW_SECONDS, sign, verify
from tests.conftest import BROWSER_UA
from tests.edge.support import BIN, EDGE, METRICS_TOKEN, SECRET, require_runtimes
from tests.support import Server

KID = key_id(SECRET)


def signed(
    body: bytes,
    *,
    key: str,
    ip: str,
    country: str = "",
    region: str = "",
    city: str = "",
    secret: str = SECRET,
    ts: int | None = None,
    target: str = "/analytics",
    signed_body: bytes | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    """The headers an edge sends, signed as edge/src/sign.ts signs them (with a new nonce
    unless ``nonce`` is given; ``""``: none, as a signer without nonces)."""
    stamp = str(int(time.time()) if ts is None else ts)
    nonce = uuid.uuid4().hex if nonce is None else nonce
    authorization = f"Bearer {key}"
    signature = sign(
        secret.encode(),
        kid=key_id(secret),
        ts=stamp,
        method="POST",
        target=target,
        body_sha256=hashlib.sha256(body if signed_body is None else signed_body).hexdigest(),
        authorization=authorization,
        user_agent=BROWSER_UA,
        fields=(ip, country, region, city),
        nonce=nonce,
    )
    headers = {
        "authorization": authorization,
        "user-agent": BROWSER_UA,
        "content-type": "application/json",
        "x-svc-edge-ip": ip,
        "x-svc-edge-ts": stamp,
        "x-svc-edge-signature": f"v1={signature}",
    }
    if key_id(secret):
        headers["x-svc-edge-kid"] = key_id(secret)
    if nonce:
        headers["x-svc-edge-nonce"] = nonce
    for name, value in (("country", country), ("region", region), ("city", city)):
        if value:
            headers[f"x-svc-edge-{name}"] = value
    return headers


def new_project(origin: Server) -> tuple[str, str, str]:
    body = origin.create_project("sig-" + uuid.uuid4().hex[:10])
    return body["id"], body["keys"]["public"], body["keys"]["secret"]


def test_only_a_valid_signature_makes_the_headers_count(origin: Server) -> None:
    pid, public, secret = new_project(origin)
    ok_body = json.dumps({"event": "page_view", "url": "/signed"}).encode()
    cases: dict[str, tuple[bytes, dict[str, str]]] = {
        "/signed": (ok_body, signed(ok_body, key=public, ip="81.2.69.160", country="DE")),
    }

    def body(path: str) -> bytes:
        return json.dumps({"event": "page_view", "url": path}).encode()

    b = body("/wrong-secret")
    cases["/wrong-secret"] = (
        b,
        signed(b, key=public, ip="81.2.69.160", country="DE", secret="svc_edge_test1_" + "y" * 40),
    )
    b = body("/stale")
    cases["/stale"] = (
        b,
        signed(b, key=public, ip="81.2.69.160", country="DE", ts=int(time.time()) - 600),
    )
    b = body("/other-body")
    cases["/other-body"] = (
        b,
        signed(b, key=public, ip="81.2.69.160", country="DE", signed_body=body("/x")),
    )
    b = body("/moved")
    moved = signed(b, key=public, ip="81.2.69.160", country="DE")
    moved["x-svc-edge-country"] = "FR"  # a signed request's field changed on the way
    cases["/moved"] = (b, moved)
    b = body("/unsigned")
    cases["/unsigned"] = (
        b,
        {
            "authorization": f"Bearer {public}",
            "user-agent": BROWSER_UA,
            "x-svc-edge-ip": "81.2.69.160",
            "x-svc-edge-country": "DE",
            "cf-ipcountry": "DE",
        },
    )
    for content, headers in cases.values():  # five from loopback: within its rate limit
        r = httpx.post(origin.url + "/analytics", content=content, headers=headers)
        assert r.status_code == 200, r.text
    origin.wait_loaded()
    events = {e["path"]: e for e in origin.events(pid, secret)}
    assert events["/signed"]["country"] == "DE"
    # every other one is the loopback client's (no country), as if it had no edge headers
    assert set(events) == set(cases)
    for path in cases:
        if path != "/signed":
            assert events[path]["country"] == "", path
            assert events[path]["visitor_id"] != events["/signed"]["visitor_id"], path


def test_verify_in_process() -> None:
    secrets = EdgeSecrets(f"{SECRET}, plainsecret")
    body = b'{"event":"x","url":"/"}'
    headers = signed(body, key="svc_live_k", ip="::ffff:81.2.69.160", country="us", region="ca")
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    visitor = verify(secrets, method="POST", target="/analytics", body=body, headers=raw)
    assert visitor is not None
    assert visitor.address == "81.2.69.160"  # IPv4-mapped: the IPv4 address
    assert visitor.geo is not None and (visitor.geo.country, visitor.geo.region) == ("US", "US-CA")
    assert verify(secrets, method="POST", target="/analytics?x=1", body=body, headers=raw) is None
    assert (
        verify(EdgeSecrets(""), method="POST", target="/analytics", body=body, headers=raw) is None
    )
    other = EdgeSecrets("svc_edge_other_" + "x" * 40)  # a key id the origin does not know
    assert verify(other, method="POST", target="/analytics", body=body, headers=raw) is None
    # a secret without an id (any string an operator chose)
    plain = signed(body, key="svc_live_k", ip="1.2.3.4", secret="plainsecret")
    assert "x-svc-edge-kid" not in plain
    raw = [(k.encode(), v.encode()) for k, v in plain.items()]
    assert verify(secrets, method="POST", target="/analytics", body=body, headers=raw) is not None
    # an address that is none
    bad = signed(body, key="svc_live_k", ip="not-an-ip")
    raw = [(k.encode(), v.encode()) for k, v in bad.items()]
    assert verify(secrets, method="POST", target="/analytics", body=body, headers=raw) is None
    # the nonce is signed: without one (a signer without nonces) it verifies; another, or one
    # taken away, does not
    bare = signed(body, key="svc_live_k", ip="1.2.3.4", nonce="")
    assert "x-svc-edge-nonce" not in bare
    raw = [(k.encode(), v.encode()) for k, v in bare.items()]
    assert verify(secrets, method="POST", target="/analytics", body=body, headers=raw) is not None
    with_nonce = signed(body, key="svc_live_k", ip="1.2.3.4")
    for change in ({"x-svc-edge-nonce": "0" * 32}, {"x-svc-edge-nonce": ""}):
        raw = [(k.encode(), v.encode()) for k, v in {**with_nonce, **change}.items()]
        assert verify(secrets, method="POST", target="/analytics", body=body, headers=raw) is None
    long_nonce = signed(body, key="svc_live_k", ip="1.2.3.4", nonce="n" * 129)
    raw = [(k.encode(), v.encode()) for k, v in long_nonce.items()]
    assert verify(secrets, method="POST", target="/analytics", body=body, headers=raw) is None


def replayed(origin: Server) -> float:
    r = httpx.get(
        origin.url + "/internal/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"}
    )
    assert r.status_code == 200, r.text
    m = re.search(r'^svc_edge_signed_requests_total\{result="replayed"\} (\S+)$', r.text, re.M)
    assert m is not None, r.text
    return float(m.group(1))


def test_a_signed_request_is_served_once(origin: Server) -> None:
    """The same signed request again within its window (a replay: events without eventId,
    as the browser script sends them) is answered 409 and stores nothing; the same event
    signed again with a new nonce, in the same second, is a request of its own."""
    pid, public, secret = new_project(origin)
    body = json.dumps({"event": "page_view", "url": "/once"}).encode()
    headers = signed(body, key=public, ip="81.2.69.170", country="DE")
    before = replayed(origin)
    first = httpx.post(origin.url + "/analytics", content=body, headers=headers)
    assert first.status_code == 200, first.text
    again = httpx.post(origin.url + "/analytics", content=body, headers=headers)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert error["code"] == "conflict" and error["field"] == "x-svc-edge-signature"
    assert again.headers["access-control-allow-origin"] == "*"
    assert replayed(origin) == before + 1
    other = signed(
        body, key=public, ip="81.2.69.170", country="DE", ts=int(headers["x-svc-edge-ts"])
    )
    assert other["x-svc-edge-nonce"] != headers["x-svc-edge-nonce"]
    second = httpx.post(origin.url + "/analytics", content=body, headers=other)
    assert second.status_code == 200, second.text
    origin.wait_loaded()
    events = origin.events(pid, secret)
    assert [e["path"] for e in events] == ["/once", "/once"]
    assert {e["country"] for e in events} == {"DE"}


def test_the_replay_memory_keeps_a_signature_for_its_window() -> None:
    guard = ReplayGuard(capacity=3)
    t = 1_000_000.0
    assert guard.first(b"a", t + WINDOW_SECONDS, now=t)
    assert not guard.first(b"a", t + WINDOW_SECONDS, now=t + 1)
    assert not guard.first(b"a", t + WINDOW_SECONDS, now=t + WINDOW_SECONDS)
    # once its time has left the window, it is forgotten (verify refuses it as stale by then)
    assert guard.first(b"a", t + 2 * WINDOW_SECONDS, now=t + WINDOW_SECONDS + 1)
    assert len(guard) == 1
    # full: the oldest is forgotten first, and counted
    for name in (b"b", b"c", b"d"):
        assert guard.first(name, t + 3 * WINDOW_SECONDS, now=t + WINDOW_SECONDS + 2)
    assert len(guard) == 3 and guard.forgotten_early == 1
    assert guard.first(b"a", t + 3 * WINDOW_SECONDS, now=t + WINDOW_SECONDS + 3)
    assert not guard.first(b"d", t + 3 * WINDOW_SECONDS, now=t + WINDOW_SECONDS + 3)


def test_secrets_registered_in_the_data_directory_are_read_when_they_change(
    tmp_path: Path,
) -> None:
    path = tmp_path / "edge-secrets"
    secrets = EdgeSecrets("", path)
    assert not secrets.configured()
    path.write_text(f"# comment\n{SECRET} svc_proj_acme bun 2026-01-01T00:00:00Z\n")
    secrets._checked = float("-inf")  # the file is looked at once a second
    assert secrets.candidates(KID) == [(SECRET.encode(), None)]  # an old line: any project


def test_the_edges_signature_is_the_one_the_origin_checks(tmp_path: Path) -> None:
    """edge/src/sign.ts, bundled and run in Node, signs; svc.http.edge_auth verifies."""
    require_runtimes()
    script = tmp_path / "sign.mjs"
    subprocess.run(
        [
            str(BIN / "esbuild"),
            str(EDGE / "src" / "sign.ts"),
            "--bundle",
            "--format=esm",
            "--platform=node",
            f"--outfile={script}",
            "--log-level=warning",
        ],
        check=True,
    )
    runner = tmp_path / "run.mjs"
    runner.write_text(
        "import { edgeHeaders } from './sign.mjs';\n"
        "const [secret, body] = process.argv.slice(2);\n"
        "const h = await edgeHeaders(secret, {method: 'POST', target: '/analytics?key=k&x=%20',"
        " body: new TextEncoder().encode(body), authorization: 'Bearer svc_live_a',"
        " userAgent: 'Mozilla/5.0 é'}, {ip: '2001:db8::1', country: 'br', region: 'SP',"
        " city: 'São Paulo'});\n"
        "console.log(JSON.stringify(h));\n"
    )
    body = '{"event":"page_view","url":"/ü"}'
    out = subprocess.run(
        ["node", str(runner), SECRET, body], capture_output=True, text=True, check=True
    ).stdout
    headers: dict[str, Any] = json.loads(out)
    assert headers["x-svc-edge-kid"] == KID
    assert re.fullmatch(r"[0-9a-f]{32}", headers["x-svc-edge-nonce"])
    assert headers["x-svc-edge-city"] == "S%C3%A3o%20Paulo"
    raw = [(k.encode(), v.encode("latin-1")) for k, v in headers.items()]
    raw += [
        (b"authorization", b"Bearer svc_live_a"),
        (b"user-agent", "Mozilla/5.0 é".encode("latin-1")),
    ]
    visitor = verify(
        EdgeSecrets(SECRET),
        method="POST",
        target="/analytics?key=k&x=%20",
        body=body.encode(),
        headers=raw,
    )
    assert visitor is not None
    assert visitor.address == "2001:db8::1"
    assert visitor.geo is not None
    assert (visitor.geo.country, visitor.geo.region, visitor.geo.city) == (
        "BR",
        "BR-SP",
        "São Paulo",
    )


@pytest.mark.parametrize("secret", ["svc_edge_ab_cd", "svc_edge__x", "x", "svc_edge_a-b_c"])
def test_key_ids(secret: str) -> None:
    assert key_id(secret) == ("ab" if secret == "svc_edge_ab_cd" else "")
