"""/projects through the real server: provisioning, keys, rights."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server


def name() -> str:
    return "p-" + uuid.uuid4().hex[:10]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_create_returns_record_and_clear_keys(server: Server) -> None:
    n = name()
    r = httpx.post(
        server.url + "/projects",
        json={"name": n, "timezone": "Europe/Berlin", "domains": ["www.Acme.com"]},
        headers=server.admin(),
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["id"] == f"svc_proj_{n}"
    assert body["name"] == n and body["timezone"] == "Europe/Berlin"
    assert body["domains"] == ["acme.com"]
    assert body["keys"]["public"].startswith("svc_live_")
    assert body["keys"]["secret"].startswith("svc_live_")
    assert body["keys"]["public"] != body["keys"]["secret"]


def test_existing_name_is_409(server: Server) -> None:
    n = name()
    server.create_project(n)
    r = httpx.post(server.url + "/projects", json={"name": n}, headers=server.admin())
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": "Bad Name"}, "name"),
        ({"name": "-x"}, "name"),
        ({"name": "a" * 41}, "name"),
        ({"name": "ok", "timezone": "Nowhere/City"}, "timezone"),
        ({"name": "ok", "domains": "acme.com"}, "domains"),
        ({"name": "ok", "colour": "red"}, "colour"),
    ],
)
def test_invalid_project_is_400(server: Server, body: dict, field: str) -> None:
    r = httpx.post(server.url + "/projects", json=body, headers=server.admin())
    assert r.status_code == 400, r.text
    assert r.json()["error"]["field"] == field


def test_only_admin_creates_projects(server: Server) -> None:
    p = server.create_project(name())
    r = httpx.post(
        server.url + "/projects", json={"name": name()}, headers=bearer(p["keys"]["secret"])
    )
    assert r.status_code == 403
    r = httpx.post(server.url + "/projects", json={"name": name()})
    assert r.status_code == 401 and r.json()["error"]["code"] == "missing_api_key"


def test_list_admin_sees_all_secret_key_sees_its_own(server: Server) -> None:
    a, b = server.create_project(name()), server.create_project(name())
    r = httpx.get(server.url + "/projects", headers=server.admin())
    ids = {p["id"] for p in r.json()["projects"]}
    assert {a["id"], b["id"]} <= ids
    assert "svc_live_" not in r.text
    r = httpx.get(server.url + "/projects", headers=bearer(a["keys"]["secret"]))
    assert [p["id"] for p in r.json()["projects"]] == [a["id"]]
    r = httpx.get(server.url + "/projects", headers=bearer(a["keys"]["public"]))
    assert r.status_code == 403


def test_get_one_has_keys_without_clear_values_and_usage(server: Server) -> None:
    p = server.create_project(name())
    server.send(
        p["keys"]["public"], {"event": "page_view", "url": "/"}, headers={"User-Agent": BROWSER_UA}
    )
    r = httpx.get(server.url + f"/projects/{p['id']}", headers=bearer(p["keys"]["secret"]))
    assert r.status_code == 200
    body = r.json()
    assert {k["kind"] for k in body["keys"]} == {"public", "secret"}
    for k in body["keys"]:
        assert set(k) >= {"id", "kind", "scopes", "createdAt", "lastUsedAt"}
    assert p["keys"]["public"] not in r.text and p["keys"]["secret"] not in r.text
    assert body["usage"]["events"] == 1 and body["usage"]["quota"] == 100_000
    other = server.create_project(name())
    r = httpx.get(server.url + f"/projects/{p['id']}", headers=bearer(other["keys"]["secret"]))
    assert r.status_code == 403
    r = httpx.get(server.url + "/projects/svc_proj_nope", headers=server.admin())
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_patch_timezone_and_domains(server: Server) -> None:
    p = server.create_project(name())
    r = httpx.patch(
        server.url + f"/projects/{p['id']}",
        json={"timezone": "America/New_York", "domains": ["acme.org"]},
        headers=bearer(p["keys"]["secret"]),
    )
    assert r.status_code == 200, r.text
    assert r.json()["timezone"] == "America/New_York" and r.json()["domains"] == ["acme.org"]
    r = httpx.patch(
        server.url + f"/projects/{p['id']}",
        json={"plan": "pro"},
        headers=bearer(p["keys"]["secret"]),
    )
    assert r.status_code == 403


def test_keys_create_revoke_rotate(server: Server) -> None:
    p = server.create_project(name())
    pid, secret = p["id"], p["keys"]["secret"]
    r = httpx.post(
        server.url + f"/projects/{pid}/keys", json={"kind": "public"}, headers=bearer(secret)
    )
    assert r.status_code == 201, r.text
    new_key = r.json()
    assert new_key["key"].startswith("svc_live_") and new_key["scopes"] == ["ingest"]
    event = {"event": "page_view", "url": "/"}
    ua = {"User-Agent": BROWSER_UA}
    assert server.send(new_key["key"], event, headers=ua).status_code == 200

    r = httpx.delete(server.url + f"/projects/{pid}/keys/{new_key['id']}", headers=bearer(secret))
    assert r.status_code == 200 and r.json()["revokedAt"]
    r = server.send(new_key["key"], event, headers=ua)
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"

    keys = httpx.get(server.url + f"/projects/{pid}/keys", headers=bearer(secret)).json()["keys"]
    public = next(k for k in keys if k["kind"] == "public" and not k["revokedAt"])
    r = httpx.post(
        server.url + f"/projects/{pid}/keys/{public['id']}/rotate", headers=bearer(secret)
    )
    assert r.status_code == 201, r.text
    rotated = r.json()
    assert rotated["replaces"] == public["id"]
    assert server.send(rotated["key"], event, headers=ua).status_code == 200
    assert server.send(p["keys"]["public"], event, headers=ua).status_code == 401

    r = httpx.post(
        server.url + f"/projects/{pid}/keys", json={"kind": "root"}, headers=bearer(secret)
    )
    assert r.status_code == 400 and r.json()["error"]["field"] == "kind"
    r = httpx.delete(server.url + f"/projects/{pid}/keys/key_nope", headers=bearer(secret))
    assert r.status_code == 404


def test_delete_project_removes_keys_and_events(server: Server) -> None:
    p = server.create_project(name())
    server.send(
        p["keys"]["secret"], {"event": "page_view", "url": "/"}, headers={"User-Agent": BROWSER_UA}
    )
    server.wait_loaded()
    r = httpx.delete(server.url + f"/projects/{p['id']}", headers=bearer(p["keys"]["secret"]))
    assert r.status_code == 403
    # the deletes' mutations visit every part of the shared store's tables: seconds under
    # the other worker's load (once over httpx's 5 s default)
    r = httpx.delete(server.url + f"/projects/{p['id']}", headers=server.admin(), timeout=60)
    assert r.status_code == 200
    r = server.send(p["keys"]["secret"], {"event": "page_view", "url": "/"})
    assert r.status_code == 401
    r = httpx.get(server.url + f"/projects/{p['id']}", headers=server.admin())
    assert r.status_code == 404


def test_no_cookies_anywhere(server: Server) -> None:
    p = server.create_project(name())
    responses: list[Any] = [
        httpx.get(server.url + "/health"),
        httpx.get(server.url + "/svc/js"),
        httpx.get(server.url + "/openapi.json"),
        httpx.get(server.url + "/projects", headers=server.admin()),
        server.send(p["keys"]["public"], {"event": "page_view", "url": "/"}),
        httpx.get(
            server.url + "/metrics",
            params={"from": "2026-01-01"},
            headers=bearer(p["keys"]["secret"]),
        ),
        httpx.get(server.url + "/missing"),
    ]
    for r in responses:
        assert "set-cookie" not in r.headers, r.url
