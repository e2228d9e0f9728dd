"""The page breakdown under filters on rolled-up days: the pages of the sessions that pass
the filters are read from ``rolled_sessions`` (svc.queries.sql.sessions.rolled_pages), their
hashes named by the days' paths; a hash that names two paths of those days (a collision) sends
the report back to the session pages of every day. Checked against the events path (a filter
that keeps every event sends a query there) and by hand."""

from __future__ import annotations

from tests.support import Server
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
