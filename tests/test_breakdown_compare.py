"""Breakdowns compared with another range (issue 20: "all respect ... comparisons like every
report"; docs/api.md, GET /metrics/breakdown, "Comparing with another range"): each row carries
its value's figures in the previous period and how each changed, for the dimensions and for
the extensions' reports. The figures below are worked out by hand from the events sent (the
shared real server on loopback)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from svc.schema.measurements import BREAKDOWN_KINDS
from tests.support import Server, is_error
from tests.test_page_measurements import ev

# DAY is the range asked for, PREV its previous period (one day before); both at 10:00-12:04
# UTC, within the 7 days ingestion takes.
DAY = (datetime.now(UTC) - timedelta(days=2)).replace(hour=0, minute=0, second=0, microsecond=0)
PREV = DAY - timedelta(days=1)
# The rollups' test: ROLLED and its previous period's middle day, three days before it.
ROLLED = DAY - timedelta(days=1)
GITHUB, OTHER, PDF = "https://github.com/x", "https://other.test/", "https://acme.test/f.pdf"
GOOGLE = "https://www.google.com/"


def at(day: datetime, hour: int, minute: int, second: int = 0) -> int:
    return int((day + timedelta(hours=hour, minutes=minute, seconds=second)).timestamp() * 1000)


def props(visitor: int, ts: int, name: str, path: str, **properties: Any) -> dict[str, Any]:
    return ev(visitor, ts, name, path, properties=properties)


# One session per visitor and day (a visitor is a person on one day: V1 on PREV is another).
# DAY:  V1 from Google: / 10:00 (its vitals, its engagement 30 s 80 %), /docs 10:02, outbound
#           GitHub 10:03: 2 page views, 3 events, no bounce, 180 s.
#       V2 from Google: / 11:00 (vitals, engagement 10 s 20 %): a bounce, 0 s.
#       V3 direct: /docs 12:00, 404 /gone 12:01, download 12:02, outbound GitHub 12:03:
#           1 page view, 4 events, no bounce, 180 s.
# PREV: V1 from Google: / 10:00 (vitals, engagement 20 s 100 %): a bounce, 0 s.
#       V5 direct: /old 11:00, outbound GitHub 11:01, outbound other.test 11:02, 404 /gone
#           11:02: 1 page view, 4 events, no bounce, 120 s.
def events(day: datetime, prev: datetime) -> list[dict[str, Any]]:
    """The events below on ``day`` and ``prev``."""
    return [
        ev(1, at(day, 10, 0), referrer=GOOGLE),
        props(1, at(day, 10, 0, 5), "web_vitals", "/", lcp=2000, cls=0.05),
        props(1, at(day, 10, 2), "engagement", "/", engaged_ms=30_000, scroll_pct=80),
        ev(1, at(day, 10, 2), path="/docs"),
        props(1, at(day, 10, 3), "outbound", "/docs", url=GITHUB),
        ev(2, at(day, 11, 0), referrer=GOOGLE),
        props(2, at(day, 11, 0, 5), "web_vitals", "/", lcp=3000, inp=300),
        props(2, at(day, 11, 1), "engagement", "/", engaged_ms=10_000, scroll_pct=20),
        ev(3, at(day, 12, 0), path="/docs"),
        ev(3, at(day, 12, 1), "404", "/gone", referrer="https://news.test/a"),
        props(3, at(day, 12, 2), "download", "/docs", url=PDF),
        props(3, at(day, 12, 3), "outbound", "/docs", url=GITHUB),
        ev(1, at(prev, 10, 0), referrer=GOOGLE),
        props(1, at(prev, 10, 0, 5), "web_vitals", "/", lcp=5000),
        props(1, at(prev, 10, 1), "engagement", "/", engaged_ms=20_000, scroll_pct=100),
        ev(5, at(prev, 11, 0), path="/old"),
        props(5, at(prev, 11, 1), "outbound", "/old", url=GITHUB),
        props(5, at(prev, 11, 2), "outbound", "/old", url=OTHER),
        ev(5, at(prev, 11, 2), "404", "/gone"),
    ]


EVENTS = events(DAY, PREV)
ZERO = {"samples": 0, "p75": None, "good": "0.0%", "needsImprovement": "0.0%", "poor": "0.0%"}
UNCHANGED = {"samples": 0.0, "p75": None, "good": 0.0, "needsImprovement": 0.0, "poor": 0.0}


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    p = server.create_project("compare-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], EVENTS)
    assert r.status_code == 200 and r.json()["accepted"] == len(EVENTS), r.text
    server.wait_loaded()
    secret: str = p["keys"]["secret"]
    return secret


def breakdown(server: Server, key: str, day: datetime, **params: str) -> httpx.Response:
    d = day.date().isoformat()
    return httpx.get(
        f"{server.url}/metrics/breakdown",
        params={"from": d, "to": d, **params},
        headers={"Authorization": f"Bearer {key}"},
    )


def compared(server: Server, key: str, **params: str) -> dict[str, Any]:
    r = breakdown(server, key, DAY, compare="previous_period", **params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["compare"] == {"from": PREV.date().isoformat(), "to": PREV.date().isoformat()}
    return body


def by_value(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["value"]: r for r in body["rows"]}


def test_sources_compared_by_hand(server: Server, key: str) -> None:
    body = compared(server, key, by="source")
    assert body["rows"] == [
        {
            "value": "google",
            "visitors": 2, "sessions": 2, "pageviews": 3, "events": 4,
            "bounceRate": "50.0%", "avgSessionDuration": 90.0,
            "compare": {
                "visitors": 1, "sessions": 1, "pageviews": 1, "events": 1,
                "bounceRate": "100.0%", "avgSessionDuration": 0.0,
            },
            "change": {
                "visitors": 100.0, "sessions": 100.0, "pageviews": 200.0, "events": 300.0,
                "bounceRate": -50.0, "avgSessionDuration": None,
            },
        },
        {
            "value": "direct",
            "visitors": 1, "sessions": 1, "pageviews": 1, "events": 4,
            "bounceRate": "0.0%", "avgSessionDuration": 180.0,
            "compare": {
                "visitors": 1, "sessions": 1, "pageviews": 1, "events": 4,
                "bounceRate": "0.0%", "avgSessionDuration": 120.0,
            },
            "change": {
                "visitors": 0.0, "sessions": 0.0, "pageviews": 0.0, "events": 0.0,
                "bounceRate": 0.0, "avgSessionDuration": 50.0,
            },
        },
    ]  # fmt: skip
    # paged: the other range is asked about the page's values only
    second = compared(server, key, by="source", limit="1", offset="1")
    assert second["rows"] == body["rows"][1:]
    # filtered: the filter holds in both ranges
    google = compared(server, key, by="source", filter="source:is:google")
    assert google["rows"] == body["rows"][:1]


def test_pages_compared_by_hand(server: Server, key: str) -> None:
    rows = by_value(compared(server, key, by="page"))
    assert set(rows) == {"/", "/docs"}  # /old is the previous period's only: no row
    home = rows["/"]
    assert (home["visitors"], home["pageviews"], home["bounceRate"]) == (2, 2, "50.0%")
    assert home["compare"]["visitors"] == 1 and home["compare"]["bounceRate"] == "100.0%"
    assert home["change"]["visitors"] == 100.0 and home["change"]["bounceRate"] == -50.0
    docs = rows["/docs"]  # none in the previous period: the figures of nothing
    assert docs["compare"] == {
        "visitors": 0, "sessions": 0, "pageviews": 0, "events": 0,
        "bounceRate": "0.0%", "avgSessionDuration": 0.0,
    }  # fmt: skip
    assert docs["change"]["visitors"] is None and docs["change"]["bounceRate"] == 0.0


def test_engagement_compared_by_hand(server: Server, key: str) -> None:
    rows = by_value(compared(server, key, by="engagement"))
    home = rows["/"]
    assert home["compare"]["engagedVisits"] == 1
    assert home["compare"]["medianEngagedMs"] == 20_000.0
    assert home["compare"]["scrollDepth"] == dict.fromkeys(("25", "50", "75", "100"), "100.0%")
    engaged = ("engagedVisits", "medianEngagedMs", "meanEngagedMs")
    assert [home[k] for k in engaged] == [2, 20_000.0, 20_000.0]
    assert [home["change"][k] for k in engaged] == [100.0, 0.0, 0.0]
    assert home["change"]["scrollDepth"] == {"25": -50.0, "50": -50.0, "75": -50.0, "100": -100.0}
    docs = rows["/docs"]  # no engagement in either range
    assert docs["compare"]["engagedVisits"] == 0 and docs["compare"]["medianEngagedMs"] is None
    assert docs["change"]["engagedVisits"] == 0.0 and docs["change"]["medianEngagedMs"] is None


def test_links_and_404s_compared_by_hand(server: Server, key: str) -> None:
    outbound = compared(server, key, by="outbound")
    assert outbound["rows"] == [  # other.test was clicked in the previous period only
        {
            "value": GITHUB, "visitors": 2, "events": 2,
            "compare": {"visitors": 1, "events": 1},
            "change": {"visitors": 100.0, "events": 100.0},
        }
    ]  # fmt: skip
    download = compared(server, key, by="download")
    assert download["rows"] == [
        {
            "value": PDF, "visitors": 1, "events": 1,
            "compare": {"visitors": 0, "events": 0},
            "change": {"visitors": None, "events": None},
        }
    ]  # fmt: skip
    missing = compared(server, key, by="404")
    assert missing["rows"] == [
        {
            "value": "/gone", "visitors": 1, "events": 1,
            "referrers": [{"value": "https://news.test/a", "events": 1}],
            "compare": {"visitors": 1, "events": 1},  # figures, not lists
            "change": {"visitors": 0.0, "events": 0.0},
        }
    ]  # fmt: skip


def test_web_vitals_compared_by_hand(server: Server, key: str) -> None:
    [home] = compared(server, key, by="vitals:page")["rows"]
    assert home["value"] == "/"
    # DAY's LCP: 2000, 3000 (p75 2750, one good, one needing improvement); PREV's: 5000 (poor)
    assert home["lcp"] == {
        "samples": 2, "p75": 2750.0, "good": "50.0%", "needsImprovement": "50.0%",
        "poor": "0.0%",
    }  # fmt: skip
    assert home["compare"]["samples"] == 1
    assert home["compare"]["lcp"] == {
        "samples": 1, "p75": 5000.0, "good": "0.0%", "needsImprovement": "0.0%",
        "poor": "100.0%",
    }  # fmt: skip
    assert home["compare"]["inp"] == home["compare"]["cls"] == ZERO
    assert home["change"] == {
        "samples": 100.0,
        "lcp": {"samples": 100.0, "p75": -45.0, "good": 50.0, "needsImprovement": 50.0,
                "poor": -100.0},
        # INP 300 (needs improvement), CLS 0.05 (good): nothing to relate them to
        "inp": {"samples": None, "p75": None, "good": 0.0, "needsImprovement": 100.0,
                "poor": 0.0},
        "cls": {"samples": None, "p75": None, "good": 100.0, "needsImprovement": 0.0,
                "poor": 0.0},
        "fcp": UNCHANGED,
        "ttfb": UNCHANGED,
    }  # fmt: skip


@pytest.mark.parametrize("by", ["source", "page", "entry_page", "event", *BREAKDOWN_KINDS])
def test_each_rows_compare_is_its_values_row_in_the_other_range(
    server: Server, key: str, by: str
) -> None:
    """Whatever the breakdown: a row's ``compare`` is what a breakdown of the previous day
    alone says of its value (figures only)."""
    body = compared(server, key, by=by)
    r = breakdown(server, key, PREV, by=by)
    assert r.status_code == 200, r.text
    before = by_value(r.json())
    assert body["rows"], by
    for row in body["rows"]:
        then = before.get(row["value"])
        if then is None:
            continue  # the figures of nothing: checked by hand above
        assert row["compare"] == {
            k: v for k, v in then.items() if k != "value" and not isinstance(v, list)
        }, (by, row["value"])


@pytest.fixture(scope="module")
def rolled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """A server of its own that rolls the finished days up at once, with the same events on
    ROLLED and three days before it: the ranges of three days around each read their middle
    day from the daily rollups (from rolled_sessions under filters), not the session rows."""
    srv = Server(tmp_path_factory.mktemp("rolled") / "data")
    srv.env["SVC_ROLLUP_INTERVAL_SECONDS"] = "0.1"
    srv.start()
    try:
        p = srv.create_project("rolled", domains=["acme.test"])
        sent = events(ROLLED, ROLLED - timedelta(days=3))
        assert srv.send(p["keys"]["secret"], sent).status_code == 200
        srv.wait_loaded()
        deadline = time.monotonic() + 30
        done = -1
        while (days := httpx.get(srv.url + "/health").json()["store"]["rolledUpDays"]) != done:
            assert time.monotonic() < deadline, "the days were never rolled up"
            done = days if days >= 2 else -1
            time.sleep(0.5)  # five passes: a day rolled up while its events were inserted
        yield srv, p["keys"]["secret"]
    finally:
        srv.stop()


@pytest.mark.parametrize(
    "params",
    [
        {"by": "source"},
        {"by": "page"},
        {"by": "event"},
        {"by": "engagement"},
        {"by": "source", "filter": "page:contains:/"},  # rolled_sessions
        {"by": "source", "limit": "1", "offset": "1"},
    ],
)
def test_rolled_up_days_compare_as_the_raw_events_do(
    server: Server, key: str, rolled: tuple[Server, str], params: dict[str, str]
) -> None:
    """The same rows, compare and change from the rollups as from the raw events (whose
    figures are checked by hand above)."""
    srv, rolled_key = rolled
    around = {"from": (ROLLED - timedelta(days=1)).date().isoformat()}
    around["to"] = (ROLLED + timedelta(days=1)).date().isoformat()
    r = httpx.get(
        f"{srv.url}/metrics/breakdown",
        params={**around, **params, "compare": "previous_period"},
        headers={"Authorization": f"Bearer {rolled_key}"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == compared(server, key, **params)["rows"], params


@pytest.mark.parametrize(
    ("by", "params"),
    [
        ("source", {"compare": "last_week"}),
        ("page", {"compare": "previous"}),
        ("outbound", {"compare": "PREVIOUS_PERIOD"}),
        ("vitals:page", {"compare": "previous_month"}),
        # the previous period of 1990-01-01 is before the first day a read takes
        ("engagement", {"compare": "previous_period", "from": "1990-01-01", "to": "1990-01-01"}),
        ("404", {"compare": "previous_year", "from": "1990-03-01", "to": "1990-03-02"}),
    ],
)
def test_a_bad_compare_is_a_400_naming_it(
    server: Server, key: str, by: str, params: dict[str, str]
) -> None:
    is_error(breakdown(server, key, DAY, by=by, **params), 400, "compare")


def test_compared_answers_fit_the_documented_types(server: Server, key: str) -> None:
    from tests.test_openapi import _checker

    check = _checker(httpx.get(server.url + "/openapi.json").json())
    for by in ("source", *BREAKDOWN_KINDS):
        r = breakdown(server, key, DAY, by=by, compare="previous_year")
        assert r.status_code == 200, r.text
        check("/metrics/breakdown", "get", r)
        r = breakdown(server, key, DAY, by=by, compare="previous_period")
        check("/metrics/breakdown", "get", r)
