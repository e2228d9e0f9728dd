"""``offset`` of a breakdown is bounded (issue 16, item 11): it was bound into SQL as a
UInt32 and wrapped at 2^32."""

from __future__ import annotations

import httpx

from tests.support import Server, is_error
from tests.support import browser_bearer as bearer


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
