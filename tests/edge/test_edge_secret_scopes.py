"""Edge secrets that sign for named projects alone: registered over the API
(/projects/{id}/edge-secrets) or in the data directory's ``edge-secrets``; revoked at once.

A signature by a secret whose scope does not hold the request's project is treated as no
signature: the headers are ignored (the event is the loopback client's: no country, another
visitor) and counted."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from svc.http.edge_auth import EdgeAuth
from svc.http.edge_keyring import EdgeSecrets, parse_secrets_file
from svc.http.edge_signature import verify
from tests.edge.test_signed_headers import signed
from tests.support import Server

SCOPED_IN_FILE = "svc_edge_filed1_" + "f" * 40
LEGACY_IN_FILE = "svc_edge_legacy1_" + "l" * 40


def project(origin: Server) -> dict[str, Any]:
    body: dict[str, Any] = origin.create_project("scope-" + uuid.uuid4().hex[:10])
    return body


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def send(origin: Server, key: str, path: str, secret: str, ip: str = "81.2.69.160") -> None:
    """A page view of ``path`` with edge headers signed by ``secret`` (country DE)."""
    body = json.dumps({"event": "page_view", "url": path}).encode()
    headers = signed(body, key=key, ip=ip, country="DE", secret=secret)
    r = httpx.post(origin.url + "/analytics", content=body, headers=headers)
    assert r.status_code == 200, r.text


def countries(origin: Server, p: dict[str, Any]) -> dict[str, str]:
    origin.wait_loaded()
    return {e["path"]: e["country"] for e in origin.events(p["id"], p["keys"]["secret"])}


def register(origin: Server, p: dict[str, Any], token: str) -> httpx.Response:
    return httpx.post(
        f"{origin.url}/projects/{p['id']}/edge-secrets",
        json={"provider": "bun"},
        headers=bearer(token),
    )


def test_registration_roles_listing_and_revocation(origin: Server) -> None:
    a, b = project(origin), project(origin)
    url = f"{origin.url}/projects/{a['id']}/edge-secrets"
    by_admin = register(origin, a, origin.admin_token)
    assert by_admin.status_code == 201, by_admin.text
    made = by_admin.json()
    assert made["projectId"] == a["id"] and made["provider"] == "bun"
    assert made["secret"].startswith(f"svc_edge_{made['id']}_")
    by_own_secret = register(origin, a, a["keys"]["secret"])
    assert by_own_secret.status_code == 201, by_own_secret.text
    for token, status in (
        (b["keys"]["secret"], 403),  # another project's secret key
        (a["keys"]["public"], 403),  # a public key never manages
        ("svc_live_" + "x" * 32, 401),
    ):
        for r in (register(origin, a, token), httpx.get(url, headers=bearer(token))):
            assert r.status_code == status, r.text
            assert r.json()["ok"] is False
        r = httpx.delete(f"{url}/{made['id']}", headers=bearer(token))
        assert r.status_code == status, r.text
    assert httpx.post(url).status_code == 401
    listed = httpx.get(url, headers=bearer(a["keys"]["secret"])).json()["edgeSecrets"]
    assert sorted(s["id"] for s in listed) == sorted([made["id"], by_own_secret.json()["id"]])
    assert all("secret" not in s for s in listed)
    # bad input names the field; an unknown project or secret is 404
    for body, field in (({"provider": "fastly"}, "provider"), ({"scope": "*"}, "scope")):
        r = httpx.post(url, json=body, headers=bearer(origin.admin_token))
        assert r.status_code == 400 and field in r.json()["error"]["message"], r.text
    missing = f"{origin.url}/projects/svc_proj_nope-{uuid.uuid4().hex[:6]}/edge-secrets"
    assert httpx.post(missing, headers=bearer(origin.admin_token)).status_code == 404
    assert httpx.delete(f"{url}/nosuchid", headers=bearer(origin.admin_token)).status_code == 404

    # it signs for A; on B's key its headers are ignored; revoked, it signs for nothing
    secret = made["secret"]
    send(origin, a["keys"]["public"], "/before", secret)
    send(origin, b["keys"]["public"], "/other-project", secret)
    r = httpx.delete(f"{url}/{made['id']}", headers=bearer(a["keys"]["secret"]))
    assert r.status_code == 200 and r.json() == {"ok": True, "revoked": made["id"]}, r.text
    send(origin, a["keys"]["public"], "/after", secret)
    assert countries(origin, a) == {"/before": "DE", "/after": ""}
    assert countries(origin, b) == {"/other-project": ""}
    left = httpx.get(url, headers=bearer(origin.admin_token)).json()["edgeSecrets"]
    assert [s["id"] for s in left] == [by_own_secret.json()["id"]]


def test_secrets_in_the_data_directory_with_and_without_a_scope(origin: Server) -> None:
    a, b = project(origin), project(origin)
    path = origin.data_dir / "edge-secrets"
    with open(path, "a") as f:
        f.write(f"filed1 {SCOPED_IN_FILE} svc_proj_none,{a['id']} bun 2026-11-24T00:00:00Z\n")
        f.write(f"{LEGACY_IN_FILE} {a['id']} bun 2026-01-01T00:00:00Z\n")  # before scopes
    for _ in range(3):  # read at once for a key id not known yet (else within a second)
        send(origin, a["keys"]["public"], "/probe", SCOPED_IN_FILE, ip="81.2.69.170")
        if countries(origin, a).get("/probe") == "DE":
            break
        time.sleep(1)
    send(origin, a["keys"]["public"], "/scoped", SCOPED_IN_FILE)
    send(origin, b["keys"]["public"], "/scoped", SCOPED_IN_FILE)
    send(origin, b["keys"]["public"], "/legacy", LEGACY_IN_FILE)
    assert countries(origin, a)["/scoped"] == "DE"
    assert countries(origin, b) == {"/scoped": "", "/legacy": "DE"}  # the old line: any project


def test_the_file_formats() -> None:
    filed = parse_secrets_file(
        "# a comment\n\n"
        f"filed1 {SCOPED_IN_FILE} svc_proj_a,svc_proj_b\n"
        f"filed1x {SCOPED_IN_FILE.replace('filed1', 'filed1x')} * cloudflare-workers\n"
        f"{LEGACY_IN_FILE} svc_proj_a bun 2026-01-01T00:00:00Z\n"
        "plainsecret\n"
    )
    assert filed["filed1"] == [(SCOPED_IN_FILE.encode(), frozenset({"svc_proj_a", "svc_proj_b"}))]
    assert filed["filed1x"][0][1] is None
    assert filed["legacy1"] == [(LEGACY_IN_FILE.encode(), None)]
    assert filed[""] == [(b"plainsecret", None)]


def test_a_signature_out_of_scope_is_counted_like_an_unverified_one(tmp_path: Path) -> None:
    """The middleware in-process: the inner application sees the request without its edge
    headers' effect (the peer's address), and the counters say why."""
    (tmp_path / "edge-secrets").write_text(f"filed1 {SCOPED_IN_FILE} svc_proj_a\n")
    secrets = EdgeSecrets("", tmp_path / "edge-secrets")
    seen: list[tuple[str, Any]] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope["client"][0], scope.get("svc.edge_geo")))

    async def project_of(scope: Any) -> str | None:
        return (
            "svc_proj_a" if (b"authorization", b"Bearer svc_live_a") in scope["headers"] else None
        )

    auth = EdgeAuth(inner, secrets, 1 << 20, project_of)
    body = b'{"event":"x","url":"/"}'

    async def call(key: str) -> None:
        headers = signed(body, key=key, ip="81.2.69.160", country="DE", secret=SCOPED_IN_FILE)
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/analytics",
            "raw_path": b"/analytics",
            "query_string": b"",
            "client": ("127.0.0.1", 5000),
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        }
        sent = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            return sent.pop(0)

        async def send(message: Any) -> None:
            pass

        await auth(scope, receive, send)

    asyncio.run(call("svc_live_a"))
    asyncio.run(call("svc_live_b"))
    assert [address for address, _ in seen] == ["81.2.69.160", "127.0.0.1"]
    assert seen[1][1] is None
    assert (auth.verified, auth.refused, auth.out_of_scope) == (1, 1, 1)
    # verify() itself tells the scope; the middleware decides
    headers = signed(body, key="svc_live_b", ip="81.2.69.160", secret=SCOPED_IN_FILE)
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    visitor = verify(secrets, method="POST", target="/analytics", body=body, headers=raw)
    assert visitor is not None and visitor.scope == frozenset({"svc_proj_a"})
