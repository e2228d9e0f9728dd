"""``offset`` of a breakdown is bounded (issue 16, item 11): it was bound into SQL as a
UInt32 and wrapped at 2^32."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import BROWSER_UA
from tests.support import Server

UA = {"User-Agent": BROWSER_UA}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **UA}


def is_error(r: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """The JSON error of ``r``, checked: its status, its shape and the field it names."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body: dict[str, Any] = r.json()
    assert body["ok"] is False and body["error"]["code"] and body["error"]["message"], body
    if field is not None:
        assert body["error"].get("field") == field, body
    return body


def test_offset_is_bounded(server: Server) -> None:
    project = server.create_project("offset-bound")
    secret = project["keys"]["secret"]

    def breakdown(offset: str) -> httpx.Response:
        params = {"from": "2024-01-01", "by": "page", "offset": offset}
        return httpx.get(server.url + "/metrics/breakdown", params=params, headers=bearer(secret))

    for bad in (str(2**32 + 1), "1000001", "-1", "x", "9" * 5000):
        is_error(breakdown(bad), 400, "offset")
    r = breakdown("1000000")
    assert r.status_code == 200 and r.json()["offset"] == 1_000_000, r.text
