"""GET /metrics?duration=engaged (issue 20): the engaged time of the page visits that pass the
filters over the sessions, worked out by hand. The engaged time in all is summed over the
engagement events without grouping them by visit (svc.queries.sql.measurements.
engaged_time): here a visit with two events, and filters on the page and on the session."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support import Server
from tests.test_page_measurements import at, day_params, engaged, ev

EVENTS = [
    ev(1, at(9, 0)),
    engaged(1, at(9, 1), "/", 10_000, 40),
    engaged(1, at(9, 2), "/", 20_000, 90),  # the same visit of /: 30 s
    ev(1, at(9, 3), path="/docs"),
    engaged(1, at(9, 4), "/docs", 5_000, 100),
    ev(2, at(9, 30), referrer="https://www.google.com/"),
    engaged(2, at(9, 31), "/", 7_000, 10),
    ev(3, at(9, 40), path="/docs"),  # a session without engagement
]


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    p = server.create_project("engaged-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], EVENTS)
    assert r.status_code == 200 and r.json()["accepted"] == len(EVENTS), r.text
    server.wait_loaded()
    secret: str = p["keys"]["secret"]
    return secret


@pytest.mark.parametrize(
    ("filters", "engaged_ms", "sessions"),
    [
        ((), 42_000, 3),
        (("page:is:/docs",), 5_000, 2),
        (("page:is:/",), 37_000, 2),
        (("source:is:google",), 7_000, 1),
        (("source:is:direct", "page:is:/"), 30_000, 1),
    ],
)
def test_engaged_time_over_the_sessions_that_pass_the_filters(
    server: Server, key: str, filters: tuple[str, ...], engaged_ms: int, sessions: int
) -> None:
    params: list[tuple[str, str]] = [*day_params(duration="engaged").items()]
    params += [("filter", f) for f in filters]
    auth = {"Authorization": f"Bearer {key}"}
    r = httpx.get(f"{server.url}/metrics", params=params, headers=auth)
    assert r.status_code == 200, r.text
    m: dict[str, Any] = r.json()
    assert (m["duration"], m["sessions"]) == ("engaged", sessions)
    assert m["avgSessionDuration"] == round(engaged_ms / 1000 / sessions, 1)
