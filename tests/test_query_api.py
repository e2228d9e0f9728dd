"""The query API on the golden event set of test_metrics_golden (answers worked out by hand)."""

from __future__ import annotations

import io
import itertools
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support import Server
from tests.test_metrics_golden import DAY, GOLDEN, UA, ev

D = DAY.date().isoformat()


@pytest.fixture(scope="module")
def golden(server: Server) -> dict[str, Any]:
    p = server.create_project("query-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    assert server.send(p["keys"]["secret"], GOLDEN).json()["accepted"] == len(GOLDEN)
    server.wait_loaded()
    return p


def get(server: Server, p: dict, path: str, **params: Any) -> dict[str, Any]:
    params.setdefault("from", D)
    params.setdefault("to", D)
    r = httpx.get(
        server.url + path,
        params=params,
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def rows_by_value(body: dict) -> dict[str, dict]:
    return {r["value"]: r for r in body["rows"]}


def test_breakdown_by_source(server: Server, golden: dict) -> None:
    rows = rows_by_value(get(server, golden, "/metrics/breakdown", by="source"))
    assert set(rows) == {"direct", "google", "newsletter", "news.ycombinator.com"}
    direct = rows["direct"]  # A2, C (bounces) and D (no page view)
    assert (direct["sessions"], direct["visitors"], direct["pageviews"], direct["events"]) == (
        3,
        3,
        2,
        3,
    )
    assert direct["bounceRate"] == "100.0%"
    assert rows["google"]["pageviews"] == 2 and rows["google"]["bounceRate"] == "0.0%"
    assert rows["google"]["avgSessionDuration"] == 1200.0
    assert rows["newsletter"]["events"] == 2


def test_breakdown_by_page_counts_page_views(server: Server, golden: dict) -> None:
    body = get(server, golden, "/metrics/breakdown", by="page")
    rows = rows_by_value(body)
    assert set(rows) == {"/", "/pricing", "/docs"}
    home = rows["/"]  # A1, A2, B, C, CS
    assert (home["pageviews"], home["sessions"], home["visitors"]) == (5, 5, 4)
    assert home["bounceRate"] == "40.0%"
    assert body["rows"][0]["value"] == "/"  # most visitors first
    assert body["totalRows"] == 3


def test_breakdown_paging_and_order(server: Server, golden: dict) -> None:
    body = get(server, golden, "/metrics/breakdown", by="page", order="value", limit=1, offset=1)
    assert [r["value"] for r in body["rows"]] == ["/docs"]
    assert body["totalRows"] == 3
    r = httpx.get(
        server.url + "/metrics/breakdown",
        params={"from": D, "by": "page", "order": "color"},
        headers={"Authorization": f"Bearer {golden['keys']['secret']}"},
    )
    assert r.status_code == 400 and r.json()["error"]["field"] == "order"


def test_breakdown_by_event_and_property(server: Server, golden: dict) -> None:
    events = rows_by_value(get(server, golden, "/metrics/breakdown", by="event"))
    assert events["page_view"]["events"] == 7
    assert events["signup"]["events"] == 1 and events["download"]["events"] == 1
    plans = get(server, golden, "/metrics/breakdown", by="prop:plan")
    assert [(r["value"], r["events"]) for r in plans["rows"]] == [("pro", 1)]


def test_entry_and_exit_pages(server: Server, golden: dict) -> None:
    entry = rows_by_value(get(server, golden, "/metrics/breakdown", by="entry_page"))
    exit_ = rows_by_value(get(server, golden, "/metrics/breakdown", by="exit_page"))
    assert entry["/"]["sessions"] == 6
    assert exit_["/pricing"]["sessions"] == 1 and exit_["/docs"]["sessions"] == 1


@pytest.mark.parametrize(
    ("flt", "pageviews", "sessions"),
    [
        ("source:is:google", 2, 1),
        ("source:is_not:google", 5, 5),
        ("source:is:google|newsletter", 3, 2),
        ("page:is:/pricing", 1, 1),
        ("page:contains:PRIC", 1, 1),
        ("page:matches:^/(docs|pricing)$", 2, 2),
        ("page:not_matches:^/(docs|pricing)$", 5, 6),
        ("event:is:signup", 0, 1),
        ("prop:plan:is:pro", 0, 1),
    ],
)
def test_filters(server: Server, golden: dict, flt: str, pageviews: int, sessions: int) -> None:
    m = get(server, golden, "/metrics", filter=flt)
    assert (m["pageviews"], m["sessions"]) == (pageviews, sessions)


def test_filters_combine(server: Server, golden: dict) -> None:
    m = get(server, golden, "/metrics", filter=["source:is:google", "page:is:/pricing"])
    assert (m["pageviews"], m["sessions"], m["visitors"]) == (1, 1, 1)


@pytest.mark.parametrize("flt", ["nope:is:x", "page:equals:x", "page", "page:matches:("])
def test_bad_filter_is_400(server: Server, golden: dict, flt: str) -> None:
    r = httpx.get(
        server.url + "/metrics",
        params={"from": D, "filter": flt},
        headers={"Authorization": f"Bearer {golden['keys']['secret']}"},
    )
    assert r.status_code == 400 and r.json()["error"]["field"] == "filter"


def test_compare_previous_period(server: Server, golden: dict) -> None:
    m = get(server, golden, "/metrics", compare="previous_period")
    prev = (DAY.date() - timedelta(days=1)).isoformat()
    assert m["compare"]["from"] == prev and m["compare"]["pageviews"] == 0
    assert m["pageviews"] == 7


def test_timeseries_by_hour_zero_filled(server: Server, golden: dict) -> None:
    body = get(server, golden, "/metrics/timeseries", interval="hour")
    points = {p["time"][-5:]: p for p in body["points"]}
    assert len(body["points"]) == 24
    assert (points["10:00"]["pageviews"], points["10:00"]["sessions"]) == (3, 2)
    assert points["11:00"]["events"] == 2 and points["11:00"]["sessions"] == 1
    assert points["14:00"]["pageviews"] == 1 and points["14:00"]["sessions"] == 0
    assert points["15:00"]["events"] == 1 and points["15:00"]["pageviews"] == 0
    assert points["03:00"] == {
        "time": f"{D}T03:00",
        "visitors": 0,
        "sessions": 0,
        "pageviews": 0,
        "events": 0,
        "bounceRate": "0.0%",
        "avgSessionDuration": 0.0,
    }
    assert sum(p["pageviews"] for p in body["points"]) == 7
    assert sum(p["sessions"] for p in body["points"]) == 6


def test_timeseries_by_day_and_month(server: Server, golden: dict) -> None:
    start = (DAY.date() - timedelta(days=3)).isoformat()
    days = get(server, golden, "/metrics/timeseries", **{"from": start}, interval="day")
    assert {p["time"]: p["pageviews"] for p in days["points"]}[D] == 7
    assert sum(p["pageviews"] for p in days["points"]) == 7
    months = get(server, golden, "/metrics/timeseries", **{"from": start}, interval="month")
    assert sum(p["sessions"] for p in months["points"]) == 6


def test_goals(server: Server, golden: dict) -> None:
    body = get(server, golden, "/metrics/goals", goal=["event:signup", "page:/pric*"])
    assert body["visitors"] == 5
    assert body["goals"] == [
        {"goal": "event:signup", "visitors": 1, "events": 1, "conversionRate": "20.0%"},
        {"goal": "page:/pric*", "visitors": 1, "events": 1, "conversionRate": "20.0%"},
    ]


def test_funnel(server: Server, golden: dict) -> None:
    body = get(server, golden, "/metrics/funnel", step=["page:/", "page:/pricing"], window=1800)
    assert [s["visitors"] for s in body["steps"]] == [4, 1]
    assert body["steps"][1]["conversionRate"] == "25.0%"
    assert body["steps"][1]["dropOff"] == 3
    short = get(server, golden, "/metrics/funnel", step=["page:/", "page:/pricing"], window=60)
    assert [s["visitors"] for s in short["steps"]] == [4, 0]


def test_properties(server: Server, golden: dict) -> None:
    keys = get(server, golden, "/metrics/properties")["keys"]
    assert {k["key"]: k["events"] for k in keys} == {"plan": 1, "source": 1}
    values = get(server, golden, "/metrics/properties", key="plan")
    assert values["values"] == [{"value": "pro", "events": 1, "visitors": 1}]


def test_revenue_and_errors(server: Server) -> None:
    p = server.create_project("shop-" + uuid.uuid4().hex[:8])
    day = DAY + timedelta(hours=9)
    ts = int(day.timestamp() * 1000)

    def purchase(tid: str, value: float, currency: str, items: list) -> dict:
        props = {"transaction_id": tid, "value": value, "currency": currency, "items": items}
        return ev(7, ts, name="purchase", path="/checkout", properties=props)

    def exception(desc: str, fatal: bool, path: str) -> dict:
        return ev(
            8, ts, name="exception", path=path, properties={"description": desc, "fatal": fatal}
        )

    events = [
        purchase("T1", 30, "EUR", [{"item_id": "sku1", "price": 10, "quantity": 3}]),
        purchase(
            "T2",
            20,
            "EUR",
            [{"item_id": "sku2", "item_name": "Blue mug", "price": 20, "quantity": 1}],
        ),
        purchase("T3", 5, "usd", [{"item_id": "sku3", "item_name": "Sticker", "price": 5}]),
        exception("TypeError: a", True, "/x"),
        exception("TypeError: a", False, "/x"),
        exception("RangeError: b", False, "/y"),
    ]
    assert server.send(p["keys"]["secret"], events).json()["accepted"] == 6
    server.wait_loaded()
    revenue = get(server, p, "/metrics/revenue")
    assert revenue["currencies"] == [
        {"currency": "EUR", "revenue": 50.0, "orders": 2, "averageOrderValue": 25.0},
        {"currency": "USD", "revenue": 5.0, "orders": 1, "averageOrderValue": 5.0},
    ]
    # an item's name where it was sent (item_name), else null
    assert revenue["topItems"] == [
        {"itemId": "sku1", "itemName": None, "currency": "EUR", "quantity": 3.0, "revenue": 30.0},
        {
            "itemId": "sku2",
            "itemName": "Blue mug",
            "currency": "EUR",
            "quantity": 1.0,
            "revenue": 20.0,
        },
        {
            "itemId": "sku3",
            "itemName": "Sticker",
            "currency": "USD",
            "quantity": 1.0,
            "revenue": 5.0,
        },
    ]
    # the filters of every report, on the events and on their sessions
    for kept in ("page:is:/checkout", "source:is_not:google"):
        assert get(server, p, "/metrics/revenue", filter=kept) == revenue, kept
    for dropping in ("page:is:/elsewhere", "source:is:google"):
        nothing = get(server, p, "/metrics/revenue", filter=dropping)
        assert (nothing["currencies"], nothing["topItems"]) == ([], []), dropping
    errors = get(server, p, "/metrics/errors")
    assert (errors["errors"], errors["fatal"], errors["fatalShare"]) == (3, 1, "33.3%")
    assert errors["top"][0] == {
        "description": "TypeError: a",
        "count": 2,
        "fatal": 1,
        "visitors": 1,
    }
    assert errors["pages"] == [{"value": "/x", "count": 2}, {"value": "/y", "count": 1}]


def test_realtime(server: Server) -> None:
    p = server.create_project("live-" + uuid.uuid4().hex[:8])
    events = [
        {"event": "page_view", "url": "/a", "ip": "10.1.0.1", "userAgent": UA.format(1)},
        {"event": "page_view", "url": "/b", "ip": "10.1.0.2", "userAgent": UA.format(2)},
        {"event": "page_view", "url": "/b", "ip": "10.1.0.3", "userAgent": UA.format(3)},
        # a visitor without a page view counts, on no page
        {"event": "signup", "url": "/c", "ip": "10.1.0.4", "userAgent": UA.format(4)},
    ]
    server.send(p["keys"]["secret"], events)
    server.wait_loaded()
    body = get(server, p, "/metrics/realtime")
    assert body["visitors"] == 4
    assert body["pages"] == [{"value": "/b", "visitors": 2}, {"value": "/a", "visitors": 1}]
    one = get(server, p, "/metrics/realtime", limit=1)
    assert one["visitors"] == 4 and one["pages"] == [{"value": "/b", "visitors": 2}]
    empty = server.create_project("quiet-" + uuid.uuid4().hex[:8])
    assert get(server, empty, "/metrics/realtime")["visitors"] == 0


def test_realtime_minutes_sources_and_countries(server: Server) -> None:
    """The per-minute visitors of the last 30 minutes (zeros filled in, the current minute
    last) and the recent visitors' sources and countries, those of their current session."""
    p = server.create_project("live-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    now = datetime.now(UTC)
    ms = lambda dt: int(dt.timestamp() * 1000)  # noqa: E731
    us, de = "8.8.8.1", "5.9.1.1"  # the bundled country data's US and DE
    events = [
        # from Google 3 minutes ago, then an inner page now (the session's source stays google)
        ev(1, ms(now - timedelta(minutes=3)), path="/", referrer="https://www.google.com/"),
        ev(1, ms(now), path="/docs", referrer="https://acme.test/"),
        ev(2, ms(now - timedelta(minutes=1)), path="/", ip=us, userAgent=UA.format(2)),
        ev(3, ms(now), path="/b", ip=us, userAgent=UA.format(3), referrer="https://t.co/x"),
        ev(4, ms(now), path="/b", ip=de, userAgent=UA.format(4)),
        # 20 minutes ago: in the per-minute series, not among the current visitors
        ev(5, ms(now - timedelta(minutes=20)), path="/old"),
        # a page measurement is no visit
        ev(6, ms(now), name="engagement", properties={"engaged_ms": 1000, "scroll_pct": 10}),
    ]
    r = server.send(p["keys"]["secret"], events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    server.wait_loaded()
    body = get(server, p, "/metrics/realtime")
    assert body["visitors"] == 4 and body["windowSeconds"] == 300
    assert body["sources"] == [
        {"value": "direct", "visitors": 2},
        {"value": "google", "visitors": 1},
        {"value": "twitter", "visitors": 1},
    ]
    assert body["countries"] == [
        {"value": "US", "visitors": 2},
        {"value": "", "visitors": 1},
        {"value": "DE", "visitors": 1},
    ]
    minutes = body["minutes"]
    assert len(minutes) == 30
    times = [datetime.fromisoformat(m["time"] + "+00:00") for m in minutes]
    assert all(b - a == timedelta(minutes=1) for a, b in itertools.pairwise(times))
    assert times[-1] in {
        now.replace(second=0, microsecond=0) + timedelta(minutes=k) for k in (0, 1)
    }
    by_time = {m["time"]: m["visitors"] for m in minutes}
    for dt, want in ((now - timedelta(minutes=20), 1), (now - timedelta(minutes=3), 1)):
        assert by_time[dt.strftime("%Y-%m-%dT%H:%M")] == want
    assert sum(by_time.values()) == 1 + 1 + 1 + 3  # V5; V1; V2; V1, V3, V4 (when apart)
    one = get(server, p, "/metrics/realtime", limit=1)
    assert one["sources"] == [{"value": "direct", "visitors": 2}]
    assert one["countries"] == [{"value": "US", "visitors": 2}]
    empty = server.create_project("quiet-" + uuid.uuid4().hex[:8])
    quiet = get(server, empty, "/metrics/realtime")
    assert quiet["sources"] == quiet["countries"] == []
    assert [m["visitors"] for m in quiet["minutes"]] == [0] * 30


@pytest.mark.parametrize("fmt", ["ndjson", "csv", "parquet"])
def test_export_formats(server: Server, golden: dict, fmt: str) -> None:
    r = httpx.get(
        server.url + "/export",
        params={"from": D, "to": D, "format": fmt},
        headers={"Authorization": f"Bearer {golden['keys']['secret']}"},
    )
    assert r.status_code == 200, r.text
    if fmt == "ndjson":
        rows = [json.loads(line) for line in r.text.splitlines()]
        assert len(rows) == len(GOLDEN)
        assert rows[0]["event"] == "page_view" and rows[0]["source"] == "google"
    elif fmt == "csv":
        assert len(r.text.strip().splitlines()) == len(GOLDEN) + 1
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(io.BytesIO(r.content))
        assert table.num_rows == len(GOLDEN)


def test_public_key_reads_nothing(server: Server, golden: dict) -> None:
    for path in ("/metrics/breakdown", "/metrics/timeseries", "/export", "/metrics/realtime"):
        r = httpx.get(
            server.url + path,
            params={"from": D, "by": "page"},
            headers={"Authorization": f"Bearer {golden['keys']['public']}"},
        )
        assert r.status_code == 403, path


def test_share_token_reads_metrics_but_not_raw_events(server: Server, golden: dict) -> None:
    r = httpx.post(
        server.url + f"/projects/{golden['id']}/keys",
        json={"kind": "share"},
        headers={"Authorization": f"Bearer {golden['keys']['secret']}"},
    )
    assert r.status_code == 201, r.text
    share = r.json()["key"]
    assert share.startswith("svc_share_")
    headers = {"Authorization": f"Bearer {share}"}
    r = httpx.get(server.url + "/metrics", params={"from": D, "to": D}, headers=headers)
    assert r.status_code == 200 and r.json()["pageviews"] == 7
    assert httpx.get(server.url + "/export", params={"from": D}, headers=headers).status_code == 403
    assert server.send(share, {"event": "page_view", "url": "/"}).status_code == 403
