"""The browser script's extensions on the server (issue 20): their events are validated, the
page measurements (engagement, web_vitals) are no interactions, and each report is worked out
by hand below from the events sent (the real server on loopback, the shared one)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from svc.schema.measurements import BREAKDOWN_KINDS, VITALS
from tests.support import Server, is_error

UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/12{}.0.0.0 Safari/537.36"
)
PHONE = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/12{}.0.0.0 Mobile Safari/537.36"
)
# Two days ago, 00:00 UTC: every event at 10:00-15:00 UTC of that day.
DAY = (datetime.now(UTC) - timedelta(days=2)).replace(hour=0, minute=0, second=0, microsecond=0)


def at(hour: int, minute: int, second: int = 0) -> int:
    return int((DAY + timedelta(hours=hour, minutes=minute, seconds=second)).timestamp() * 1000)


def ev(
    visitor: int,
    ts: int,
    name: str = "page_view",
    path: str = "/",
    phone: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "event": name,
        "url": f"https://acme.test{path}",
        "ts": ts,
        "ip": f"10.1.0.{visitor}",
        "userAgent": (PHONE if phone else UA).format(visitor),
        **extra,
    }


def engaged(visitor: int, ts: int, path: str, ms: int, pct: int, **kw: Any) -> dict[str, Any]:
    return ev(
        visitor, ts, "engagement", path, properties={"engaged_ms": ms, "scroll_pct": pct}, **kw
    )


def vitals(visitor: int, ts: int, path: str, **values: Any) -> dict[str, Any]:
    phone = values.pop("phone", False)
    return ev(visitor, ts, "web_vitals", path, phone=phone, properties=values)


def day_params(**extra: str) -> dict[str, str]:
    day = DAY.date().isoformat()
    return {"from": day, "to": day, **extra}


def get(server: Server, key: str, path: str, **params: str) -> dict[str, Any]:
    r = httpx.get(f"{server.url}{path}", params=params, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


# ingestion --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(server: Server) -> dict[str, Any]:
    return server.create_project("measure-" + uuid.uuid4().hex[:8], domains=["acme.test"])


@pytest.mark.parametrize(
    ("name", "props", "field"),
    [
        ("engagement", {"scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": -1, "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": 86_400_001, "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": 1.5, "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": "5", "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": True, "scroll_pct": 10}, "properties.engaged_ms"),
        ("engagement", {"engaged_ms": 5, "scroll_pct": 101}, "properties.scroll_pct"),
        ("engagement", {"engaged_ms": 5, "scroll_pct": 10, "x": 1}, "properties.x"),
        ("web_vitals", {"lcp": 600_001}, "properties.lcp"),
        ("web_vitals", {"inp": -3}, "properties.inp"),
        ("web_vitals", {"cls": 100.5}, "properties.cls"),
        ("web_vitals", {"cls": "0.1"}, "properties.cls"),
        ("web_vitals", {"ttfb": 10, "plan": "pro"}, "properties.plan"),
        ("outbound", {"url": "mailto:a@b.c"}, "properties.url"),
        ("download", {"url": 12}, "properties.url"),
    ],
)
def test_a_bad_figure_is_a_400_naming_the_property(
    server: Server, project: dict[str, Any], name: str, props: dict[str, Any], field: str
) -> None:
    key = project["keys"]["public"]
    event = {"event": name, "url": "https://acme.test/", "properties": props}
    r = server.send(key, event, headers={"User-Agent": UA.format(1)})
    is_error(r, 400, field)
    # in a batch: the good event is stored, the bad one is in `rejected`, naming the field
    good = {"event": "page_view", "url": "https://acme.test/"}
    r = server.send(key, [good, event], headers={"User-Agent": UA.format(1)})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["accepted"] == 1
    assert [(x["index"], x["error"]["field"]) for x in body["rejected"]] == [(1, field)]


def test_good_figures_at_their_bounds_are_taken(server: Server, project: dict[str, Any]) -> None:
    events = [
        {"event": "engagement", "url": "/", "properties": {"engaged_ms": 0, "scroll_pct": 0}},
        {
            "event": "engagement",
            "url": "/",
            "properties": {"engaged_ms": 86_400_000, "scroll_pct": 100},
        },
        {"event": "web_vitals", "url": "/", "properties": {"lcp": 600_000, "cls": 100, "inp": 0}},
        {"event": "web_vitals", "url": "/", "properties": {"cls": 0.25}},
        {"event": "web_vitals", "url": "/"},
        {"event": "outbound", "url": "/", "properties": {"url": "https://x.test/a?b", "k": 1}},
        {"event": "download", "url": "/", "properties": {"url": "http://acme.test/f.pdf"}},
        {"event": "download", "url": "/"},  # a custom event of that name, as before
        {"event": "404", "url": "/gone", "properties": {"section": "blog"}},
    ]
    r = server.send(project["keys"]["secret"], events)
    assert r.status_code == 200, r.text
    assert r.json()["accepted"] == len(events), r.text


# page measurements are no interactions ------------------------------------------------------

# Sessions, by hand (all on DAY, UTC):
#   V1: a page view at 10:00 and its engagement at 10:45 (past the 30-minute timeout: it still
#       joins the page view's session and does not extend it): one session, a bounce, 0 s.
#   V2: a page view at 11:00, its web vitals at 11:00:05, a page view at 11:50 (50 minutes
#       after the first: a new session, the vitals did not extend the first): 2 sessions, 2
#       bounces.
#   V3: a page view at 12:00 and an outbound click at 12:01: an interaction, no bounce, 60 s.
BOUNCES = [
    ev(1, at(10, 0)),
    engaged(1, at(10, 45), "/", 40_000, 80),
    ev(2, at(11, 0), path="/b"),
    vitals(2, at(11, 0, 5), "/b", lcp=1200, ttfb=100),
    ev(2, at(11, 50), path="/b"),
    ev(3, at(12, 0)),
    ev(3, at(12, 1), "outbound", properties={"url": "https://other.test/"}),
]


@pytest.fixture(scope="module")
def bounces(server: Server) -> dict[str, Any]:
    p = server.create_project("bounce-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], BOUNCES)
    assert r.status_code == 200 and r.json()["accepted"] == len(BOUNCES), r.text
    server.wait_loaded()
    return p


def test_a_page_view_and_its_engagement_is_a_bounce(server: Server, bounces: dict) -> None:
    m = server.metrics(bounces["keys"]["secret"], **day_params())
    assert m["sessions"] == 4
    assert m["pageviews"] == 4
    assert m["events"] == 5  # the outbound click counts; the measurements do not
    assert m["bounces"] == 3
    assert m["bounceRate"] == "75.0%"
    assert m["avgSessionDuration"] == 15.0  # (0 + 0 + 0 + 60) / 4
    assert m["visitors"] == 3


def test_measurements_are_left_out_of_every_count(server: Server, bounces: dict) -> None:
    key = bounces["keys"]["secret"]
    names = get(server, key, "/metrics/breakdown", **day_params(by="event"))
    assert {r["value"]: r["events"] for r in names["rows"]} == {"page_view": 4, "outbound": 1}
    pages = get(server, key, "/metrics/breakdown", **day_params(by="page", filter="page:is:/"))
    assert [(r["value"], r["pageviews"], r["bounceRate"]) for r in pages["rows"]] == [
        ("/", 2, "50.0%")
    ]
    series = get(server, key, "/metrics/timeseries", **day_params(interval="day"))
    assert [(p["pageviews"], p["events"]) for p in series["points"]] == [(4, 5)]


# the reports, worked out by hand ---------------------------------------------------------------

# One session per visitor (all within 30 minutes), on DAY (UTC). Visitor 2 is on a phone.
# Visitor 4's events are at 15:30 UTC: 00:30 the next day in Tokyo (the time zone test).
GITHUB, OTHER, PDF = "https://github.com/x", "https://other.test/", "https://acme.test/f.pdf"
REPORTS = [
    ev(1, at(10, 0)),
    engaged(1, at(10, 1), "/", 30_000, 40),
    vitals(1, at(10, 1), "/", lcp=2000, fcp=1000, ttfb=300, cls=0.02, inp=100),
    engaged(1, at(10, 5), "/", 10_000, 80),  # the same page visit: 40 s, 80 %
    ev(1, at(10, 6), path="/docs"),
    ev(1, at(10, 7), "outbound", "/docs", properties={"url": GITHUB}),
    ev(1, at(10, 8), "download", "/docs", properties={"url": PDF}),
    engaged(1, at(10, 10), "/docs", 60_000, 100),
    ev(2, at(11, 0), phone=True, referrer="https://www.google.com/"),
    vitals(2, at(11, 0, 5), "/", lcp=5000, fcp=2000, ttfb=900, cls=0.3, inp=600, phone=True),
    ev(2, at(11, 1), "outbound", phone=True, properties={"url": GITHUB}),
    engaged(2, at(11, 2), "/", 5_000, 20, phone=True),
    ev(2, at(11, 3), "404", "/missing", phone=True, referrer="https://acme.test/blog"),
    ev(3, at(12, 0)),
    vitals(3, at(12, 0, 5), "/", lcp=3000, ttfb=100),
    engaged(3, at(12, 1), "/", 20_000, 50),
    ev(3, at(12, 2), "404", "/missing", referrer="https://news.test/a"),
    ev(3, at(12, 3), "404", "/old"),
    ev(3, at(12, 4), "outbound", properties={"url": OTHER}),
    ev(4, at(15, 30), path="/late"),
    vitals(4, at(15, 30, 5), "/late", lcp=100),
    engaged(4, at(15, 31), "/late", 1_000, 10),
]
TOKYO_END = at(15, 0)  # DAY ends at 15:00 UTC in Tokyo


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default percentile)."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    low = int(pos)
    high = min(low + 1, len(xs) - 1)
    return xs[low] + (xs[high] - xs[low]) * (pos - low)


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "0.0%"


def in_scope(e: dict[str, Any], tokyo: bool) -> bool:
    return not tokyo or e["ts"] < TOKYO_END


def visits(tokyo: bool = False, path: str | None = None) -> dict[str, list[tuple[int, int]]]:
    """Per page: (engaged ms, depth) of each page visit (visitor = session here)."""
    per: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in REPORTS:
        if e["event"] == "engagement" and in_scope(e, tokyo):
            page = e["url"].removeprefix("https://acme.test")
            if path is None or page == path:
                per.setdefault((page, e["ip"]), []).append(e["properties"])
    out: dict[str, list[tuple[int, int]]] = {}
    for (page, _), props in per.items():
        out.setdefault(page, []).append(
            (sum(p["engaged_ms"] for p in props), max(p["scroll_pct"] for p in props))
        )
    return out


def vital_values(name: str, tokyo: bool = False, phone: bool | None = None) -> list[float]:
    return [
        e["properties"][name]
        for e in REPORTS
        if e["event"] == "web_vitals"
        and name in e["properties"]
        and in_scope(e, tokyo)
        and (phone is None or ("Mobile" in e["userAgent"]) == phone)
    ]


@pytest.fixture(scope="module")
def reports(server: Server) -> dict[str, Any]:
    p = server.create_project("reports-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    r = server.send(p["keys"]["secret"], REPORTS)
    assert r.status_code == 200 and r.json()["accepted"] == len(REPORTS), r.text
    server.wait_loaded()
    return p


@pytest.mark.parametrize(("tz", "path"), [("UTC", None), ("Asia/Tokyo", None), ("UTC", "/docs")])
def test_engagement_per_page(server: Server, reports: dict, tz: str, path: str | None) -> None:
    params = day_params(by="engagement", tz=tz, order="value")
    if path:
        params["filter"] = f"page:is:{path}"
    body = get(server, reports["keys"]["secret"], "/metrics/breakdown", **params)
    expected = visits(tz != "UTC", path)
    assert [r["value"] for r in body["rows"]] == sorted(expected)
    assert body["totalRows"] == len(expected)
    for row in body["rows"]:
        mine = expected[row["value"]]
        times, depths = [e for e, _ in mine], [d for _, d in mine]
        assert row["engagedVisits"] == len(mine)
        assert row["medianEngagedMs"] == pytest.approx(quantile(times, 0.5))
        assert row["meanEngagedMs"] == round(sum(times) / len(times), 1)
        assert row["scrollDepth"] == {
            str(q): share(sum(d >= q for d in depths), len(depths)) for q in (25, 50, 75, 100)
        }
    by_page = {r["value"]: r for r in body["rows"]}
    if tz == "UTC" and path is None:  # written out once
        assert (by_page["/"]["visitors"], by_page["/"]["pageviews"]) == (3, 3)
        assert by_page["/"]["medianEngagedMs"] == 20_000.0
        assert by_page["/"]["meanEngagedMs"] == 21_666.7
        assert by_page["/"]["scrollDepth"] == {
            "25": "66.7%", "50": "66.7%", "75": "33.3%", "100": "0.0%"
        }  # fmt: skip


def test_engaged_time_as_the_visit_duration(server: Server, reports: dict) -> None:
    key = reports["keys"]["secret"]
    plain = server.metrics(key, **day_params())
    engaged_ms = sum(e for page in visits().values() for e, _ in page)
    m = server.metrics(key, **day_params(duration="engaged", compare="previous_period"))
    assert m["sessions"] == plain["sessions"] == 4
    assert m["duration"] == "engaged"
    assert m["avgSessionDuration"] == round(engaged_ms / 1000 / 4, 1) == 31.5
    assert plain["avgSessionDuration"] != m["avgSessionDuration"]
    assert m["compare"]["avgSessionDuration"] == 0.0
    r = httpx.get(
        f"{server.url}/metrics",
        params=day_params(duration="wall"),
        headers={"Authorization": f"Bearer {key}"},
    )
    is_error(r, 400, "duration")


@pytest.mark.parametrize(("kind", "name"), [("outbound", "outbound"), ("download", "download")])
def test_clicks_per_target(server: Server, reports: dict, kind: str, name: str) -> None:
    key = reports["keys"]["secret"]
    clicks = [e for e in REPORTS if e["event"] == name]
    targets = {e["properties"]["url"] for e in clicks}
    expected = {
        t: (
            sum(e["properties"]["url"] == t for e in clicks),
            len({e["ip"] for e in clicks if e["properties"]["url"] == t}),
        )
        for t in targets
    }
    body = get(server, key, "/metrics/breakdown", **day_params(by=kind))
    assert {r["value"]: (r["events"], r["visitors"]) for r in body["rows"]} == expected
    assert [r["events"] for r in body["rows"]] == sorted(
        (n for n, _ in expected.values()), reverse=True
    )
    if kind == "outbound":
        assert expected[GITHUB] == (2, 2)
        docs = get(server, key, "/metrics/breakdown", **day_params(by=kind, filter="page:is:/docs"))
        assert [(r["value"], r["events"]) for r in docs["rows"]] == [(GITHUB, 1)]
        # and as any event: a property breakdown of the outbound events
        prop = get(
            server,
            key,
            "/metrics/breakdown",
            **day_params(by="prop:url", filter="event:is:outbound"),
        )
        assert {r["value"]: r["events"] for r in prop["rows"]} == {GITHUB: 2, OTHER: 1}


def test_not_found_pages_and_their_referrers(server: Server, reports: dict) -> None:
    body = get(server, reports["keys"]["secret"], "/metrics/breakdown", **day_params(by="404"))
    assert body["rows"] == [
        {
            "value": "/missing",
            "visitors": 2,
            "events": 2,
            "referrers": [
                {"value": "https://acme.test/blog", "events": 1},
                {"value": "https://news.test/a", "events": 1},
            ],
        },
        {"value": "/old", "visitors": 1, "events": 1, "referrers": [{"value": "", "events": 1}]},
    ]


def check_vitals(figures: dict[str, Any], tokyo: bool = False, phone: bool | None = None) -> None:
    for v in VITALS:
        values = vital_values(v.name, tokyo, phone)
        got = figures[v.name]
        assert got["samples"] == len(values), v.name
        if not values:
            assert got["p75"] is None
            continue
        assert got["p75"] == pytest.approx(quantile(values, 0.75), abs=1e-3), v.name
        good = sum(x <= v.good for x in values)
        poor = sum(x > v.poor for x in values)
        assert got["good"] == share(good, len(values)), v.name
        assert got["poor"] == share(poor, len(values)), v.name
        assert got["needsImprovement"] == share(len(values) - good - poor, len(values)), v.name


@pytest.mark.parametrize("tz", ["UTC", "Asia/Tokyo"])
def test_web_vitals(server: Server, reports: dict, tz: str) -> None:
    key = reports["keys"]["secret"]
    tokyo = tz != "UTC"
    body = get(server, key, "/metrics/vitals", **day_params(tz=tz, compare="previous_period"))
    check_vitals(body, tokyo)
    assert body["samples"] == (3 if tokyo else 4)
    assert body["compare"]["samples"] == 0
    if not tokyo:
        assert body["lcp"] == {
            "samples": 4, "p75": 3500.0, "good": "50.0%", "needsImprovement": "25.0%",
            "poor": "25.0%",
        }  # fmt: skip
    devices = get(server, key, "/metrics/breakdown", **day_params(by="vitals:device", tz=tz))
    assert [r["samples"] for r in devices["rows"]] == [3 - tokyo, 1]
    check_vitals(devices["rows"][0], tokyo, phone=False)
    check_vitals(devices["rows"][1], tokyo, phone=True)
    pages = get(server, key, "/metrics/breakdown", **day_params(by="vitals:page", order="value"))
    assert [(r["value"], r["samples"]) for r in pages["rows"]] == [("/", 3), ("/late", 1)]
    countries = get(server, key, "/metrics/breakdown", **day_params(by="vitals:country"))
    assert sum(r["samples"] for r in countries["rows"]) == 4


def test_web_vitals_over_time(server: Server, reports: dict) -> None:
    body = get(server, reports["keys"]["secret"], "/metrics/vitals", **day_params(interval="hour"))
    points = {p["time"][-5:]: p for p in body["points"]}
    assert len(points) == 24
    assert {t: p["samples"] for t, p in points.items() if p["samples"]} == {
        "10:00": 1, "11:00": 1, "12:00": 1, "15:00": 1
    }  # fmt: skip
    assert points["11:00"]["lcp"]["p75"] == 5000.0 and points["11:00"]["lcp"]["poor"] == "100.0%"
    assert points["09:00"]["lcp"] == {
        "samples": 0, "p75": None, "good": "0.0%", "needsImprovement": "0.0%", "poor": "0.0%"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"by": "vitals:browser"}, "by"),
        ({"by": "outbound", "order": "bounceRate"}, "order"),
        ({"by": "engagement", "order": "samples"}, "order"),
        ({"by": "404", "limit": "0"}, "limit"),
    ],
)
def test_bad_parameters_name_themselves(
    server: Server, reports: dict, params: dict[str, str], field: str
) -> None:
    r = httpx.get(
        f"{server.url}/metrics/breakdown",
        params=day_params(**params),
        headers={"Authorization": f"Bearer {reports['keys']['secret']}"},
    )
    is_error(r, 400, field)


def test_svcm_metrics_by_each_report(server: Server, reports: dict, tmp_path: Any) -> None:
    from tests.cli.support import clean_env, parallel, svcm

    env = clean_env(tmp_path / "config.toml", SVC_URL=server.url, SVC_TOKEN=server.admin_token)
    day = DAY.date().isoformat()
    base = ("metrics", "-p", reports["id"], "--from", day, "--to", day)
    kinds = ("engagement", "outbound", "download", "404", "vitals:page", "vitals:device")
    results = parallel(
        *(lambda k=k: svcm(*base, "--by", k, "--json", env=env) for k in kinds),
        lambda: svcm(*base, "--by", "vitals:page", "--csv", env=env),
        lambda: svcm(*base, "--by", "engagement", env=env),
        lambda: svcm(*base, "--duration", "engaged", "--json", env=env),
    )
    for kind, result in zip(kinds, results, strict=False):
        assert result.ok().json()["by"] == kind
    csv_lines = results[len(kinds)].ok().stdout.splitlines()
    assert csv_lines[0].startswith("value,samples,lcp.p75,inp.p75,cls.p75,fcp.p75,ttfb.p75")
    assert csv_lines[1].startswith("/,3,")
    plain = results[len(kinds) + 1].ok().stdout.splitlines()  # not a terminal: no titles
    assert plain[0].split("\t") == [
        "/", "3", "3", "3", "20000.0", "21666.7", "66.7%", "66.7%", "33.3%", "0.0%"
    ]  # fmt: skip
    assert results[-1].ok().json()["avgSessionDuration"] == 31.5


def test_every_answer_fits_the_documented_types(server: Server, reports: dict) -> None:
    from tests.test_openapi import _checker

    check = _checker(httpx.get(server.url + "/openapi.json").json())
    auth = {"Authorization": f"Bearer {reports['keys']['secret']}"}
    answers = [
        ("/metrics", {"duration": "engaged"}),
        ("/metrics/vitals", {"interval": "day", "compare": "previous_year"}),
        *(("/metrics/breakdown", {"by": kind}) for kind in BREAKDOWN_KINDS),
        ("/metrics/breakdown", {"by": "404", "order": "value"}),
    ]
    for path, params in answers:
        r = httpx.get(server.url + path, params=day_params(**params), headers=auth)
        assert r.status_code == 200, r.text
        check(path, "get", r)
    r = httpx.get(server.url + "/metrics/vitals", params=day_params(interval="year"), headers=auth)
    check("/metrics/vitals", "get", r)
    is_error(r, 400, "interval")


def test_an_export_imported_again_keeps_the_measurements(
    server: Server, reports: dict, tmp_path: Any
) -> None:
    from tests.cli.support import clean_env, svcm

    key = reports["keys"]["secret"]
    r = httpx.get(
        f"{server.url}/export",
        params=day_params(format="ndjson"),
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 200, r.text
    exported = tmp_path / "export.ndjson"
    exported.write_bytes(r.content)
    assert sum('"event":"engagement"' in line for line in r.text.splitlines()) == 6
    copy = server.create_project("copy-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    env = clean_env(tmp_path / "config.toml", SVC_URL=server.url, SVC_TOKEN=server.admin_token)
    result = svcm("import", "-p", copy["id"], str(exported), "--json", env=env)
    assert result.status == 0, result.stdout
    assert result.json()["imported"] == len(REPORTS), result.stdout
    server.wait_loaded()
    copied = copy["keys"]["secret"]
    for path, params in [
        ("/metrics/vitals", day_params()),
        ("/metrics/breakdown", day_params(by="engagement", order="value")),
        ("/metrics/breakdown", day_params(by="vitals:page", order="value")),
        ("/metrics/breakdown", day_params(by="404")),
    ]:
        before, after = get(server, key, path, **params), get(server, copied, path, **params)
        before.pop("projectId"), after.pop("projectId")
        assert after == before, path


def test_a_session_filter_keeps_the_measurements_of_its_sessions(
    server: Server, reports: dict
) -> None:
    """Visitor 2 alone came from Google: its page load's vitals, its engagement, its click."""
    key = reports["keys"]["secret"]
    google = day_params(filter="source:is:google")
    vitals = get(server, key, "/metrics/vitals", **google)
    assert vitals["samples"] == 1 and vitals["lcp"]["p75"] == 5000.0
    engagement = get(server, key, "/metrics/breakdown", **{**google, "by": "engagement"})
    assert [(r["value"], r["engagedVisits"], r["medianEngagedMs"]) for r in engagement["rows"]] == [
        ("/", 1, 5000.0)
    ]
    outbound = get(server, key, "/metrics/breakdown", **{**google, "by": "outbound"})
    assert [(r["value"], r["events"]) for r in outbound["rows"]] == [(GITHUB, 1)]
    engaged = server.metrics(key, **{**google, "duration": "engaged"})
    assert (engaged["sessions"], engaged["avgSessionDuration"]) == (1, 5.0)
