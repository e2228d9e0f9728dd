"""What the dashboard shows is what a filter takes (issue 41): the values the service names
itself (device, channel, browser, OS) match in any case and, for a channel, in the words
shown; and GET /metrics/values suggests the values of a dimension as one types."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from svc.schema.named import canonical
from tests.support import Server, is_error
from tests.test_metrics_golden import DAY, at, ev

D = DAY.date().isoformat()
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
MAC_FIREFOX = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.1; rv:121.0) Gecko/20100101 Firefox/121.0"


@pytest.fixture(scope="module")
def acme(server: Server) -> dict[str, Any]:
    p = server.create_project("named-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    events = [
        ev(1, at(10, 0), path="/blog/one", referrer="https://www.google.com/"),  # desktop Chrome
        ev(2, at(10, 5), path="/blog/two", userAgent=IPHONE),  # mobile Safari, iOS
        ev(3, at(10, 10), path="/Blog/three", userAgent=IPHONE),
        ev(4, at(10, 15), path="/pricing", userAgent=MAC_FIREFOX),  # desktop Firefox, macOS
    ]
    r = server.send(p["keys"]["secret"], events)
    assert r.status_code == 200 and r.json()["accepted"] == 4, r.text
    server.wait_loaded()
    return p


def get(srv: Server, p: dict[str, Any], path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        srv.url + path,
        params={"from": D, "to": D, **params},
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
        timeout=30,
    )


def visitors(srv: Server, p: dict[str, Any], *filters: str) -> int:
    r = get(srv, p, "/metrics", filter=list(filters))
    assert r.status_code == 200, r.text
    return int(r.json()["visitors"])


@pytest.mark.parametrize(
    ("shown", "stored", "expected"),
    [
        ("device:is:Mobile", "device:is:mobile", 2),
        ("device:is:DESKTOP", "device:is:desktop", 2),
        ("device:is_not:Mobile", "device:is_not:mobile", 2),
        ("channel:is:Organic search", "channel:is:organic_search", 1),
        ("channel:is:organic-search|Direct", "channel:is:organic_search|direct", 4),
        ("browser:is:chrome", "browser:is:Chrome", 1),
        ("browser:is:mobile safari", "browser:is:Safari", 2),
        ("os:is:MACOS", "os:is:macOS", 1),
        ("os:is:mac os x", "os:is:macOS", 1),
        ("os:is:ios", "os:is:iOS", 2),
    ],
)
def test_a_value_the_service_names_matches_as_shown_in_any_case(
    server: Server, acme: dict[str, Any], shown: str, stored: str, expected: int
) -> None:
    assert visitors(server, acme, stored) == expected
    assert visitors(server, acme, shown) == expected


def test_a_value_the_service_does_not_name_is_taken_as_typed(
    server: Server, acme: dict[str, Any]
) -> None:
    assert visitors(server, acme, "page:is:/blog/one") == 1
    assert visitors(server, acme, "page:is:/BLOG/ONE") == 0  # paths are the site's own
    assert canonical("browser", "No Such Browser") == "No Such Browser"
    assert canonical("country", "de") == "de"


def test_values_suggests_what_holds_the_text_most_visitors_first(
    server: Server, acme: dict[str, Any]
) -> None:
    r = get(server, acme, "/metrics/values", dimension="page", q="BLOG")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["dimension"] == "page" and body["q"] == "BLOG"
    assert sorted(v["value"] for v in body["values"]) == ["/Blog/three", "/blog/one", "/blog/two"]
    assert all(v["visitors"] == 1 for v in body["values"])
    everything = get(server, acme, "/metrics/values", dimension="device").json()["values"]
    assert everything == [{"value": "desktop", "visitors": 2}, {"value": "mobile", "visitors": 2}]
    # the page's other filters hold, and limit cuts
    r = get(server, acme, "/metrics/values", dimension="page", q="/", filter="device:is:Mobile")
    assert sorted(v["value"] for v in r.json()["values"]) == ["/Blog/three", "/blog/two"]
    assert (
        len(get(server, acme, "/metrics/values", dimension="page", limit=2).json()["values"]) == 2
    )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "dimension"),
        ({"dimension": "nope"}, "dimension"),
        ({"dimension": "page", "limit": "0"}, "limit"),
        ({"dimension": "page", "limit": "x"}, "limit"),
        ({"dimension": "page", "q": "x" * 300}, "q"),
    ],
)
def test_bad_values_parameters_name_the_field(
    server: Server, acme: dict[str, Any], params: dict[str, str], field: str
) -> None:
    is_error(get(server, acme, "/metrics/values", **params), 400, field)
