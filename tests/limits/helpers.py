"""Helpers of the limits tests."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import BROWSER_UA
from tests.support import Server

RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After")
NO_LIMITS = {
    "SVC_RATE_LIMIT_INGEST_PER_IP": "0",
    "SVC_RATE_LIMIT_INGEST_PER_PROJECT": "0",
    "SVC_RATE_LIMIT_READ_PER_KEY": "0",
    "SVC_RATE_LIMIT_MANAGE_PER_CREDENTIAL": "0",
    "SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP": "0",
}


def server(data_dir: Path, **env: str) -> Server:
    """A server with the given settings (every other limit off unless named)."""
    return Server(data_dir, env={**NO_LIMITS, **env}).start()


def event(i: int = 0, **fields: Any) -> dict[str, Any]:
    return {"event": "page_view", "url": f"/p{i}", **fields}


def post(
    srv: Server,
    key: str,
    body: Any,
    address: str | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", "User-Agent": BROWSER_UA}
    if address:
        headers["X-Forwarded-For"] = address
    sender = client or httpx
    return sender.post(srv.url + "/analytics", json=body, headers=headers, timeout=30)


def assert_rate_limited(r: httpx.Response, burst: int, setting: str = "") -> int:
    """The 429 of a rate limit, with its headers; returns Retry-After in seconds."""
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["ok"] is False and body["error"]["code"] == "rate_limited", body
    if setting:
        assert setting in body["error"]["message"]
    for name in RATE_HEADERS:
        assert name in r.headers, f"{name} missing: {dict(r.headers)}"
    assert r.headers["RateLimit-Limit"] == str(burst)
    assert r.headers["RateLimit-Remaining"] == "0"
    retry = int(r.headers["Retry-After"])
    assert 1 <= retry <= 60
    assert int(r.headers["RateLimit-Reset"]) >= retry
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    return retry


def wait_out(retry_after: int) -> None:
    time.sleep(retry_after + 0.05)


def patch_project(
    srv: Server, project_id: str, body: dict[str, Any], token: str = ""
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else srv.admin()
    return httpx.patch(srv.url + f"/projects/{project_id}", json=body, headers=headers)


def usage(srv: Server, project_id: str) -> dict[str, Any]:
    r = httpx.get(srv.url + f"/projects/{project_id}", headers=srv.admin())
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["usage"]
    return out
