"""Session figures come from the sessions table (one row per session, written at ingestion);
these cases pin what it must agree on with the events, worked out by hand.

A session that crosses an end of the range is taken whole for its session figures (bounce,
duration, source, entry and exit page) and counts only its events in the range as page views
and events; the same filters and breakdowns over the events path (an event filter) agree."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest

from tests.support import Server, run_store_script
from tests.test_metrics_golden import DAY, at, ev

PREV = DAY - timedelta(days=1)
#: A filter on an event dimension other than the page, which keeps every event: it sends a
#: query down the events path (the matching events grouped by session), to compare with the
#: tables. (A regular expression: neither it nor its negation is known to keep only the
#: reported events.)
EVENTS_PATH = "event:matches:."
D0, D1 = PREV.date().isoformat(), DAY.date().isoformat()

# By hand, all from visitor addresses 10.0.1.x:
#   X: visitor 21, 23:50 on PREV (from Bing, /a) and 00:10 on DAY (/b): crosses midnight
#   Y: visitor 22, 09:00 on DAY, one page view from Reddit: a bounce
#   Z: client session "z-1", 23:40 on PREV (/z1, direct), then 00:20 and 00:30 on DAY
# DAY alone: page views 1 (X) + 1 (Y) + 2 (Z) = 4, sessions 3, bounces: Y only (X and Z are
# whole sessions of several page views) -> 1 of 3 = 33.3 %; sources bing, reddit, direct.
# PREV alone: page views 1 (X) + 1 (Z), sessions 2, no bounce, sources bing, direct.
# Both days: page views 6, sessions 3.
EDGE_EVENTS = [
    ev(21, at(23, 50, PREV), path="/a", referrer="https://www.bing.com/search?q=x"),
    ev(21, at(0, 10), path="/b"),
    ev(22, at(9, 0), path="/y", referrer="https://www.reddit.com/r/x"),
    ev(23, at(23, 40, PREV), path="/z1", sessionId="z-1"),
    ev(23, at(0, 20), path="/z2", sessionId="z-1"),
    ev(23, at(0, 30), path="/z3", sessionId="z-1"),
]


@pytest.fixture(scope="module")
def edges(server: Server) -> dict[str, Any]:
    p = server.create_project("edges-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    events = [{**e, "ip": e["ip"].replace("10.0.0.", "10.0.1.")} for e in EDGE_EVENTS]
    r = server.send(p["keys"]["secret"], events)
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    server.wait_loaded()
    return p


def get(server: Server, p: dict, path: str, **params: Any) -> dict[str, Any]:
    r = httpx.get(
        server.url + path, params=params, headers={"Authorization": f"Bearer {p['keys']['secret']}"}
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_sessions_crossing_the_start_of_the_range(server: Server, edges: dict) -> None:
    m = get(server, edges, "/metrics", **{"from": D1, "to": D1})
    assert (m["pageviews"], m["sessions"], m["bounceRate"]) == (4, 3, "33.3%")
    assert m["trafficSources"] == {"bing": 1, "reddit": 1, "direct": 1}


def test_sessions_crossing_the_end_of_the_range(server: Server, edges: dict) -> None:
    m = get(server, edges, "/metrics", **{"from": D0, "to": D0})
    assert (m["pageviews"], m["sessions"], m["bounceRate"]) == (2, 2, "0.0%")
    assert m["trafficSources"] == {"bing": 1, "direct": 1}


def test_a_session_over_two_days_counts_once(server: Server, edges: dict) -> None:
    m = get(server, edges, "/metrics", **{"from": D0, "to": D1})
    assert (m["pageviews"], m["sessions"], m["visitors"]) == (6, 3, 3)


def test_entry_and_exit_pages_are_the_whole_sessions(server: Server, edges: dict) -> None:
    entry = get(server, edges, "/metrics/breakdown", by="entry_page", **{"from": D1, "to": D1})
    rows = {r["value"]: (r["sessions"], r["pageviews"]) for r in entry["rows"]}
    assert rows == {"/a": (1, 1), "/y": (1, 1), "/z1": (1, 2)}
    exits = get(server, edges, "/metrics/breakdown", by="exit_page", **{"from": D0, "to": D0})
    assert {r["value"]: r["sessions"] for r in exits["rows"]} == {"/b": 1, "/z3": 1}


def test_the_events_path_agrees_where_the_semantics_meet(server: Server, edges: dict) -> None:
    """A filter on an event dimension (other than the page) reads the events; one that keeps
    every event must give the same page views and sessions as the sessions table over a range
    no session crosses."""
    both = {"from": D0, "to": D1}
    table = get(server, edges, "/metrics", **both)
    events = get(server, edges, "/metrics", filter=EVENTS_PATH, **both)
    for key in ("pageviews", "sessions", "visitors", "events", "bounceRate", "trafficSources"):
        assert table[key] == events[key], key


def test_session_filter_keeps_whole_sessions(server: Server, edges: dict) -> None:
    m = get(server, edges, "/metrics", filter="source:is:bing", **{"from": D1, "to": D1})
    assert (m["pageviews"], m["sessions"]) == (1, 1)
    ts = get(server, edges, "/metrics/timeseries", interval="day", **{"from": D0, "to": D1})
    assert [p["sessions"] for p in ts["points"]] == [2, 1]  # by start, clamped to the range
    assert [p["pageviews"] for p in ts["points"]] == [2, 4]


#: A range from the day before PREV to today: PREV and DAY wholly inside it (rolled up).
WIDE = {"from": (PREV - timedelta(days=1)).date().isoformat()}


def rolled_up_project(srv: Server, name: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Start ``srv`` rolling up every 0.2 s, send ``events`` to a new project, and wait until
    PREV and DAY are rolled up; returns the project."""
    srv.env["SVC_ROLLUP_INTERVAL_SECONDS"] = "0.2"
    srv.start()
    p = srv.create_project(name, domains=["acme.test"])
    assert srv.send(p["keys"]["secret"], events).json()["accepted"] == len(events)
    srv.wait_loaded()
    deadline = time.monotonic() + 30
    while httpx.get(srv.url + "/health").json()["store"]["rolledUpDays"] < 2:
        assert time.monotonic() < deadline, "the days were not rolled up"
        time.sleep(0.2)
    return p


def test_daily_rollups_give_the_same_answers(fresh_server: Server) -> None:
    """Days wholly inside a range are read from the daily rollups once they exist; the
    answers are the same as from the sessions table and from the events."""
    srv = fresh_server
    # "plan" has two values on DAY (free, pro): too many, so that day is read from the events;
    # on PREV it has one, and "via" one: rolled up
    srv.env["SVC_ROLLUP_MAX_PROPERTY_VALUES"] = "1"
    reported = [
        {**e, "properties": {**e["properties"], "via": "mail"}} if e["event"] == "click" else e
        for e in REPORTED_EVENTS
    ]
    events = [
        {**e, "ip": e["ip"].replace("10.0.0.", "10.0.1.")}
        for e in sorted(EDGE_EVENTS + reported, key=lambda e: e["ts"])
    ]
    p = rolled_up_project(srv, "rolled", events)
    rolled = get(srv, p, "/metrics", **WIDE)
    events_path = get(srv, p, "/metrics", filter=EVENTS_PATH, **WIDE)
    for key in ("pageviews", "sessions", "visitors", "events", "bounceRate", "trafficSources"):
        assert rolled[key] == events_path[key], key
    assert (rolled["pageviews"], rolled["sessions"], rolled["bounceRate"]) == (7, 4, "25.0%")
    assert rolled["trafficSources"] == {"bing": 1, "direct": 2, "reddit": 1}
    # a range that ends at the end of a rolled day takes that day from its rollups too, less
    # what its sessions that cross the end have after it (X's and Z's page views on DAY)
    for first in (PREV - timedelta(days=1), PREV):
        rng = {"from": first.date().isoformat(), "to": PREV.date().isoformat()}
        ending = get(srv, p, "/metrics", **rng)
        assert ending == get(srv, p, "/metrics", filter=EVENTS_PATH, **rng), rng
        assert (ending["pageviews"], ending["sessions"], ending["bounceRate"]) == (2, 2, "0.0%")
    for by in ("source", "entry_page", "exit_page", "browser", "event", "hostname", "prop:plan"):
        for order in ("-visitors", "value", "-bounceRate"):
            args = {**WIDE, "by": by, "order": order}
            table = get(srv, p, "/metrics/breakdown", **args)
            events = get(srv, p, "/metrics/breakdown", filter=EVENTS_PATH, **args)
            assert table == events, (by, order)
    paged = get(srv, p, "/metrics/breakdown", by="entry_page", limit=1, offset=1, **WIDE)
    assert (paged["totalRows"], [r["value"] for r in paged["rows"]]) == (4, ["/w"])
    via = get(srv, p, "/metrics/breakdown", by="prop:via", **WIDE)
    assert via == get(srv, p, "/metrics/breakdown", by="prop:via", filter=EVENTS_PATH, **WIDE)
    assert [(r["value"], r["sessions"], r["events"]) for r in via["rows"]] == [("mail", 1, 1)]
    # pro: X's click and signup, and W's page view /w (a bounce); free: Y's signup
    plan = get(srv, p, "/metrics/breakdown", by="prop:plan", **WIDE)
    assert [
        (r["value"], r["visitors"], r["sessions"], r["pageviews"], r["events"], r["bounceRate"])
        for r in plan["rows"]
    ] == [("pro", 2, 2, 1, 3, "50.0%"), ("free", 1, 1, 0, 1, "0.0%")]
    # a key's values are its breakdown's rows by events, from the rollups where they hold it
    for key in ("plan", "via"):
        values = get(srv, p, "/metrics/properties", key=key, **WIDE)["values"]
        events = get(srv, p, "/metrics/properties", key=key, filter=EVENTS_PATH, **WIDE)
        assert values == events["values"], key
    values = get(srv, p, "/metrics/properties", key="plan", **WIDE)["values"]
    assert values == [
        {"value": "pro", "events": 3, "visitors": 2},
        {"value": "free", "events": 1, "visitors": 1},
    ]
    names = get(srv, p, "/metrics/breakdown", by="event", order="value", **WIDE)
    assert [(r["value"], r["sessions"], r["events"]) for r in names["rows"]] == [
        ("click", 1, 1),
        ("page_view", 4, 7),
        ("signup", 2, 2),
    ]
    # a late event for a rolled-up day: the day is rolled up again
    late = ev(24, at(12, 0), path="/late", referrer="https://duckduckgo.com/")
    late["ip"] = "10.0.1.24"
    assert srv.send(p["keys"]["secret"], late).status_code == 200
    srv.wait_loaded()
    deadline = time.monotonic() + 30
    while get(srv, p, "/metrics", **WIDE)["sessions"] != 5:
        assert time.monotonic() < deadline, "the late event did not reach the rollups"
        time.sleep(0.2)
    assert get(srv, p, "/metrics", **WIDE)["trafficSources"]["duckduckgo"] == 1


#: For filters that drop reported events only, over rolled-up days (addresses 10.0.3.x):
#:   41: a signup alone at 10:00 on DAY (a session the filter drops whole), and a page view at
#:       14:00 (another session: visitor 41 still counts)
#:   42: a signup alone at 11:00 on DAY (dropped whole, and so is visitor 42)
#:   43: a page view and a signup at 12:00 on DAY (the session keeps its page view)
#:   44: a page view with plan=pro at 12:30 on DAY (dropped whole by prop:plan:is_not:pro)
#:   45: a click and a signup at 10:00 on PREV, no page view (the session keeps its click)
DROPPED_EVENTS = [
    ev(41, at(10, 0), name="signup", properties={"plan": "pro"}),
    ev(41, at(14, 0), path="/p"),
    ev(42, at(11, 0), name="signup"),
    ev(43, at(12, 0), path="/"),
    ev(43, at(12, 1), name="signup"),
    ev(44, at(12, 30), path="/w", properties={"plan": "pro"}),
    ev(45, at(10, 0, PREV), name="click"),
    ev(45, at(10, 1, PREV), name="signup"),
]


def test_filters_that_drop_reported_events_over_rolled_days(fresh_server: Server) -> None:
    """GET /metrics with a filter that drops reported events only reads the rolled days from
    the rollups less what it drops: the events, and the sessions it drops whole with their
    visitors, but a visitor who keeps another session. Worked out by hand, and the same as
    the events path."""
    srv = fresh_server
    events = [{**e, "ip": e["ip"].replace("10.0.0.", "10.0.3.")} for e in DROPPED_EVENTS]
    p = rolled_up_project(srv, "dropping", events)
    m = get(srv, p, "/metrics", filter="event:is_not:signup", **WIDE)
    # sessions 41b, 43, 44, 45; 41b and 44 are bounces of the three with a page view
    assert (m["sessions"], m["visitors"], m["pageviews"], m["events"]) == (4, 4, 3, 4)
    assert (m["bounceRate"], m["trafficSources"]) == ("66.7%", {"direct": 4})
    m = get(srv, p, "/metrics", filter="prop:plan:is_not:pro", **WIDE)
    # 41a and 44 dropped whole (41 keeps 41b); 42, 43 and 45 keep everything: 1 + 1 + 2 + 2
    assert (m["sessions"], m["visitors"], m["pageviews"], m["events"]) == (4, 4, 2, 6)
    for flt, same in (
        ("event:is_not:signup", "event:not_matches:^signup$"),
        ("event:not_contains:SIGN", "event:not_matches:(?i)sign"),
        ("event:is_not:click", "event:not_matches:^click$"),
        ("prop:plan:is_not:pro", "prop:plan:not_matches:^pro$"),
    ):
        assert_same_metrics(srv, p, flt, same, WIDE)


#: For breakdowns with filters over rolled-up days (addresses 10.0.4.x):
#:   51: 09:00 on DAY from Google, /blog/x, /pricing and a click on /blog/x (matches /blog:
#:       1 page view, 2 events); then 15:00 on DAY, /pricing alone (another session, direct,
#:       no match: visitor 51 counts once, under google)
#:   52: 10:00 on DAY from Bing, /blog/y alone (a bounce)
#:   53: 10:00 on PREV, /home and a signup on /blog/z (matches with no page view there)
#:   54: 10:00 and 14:00 on DAY, /blog/w alone each time (two bounces, one visitor)
FILTERED_EVENTS = [
    ev(51, at(9, 0), path="/blog/x", referrer="https://www.google.com/search?q=x"),
    ev(51, at(9, 1), path="/pricing"),
    ev(51, at(9, 2), name="click", path="/blog/x"),
    ev(51, at(15, 0), path="/pricing"),
    ev(52, at(10, 0), path="/blog/y", referrer="https://www.bing.com/search?q=y"),
    ev(53, at(10, 0, PREV), path="/home"),
    ev(53, at(10, 1, PREV), name="signup", path="/blog/z"),
    ev(54, at(10, 0), path="/blog/w"),
    ev(54, at(14, 0), path="/blog/w"),
    # two paths with the same 32-bit hash (xxHash32): a filter that matches one of them
    # finds a collision and reads the session rows instead (one session each, from 55, 56)
    ev(55, at(11, 0), path="/c84571"),
    ev(56, at(11, 0), path="/c130716"),
]


def test_breakdowns_with_filters_over_rolled_days(fresh_server: Server) -> None:
    """A breakdown by a session dimension filtered on the page and on session dimensions
    reads the rolled days' sessions from rolled_sessions: worked out by hand, and the same as
    the events path for every filter tried."""
    srv = fresh_server
    events = [{**e, "ip": e["ip"].replace("10.0.0.", "10.0.4.")} for e in FILTERED_EVENTS]
    p = rolled_up_project(srv, "filtered", events)
    table = get(srv, p, "/metrics/breakdown", by="source", filter="page:contains:/BLOG", **WIDE)
    assert [
        (r["value"], r["visitors"], r["sessions"], r["pageviews"], r["events"], r["bounceRate"])
        for r in table["rows"]
    ] == [
        ("direct", 2, 3, 2, 3, "66.7%"),
        ("bing", 1, 1, 1, 1, "100.0%"),
        ("google", 1, 1, 1, 2, "0.0%"),
    ]
    collision = get(srv, p, "/metrics/breakdown", by="entry_page", filter="page:is:/c84571", **WIDE)
    assert [(r["value"], r["sessions"]) for r in collision["rows"]] == [("/c84571", 1)]
    for filters in (
        ["page:contains:/blog"],
        ["page:is:/pricing"],
        ["page:is_not:/pricing"],
        ["page:matches:^/blog/[xz]$"],
        ["page:contains:/blog", "source:is:direct"],
        ["source:is_not:bing"],
        ["page:is:/nowhere"],
        ["page:is:/c84571"],
    ):
        for by in ("source", "entry_page", "exit_page", "browser"):
            # every order for one dimension: one builder orders both paths (breakdowns.breakdown)
            orders = ("-visitors", "value", "-avgSessionDuration") if by == "source" else ("",)
            for order in orders:
                args = {**WIDE, "by": by, **({"order": order} if order else {})}
                rolled = get(srv, p, "/metrics/breakdown", filter=filters, **args)
                events_path = [*filters, EVENTS_PATH]
                direct = get(srv, p, "/metrics/breakdown", filter=events_path, **args)
                assert rolled == direct, (filters, by, order)


def assert_same_metrics(
    srv: Server, p: dict, flt: str, same: str, params: dict[str, str]
) -> dict[str, Any]:
    """GET /metrics under ``flt`` and under ``same``, a filter that keeps the same events
    (a regular expression: the events path), agree; returns the first."""
    table = get(srv, p, "/metrics", filter=flt, **params)
    events = get(srv, p, "/metrics", filter=same, **params)
    for key in (
        "pageviews",
        "sessions",
        "visitors",
        "events",
        "bounceRate",
        "trafficSources",
        "avgSessionDuration",
    ):
        assert table[key] == events[key], (flt, key)
    return table


def test_stored_visitor_ids_are_day_scoped_and_reversible() -> None:
    from svc.ingestion.identity import stored_visitor_id

    v, t = 0x1234_5678_9ABC_DEF0, at(10, 0)
    assert stored_visitor_id(stored_visitor_id(v, t), t) == v
    assert stored_visitor_id(v, t) == stored_visitor_id(v, t + 3_600_000)  # same day
    assert stored_visitor_id(v, t) != stored_visitor_id(v, t + 86_400_000)  # another day


def test_a_session_goes_on_across_a_restart(fresh_server: Server) -> None:
    """The tracker is rebuilt from the store with the visitors' hashes (the stored ids are
    mixed with the day): a visitor's next event after a restart stays in its session."""
    srv = fresh_server
    srv.start()
    p = srv.create_project("restart", domains=["acme.test"])
    now = int(time.time() * 1000)
    first = {**ev(31, now - 120_000, path="/one"), "ip": "10.0.1.31"}
    assert srv.send(p["keys"]["secret"], first).status_code == 200
    srv.wait_loaded()
    srv.stop()
    srv.start()
    second = {**ev(31, now - 60_000, path="/two"), "ip": "10.0.1.31"}
    assert srv.send(p["keys"]["secret"], second).status_code == 200
    srv.wait_loaded()
    days = [time.strftime("%Y-%m-%d", time.gmtime(now / 1000 - d)) for d in (86_400, 0)]
    m = get(srv, p, "/metrics", **{"from": days[0], "to": days[1], "tz": "UTC"})
    assert (m["sessions"], m["pageviews"], m["visitors"], m["bounceRate"]) == (1, 2, 1, "0.0%")


def test_page_breakdown_takes_sessions_whole_and_pages_in_the_range(
    server: Server, edges: dict
) -> None:
    """By page over DAY alone, from the (session, page) table: the page views of each page in
    the range (X's /a and Z's /z1 were on PREV), and the bounce of the whole session (X viewed
    two pages, so /b is no bounce; Y's /y is)."""
    body = get(server, edges, "/metrics/breakdown", by="page", **{"from": D1, "to": D1})
    rows = {r["value"]: (r["sessions"], r["pageviews"], r["bounceRate"]) for r in body["rows"]}
    assert rows == {
        "/b": (1, 1, "0.0%"),
        "/y": (1, 1, "100.0%"),
        "/z2": (1, 1, "0.0%"),
        "/z3": (1, 1, "0.0%"),
    }
    # over both days no session crosses an end: the events path (an event filter that keeps
    # every event) gives the same rows
    both = {"from": D0, "to": D1, "by": "page", "order": "value"}
    table = get(server, edges, "/metrics/breakdown", **both)
    events = get(server, edges, "/metrics/breakdown", filter=EVENTS_PATH, **both)
    assert table == events
    assert [r["value"] for r in table["rows"]] == ["/a", "/b", "/y", "/z1", "/z2", "/z3"]
    # a session filter keeps whole sessions, pages in the range
    bing = get(server, edges, "/metrics/breakdown", filter="source:is:bing", **both)
    assert {r["value"]: r["pageviews"] for r in bing["rows"]} == {"/a": 1, "/b": 1}


_PAGES_ROWS = """
import json, sys
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
rows = store.query("SELECT project_id, toString(session_day), toString(session_id), path, "
                   "pageviews, events FROM session_pages FINAL ORDER BY ALL")
types = store.query("SELECT DISTINCT type FROM system.columns WHERE database = currentDatabase() "
                    "AND table IN ('events', 'report_events', 'session_pages') AND name = 'path'")
print(json.dumps({"rows": [list(r) for r in rows], "path_types": [t for t, in types]}))
if sys.argv[2] == "undo":  # back to the store as it was before migrations 4 to 8
    store.client.command("ALTER TABLE events MODIFY COLUMN path String")
    for table in ("session_pages", "event_hours", "report_events"):
        store.client.command(f"DROP VIEW {table}_mv")
        store.client.command(f"DROP TABLE {table}")
    store.client.command("DELETE FROM svc_migrations WHERE version IN (4, 5, 6, 7, 8)")
store.close()
"""


def _session_pages(srv: Server, action: str = "") -> list[list[Any]]:
    found: dict[str, Any] = run_store_script(_PAGES_ROWS, str(srv.data_dir), action)
    assert found["path_types"] == ["LowCardinality(String)"]  # migration 7
    rows: list[list[Any]] = found["rows"]
    return rows


def test_derived_tables_of_older_stores_are_rebuilt_by_the_migrations(
    fresh_server: Server,
) -> None:
    """A store from before the session pages, the event hours and the report events gets them
    from its events when migrated: the same rows the materialized views write, and the same
    answers; its paths become LowCardinality with their values unchanged."""
    srv = fresh_server
    srv.start()
    p = srv.create_project("pages", domains=["acme.test"])
    events = [{**e, "ip": e["ip"].replace("10.0.0.", "10.0.1.")} for e in EDGE_EVENTS]
    events.append({**ev(21, at(0, 15), name="click", path="/b"), "ip": "10.0.1.21"})
    purchase = {"value": 12.5, "currency": "EUR", "transaction_id": "t1", "items": "[]"}
    events.append({**ev(22, at(9, 5), name="purchase", path="/y"), "properties": purchase})
    events[-1]["ip"] = "10.0.1.22"
    assert srv.send(p["keys"]["secret"], events).json()["accepted"] == len(events)
    srv.wait_loaded()
    both = {"from": D0, "to": D1, "by": "page", "order": "value"}
    asked = [
        ("/metrics/breakdown", both),
        ("/metrics/timeseries", {"from": D0, "to": D1, "interval": "hour"}),
        ("/metrics/revenue", {"from": D0, "to": D1}),
        ("/metrics", {"from": D0, "to": D1, "filter": "event:is:click"}),
    ]
    before = [get(srv, p, path, **args) for path, args in asked]
    assert before[2]["currencies"][0]["revenue"] == 12.5
    assert before[3]["events"] == 1
    srv.stop()
    written = _session_pages(srv, "undo")
    assert ["/b", 1, 2] in [r[3:] for r in written]  # X's page view and click on /b
    assert len(written) == 6
    srv.start()  # migrations 4 to 8 again, with the rebuilds from the events
    assert [get(srv, p, path, **args) for path, args in asked] == before
    srv.stop()
    assert _session_pages(srv) == written
    # and the report events' view takes every custom event from then on (migration 8); the
    # rolled day it changes is read from its rollups once rolled up again (svc.queries.metrics)
    srv.env["SVC_ROLLUP_INTERVAL_SECONDS"] = "0.2"
    srv.start()
    click = {**ev(21, at(0, 16), name="click", path="/b"), "ip": "10.0.1.21"}
    assert srv.send(p["keys"]["secret"], [click]).json()["accepted"] == 1
    srv.wait_loaded()
    deadline = time.monotonic() + 30
    while get(srv, p, asked[3][0], **asked[3][1])["events"] != 2:
        assert time.monotonic() < deadline, "the click was not counted"
        time.sleep(0.2)


def test_page_filters_read_the_session_pages(server: Server, edges: dict) -> None:
    """A filter on the page keeps the sessions with a matching page (from the session pages),
    taken whole, with the page views and events on matching pages in the range; over a range
    no session crosses, the events path gives the same answers."""
    both = {"from": D0, "to": D1}
    for flt in ("page:contains:/z", "page:is:/b|/y", "page:not_matches:^/z[12]$"):
        table = get(server, edges, "/metrics", filter=flt, **both)
        events = get(server, edges, "/metrics", filter=[flt, EVENTS_PATH], **both)
        for key in ("pageviews", "sessions", "visitors", "events", "bounceRate", "trafficSources"):
            assert table[key] == events[key], (flt, key)
        for by in ("source", "page", "entry_page"):
            args = {**both, "by": by, "order": "value"}
            table_rows = get(server, edges, "/metrics/breakdown", filter=flt, **args)
            event_rows = get(server, edges, "/metrics/breakdown", filter=[flt, EVENTS_PATH], **args)
            assert table_rows == event_rows, (flt, by)
    z = get(server, edges, "/metrics", filter="page:contains:/z", **both)
    assert (z["pageviews"], z["sessions"], z["trafficSources"]) == (3, 1, {"direct": 1})
    # DAY alone: X crosses its start; its page view of /b is in the range, and the session is
    # taken whole (two page views: no bounce; its source is that of its first event, bing)
    b = get(server, edges, "/metrics", filter="page:is:/b", **{"from": D1, "to": D1})
    assert (b["pageviews"], b["sessions"], b["bounceRate"]) == (1, 1, "0.0%")
    assert b["trafficSources"] == {"bing": 1}
    pages = get(
        server,
        edges,
        "/metrics/breakdown",
        by="page",
        filter="page:contains:/z",
        **{"from": D1, "to": D1},
    )
    assert {r["value"]: r["pageviews"] for r in pages["rows"]} == {"/z2": 1, "/z3": 1}


def test_time_series_from_the_hourly_table_equal_the_events(server: Server, edges: dict) -> None:
    """Without filters the page views, events and visitors of a time series come from the
    hourly table (whole-hour zones); the events path gives the same points. A zone with a
    half-hour offset reads the events."""
    both = {"from": D0, "to": D1}
    for tz in ("UTC", "Europe/Berlin", "Asia/Kolkata"):
        for interval in ("hour", "day"):
            args = {**both, "interval": interval, "tz": tz}
            hourly = get(server, edges, "/metrics/timeseries", **args)
            events = get(server, edges, "/metrics/timeseries", filter=EVENTS_PATH, **args)
            fields = ("time", "pageviews", "events", "visitors")
            assert [[p[f] for f in fields] for p in hourly["points"]] == [
                [p[f] for f in fields] for p in events["points"]
            ], (tz, interval)
    days = get(server, edges, "/metrics/timeseries", interval="day", tz="UTC", **both)
    assert [(p["pageviews"], p["visitors"]) for p in days["points"]] == [(2, 2), (4, 3)]


# By hand, from visitor addresses 10.0.2.x, beside the page views of EDGE_EVENTS:
#   X: visitor 21 crosses midnight; it clicks at 23:55 on PREV ({"plan": "pro"}) and signs up
#      at 00:12 on DAY ({"plan": "pro"})
#   Y: visitor 22 signs up at 09:01 on DAY ({"plan": "free"}): no longer a bounce
#   W: visitor 24, one page view carrying {"plan": "pro"} at 11:00 on DAY: a bounce
REPORTED_EVENTS = [
    ev(21, at(23, 55, PREV), name="click", path="/a", properties={"plan": "pro"}),
    ev(21, at(0, 12), name="signup", path="/b", properties={"plan": "pro"}),
    ev(22, at(9, 1), name="signup", path="/y", properties={"plan": "free"}),
    ev(24, at(11, 0), path="/w", properties={"plan": "pro"}),
]


@pytest.fixture(scope="module")
def reported(server: Server) -> dict[str, Any]:
    p = server.create_project("reported-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    events = [
        {**e, "ip": e["ip"].replace("10.0.0.", "10.0.2.")} for e in EDGE_EVENTS + REPORTED_EVENTS
    ]
    r = server.send(p["keys"]["secret"], sorted(events, key=lambda e: e["ts"]))
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    server.wait_loaded()
    return p


def test_reported_event_filters_and_breakdowns_read_report_events(
    server: Server, reported: dict
) -> None:
    """Filters that only custom events and events with properties pass, and breakdowns by
    event name or property, read report_events and the sessions table; over a range no
    session crosses, the events path gives the same answers, and over one that a session
    crosses, the events in the range count and the session is taken whole."""
    both = {"from": D0, "to": D1}
    # each filter, and one that keeps the same events but plain page views might pass (a
    # regular expression), which takes the events path
    for flt, same in (
        ("event:is:signup", "event:matches:^signup$"),
        ("event:is:click", "event:matches:^click$"),
        ("prop:plan:is:pro", "prop:plan:matches:^pro$"),
        ("prop:plan:contains:R", "prop:plan:matches:(?i)r"),
        # (these drop reported events only: the sessions' own counts less theirs)
        ("event:is_not:signup", "event:not_matches:^signup$"),
        ("event:not_contains:CLI", "event:not_matches:(?i)cli"),
        ("prop:plan:is_not:pro", "prop:plan:not_matches:^pro$"),
    ):
        table = assert_same_metrics(server, reported, flt, same, both)
        for by in ("source", "event", "page", "prop:plan"):
            args = {**both, "by": by, "order": "value"}
            table_rows = get(server, reported, "/metrics/breakdown", filter=flt, **args)
            event_rows = get(server, reported, "/metrics/breakdown", filter=same, **args)
            assert table_rows == event_rows, (flt, by)
        series = get(server, reported, "/metrics/timeseries", filter=flt, interval="day", **both)
        assert sum(p["events"] for p in series["points"]) == table["events"], flt
    args = {**both, "by": "event", "order": "value"}
    table_rows = get(server, reported, "/metrics/breakdown", **args)
    assert table_rows == get(server, reported, "/metrics/breakdown", filter=EVENTS_PATH, **args)
    names = get(server, reported, "/metrics/breakdown", by="event", order="value", **both)
    assert [(r["value"], r["sessions"], r["events"]) for r in names["rows"]] == [
        ("click", 1, 1),
        ("page_view", 4, 7),
        ("signup", 2, 2),
    ]
    plans = get(server, reported, "/metrics/breakdown", by="prop:plan", order="value", **both)
    assert [
        (r["value"], r["sessions"], r["pageviews"], r["bounceRate"]) for r in plans["rows"]
    ] == [
        ("free", 1, 0, "0.0%"),
        ("pro", 2, 1, "50.0%"),  # X (no bounce) and W (a bounce)
    ]
    # DAY alone: X's click on PREV is outside the range, its signup inside; X is taken whole
    day = {"from": D1, "to": D1}
    signups = get(server, reported, "/metrics", filter="event:is:signup", **day)
    assert (signups["sessions"], signups["events"], signups["pageviews"]) == (2, 2, 0)
    assert signups["trafficSources"] == {"bing": 1, "reddit": 1}
    names = get(server, reported, "/metrics/breakdown", by="event", order="value", **day)
    assert [(r["value"], r["events"]) for r in names["rows"]] == [
        ("page_view", 5),
        ("signup", 2),
    ]
    clicks = get(server, reported, "/metrics", filter="event:is:click", **day)
    assert (clicks["sessions"], clicks["events"]) == (0, 0)
    # DAY alone, but the signups: X's page view of /b in the range (its click is before it)
    others = get(server, reported, "/metrics", filter="event:is_not:signup", **day)
    assert (others["sessions"], others["events"], others["pageviews"]) == (4, 5, 5)
    # and X's click, dropped, is outside the range: its own counts lose it once, not twice
    others = get(server, reported, "/metrics", filter="event:is_not:click", **day)
    assert (others["sessions"], others["events"], others["pageviews"]) == (4, 7, 5)


def test_a_session_loaded_in_two_parts_crosses_midnight_once(server: Server) -> None:
    """A session whose events were loaded apart has a row per insert in the sessions table
    until they merge: the sessions that cross an end of a UTC range are found from those
    rows (one has the last event after the end) and merged by their min and max
    (svc.queries.sql.sessions.near_crossing). Each day counts it once, with its page view."""
    p = server.create_project("two-parts-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    first = ev(31, at(23, 50, PREV), path="/a", referrer="https://www.bing.com/search?q=x")
    second = ev(31, at(0, 10), path="/b")
    for e in (first, second):
        e["ip"] = "10.0.9.31"
        assert server.send(p["keys"]["secret"], [e]).json()["accepted"] == 1
        server.wait_loaded()
    for day, page in ((D0, "/a"), (D1, "/b")):
        rng = {"from": day, "to": day, "tz": "UTC"}
        m = get(server, p, "/metrics", **rng)
        assert (m["pageviews"], m["sessions"], m["bounceRate"]) == (1, 1, "0.0%"), day
        assert m["trafficSources"] == {"bing": 1}
        assert m == get(server, p, "/metrics", filter=EVENTS_PATH, **rng)
        rows = get(server, p, "/metrics/breakdown", by="page", **rng)["rows"]
        assert [(r["value"], r["pageviews"]) for r in rows] == [(page, 1)]
