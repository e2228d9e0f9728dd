"""Funnel steps with alternatives (issue 42): a step ``page:/pricing|page:/plans`` is reached
by any of them, a visitor counts once per step however many it matches, and the answer is the
same read from the events (days not rolled up) and from ``visitor_steps`` (rolled days)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

from svc.http.openapi import openapi_document
from svc.queries.conversions import MAX_ALTERNATIVES, parse_step, split_step
from tests.support import Server, is_error, run_store_script
from tests.test_metrics_golden import at, ev
from tests.test_sessions_table import D0, D1, PREV, get

# By hand, from addresses 10.0.9.x, PREV and DAY (the range D0..D1, UTC, window 1800 s):
#   91: / 10:00, /pricing 10:05, /plans 10:06, signup 10:10   both alternatives of step 2
#   92: / 9:00, /plans 9:10, /welcome 9:20                     the page alternative of step 3
#   93: / 11:00, /pricing 11:10                                  two steps
#   94: /plans 12:00, / 12:05                                    step 2 before step 1: one
#   95: signup 13:00, download 13:05                             no first step
#   96: on PREV, / 10:00, /plans 10:03, signup 10:04            the whole funnel on PREV
#   97: / 23:55 on PREV, /pricing 00:05 on DAY                   across midnight: two steps
#   98: /a|b 14:00, signup 14:01                                 a path with a literal |
EVENTS = [
    ev(91, at(10, 0)),
    ev(91, at(10, 5), path="/pricing"),
    ev(91, at(10, 6), path="/plans"),
    ev(91, at(10, 10), name="signup", path="/plans"),
    ev(92, at(9, 0)),
    ev(92, at(9, 10), path="/plans"),
    ev(92, at(9, 20), path="/welcome"),
    ev(93, at(11, 0)),
    ev(93, at(11, 10), path="/pricing"),
    ev(94, at(12, 0), path="/plans"),
    ev(94, at(12, 5)),
    ev(95, at(13, 0), name="signup"),
    ev(95, at(13, 5), name="download"),
    ev(96, at(10, 0, PREV)),
    ev(96, at(10, 3, PREV), path="/plans"),
    ev(96, at(10, 4, PREV), name="signup", path="/plans"),
    ev(97, at(23, 55, PREV)),
    ev(97, at(0, 5), path="/pricing"),
    ev(98, at(14, 0), path="/a|b"),
    ev(98, at(14, 1), name="signup", path="/a|b"),
]
for _e in EVENTS:
    _e["ip"] = _e["ip"].replace("10.0.0.", "10.0.9.")

PLANS = "page:/pricing|page:/plans"
DONE = "event:signup|page:/welcome"
#: (steps, the visitors per step over D0..D1 in UTC within 1800 s)
GOLDEN: list[tuple[list[str], list[int]]] = [
    # 91 matches both alternatives of step 2 and counts once; 94 has step 2 before step 1
    (["page:/", PLANS, DONE], [6, 5, 3]),
    # the same alternatives in another order: the same visitors, the steps as written
    (["page:/", "page:/plans|page:/pricing", "page:/welcome|event:signup"], [6, 5, 3]),
    # a first step of alternatives (91 counted once), then an event or a page
    ([PLANS, DONE], [6, 3]),
    # alternatives of custom events alone (read from the report events): 95 downloads after
    (["event:signup|event:outbound", "event:nothing|event:download"], [4, 1]),
    # a literal | in a path, escaped
    ([r"page:/a\|b|page:/welcome", "event:signup"], [2, 1]),
]
#: more ranges, compared before and after the rollups: DAY alone (97 crosses its start), and
#: both days in New York (every edge of the range inside a UTC day)
RANGES = [
    {"from": D0, "to": D1},
    {"from": D1, "to": D1},
    {"from": D0, "to": D1, "tz": "America/New_York"},
]


def funnel_counts(srv: Server, p: dict[str, Any], steps: list[str], **params: Any) -> list[int]:
    """The visitors per step of the funnel ``steps``, checking each step's label."""
    body = get(srv, p, "/metrics/funnel", step=steps, window=1800, **params)
    assert [s["step"] for s in body["steps"]] == steps
    return [s["visitors"] for s in body["steps"]]


def all_answers(srv: Server, p: dict[str, Any]) -> dict[str, Any]:
    """The whole answers of every golden funnel over every range."""
    return {
        f"{steps} {rng}": get(srv, p, "/metrics/funnel", step=steps, window=1800, **rng)
        for steps, _ in GOLDEN
        for rng in RANGES
    }


# A store script: whether the rolled path serves ``steps`` over D0..D1 (svc.queries.conversions
# reads those days from visitor_steps only when _step_days names them).
_ROLLED_DAYS = """
import json, sys
from datetime import date
from pathlib import Path
from svc.queries.conversions import _step_days, parse_step
from svc.queries.dates import DateRange
from svc.queries.plan import Query, plan
from svc.queries.run import Runner
from svc.settings import Settings
from svc.storage.events import EventStore

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.migrate()
rng = DateRange(date.fromisoformat(sys.argv[3]), date.fromisoformat(sys.argv[4]), "UTC")
out = {}
for steps in json.loads(sys.argv[5]):
    p = plan(Query(sys.argv[2], rng))
    rolled = _step_days(p, Runner(store), [parse_step(s) for s in steps]).rolled
    out[json.dumps(steps)] = [d.isoformat() for d, _ in rolled]
store.close()
print(json.dumps(out))
"""


def test_alternatives_count_once_and_the_rolled_days_agree(fresh_server: Server) -> None:
    srv = fresh_server
    # every funnel as over millions of visitors once the days are rolled up; none before
    srv.env.update(SVC_FUNNEL_ROLLED_VISITORS="0", SVC_ROLLUP_INTERVAL_SECONDS="3600")
    srv.start()
    p = srv.create_project("funnel-alternatives", domains=["acme.test"])
    assert srv.send(p["keys"]["secret"], EVENTS).json()["accepted"] == len(EVENTS)
    srv.wait_loaded()
    assert srv.health()["store"]["rolledUpDays"] == 0
    for steps, want in GOLDEN:
        assert funnel_counts(srv, p, steps, **RANGES[0]) == want, steps
    before = all_answers(srv, p)
    srv.stop()
    srv.env["SVC_ROLLUP_INTERVAL_SECONDS"] = "0.2"
    srv.start()
    until = time.monotonic() + 30
    while srv.health()["store"]["rolledUpDays"] < 2:
        assert time.monotonic() < until, "the days were not rolled up"
        time.sleep(0.2)
    after = all_answers(srv, p)
    assert after == before
    srv.stop()
    rolled = run_store_script(
        _ROLLED_DAYS,
        str(srv.data_dir),
        p["project"]["id"],
        D0,
        D1,
        json.dumps([steps for steps, _ in GOLDEN]),
        env=srv.env,
    )
    # the page funnels were read from visitor_steps on both days
    for steps, _ in GOLDEN:
        assert rolled[json.dumps(steps)] == [PREV.date().isoformat(), D1], steps


@pytest.fixture(scope="module")
def project(server: Server) -> dict[str, Any]:
    """A project of its own on the shared server."""
    return server.create_project("funnel-alternatives-" + uuid.uuid4().hex[:8])


@pytest.mark.parametrize(
    "step",
    [
        "page:/|",  # an empty alternative
        "|page:/",
        "page:/a||page:/b",
        "|",
        "page:/a|/b",  # an alternative that is no goal
        "page:/a|event:",
        "|".join(f"page:/{i}" for i in range(MAX_ALTERNATIVES + 1)),  # too many
    ],
)
def test_malformed_steps_are_400(server: Server, project: dict[str, Any], step: str) -> None:
    p = project
    r = httpx.get(
        server.url + "/metrics/funnel",
        params={"from": D1, "step": ["page:/", step]},
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
    )
    is_error(r, 400, "step")


def test_the_step_syntax() -> None:
    assert split_step(r"page:/a\|b|page:/c\\|event:x\y") == ["page:/a|b", "page:/c\\", r"event:x\y"]
    assert parse_step("page:/pricing|page:/plans|page:/pricing") == (
        ("page", "/pricing"),
        ("page", "/plans"),
    )
    assert parse_step("event:signup") == (("event", "signup"),)
    assert len(parse_step("|".join(f"event:e{i}" for i in range(MAX_ALTERNATIVES)))) == 10


def test_the_openapi_document_describes_the_step_syntax() -> None:
    funnel = openapi_document()["paths"]["/metrics/funnel"]["get"]
    step = next(p for p in funnel["parameters"] if p["name"] == "step")
    assert "page:/pricing|page:/plans" in step["description"]
    assert r"`\|` is a literal `|`" in step["description"]
