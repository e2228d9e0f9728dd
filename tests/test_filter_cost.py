"""The cost of a pattern filter is bounded (issue 39, item 3): a ``matches``/``not_matches``
pattern or a ``contains`` value past its bounds (length, counted repetition, nested
quantifiers, RE2 program size, one RE2 refuses) is a 400 naming ``filter`` and the bound,
before any read, on every report; the patterns within them answer as before, and the server
stays healthy throughout."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from svc.queries.filters import MAX_PATTERN, MAX_PROGRAM, MAX_REPEAT, pattern_refusal
from tests.support import Server
from tests.test_metrics_golden import DAY, at, ev

D = DAY.date().isoformat()
LONG_PATH = "/x" + "ab" * 1000  # 2,002 characters: near the wire format's 2,048
PAGES = ["/blog/a", "/blog/b", "/blog/b", "/docs", "/pricing", LONG_PATH]

READS: list[tuple[str, dict[str, str]]] = [
    ("/metrics", {}),
    ("/metrics/breakdown", {"by": "page"}),
    ("/metrics/timeseries", {"interval": "day"}),
]

#: (filter, what the message says of the bound it broke)
REFUSED = [
    ("page:matches:a.{500}[^ab]", f"{{500}} repeats more than {MAX_REPEAT} times"),
    ("page:matches:a.{101}", f"{{101}} repeats more than {MAX_REPEAT} times"),
    ("page:not_matches:x{0,101}", f"{{0,101}} repeats more than {MAX_REPEAT} times"),
    ("page:matches:a{200,}", f"{{200,}} repeats more than {MAX_REPEAT} times"),
    ("page:matches:(a+)+", "nested quantifiers"),
    ("page:matches:(a*)*", "nested quantifiers"),
    ("page:not_matches:(.*){3}", "nested quantifiers"),
    ("page:matches:^/((b|l)+o)+g", "nested quantifiers"),
    ("page:matches:(?:a.{9}){10}[^ab]", "nested quantifiers"),
    ("page:matches:(?P<seg>/[a-z]+)*$", "nested quantifiers"),
    ("hostname:matches:(?i)(a+)+", "nested quantifiers"),
    ("prop:plan:matches:(a+)+", "nested quantifiers"),
    ("page:matches:\\p{L}{100}c", f"more than {MAX_PROGRAM:,}"),
    ("page:matches:.{100}.{100}.{100}", f"more than {MAX_PROGRAM:,}"),
    ("page:matches:" + "x" * (MAX_PATTERN + 1), f"more than {MAX_PATTERN}"),
    (
        "page:contains:" + "x" * (MAX_PATTERN + 1),
        f"the value has 257 characters, more than {MAX_PATTERN}",
    ),
    ("page:not_contains:" + "x" * (MAX_PATTERN + 1), f"more than {MAX_PATTERN}"),
    ("page:matches:(?=a)", "RE2"),
    ("page:matches:a{1001}", "RE2"),
    ("page:matches:a++", "RE2"),
]

BLOG_OR_LONG = "^/blog/|" + "z" * (MAX_PATTERN - 8)  # exactly MAX_PATTERN characters
#: (filter, page views it keeps of PAGES)
ACCEPTED = [
    ("page:matches:^/blog/", 3),
    ("page:not_matches:^/blog/", 3),
    ("page:matches:^/(docs|pricing)$", 2),
    ("page:matches:^/blog/[a-z]{1}$", 3),
    ("page:matches:^/x(ab){100}", 1),  # counted, at the bound, over a 2,002-character path
    (f"page:matches:^/x[ab]{{{MAX_REPEAT}}}", 1),
    ("page:matches:(ab)+$", 1),  # repeated group without a repetition inside
    ("page:matches:(/[a-z]+)?$", 6),  # an optional group may hold one
    ("page:matches:\\p{L}+", 6),
    ("page:matches:(?i)^/BLOG/", 3),
    ("page:matches:\\Q(a+)+\\E", 0),  # quoted: no quantifier at all
    ("page:matches:[]{}]+", 0),
    (f"page:matches:{BLOG_OR_LONG}", 3),
    ("page:matches:" + "(" * 120 + "/docs" + ")" * 120, 1),
    ("page:contains:" + "B" * 1, 4),  # case-insensitive: /blog/a, /blog/b x2, LONG_PATH
    ("page:contains:/x" + "ab" * 127, 1),  # 256 characters
    ("page:not_contains:blog", 3),
]


@pytest.fixture(scope="module")
def acme(server: Server) -> dict[str, Any]:
    p = server.create_project("cost-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    events = [ev(i + 1, at(10, i), path=path) for i, path in enumerate(PAGES)]
    r = server.send(p["keys"]["secret"], events)
    assert r.status_code == 200 and r.json()["accepted"] == len(PAGES), r.text[:300]
    server.wait_loaded()
    return p


def read(srv: Server, p: dict[str, Any], path: str, **params: str) -> httpx.Response:
    return httpx.get(
        srv.url + path,
        params={"from": D, "to": D, **params},
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
        timeout=60,
    )


def pageviews(path: str, body: dict[str, Any]) -> int:
    """The page views a report's answer counts, whatever its shape."""
    if path == "/metrics":
        return int(body["pageviews"])
    if path == "/metrics/timeseries":
        return sum(int(point["pageviews"]) for point in body["points"])
    return sum(int(row["pageviews"]) for row in body["rows"])


@pytest.mark.parametrize(("flt", "bound"), REFUSED, ids=[f[:40] for f, _ in REFUSED])
def test_a_costly_filter_is_a_400_naming_it_and_its_bound(
    server: Server, acme: dict[str, Any], flt: str, bound: str
) -> None:
    for path, extra in READS:
        r = read(server, acme, path, **extra, filter=flt)
        assert r.status_code == 400, (path, r.status_code, r.text[:300])
        assert r.headers["content-type"].startswith("application/json")
        error = r.json()["error"]
        assert error["code"] == "invalid_request" and error["field"] == "filter", error
        assert error["message"].startswith("`filter` "), error
        assert flt[:40] in error["message"], error  # names the filter ...
        assert bound in error["message"], error  # ... and the bound it broke
    assert httpx.get(server.url + "/health", timeout=10).status_code == 200


@pytest.mark.parametrize(("flt", "expected"), ACCEPTED, ids=[f[:40] for f, _ in ACCEPTED])
def test_a_filter_within_the_bounds_is_answered(
    server: Server, acme: dict[str, Any], flt: str, expected: int
) -> None:
    for path, extra in READS:
        r = read(server, acme, path, **extra, filter=flt)
        assert r.status_code == 200, (path, r.text[:300])
        assert pageviews(path, r.json()) == expected, (path, r.json())
    assert httpx.get(server.url + "/health", timeout=10).status_code == 200


def test_unfiltered_figures_are_those_of_every_page(server: Server, acme: dict[str, Any]) -> None:
    for path, extra in READS:
        r = read(server, acme, path, **extra)
        assert r.status_code == 200 and pageviews(path, r.json()) == len(PAGES), r.text[:300]


def test_a_filter_and_its_negation_split_the_page_views(
    server: Server, acme: dict[str, Any]
) -> None:
    for pattern in ("^/blog/", "^/x(ab){100}", "[]{}]+"):
        kept = pageviews(
            "/metrics", read(server, acme, "/metrics", filter=f"page:matches:{pattern}").json()
        )
        dropped = read(server, acme, "/metrics", filter=f"page:not_matches:{pattern}").json()
        assert kept + pageviews("/metrics", dropped) == len(PAGES), pattern


@pytest.mark.parametrize(("flt", "bound"), REFUSED, ids=[f[:40] for f, _ in REFUSED])
def test_the_refusal_is_the_patterns_alone(flt: str, bound: str) -> None:
    """The contract of :func:`pattern_refusal`: the same reason for a pattern wherever it is
    used, None for one within the bounds."""
    op, value = flt.split(":", 2)[1:] if not flt.startswith("prop:") else flt.split(":", 3)[2:]
    if op.endswith("matches"):
        reason = pattern_refusal(value)
        assert reason is not None and bound in reason, (flt, reason)
    for accepted, _ in ACCEPTED:
        op, value = accepted.split(":", 2)[1:]
        if op.endswith("matches"):
            assert pattern_refusal(value) is None, accepted
