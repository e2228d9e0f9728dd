"""The page breakdown under filters on rolled-up days: the pages of the sessions that pass
the filters are read from ``rolled_sessions`` (svc.queries.sql.sessions.rolled_pages), their
hashes named by the days' paths; a hash that names two paths of those days (a collision) sends
the report back to the session pages of every day. Checked against the events path (a filter
that keeps every event sends a query there) and by hand."""

from __future__ import annotations

from typing import Any

from tests.support import Server, run_store_script
from tests.test_sessions_table import (
    EVENTS_PATH,
    FILTERED_EVENTS,
    WIDE,
    get,
    rolled_up_project,
)


def test_page_breakdown_with_filters_over_rolled_days(fresh_server: Server) -> None:
    srv = fresh_server
    events = [{**e, "ip": e["ip"].replace("10.0.0.", "10.0.6.")} for e in FILTERED_EVENTS]
    p = rolled_up_project(srv, "rolled-pages", events)
    google = get(srv, p, "/metrics/breakdown", by="page", filter="source:is:google", **WIDE)
    # visitor 51's first session (from Google): /blog/x and /pricing, a page view each
    assert [(r["value"], r["visitors"], r["sessions"], r["pageviews"]) for r in google["rows"]] == [
        ("/blog/x", 1, 1, 1),
        ("/pricing", 1, 1, 1),
    ]
    for filters in (
        ["source:is:google"],
        ["source:is_not:bing"],  # sessions 55 and 56: their paths' hashes collide
        ["source:is:direct"],
        ["page:contains:/blog"],
        ["page:contains:/blog", "source:is:direct"],
        ["page:is:/c84571"],  # a collision among the matching hashes (svc.queries.plan)
        ["browser:is:nowhere"],
    ):
        for order in ("-visitors", "value", "-avgSessionDuration", "bounceRate"):
            args = {**WIDE, "by": "page", "order": order, "limit": 100}
            rolled = get(srv, p, "/metrics/breakdown", filter=filters, **args)
            direct = get(srv, p, "/metrics/breakdown", filter=[*filters, EVENTS_PATH], **args)
            assert rolled == direct, (filters, order)
    # both paths of the collision, each under its own name
    direct = get(srv, p, "/metrics/breakdown", by="page", filter="source:is:direct", **WIDE)
    names = {r["value"] for r in direct["rows"]}
    assert {"/c84571", "/c130716"} <= names and "" not in names
    # a comparison asks the other range about the values of this one (only those)
    compared = get(
        srv,
        p,
        "/metrics/breakdown",
        by="page",
        filter="source:is:google",
        compare="previous_period",
        **WIDE,
    )
    assert [r["value"] for r in compared["rows"]] == ["/blog/x", "/pricing"]


_RESORT = """
import json, sys
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
c = store.client
key = c.query("SELECT sorting_key FROM system.tables WHERE database = currentDatabase() "
              "AND name = 'rolled_sessions'").result_rows[0][0]
# each day's current version, without its number: a change that reached a day while it was
# rolled up rolls it up again under a newer one (svc.storage.rollups), a restart in between
rows = c.query("SELECT * EXCEPT version FROM rolled_sessions WHERE (project_id, session_day, "
               "version) IN (SELECT project_id, session_day, max(version) FROM rolled_sessions "
               "GROUP BY project_id, session_day) ORDER BY ALL").result_rows
tables = c.query("SELECT name FROM system.tables WHERE database = currentDatabase() "
                 "AND name LIKE 'rolled_sessions%' ORDER BY name").result_rows
print(json.dumps({"key": key, "rows": repr(rows), "tables": [t for t, in tables]}))
if sys.argv[2] == "unsort":  # as before migration 15, and a crash in the middle of its copy
    c.command("CREATE TABLE old_rolled AS rolled_sessions ENGINE = MergeTree "
              "PARTITION BY toYYYYMM(session_day) ORDER BY (project_id, session_day, version)")
    c.command("INSERT INTO old_rolled SELECT * FROM rolled_sessions")
    c.command("EXCHANGE TABLES rolled_sessions AND old_rolled")
    c.command("RENAME TABLE old_rolled TO rolled_sessions_resorted")
    c.command("TRUNCATE TABLE rolled_sessions_resorted")  # part of the copy, then the crash
    c.command("INSERT INTO rolled_sessions_resorted SELECT * FROM rolled_sessions LIMIT 1")
if sys.argv[2] in ("unsort", "unrecord"):  # unrecord: a crash after the exchange
    c.command("DELETE FROM svc_migrations WHERE version = 15")
store.close()
"""


def _rolled_sessions(srv: Server, action: str = "") -> dict[str, Any]:
    found: dict[str, Any] = run_store_script(_RESORT, str(srv.data_dir), action)
    return found


def test_rolled_sessions_are_sorted_by_country_once(fresh_server: Server) -> None:
    """Migration 15 sorts the rolled sessions by country: a store from before it (here one
    that crashed in the middle of the copy) gets the same rows in the new order, and the same
    answers; one that crashed after the exchange keeps them."""
    srv = fresh_server
    events = [{**e, "ip": e["ip"].replace("10.0.0.", "10.0.7.")} for e in FILTERED_EVENTS]
    p = rolled_up_project(srv, "resorted", events)
    asked = [
        {"by": "page", "filter": "country:is_not:DE"},
        {"by": "page", "filter": "source:is:google"},
        {"by": "source", "filter": "page:contains:/blog"},
    ]
    before = [get(srv, p, "/metrics/breakdown", **WIDE, **args) for args in asked]
    srv.stop()
    sorted_rows = _rolled_sessions(srv, "unsort")
    assert sorted_rows["key"] == "project_id, session_day, version, country"
    assert sorted_rows["tables"] == ["rolled_sessions"]
    unsorted = _rolled_sessions(srv, "")
    assert unsorted["key"] == "project_id, session_day, version"
    assert unsorted["tables"] == ["rolled_sessions", "rolled_sessions_resorted"]
    assert unsorted["rows"] == sorted_rows["rows"]
    for action in ("unrecord", ""):
        srv.start()
        assert [get(srv, p, "/metrics/breakdown", **WIDE, **args) for args in asked] == before
        srv.stop()
        assert _rolled_sessions(srv, action) == sorted_rows
