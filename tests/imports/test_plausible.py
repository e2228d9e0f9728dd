"""Plausible's CSV export imported on a data directory: per source and per device exactly the
visits, page views, bounces, visit time and visitors Plausible reports, every session table's
visits and bounces, and the page views per page (tests/imports/plausible_sample.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.imports.plausible_sample import DAY, PLAUSIBLE_FILES, SUFFIX
from tests.imports.support import counts, direct, import_direct, project


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("plausible")
    data, export = tmp / "data", tmp / "export"
    export.mkdir()
    for name, text in PLAUSIBLE_FILES.items():
        (export / (name + SUFFIX)).write_text(text)
    assert direct(data, "init").returncode == 0
    pid = project(data, f"pl-{uuid.uuid4().hex[:6]}", "UTC", "shop.example")
    summary = import_direct(data, pid, str(export))
    again = import_direct(data, pid, str(export))
    return {"summary": summary, "again": again, "got": counts(data, [pid], DAY, DAY)[pid]}


def figures(rows: dict[str, Any], *names: str) -> dict[str, tuple[Any, ...]]:
    return {value: tuple(row[n] for n in names) for value, row in rows.items()}


def test_the_day_is_plausibles(imported: dict[str, Any]) -> None:
    assert imported["summary"]["imported"] == 22  # 20 page views and 2 Signup events
    assert (imported["again"]["imported"], imported["again"]["skipped"]) == (0, 22)
    m = imported["got"]["metrics"]
    assert (m["visitors"], m["sessions"], m["pageviews"], m["events"]) == (9, 10, 20, 22)
    assert (m["bounceRate"], m["avgSessionDuration"]) == ("40.0%", 36.0)


def test_sources_and_devices_have_plausibles_figures(imported: dict[str, Any]) -> None:
    got = imported["got"]
    columns = ("sessions", "pageviews", "bounceRate", "avgSessionDuration", "visitors")
    # visits, page views, bounces / visits, visit duration / visits, visitors: the CSV's rows
    assert figures(got["source"], *columns) == {
        "google": (5, 11, "40.0%", 42.0, 4),
        "direct": (5, 9, "40.0%", 30.0, 5),
    }
    assert figures(got["device"], *columns) == {
        "desktop": (6, 14, "33.3%", 51.7, 5),
        "mobile": (4, 6, "50.0%", 12.5, 4),
    }


def test_every_session_table_has_plausibles_visits_and_bounces(imported: dict[str, Any]) -> None:
    got = imported["got"]
    columns = ("sessions", "bounceRate")
    assert figures(got["browser"], *columns) == {
        "Chrome": (5, "20.0%"),
        "Safari": (3, "33.3%"),
        "Firefox": (2, "100.0%"),
    }
    assert figures(got["browser_version"], "sessions") == {
        "Chrome 120.0": (5,),
        "Safari 17.4": (3,),
        "Firefox 126.0": (2,),
    }
    assert figures(got["os"], *columns) == {
        "Windows": (2, "0.0%"),
        "Linux": (2, "100.0%"),
        "macOS": (2, "0.0%"),
        "iOS": (3, "33.3%"),
        "Android": (1, "100.0%"),
    }
    # session 8 has no country: Plausible's locations leave it out
    assert figures(got["country"], *columns) == {
        "DE": (3, "33.3%"),
        "FR": (3, "66.7%"),
        "US": (3, "0.0%"),
        "": (1, "100.0%"),
    }
    assert figures(got["region"], "sessions") == {"DE-BE": (1 + 2,), "US-CA": (3,), "": (4,)}
    assert figures(got["entry_page"], *columns) == {
        "/": (5, "20.0%"),
        "/blog": (3, "66.7%"),
        "/pricing": (2, "50.0%"),
    }
    assert figures(got["page"], "pageviews") == {"/": (7,), "/pricing": (8,), "/blog": (5,)}
    assert figures(got["event"], "events") == {"page_view": (20,), "Signup": (2,)}
    # the page views of the tables read greedily: exact for this export
    assert figures(got["browser"], "pageviews") == {"Chrome": (13,), "Safari": (5,),
                                                     "Firefox": (2,)}  # fmt: skip
    assert figures(got["entry_page"], "pageviews") == {"/": (13,), "/blog": (4,),
                                                        "/pricing": (3,)}  # fmt: skip
