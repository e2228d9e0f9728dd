"""The import readers and the Plausible rebuild, in process (no service needed), and the small
parsers of the command line."""

from __future__ import annotations

import ipaddress
import json
from collections import Counter
from pathlib import Path

import pytest

from svc.cli import config
from svc.cli.common import parse_day
from svc.cli.errors import UsageError
from svc.cli.metrics import filter_param, order_param
from svc.imports import plausible
from svc.imports.over_http import synthetic_address, wire_event
from svc.imports.rows import Row
from svc.imports.run import Checked, check
from svc.imports.sources import rows_of, sources_of
from svc.imports.svc_export import parse_ch_map
from tests.cli.samples import PLAUSIBLE, UMAMI


def plausible_rows(tmp_path: Path, tables: dict[str, str], tz: str = "UTC") -> list[Row]:
    for name, text in tables.items():
        (tmp_path / name).write_text(text)
    sources = sources_of([str(tmp_path)], "auto")
    days, refused = plausible.read(sources)
    assert refused == []
    rows = list(plausible.rows(days, tz, "export"))
    assert all(isinstance(r, Row) for r in rows)
    assert plausible.count(days) == len(rows)
    return rows  # type: ignore[return-value]


def test_plausible_days_are_rebuilt_with_their_totals_and_breakdowns(tmp_path: Path) -> None:
    rows = [r for r in plausible_rows(tmp_path, PLAUSIBLE) if r.where.endswith("2024-03-01")]
    sessions: dict[str, list[Row]] = {}
    for r in sorted(rows, key=lambda r: r.ts_ms):
        sessions.setdefault(r.session, []).append(r)
    views = [r for r in rows if r.name == "page_view"]
    assert len(sessions) == 10 and len(views) == 25
    assert len({r.visitor for r in rows}) == 8
    assert Counter(r.url for r in views) == {
        "https://shop.example/a": 15,
        "https://shop.example/b": 10,
    }
    firsts = [s[0] for s in sessions.values()]
    assert Counter(f.url for f in firsts) == {
        "https://shop.example/a": 6,
        "https://shop.example/b": 4,
    }
    bounces = [s for s in sessions.values() if len(s) == 1]
    assert len(bounces) == 4
    durations = [(s[-1].ts_ms - s[0].ts_ms) // 1000 for s in sessions.values()]
    assert sum(durations) == 600
    assert Counter(f.fields["country"] for f in firsts) == {"DE": 7, "FR": 3}
    assert Counter(f.fields["browser"] for f in firsts) == {"Chrome": 7, "Edge": 3}
    assert Counter(f.referrer for f in firsts) == {"https://google.com": 5, "": 5}
    custom = [r for r in rows if r.name != "page_view"]
    assert Counter(r.name for r in custom) == {"Signup": 3, "Outbound Link: Click": 1}
    assert [r.properties for r in custom if r.name.startswith("Outbound")] == [
        {"url": "https://partner.example/"}
    ]
    # ids: unique, and the same for the same export
    assert len({r.event_id for r in rows}) == len(rows)


def test_plausible_ids_are_stable_and_change_only_with_the_day(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = plausible_rows(tmp_path / "one", PLAUSIBLE)
    changed = dict(PLAUSIBLE)
    changed["imported_visitors_20240301_20240302.csv"] = PLAUSIBLE[
        "imported_visitors_20240301_20240302.csv"
    ].replace("2024-03-02,2,3,1,2,30", "2024-03-02,2,3,1,2,31")
    second = plausible_rows(tmp_path / "two", changed)

    def ids(rows: list[Row], day: str) -> set[str]:
        return {r.event_id for r in rows if r.where.endswith(day)}

    assert ids(first, "2024-03-01") == ids(second, "2024-03-01")
    assert not ids(first, "2024-03-02") & ids(second, "2024-03-02")


def test_plausible_days_follow_the_project_time_zone(tmp_path: Path) -> None:
    rows = plausible_rows(tmp_path, PLAUSIBLE, tz="America/New_York")
    first = min(r.ts_ms for r in rows)
    assert first == 1709269200000  # 2024-03-01 00:00 in New York


def test_umami_rows_map_to_svc_events(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text(UMAMI)
    (source,) = sources_of([str(path)], "auto")
    assert source.kind == "umami"
    items = list(rows_of(source))
    rows = [i for i in items if isinstance(i, Row)]
    assert [r.name for r in rows] == ["page_view", "page_view", "signup"]
    assert rows[0].url == "https://shop.example/" and rows[0].referrer.startswith(
        "https://www.google.com/search"
    )
    assert rows[0].fields == {
        "browser": "Chrome",
        "browser_version": "",
        "os": "macOS",
        "os_version": "",
        "device": "desktop",
        "country": "DE",
        "region": "DE-BE",
        "city": "Berlin",
    }
    assert rows[0].screen == 1920 and rows[0].session == "v1" and rows[0].visitor == "s1"
    assert rows[0].ts_ms == 1711965600000
    refused = [i for i in items if not isinstance(i, Row)]
    assert [r.where for r in refused] == ["export.csv:5"]
    # over HTTP what Umami recorded goes as the event's client (POST /analytics keeps it)
    raw = check(rows[0], 1_800_000_000_000, max_age_ms=None)
    assert not isinstance(raw, str), raw
    assert wire_event(Checked(rows[0], raw), "shop")["client"] == {
        "browser": "Chrome",
        "os": "macOS",
        "device": "desktop",
        "country": "DE",
        "region": "DE-BE",
        "city": "Berlin",
    }


def test_an_svc_export_row_has_the_same_id_in_ndjson_and_csv(tmp_path: Path) -> None:
    row = {
        "ts_ms": 1711965600000, "event": "page_view", "url": "https://a.example/?x=1",
        "hostname": "a.example", "path": "/", "referrer": "", "referrer_host": "",
        "source": "direct", "channel": "direct", "utm_source": "", "utm_medium": "",
        "utm_campaign": "", "utm_content": "", "utm_term": "", "click_id": "",
        "session_id": "123", "visitor_id": "456", "event_id": "",
        "properties": {"plan": "it's \"pro\""}, "browser": "Firefox", "browser_version": "1.0",
        "os": "Linux", "os_version": "", "device": "desktop", "screen_width": 0,
        "country": "FR", "region": "", "city": "", "received_ms": 1711965600123,
    }  # fmt: skip
    (tmp_path / "e.ndjson").write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    header = ",".join(f'"{k}"' for k in row)
    values = []
    for k, v in row.items():
        if k == "properties":
            values.append('"{\'plan\':\'it\\\'s ""pro""\'}"')
        elif isinstance(v, int):
            values.append(str(v))
        else:
            values.append(f'"{v}"')
    (tmp_path / "e.csv").write_text(header + "\n" + ",".join(values) + "\n")
    nd, cs = sources_of([str(tmp_path / "e.ndjson"), str(tmp_path / "e.csv")], "auto")
    assert (nd.kind, cs.kind) == ("ndjson", "csv")
    a, b = list(rows_of(nd)), list(rows_of(cs))
    assert isinstance(a[0], Row) and isinstance(b[0], Row) and isinstance(a[1], Row)
    assert a[0].event_id == b[0].event_id != a[1].event_id  # two identical rows stay two
    assert b[0].properties == {"plan": 'it\'s "pro"'}
    assert b[0].stored is not None and b[0].stored["session_id"] == "123"
    # today's CSV exports hold the properties as JSON: the same row, the same id
    cells = dict(zip(row, values, strict=True))
    cells["properties"] = '"' + json.dumps(row["properties"]).replace('"', '""') + '"'
    (tmp_path / "j.csv").write_text(header + "\n" + ",".join(cells.values()) + "\n")
    (js,) = sources_of([str(tmp_path / "j.csv")], "auto")
    (c,) = list(rows_of(js))
    assert isinstance(c, Row) and (c.event_id, c.properties) == (b[0].event_id, b[0].properties)


def test_clickhouse_map_text() -> None:
    assert parse_ch_map("{}") == {}
    assert parse_ch_map(r"{'a':'1','b\'c':'x\\y\nz'}") == {"a": "1", "b'c": "x\\y\nz"}
    with pytest.raises(ValueError):
        parse_ch_map("{'a':'1'")


def test_filters_orders_and_days() -> None:
    assert filter_param("page:contains:/blog") == "page:contains:/blog"
    assert filter_param("page=/a") == "page:is:/a"
    assert filter_param("country!=DE|FR") == "country:is_not:DE|FR"
    assert filter_param("page~blog") == "page:contains:blog"
    assert filter_param("page!~blog") == "page:not_contains:blog"
    assert filter_param("prop:plan=pro") == "prop:plan:is:pro"
    assert filter_param("prop:plan:matches:^p") == "prop:plan:matches:^p"
    assert filter_param("page=/a?b=c") == "page:is:/a?b=c"
    with pytest.raises(UsageError):
        filter_param("page")
    assert order_param("pageviews:desc") == "-pageviews" and order_param("value:asc") == "value"
    assert parse_day("2024-02-29", "--from", None) == "2024-02-29"
    with pytest.raises(UsageError):
        parse_day("2024-02-30", "--from", None)
    assert len(parse_day("7d", "--from", "Europe/Berlin")) == 10


def test_synthetic_addresses_are_documentation_addresses() -> None:
    a = synthetic_address("svc_proj_a", "visitor-1")
    assert ipaddress.ip_address(a) in ipaddress.ip_network("2001:db8::/32")
    assert a == synthetic_address("svc_proj_a", "visitor-1")
    assert a != synthetic_address("svc_proj_a", "visitor-2")


def test_config_file_is_private_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    config.save({"url": "http://h:1", "token": 'we"ird\\tok'}, path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    loaded = config.load(path)
    assert (loaded.url, loaded.token, loaded.project) == ("http://h:1", 'we"ird\\tok', "")
    assert not loaded.insecure_mode
    path.chmod(0o644)
    assert config.load(path).insecure_mode
    assert config.same_url("http://h:1/", "http://h:1") and not config.same_url("h:1", "h:2")
