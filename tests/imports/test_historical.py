"""History into the event store goes through the ingestion pipeline's own steps (those that
fit historical data), in process: what each step makes of an imported row."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from svc.imports.historical import HistoricalPipeline, history_visitor_id
from svc.imports.rows import Row
from svc.imports.run import Checked, check
from svc.ingestion.identity import client_session_id
from svc.ingestion.pipeline import Pipeline
from svc.meta.store import Project
from svc.storage.events import EventRow

NOW = 1_730_000_000_000
BERLIN = Project("svc_proj_h", "h", "Europe/Berlin", ("shop.example",), "free")


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def event(url: str = "/", ts_ms: int = NOW - 1000, event_id: str = "e", **extra: Any) -> Row:
    return Row("x:1", "page_view", url, ts_ms, event_id, **extra)


def stored(row: Row, project: Project = BERLIN) -> EventRow:
    raw = check(row, NOW, max_age_ms=None)
    assert not isinstance(raw, str), raw
    made = HistoricalPipeline(project).row(Checked(row, raw))
    assert isinstance(made, EventRow)
    return made


def test_the_steps_are_the_pipelines_where_they_fit() -> None:
    steps = dict(HistoricalPipeline(BERLIN).steps)
    assert list(steps) == [
        "parse_url",
        "take_source_hint",
        "restore_enrichment",
        "enrich_user_agent",
        "attribute_source",
        "identify_history",
    ]
    assert steps["parse_url"] is Pipeline.parse_url
    assert steps["enrich_user_agent"] is Pipeline.enrich_user_agent
    assert steps["attribute_source"] is Pipeline.attribute_source


def test_a_source_named_without_referrer_is_attributed_and_the_url_kept() -> None:
    url = "https://www.shop.example/a?utm_medium=Email&gclid=g1"
    hinted = stored(event(url, ms("2024-03-01T10:00:00+00:00"), source_hint="Google"))
    assert (hinted.source, hinted.url, hinted.hostname, hinted.path) == (
        "google",
        url,
        "shop.example",
        "/a",
    )
    assert (hinted.utm_medium, hinted.click_id) == ("email", "gclid:g1")
    # a referrer wins over the hint, as it would live; the project's own hosts are no source
    referred = stored(event(url, referrer="https://news.ycombinator.com/", source_hint="Google"))
    assert referred.referrer_host == "news.ycombinator.com"
    own = stored(event(url, referrer="https://blog.shop.example/post"))
    assert own.referrer_host == ""


def test_visitors_are_people_of_a_day_in_the_projects_zone() -> None:
    def visitor(at: str, who: str = "v1") -> int:
        return stored(event(ts_ms=ms(at), session="s1", visitor=who)).visitor_id

    # 23:30 UTC and 00:30 UTC are one Berlin day (00:30 and 01:30 on 2 March)
    late, early = visitor("2024-03-01T23:30:00+00:00"), visitor("2024-03-02T00:30:00+00:00")
    assert late == early == history_visitor_id(BERLIN.id, datetime(2024, 3, 2).date(), "v1")
    assert visitor("2024-03-02T23:30:00+00:00") != late  # the next Berlin day
    assert visitor("2024-03-01T23:30:00+00:00", "v2") != late
    session = stored(event(session="s1", visitor="v1"))
    assert session.session_id == client_session_id(BERLIN.id, "imp:s1")
    # no identity of its own: the event is its own session and visitor
    alone = stored(event(event_id="e9"))
    assert alone.session_id == client_session_id(BERLIN.id, "imp:e9")
    day = datetime.fromtimestamp((NOW - 1000) / 1000, UTC).astimezone(ZoneInfo("Europe/Berlin"))
    assert alone.visitor_id == history_visitor_id(BERLIN.id, day.date(), "e9")


def test_a_session_over_midnight_keeps_its_start_and_its_visitor() -> None:
    """As ingestion does: every event of a session carries the time of the first of its events
    seen, and the visitor of the day it began, also past midnight (here Berlin's)."""
    pipeline = HistoricalPipeline(BERLIN)

    def row(at: str, session: str = "s1", **extra: Any) -> EventRow:
        r = event(ts_ms=ms(at), session=session, visitor="v1", event_id=at + session, **extra)
        raw = check(r, NOW, max_age_ms=None)
        assert not isinstance(raw, str), raw
        made = pipeline.row(Checked(r, raw))
        assert isinstance(made, EventRow)
        return made

    first = row("2024-03-01T22:50:00+00:00")  # 23:50 in Berlin
    after = row("2024-03-01T23:20:00+00:00")  # 00:20 the next Berlin day
    assert after.session_start == first.session_start == first.ts
    assert after.visitor_id == first.visitor_id
    assert first.visitor_id == history_visitor_id(BERLIN.id, datetime(2024, 3, 1).date(), "v1")
    later = row("2024-03-02T11:00:00+00:00", session="s2")  # the same person, another session
    assert later.visitor_id != first.visitor_id and later.session_start == later.ts
    # an svc export's rows: their stored ids as they are, the start of the first seen
    columns = {"session_id": "77", "visitor_id": "5"}
    a = row("2024-03-05T23:50:00+00:00", stored=columns)
    b = row("2024-03-06T00:10:00+00:00", stored=columns)
    assert (b.session_id, b.visitor_id, b.session_start) == (77, 5, a.ts)
    # a session id seen again after SESSION_MEMORY_MS starts again
    again = row("2024-03-20T10:00:00+00:00")
    assert again.session_start == again.ts


def test_the_sources_enrichment_is_kept_and_a_screen_names_a_missing_device() -> None:
    fields = {"browser": "Firefox", "os": "Linux", "country": "FR", "city": "Lyon"}
    row = stored(event(screen=500, fields=fields))
    assert (row.browser, row.os, row.device) == ("Firefox", "Linux", "mobile")
    assert row.screen_width == 500
    assert (row.country, row.region, row.city) == ("FR", "", "Lyon")
    tablet = stored(event(screen=500, fields={"device": "tablet"}))
    assert tablet.device == "tablet"
    # a width out of range is no width: neither stored nor a device class
    wide = stored(event(screen=100_000))
    assert (wide.device, wide.screen_width) == ("", 0)
    # history is received when it happened (it does not count against this month)
    assert row.received_at == row.ts == row.session_start


def test_an_svc_export_row_is_restored_as_stored() -> None:
    columns = {"hostname": "a.example", "path": "/p", "source": "bing", "channel": "organic_search",
               "click_id": "msclkid:m", "session_id": "12", "visitor_id": "34",
               "utm_source": "x"}  # fmt: skip
    made = stored(event("https://other.example/?gclid=g", stored=columns, received_ms=NOW - 1))
    assert (made.hostname, made.path, made.source, made.channel) == (
        "a.example",
        "/p",
        "bing",
        "organic_search",
    )
    assert (made.click_id, made.session_id, made.visitor_id, made.utm_source) == (
        "msclkid:m",
        12,
        34,
        "x",
    )
    assert made.received_at != made.ts and made.session_start == made.ts  # its session's first
