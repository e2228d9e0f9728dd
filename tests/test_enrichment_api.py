"""Enrichment and exclusions seen through the real server: what is stored for an event."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support import Server

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:126.0) Gecko/20100101 Firefox/126.0"


def stored(server: Server, p: dict[str, Any]) -> list[dict[str, Any]]:
    server.wait_loaded()
    return server.events(p["id"], p["keys"]["secret"])


def test_user_agent_url_referrer_and_channel_are_stored(server: Server) -> None:
    p = server.create_project("enrich-" + uuid.uuid4().hex[:8], domains=["shop.test"])
    url = "https://www.shop.test/sale?utm_source=Newsletter&utm_medium=email&utm_campaign=bf&x=1&gclid=abc"
    r = httpx.post(
        server.url + "/analytics",
        json={"event": "page_view", "url": url, "referrer": "https://www.google.co.uk/"},
        headers={"Authorization": f"Bearer {p['keys']['public']}", "User-Agent": IPHONE},
    )
    assert r.status_code == 200
    (row,) = stored(server, p)
    assert (row["hostname"], row["path"]) == ("shop.test", "/sale")
    assert (row["browser"], row["os"], row["device"]) == ("Safari", "iOS", "mobile")
    assert row["source"] == "newsletter"
    assert row["utm_medium"] == "email" and row["utm_campaign"] == "bf"
    assert row["click_id"] == "gclid:abc"
    assert row["channel"] == "paid_search"
    assert row["referrer_host"] == "google.co.uk"


def test_server_side_sender_passes_the_end_users_agent_and_address(server: Server) -> None:
    p = server.create_project("server-side-" + uuid.uuid4().hex[:8])
    body = {"event": "page_view", "url": "/", "userAgent": FIREFOX, "ip": "8.8.8.8"}
    # the server's own user agent is an HTTP library: not judged with a secret key
    r = httpx.post(
        server.url + "/analytics",
        json=body,
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
    )
    assert r.status_code == 200 and "x-svc-dropped" not in r.headers
    (row,) = stored(server, p)
    assert row["browser"] == "Firefox" and row["country"] == "US"
    assert "8.8.8.8" not in str(row)


def test_screen_width_gives_the_device_when_the_agent_cannot(server: Server) -> None:
    p = server.create_project("screen-" + uuid.uuid4().hex[:8])
    ua = "Mozilla/5.0 (compatible; SomeNewBrowser/1.0)"
    r = httpx.post(
        server.url + "/analytics",
        json={"event": "page_view", "url": "/", "screen": 390},
        headers={"Authorization": f"Bearer {p['keys']['public']}", "User-Agent": ua},
    )
    assert r.status_code == 200
    rows = stored(server, p)
    assert len(rows) == 1 and rows[0]["device"] in ("mobile", "")


def test_project_exclusions_drop_with_a_reason(server: Server) -> None:
    p = server.create_project("excl-" + uuid.uuid4().hex[:8], domains=["mine.test"])
    r = httpx.patch(
        server.url + f"/projects/{p['id']}",
        json={
            "options": {
                "excludeAddresses": ["10.20.0.0/16"],
                "excludePaths": ["/admin/*"],
                "onlyOwnDomains": True,
            }
        },
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
    )
    assert r.status_code == 200, r.text
    base = {"event": "page_view", "userAgent": FIREFOX}
    cases = [
        ({"url": "https://mine.test/", "ip": "10.20.3.4"}, "excluded_address"),
        ({"url": "https://mine.test/admin/users", "ip": "10.30.0.1"}, "excluded_path"),
        ({"url": "https://evil.test/", "ip": "10.30.0.1"}, "foreign_hostname"),
        ({"url": "https://blog.mine.test/", "ip": "10.30.0.1"}, None),
    ]
    for fields, reason in cases:
        r = httpx.post(
            server.url + "/analytics",
            json={**base, **fields},
            headers={"Authorization": f"Bearer {p['keys']['secret']}"},
        )
        assert r.status_code == 200
        assert r.headers.get("x-svc-dropped") == reason, fields
    rows = stored(server, p)
    assert [row["hostname"] for row in rows] == ["blog.mine.test"]
    r = httpx.patch(
        server.url + f"/projects/{p['id']}",
        json={"options": {"excludeAddresses": ["not-a-cidr"]}},
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
    )
    assert r.status_code == 400 and r.json()["error"]["field"] == "options.excludeAddresses"


EDGE_HEADERS = {
    "CF-IPCountry": "US",
    "CF-Region-Code": "TX",
    "CF-IPCity": "Austin",
}


@pytest.fixture(scope="module")
def behind_edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that trusts its loopback peer as the edge in front of it."""
    srv = Server(
        tmp_path_factory.mktemp("edge") / "data", env={"SVC_TRUSTED_PROXIES": "127.0.0.1/32"}
    ).start()
    yield srv
    srv.stop()


def test_a_trusted_edge_gives_country_region_and_city(behind_edge: Server) -> None:
    p = behind_edge.create_project("edge-" + uuid.uuid4().hex[:8])
    headers = {"Authorization": f"Bearer {p['keys']['public']}", "User-Agent": FIREFOX}
    events = [
        ({**EDGE_HEADERS, "X-Forwarded-For": "8.8.8.8"}, "/a"),  # the edge's own answer wins
        ({"X-Vercel-IP-Country": "DE", "X-Vercel-IP-City": "M%C3%BCnchen"}, "/b"),
        ({"CF-IPCountry": "FR", "CF-Region-Code": "not a code"}, "/c"),
        ({"X-Forwarded-For": "8.8.8.8"}, "/d"),  # no edge header: the address (no city data)
    ]
    for extra, path in events:
        r = httpx.post(
            behind_edge.url + "/analytics",
            json={"event": "page_view", "url": f"https://e.test{path}"},
            headers={**headers, **extra},
        )
        assert r.status_code == 200, r.text
    rows = {r["path"]: (r["country"], r["region"], r["city"]) for r in stored(behind_edge, p)}
    assert rows == {
        "/a": ("US", "US-TX", "Austin"),
        "/b": ("DE", "", "München"),
        "/c": ("FR", "", ""),
        "/d": ("US", "", ""),
    }
    by_city = httpx.get(
        behind_edge.url + "/metrics/breakdown",
        params={"from": "2000-01-01", "by": "city", "filter": "region:is:US-TX"},
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
    ).json()
    assert [(row["value"], row["visitors"]) for row in by_city["rows"]] == [("Austin", 1)]


def test_edge_headers_from_an_untrusted_peer_are_ignored(server: Server) -> None:
    p = server.create_project("no-edge-" + uuid.uuid4().hex[:8])
    r = httpx.post(
        server.url + "/analytics",
        json={"event": "page_view", "url": "/"},
        headers={
            "Authorization": f"Bearer {p['keys']['public']}",
            "User-Agent": FIREFOX,
            **EDGE_HEADERS,
        },
    )
    assert r.status_code == 200
    ((row),) = stored(server, p)
    assert (row["country"], row["region"], row["city"]) == ("", "", "")


def test_a_server_side_sender_may_name_the_end_users_client(server: Server) -> None:
    """An import's browser, system, device and location (``client``) replace what the user
    agent and the address would give, from a secret key only; a bad one is a 400 naming it."""
    p = server.create_project("client-" + uuid.uuid4().hex[:8])
    client = {"browser": "Yandex Browser", "browserVersion": "24.1", "os": "Android",
              "osVersion": "14", "device": "Tablet", "country": "fr", "region": "FR-IDF",
              "city": "Paris"}  # fmt: skip
    event = {"event": "page_view", "url": "/s", "userAgent": FIREFOX, "ip": "8.8.8.8"}
    secret = {"Authorization": f"Bearer {p['keys']['secret']}"}
    r = httpx.post(server.url + "/analytics", json={**event, "client": client}, headers=secret)
    assert r.status_code == 200, r.text
    public = {"Authorization": f"Bearer {p['keys']['public']}", "User-Agent": FIREFOX}
    r = httpx.post(
        server.url + "/analytics", json={"event": "page_view", "url": "/p", "client": client},
        headers=public,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    for bad, field in [({"colour": "x"}, "client.colour"), ({"os": 7}, "client.os"),
                       ({"city": "x" * 101}, "client.city"), ("FR", "client")]:  # fmt: skip
        r = httpx.post(server.url + "/analytics", json={**event, "client": bad}, headers=secret)
        assert r.status_code == 400 and r.json()["error"]["field"] == field, r.text
    rows = {r["path"]: r for r in stored(server, p)}
    named = rows["/s"]
    assert (named["browser"], named["browser_version"], named["os"], named["os_version"]) == (
        "Yandex Browser",
        "24.1",
        "Android",
        "14",
    )
    assert (named["device"], named["country"], named["region"], named["city"]) == (
        "tablet",
        "FR",
        "FR-IDF",
        "Paris",
    )
    assert (rows["/p"]["browser"], rows["/p"]["country"]) == ("Firefox", "")
