"""A funnel over many visitors is read in passes by the day its visitors' sessions began
(svc.queries.plan.funnel_passes): a stored visitor id is mixed with that day, so each
visitor is in one pass with all its events, those of sessions that cross midnight or last
days (the long sessions' spans widen a pass) too. The passes are planned without a store,
and a server made to read every funnel in passes answers as one that reads it whole."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from svc.queries.dates import DateRange
from svc.queries.plan import FunnelPass, Query, funnel_passes, plan
from tests.support import Server
from tests.test_metrics_golden import DAY, UA, at, ev
from tests.test_sessions_table import PREV, get, rolled_up_project

JAN = DateRange(date(2026, 1, 10), date(2026, 1, 20), "UTC")


def utc(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, tzinfo=UTC)


def test_passes_cover_the_session_days_once_each() -> None:
    p = plan(Query("p1", JAN))  # session days 9 to 21 (the day before, the end's day)
    assert funnel_passes(p, 5, 10, []) == ()  # one statement holds them
    passes = funnel_passes(p, 30, 10, [])
    assert passes == (
        FunnelPass(None, date(2026, 1, 12), utc(10), utc(14)),
        FunnelPass(date(2026, 1, 13), date(2026, 1, 16), utc(13), utc(18)),
        FunnelPass(date(2026, 1, 17), None, utc(17), utc(21)),
    )
    # no more passes than days; a long session widens its own pass only
    assert len(funnel_passes(p, 10**9, 1, [])) == 13
    spans = [(date(2026, 1, 14), utc(12, 5), utc(19, 23)), (date(2026, 1, 2), utc(1), utc(11))]
    widened = funnel_passes(p, 30, 10, spans)
    assert widened[0] == passes[0]  # the span of the 2nd ends before the pass's window does
    last = utc(19, 23) + timedelta(milliseconds=1)
    assert widened[1] == FunnelPass(date(2026, 1, 13), date(2026, 1, 16), utc(12, 5), last)
    assert widened[2] == passes[2]


def test_a_funnel_in_passes_answers_as_one_statement(fresh_server: Server) -> None:
    srv = fresh_server
    srv.env["SVC_FUNNEL_PASS_VISITORS"] = "1"  # every funnel over rolled days in passes
    two_days_before = DAY - timedelta(days=2)
    events = [
        # 81: the whole funnel on PREV
        ev(81, at(10, 0, PREV), path="/"),
        ev(81, at(10, 5, PREV), path="/pricing"),
        ev(81, at(10, 10, PREV), name="signup", path="/pricing"),
        # 82: two steps on DAY
        ev(82, at(9, 0), path="/"),
        ev(82, at(9, 20), path="/pricing"),
        # 83: a session across PREV's midnight, a step on each side
        ev(83, at(23, 55, PREV), path="/"),
        ev(83, at(0, 3), path="/pricing"),
        # 84: only the second step
        ev(84, at(11, 0), path="/pricing"),
    ]
    for e in events:
        e["ip"] = e["ip"].replace("10.0.0.", "10.0.8.")
    # a client's session over three days: its first step two days before DAY, its second on
    # DAY (a long session: its pass reads beyond the day after its own)
    client = [
        {"event": "page_view", "url": "/", "sessionId": "k8", "ts": at(12, 0, two_days_before)},
        {"event": "page_view", "url": "/pricing", "sessionId": "k8", "ts": at(12, 0)},
    ]
    events += [{**e, "userAgent": UA.format(85), "ip": "10.0.8.85"} for e in client]
    p = rolled_up_project(srv, "funnel-passes", events)
    rng = {"from": (DAY - timedelta(days=3)).date().isoformat(), "to": DAY.date().isoformat()}
    asked = [
        {"step": ["page:/", "page:/pricing", "event:signup"]},
        {"step": ["page:/", "page:/pricing"], "window": str(3 * 86400)},
        {"step": ["page:/pricing", "event:signup"], "tz": "America/New_York"},
        {"step": ["page:/", "page:/pricing"], "filter": "page:is:/pricing"},
    ]
    in_passes = [get(srv, p, "/metrics/funnel", **rng, **a)["steps"] for a in asked]
    srv.stop()
    srv.env["SVC_FUNNEL_PASS_VISITORS"] = str(10**9)
    srv.start()
    whole = [get(srv, p, "/metrics/funnel", **rng, **a)["steps"] for a in asked]
    assert in_passes == whole
    # by hand: 81, 82 and 83 reach the pricing page within 30 minutes of the home page, 81
    # signs up; 84 never saw the home page
    assert [s["visitors"] for s in in_passes[0]] == [4, 3, 1]
    counted = [s["visitors"] for s in in_passes[1]]  # k8's steps are two days apart
    assert counted[0] == 4 and counted[1] in (3, 4)
