"""GET /metrics/journeys (issue 42, item 3) on a hand-built set of sessions whose answers are
worked out by hand below: next and previous, from a page and from the entry (to the exit),
depth 1 to 3, reloads, visitors counted once per path, drop-off, filters, limit, the 400s."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from svc.queries.journeys import MAX_DEPTH, MAX_LIMIT
from svc.schema.limits import MAX_URL
from tests.support import Server, is_error
from tests.test_metrics_golden import DAY, at, ev

# Sessions of DAY (UTC), by hand; the walk is the page views in order, a reload left out:
#   S1 visitor 1  / 10:00, /pricing 10:01, /pricing 10:02 (reload), /signup 10:03, /welcome 10:04
#                 walk [/, /pricing, /signup, /welcome]
#   S2 visitor 2  / 11:00 (from Google), /pricing 11:01, /signup 11:02, signup event 11:03
#                 walk [/, /pricing, /signup]
#   S3 visitor 3  /blog 12:00, /pricing 12:01                  walk [/blog, /pricing]
#   S4 visitor 4  /pricing 13:00, /docs 13:01, /pricing 13:02, /signup 13:03
#                 walk [/pricing, /docs, /pricing, /signup]: /pricing twice
#   S5 visitor 1  again, 15:00 (a new session): /, /pricing, /signup, /welcome   as S1
#   S6 visitor 5  / 16:00, a download event 16:01               walk [/]
#   S7 visitor 6  /docs 17:00, /docs 17:01 (reload)             walk [/docs]
EVENTS = [
    ev(1, at(10, 0)),
    ev(1, at(10, 1), path="/pricing"),
    ev(1, at(10, 2), path="/pricing"),
    ev(1, at(10, 3), path="/signup"),
    ev(1, at(10, 4), path="/welcome"),
    ev(2, at(11, 0), referrer="https://www.google.com/search?q=acme"),
    ev(2, at(11, 1), path="/pricing"),
    ev(2, at(11, 2), path="/signup"),
    ev(2, at(11, 3), name="signup", path="/signup"),
    ev(3, at(12, 0), path="/blog"),
    ev(3, at(12, 1), path="/pricing"),
    ev(4, at(13, 0), path="/pricing"),
    ev(4, at(13, 1), path="/docs"),
    ev(4, at(13, 2), path="/pricing"),
    ev(4, at(13, 3), path="/signup"),
    ev(1, at(15, 0)),
    ev(1, at(15, 1), path="/pricing"),
    ev(1, at(15, 2), path="/signup"),
    ev(1, at(15, 3), path="/welcome"),
    ev(5, at(16, 0)),
    ev(5, at(16, 1), name="download"),
    ev(6, at(17, 0), path="/docs"),
    ev(6, at(17, 1), path="/docs"),
]
for _e in EVENTS:  # addresses of their own (another project's visitors are other ids anyway)
    _e["ip"] = _e["ip"].replace("10.0.0.", "10.0.42.")


def step(page: str, visitors: int, drop_off: int) -> dict[str, Any]:
    rate = f"{100 * drop_off / visitors:.1f}%" if visitors else "0.0%"
    return {"page": page, "visitors": visitors, "dropOff": drop_off, "dropOffRate": rate}


def path(visitors: int, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"pages": [s["page"] for s in steps], "visitors": visitors, "steps": list(steps)}


@pytest.fixture(scope="module")
def project(server: Server) -> dict[str, Any]:
    p = server.create_project("journeys-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], EVENTS)
    assert r.status_code == 200 and r.json()["accepted"] == len(EVENTS), r.text
    server.wait_loaded()
    return p


def get(server: Server, p: dict[str, Any], **params: Any) -> httpx.Response:
    day = DAY.date().isoformat()
    return httpx.get(
        server.url + "/metrics/journeys",
        params={"from": day, "to": day, **params},
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
        timeout=60,
    )


def journeys(server: Server, p: dict[str, Any], **params: Any) -> dict[str, Any]:
    r = get(server, p, **params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_next_pages_of_a_page(server: Server, project: dict[str, Any]) -> None:
    """Depth 1 from /pricing: its anchors are S1, S2, S3, S5 and S4's two views; the reload of
    S1 is no step (/pricing -> /pricing), visitor 1 counts once for its two sessions."""
    body = journeys(server, project, page="/pricing")
    assert body["page"] == "/pricing" and body["direction"] == "next" and body["depth"] == 1
    # visitors 1-4 viewed it; visitor 3 left from it (S3)
    assert (body["visitors"], body["dropOff"], body["dropOffRate"]) == (4, 1, "25.0%")
    assert body["paths"] == [
        # S1, S5 (visitor 1), S2, S4's second view; S2 and S4 left at /signup
        path(3, step("/pricing", 4, 1), step("/signup", 3, 2)),
        path(1, step("/pricing", 4, 1), step("/docs", 1, 0)),  # S4's first view
    ]
    assert body["from"] == body["to"] == DAY.date().isoformat() and body["timezone"] == "UTC"


def test_paths_three_deep(server: Server, project: dict[str, Any]) -> None:
    """Depth 3: a path shorter than the anchor and three pages ended with its session."""
    body = journeys(server, project, page="/pricing", depth="3")
    assert (body["visitors"], body["dropOff"]) == (4, 1)
    assert body["paths"] == [
        # S2 and S4's second view: then nothing (2 visitors)
        path(2, step("/pricing", 4, 1), step("/signup", 3, 2)),
        # equal visitors: by their pages (/docs before /signup)
        path(
            1,
            step("/pricing", 4, 1),
            step("/docs", 1, 0),
            step("/pricing", 1, 0),
            step("/signup", 1, 1),
        ),
        # S1 and S5: visitor 1 once
        path(1, step("/pricing", 4, 1), step("/signup", 3, 2), step("/welcome", 1, 1)),
    ]
    # limit: the first paths of the same ranking
    for limit in (1, 2):
        first = journeys(server, project, page="/pricing", depth="3", limit=str(limit))
        assert first["paths"] == body["paths"][:limit]


def test_previous_pages_of_a_page(server: Server, project: dict[str, Any]) -> None:
    """Backwards from /pricing, two deep; the pages in time order, the anchor last. The
    drop-off of a step is the visitors who entered there (no earlier page view)."""
    body = journeys(server, project, page="/pricing", direction="previous", depth="2")
    # visitor 4 entered at /pricing (S4's first view)
    assert (body["visitors"], body["dropOff"]) == (4, 1)
    assert body["paths"] == [
        path(2, step("/", 2, 2), step("/pricing", 4, 1)),  # S1, S5 (visitor 1), S2
        path(1, step("/blog", 1, 1), step("/pricing", 4, 1)),  # S3
        # S4's second view; S4 entered at the first
        path(1, step("/pricing", 1, 1), step("/docs", 1, 0), step("/pricing", 4, 1)),
    ]


def test_from_the_entry(server: Server, project: dict[str, Any]) -> None:
    """Without a page: from each session's entry page, the entry first in each path."""
    body = journeys(server, project, depth="2")
    assert body["page"] is None
    # six visitors; visitors 5 and 6 saw one page (S7's reload is none)
    assert (body["visitors"], body["dropOff"], body["dropOffRate"]) == (6, 2, "33.3%")
    assert body["paths"] == [
        path(2, step("/", 3, 1), step("/pricing", 2, 0), step("/signup", 2, 1)),
        path(1, step("/blog", 1, 0), step("/pricing", 1, 1)),
        path(1, step("/pricing", 1, 0), step("/docs", 1, 0), step("/pricing", 1, 0)),
    ]
    one = journeys(server, project)  # depth 1 by default
    assert one["depth"] == 1 and (one["visitors"], one["dropOff"]) == (6, 2)
    assert one["paths"] == [
        path(2, step("/", 3, 1), step("/pricing", 2, 0)),
        path(1, step("/blog", 1, 0), step("/pricing", 1, 1)),
        path(1, step("/pricing", 1, 0), step("/docs", 1, 0)),
    ]


def test_to_the_exit(server: Server, project: dict[str, Any]) -> None:
    """``previous`` without a page: back from each session's exit page, the exit last."""
    body = journeys(server, project, direction="previous")
    assert (body["visitors"], body["dropOff"]) == (6, 2)
    assert body["paths"] == [
        path(2, step("/pricing", 2, 0), step("/signup", 2, 0)),  # S2, S4
        path(1, step("/blog", 1, 1), step("/pricing", 1, 0)),  # S3
        path(1, step("/signup", 1, 0), step("/welcome", 1, 0)),  # S1, S5: visitor 1 once
    ]


def test_filters_keep_whole_sessions(server: Server, project: dict[str, Any]) -> None:
    """A session filter keeps the sessions that pass it; an event filter the sessions with a
    matching event, each walked whole (not only its matching page views)."""
    google = journeys(server, project, filter="source:is:google")  # S2
    signed_up = journeys(server, project, filter="event:is:signup")  # S2, its custom event
    for body in (google, signed_up):
        assert (body["visitors"], body["dropOff"]) == (1, 0)
        assert body["paths"] == [path(1, step("/", 1, 0), step("/pricing", 1, 0))]
    blog = journeys(server, project, filter="page:is:/blog", depth="2")  # S3, /pricing too
    assert blog["paths"] == [path(1, step("/blog", 1, 0), step("/pricing", 1, 1))]
    # with a page: S4 is the session from /docs; S1, S5 have none
    docs = journeys(server, project, page="/pricing", filter="page:is:/docs")
    assert (docs["visitors"], docs["dropOff"]) == (1, 0)
    assert docs["paths"] == [
        path(1, step("/pricing", 1, 0), step("/docs", 1, 0)),
        path(1, step("/pricing", 1, 0), step("/signup", 1, 1)),
    ]
    # a filter and the page's sessions: none
    none = journeys(server, project, page="/pricing", filter="source:is:bing")
    assert (none["visitors"], none["dropOff"], none["paths"]) == (0, 0, [])


def test_a_page_nobody_viewed_and_a_range_without_events(
    server: Server, project: dict[str, Any]
) -> None:
    body = journeys(server, project, page="/nowhere", depth="3")
    assert (body["visitors"], body["dropOff"], body["dropOffRate"], body["paths"]) == (
        0,
        0,
        "0.0%",
        [],
    )
    r = get(server, project, **{"from": "2001-01-01", "to": "2001-01-31"})
    assert r.status_code == 200 and r.json()["paths"] == [] and r.json()["visitors"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"depth": "0"}, "depth"),
        ({"depth": str(MAX_DEPTH + 1)}, "depth"),
        ({"depth": "two"}, "depth"),
        ({"limit": "0"}, "limit"),
        ({"limit": str(MAX_LIMIT + 1)}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"direction": "sideways"}, "direction"),
        ({"page": "/" + "a" * MAX_URL}, "page"),
        ({"from": "yesterday"}, "from"),
        ({"filter": "nope:is:x"}, "filter"),
    ],
)
def test_bounds_are_400s(
    server: Server, project: dict[str, Any], params: dict[str, str], field: str
) -> None:
    is_error(get(server, project, **params), 400, field)


def test_the_bounds_themselves_are_taken(server: Server, project: dict[str, Any]) -> None:
    body = journeys(server, project, depth=str(MAX_DEPTH), limit=str(MAX_LIMIT))
    assert body["depth"] == MAX_DEPTH and len(body["paths"]) == 4  # every path of the day
    assert get(server, project, page="/" + "a" * (MAX_URL - 1)).status_code == 200


def test_a_public_key_cannot_read(server: Server, project: dict[str, Any]) -> None:
    r = httpx.get(
        server.url + "/metrics/journeys",
        params={"from": DAY.date().isoformat()},
        headers={"Authorization": f"Bearer {project['keys']['public']}"},
    )
    is_error(r, 403)


def test_the_documents_bounds_are_where_it_refuses(server: Server, project: dict[str, Any]) -> None:
    """GET /openapi.json states depth and limit's bounds; one past each is a 400 naming it."""
    doc = httpx.get(server.url + "/openapi.json").json()
    params = {p["name"]: p for p in doc["paths"]["/metrics/journeys"]["get"]["parameters"]}
    for name in ("depth", "limit"):
        schema = params[name]["schema"]
        assert get(server, project, **{name: str(schema["maximum"])}).status_code == 200
        is_error(get(server, project, **{name: str(schema["maximum"] + 1)}), 400, name)
        is_error(get(server, project, **{name: str(schema["minimum"] - 1)}), 400, name)


def test_one_statement_values_bound() -> None:
    """The page and the bounds are bound values, never SQL text; one statement a journey."""
    from svc.queries.dates import parse_range
    from svc.queries.plan import Query, plan
    from svc.queries.sql.journeys import journeys as statement

    day = DAY.date().isoformat()
    p = plan(Query("svc_proj_x", parse_range(day, day, "UTC")))
    page = "/it's'; DROP TABLE events --"
    stmt = statement(p, page, "previous", 3, 7)
    assert page not in stmt.sql and stmt.params["journey_page"] == page
    assert stmt.params["journey_limit"] == 7 and stmt.params["journey_span"] == 4
    assert "arrayReverse" in stmt.sql and "arrayReverse" not in statement(p, None, "next", 1, 1).sql
