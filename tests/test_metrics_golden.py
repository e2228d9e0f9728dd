"""GET /metrics on a fixed event set whose answers are worked out by hand below."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support import Server

UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/12{}.0.0.0 Safari/537.36"
)
DAY = (datetime.now(UTC) - timedelta(days=2)).replace(hour=0, minute=0, second=0, microsecond=0)


def at(hour: int, minute: int, day: datetime = DAY) -> int:
    return int((day + timedelta(hours=hour, minutes=minute)).timestamp() * 1000)


def ev(visitor: int, ts: int, name: str = "page_view", path: str = "/", **extra: Any) -> dict:
    return {
        "event": name,
        "url": f"https://acme.test{path}",
        "ts": ts,
        "ip": f"10.0.0.{visitor}",
        "userAgent": UA.format(visitor),
        **extra,
    }


# Sessions, by hand:
#   A1: visitor 1, 10:00 (from Google) and 10:20            2 page views       source google
#   A2: visitor 1, 10:51 (31 minutes after 10:20: new)      1 page view, bounce source direct
#   B : visitor 2, 11:00 utm_source=Newsletter + signup     1 pv + 1 event     source newsletter
#   C : visitor 3, 12:00 referred by acme.test itself       1 page view, bounce source direct
#   CS: client session "cs-1", 13:00 and 14:00 (60 min gap, but the client names it)
#       2 page views, source news.ycombinator.com
#   D : visitor 5, a custom event only                      0 page views       source direct
# pageviews 7, sessions 6, bounces 2 of 5 sessions with a page view: 40.0 %, visitors 5.
GOLDEN = [
    ev(1, at(10, 0), referrer="https://www.google.com/search?q=acme"),
    ev(1, at(10, 20), path="/pricing"),
    ev(1, at(10, 51)),
    ev(2, at(11, 0), path="/?utm_source=Newsletter", referrer="https://t.co/xyz"),
    ev(2, at(11, 5), name="signup", properties={"plan": "pro", "source": "hero"}),
    ev(3, at(12, 0), referrer="https://acme.test/blog"),
    ev(4, at(13, 0), sessionId="cs-1", referrer="https://news.ycombinator.com/item?id=1"),
    ev(4, at(14, 0), sessionId="cs-1", path="/docs"),
    ev(5, at(15, 0), name="download"),
]


@pytest.fixture(scope="module")
def golden(server: Server) -> dict[str, Any]:
    p = server.create_project("golden-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], GOLDEN)
    assert r.status_code == 200 and r.json()["accepted"] == len(GOLDEN), r.text
    server.wait_loaded()
    return p


def test_golden_metrics(server: Server, golden: dict) -> None:
    day = DAY.date().isoformat()
    m = server.metrics(golden["keys"]["secret"], **{"from": day, "to": day})
    assert m["pageviews"] == 7
    assert m["sessions"] == 6
    assert m["bounceRate"] == "40.0%"
    assert m["trafficSources"] == {
        "direct": 3,
        "google": 1,
        "newsletter": 1,
        "news.ycombinator.com": 1,
    }
    assert m["visitors"] == 5
    assert m["events"] == 9
    # exact JSON types of the seed
    assert type(m["pageviews"]) is int and type(m["sessions"]) is int
    assert isinstance(m["bounceRate"], str)
    assert all(type(v) is int for v in m["trafficSources"].values())


def test_range_without_events_is_zero(server: Server, golden: dict) -> None:
    m = server.metrics(golden["keys"]["secret"], **{"from": "2001-01-01", "to": "2001-01-31"})
    assert m["pageviews"] == 0 and m["sessions"] == 0
    assert m["bounceRate"] == "0.0%"
    assert m["trafficSources"] == {}


def test_to_defaults_to_today(server: Server, golden: dict) -> None:
    m = server.metrics(golden["keys"]["secret"], **{"from": DAY.date().isoformat()})
    assert m["pageviews"] == 7
    assert m["to"] == datetime.now(UTC).date().isoformat()


def test_days_are_inclusive(server: Server, golden: dict) -> None:
    day = DAY.date()
    m = server.metrics(
        golden["keys"]["secret"],
        **{"from": (day - timedelta(days=1)).isoformat(), "to": day.isoformat()},
    )
    assert m["pageviews"] == 7
    m = server.metrics(
        golden["keys"]["secret"],
        **{
            "from": (day + timedelta(days=1)).isoformat(),
            "to": (day + timedelta(days=1)).isoformat(),
        },
    )
    assert m["pageviews"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "from"),
        ({"from": "2026-13-01"}, "from"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2026-01-10", "to": "2026-01-09"}, "to"),
        ({"from": "2026-01-10", "tz": "Mars/Olympus"}, "tz"),
    ],
)
def test_bad_parameters_are_400(server: Server, golden: dict, params: dict, field: str) -> None:
    r = httpx.get(
        server.url + "/metrics",
        params=params,
        headers={"Authorization": f"Bearer {golden['keys']['secret']}"},
    )
    assert r.status_code == 400, r.text
    assert r.json()["error"]["field"] == field


def test_time_zone_moves_events_across_midnight(server: Server) -> None:
    # 23:30 UTC is 00:30 the next day in Berlin (UTC+1 in winter, UTC+2 in summer).
    p = server.create_project("tz-" + uuid.uuid4().hex[:8], timezone="Europe/Berlin")
    key = p["keys"]["secret"]
    late = at(23, 30)
    assert server.send(key, [ev(1, late)]).status_code == 200
    server.wait_loaded()
    utc_day = DAY.date().isoformat()
    berlin_day = (DAY.date() + timedelta(days=1)).isoformat()
    assert server.metrics(key, **{"from": berlin_day, "to": berlin_day})["pageviews"] == 1
    assert server.metrics(key, **{"from": utc_day, "to": utc_day})["pageviews"] == 0
    utc = server.metrics(key, **{"from": utc_day, "to": utc_day, "tz": "UTC"})
    assert utc["pageviews"] == 1
    assert utc["timezone"] == "UTC"


def test_projects_are_isolated(server: Server, golden: dict) -> None:
    other = server.create_project("other-" + uuid.uuid4().hex[:8])
    day = DAY.date().isoformat()
    assert server.metrics(other["keys"]["secret"], **{"from": day, "to": day})["pageviews"] == 0
    r = httpx.get(
        server.url + "/metrics",
        params={"from": day, "projectId": golden["id"]},
        headers={"Authorization": f"Bearer {other['keys']['secret']}"},
    )
    assert r.status_code == 403


def test_admin_reads_any_project(server: Server, golden: dict) -> None:
    day = DAY.date().isoformat()
    r = httpx.get(
        server.url + "/metrics",
        params={"from": day, "to": day, "projectId": golden["id"]},
        headers=server.admin(),
    )
    assert r.status_code == 200 and r.json()["pageviews"] == 7
