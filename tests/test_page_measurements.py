"""The browser script's extensions on the server (issue 20): their events are validated, the
page measurements (engagement, web_vitals) are no interactions, and each report is worked out
by hand below from the events sent (the real server on loopback, the shared one)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from tests.support import Server, is_error

UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/12{}.0.0.0 Safari/537.36"
)
PHONE = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/12{}.0.0.0 Mobile Safari/537.36"
)
# Two days ago, 00:00 UTC: every event at 10:00-15:00 UTC of that day.
DAY = (datetime.now(UTC) - timedelta(days=2)).replace(
    hour=0, minute=0, second=0, microsecond=0
)


def at(hour: int, minute: int, second: int = 0) -> int:
    return int(
        (DAY + timedelta(hours=hour, minutes=minute, seconds=second)).timestamp() * 1000
    )


def ev(
    visitor: int,
    ts: int,
    name: str = "page_view",
    path: str = "/",
    phone: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "event": name,
        "url": f"https://acme.test{path}",
        "ts": ts,
        "ip": f"10.1.0.{visitor}",
        "userAgent": (PHONE if phone else UA).format(visitor),
        **extra,
    }


def engaged(
    visitor: int, ts: int, path: str, ms: int, pct: int, **kw: Any
) -> dict[str, Any]:
    return ev(
        visitor,
        ts,
        "engagement",
        path,
        properties={"engaged_ms": ms, "scroll_pct": pct},
        **kw,
    )


def vitals(visitor: int, ts: int, path: str, **values: Any) -> dict[str, Any]:
    phone = values.pop("phone", False)
    return ev(visitor, ts, "web_vitals", path, phone=phone, properties=values)


def day_params(**extra: str) -> dict[str, str]:
    day = DAY.date().isoformat()
    return {"from": day, "to": day, **extra}


def get(server: Server, key: str, path: str, **params: str) -> dict[str, Any]:
    r = httpx.get(
        f"{server.url}{path}", params=params, headers={"Authorization": f"Bearer {key}"}
    )
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


# ingestion --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(server: Server) -> dict[str, Any]:
    return server.create_project(
        "measure-" + uuid.uuid4().hex[:8], domains=["acme.test"]
    )


@pytest.mark.parametrize(
    ("name", "props", "field"),
    [
        ("engagement", {"scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": -1, "scroll_pct": 10}, "properties.engaged_ms"),
        (
            "engagement",
            {"engaged_ms": 86_400_001, "scroll_pct": 10},
            "properties.engaged_ms",
        ),
        ("engagement", {"engaged_ms": 1.5, "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": "5", "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": True, "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": 5, "scroll_pct": 101}, "properties.scroll_pct"),
        ("engagement", {"engaged_ms": 5, "scroll_pct": 10, "x": 1}, "properties.x"),
        ("web_vitals", {"lcp": 600_001}, "properties.lcp"),
        ("web_vitals", {"inp": -3}, "properties.inp"),
        ("web_vitals", {"cls": 100.5}, "properties.cls"),
        ("web_vitals", {"cls": "0.1"}, "properties.cls"),
        ("web_vitals", {"ttfb": 10, "plan": "pro"}, "properties.plan"),
        ("outbound", {"url": "mailto:a@b.c"}, "properties.url"),
        ("download", {"url": 12}, "properties.url"),
    ],
)
def test_a_bad_figure_is_a_400_naming_the_property(
    server: Server,
    project: dict[str, Any],
    name: str,
    props: dict[str, Any],
    field: str,
) -> None:
    key = project["keys"]["public"]
    event = {"event": name, "url": "https://acme.test/", "properties": props}
    r = server.send(key, event, headers={"User-Agent": UA.format(1)})
    is_error(r, 400, field)
    # in a batch: the good event is stored, the bad one is in `rejected`, naming the field
    good = {"event": "page_view", "url": "https://acme.test/"}
    r = server.send(key, [good, event], headers={"User-Agent": UA.format(1)})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["accepted"] == 1
    assert [(x["index"], x["error"]["field"]) for x in body["rejected"]] == [(1, field)]


def test_good_figures_at_their_bounds_are_taken(
    server: Server, project: dict[str, Any]
) -> None:
    events = [
        {
            "event": "engagement",
            "url": "/",
            "properties": {"engaged_ms": 0, "scroll_pct": 0},
        },
        {
            "event": "engagement",
            "url": "/",
            "properties": {"engaged_ms": 86_400_000, "scroll_pct": 100},
        },
        {
            "event": "web_vitals",
            "url": "/",
            "properties": {"lcp": 600_000, "cls": 100, "inp": 0},
        },
        {"event": "web_vitals", "url": "/", "properties": {"cls": 0.25}},
        {"event": "web_vitals", "url": "/"},
        {
            "event": "outbound",
            "url": "/",
            "properties": {"url": "https://x.test/a?b", "k": 1},
        },
        {
            "event": "download",
            "url": "/",
            "properties": {"url": "http://acme.test/f.pdf"},
        },
        {"event": "download", "url": "/"},  # a custom event of that name, as before
        {"event": "404", "url": "/gone", "properties": {"section": "blog"}},
    ]
    r = server.send(project["keys"]["secret"], events)
    assert r.status_code == 200, r.text
    assert r.json()["accepted"] == len(events), r.text


# page measurements are no interactions ------------------------------------------------------

# Sessions, by hand (all on DAY, UTC):
#   V1: a page view at 10:00 and its engagement at 10:45 (past the 30-minute timeout: it still
#       joins the page view's session and does not extend it): one session, a bounce, 0 s.
#   V2: a page view at 11:00, its web vitals at 11:00:05, a page view at 11:50 (50 minutes
#       after the first: a new session, the vitals did not extend the first): 2 sessions, 2
#       bounces.
#   V3: a page view at 12:00 and an outbound click at 12:01: an interaction, no bounce, 60 s.
BOUNCES = [
    ev(1, at(10, 0)),
    engaged(1, at(10, 45), "/", 40_000, 80),
    ev(2, at(11, 0), path="/b"),
    vitals(2, at(11, 0, 5), "/b", lcp=1200, ttfb=100),
    ev(2, at(11, 50), path="/b"),
    ev(3, at(12, 0)),
    ev(3, at(12, 1), "outbound", properties={"url": "https://other.test/"}),
]


@pytest.fixture(scope="module")
def bounces(server: Server) -> dict[str, Any]:
    p = server.create_project("bounce-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], BOUNCES)
    assert r.status_code == 200 and r.json()["accepted"] == len(BOUNCES), r.text
    server.wait_loaded()
    return p


def test_a_page_view_and_its_engagement_is_a_bounce(
    server: Server, bounces: dict
) -> None:
    m = server.metrics(bounces["keys"]["secret"], **day_params())
    assert m["sessions"] == 4
    assert m["pageviews"] == 4
    assert m["events"] == 5  # the outbound click counts; the measurements do not
    assert m["bounces"] == 3
    assert m["bounceRate"] == "75.0%"
    assert m["avgSessionDuration"] == 15.0  # (0 + 0 + 0 + 60) / 4
    assert m["visitors"] == 3


def test_measurements_are_left_out_of_every_count(
    server: Server, bounces: dict
) -> None:
    key = bounces["keys"]["secret"]
    names = get(server, key, "/metrics/breakdown", **day_params(by="event"))
    assert {r["value"]: r["events"] for r in names["rows"]} == {
        "page_view": 4,
        "outbound": 1,
    }
    pages = get(
        server, key, "/metrics/breakdown", **day_params(by="page", filter="page:is:/")
    )
    assert [(r["value"], r["pageviews"], r["bounceRate"]) for r in pages["rows"]] == [
        ("/", 2, "50.0%")
    ]
    series = get(server, key, "/metrics/timeseries", **day_params(interval="day"))
    assert [(p["pageviews"], p["events"]) for p in series["points"]] == [(4, 5)]
