"""GA4's BigQuery export (NDJSON and Parquet) imported on a data directory: every count per
dimension is the hand-computed answer of the sample (tests/imports/ga4_sample.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from svc.imports.countries import country_code
from tests.imports.ga4_sample import HOST, write_ga4
from tests.imports.support import counts, direct, import_direct, project

FORMS = ("ndjson", "parquet")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("ga4")
    data = tmp / "data"
    assert direct(data, "init").returncode == 0
    out: dict[str, Any] = {"data": data, "projects": {}, "summaries": {}}
    for form in FORMS:
        pid = project(data, f"ga4-{form}-{uuid.uuid4().hex[:6]}", "UTC", HOST)
        path = write_ga4(tmp / f"events_20240301.{'json' if form == 'ndjson' else form}", form)
        out["summaries"][form] = import_direct(data, pid, str(path))
        out["again"] = import_direct(data, pid, str(path))
        out["projects"][form] = pid
    out["counts"] = counts(data, list(out["projects"].values()), "2024-03-01", "2024-03-02")
    return out


def sessions(rows: dict[str, Any]) -> dict[str, int]:
    return {value: row["sessions"] for value, row in rows.items()}


@pytest.mark.parametrize("form", FORMS)
def test_a_ga4_export_imports_with_every_count_per_dimension(
    imported: dict[str, Any], form: str
) -> None:
    summary = imported["summaries"][form]
    assert summary["files"][0]["format"] == "ga4"
    # 13 rows, 4 of them GA4's bookkeeping (session_start twice, first_visit, user_engagement)
    assert (summary["read"], summary["imported"], summary["refused"]) == (9, 9, 0)
    got = imported["counts"][imported["projects"][form]]
    m = got["metrics"]
    # S1..S4; u1 on two days is two visitors (a visitor is a person on a day)
    assert (m["visitors"], m["sessions"], m["pageviews"], m["events"]) == (4, 4, 6, 9)
    assert m["bounceRate"] == "25.0%"  # S3 alone
    assert m["avgSessionDuration"] == 77.5  # (90 + 180 + 0 + 40) / 4
    assert {k: v["pageviews"] for k, v in got["page"].items()} == {
        "/": 2,
        "/pricing": 2,
        "/blog/a": 2,
    }
    assert sessions(got["entry_page"]) == {"/": 2, "/blog/a": 2}
    assert sessions(got["exit_page"]) == {"/pricing": 2, "/blog/a": 1, "/": 1}
    assert sessions(got["source"]) == {"google": 1, "newsletter": 1, "direct": 1,
                                       "news.ycombinator.com": 1}  # fmt: skip
    assert sessions(got["utm_campaign"]) == {"spring": 1, "": 3}
    assert sessions(got["country"]) == {"DE": 2, "GB": 1, "US": 1}
    assert sessions(got["city"]) == {"Berlin": 2, "London": 1, "": 1}
    assert sessions(got["device"]) == {"desktop": 2, "mobile": 1, "tablet": 1}
    assert sessions(got["browser"]) == {"Chrome": 2, "Safari": 1, "Samsung Internet": 1}
    assert sessions(got["browser_version"]) == {
        "Chrome 120.0": 2,
        "Safari 17.4": 1,
        "Samsung Internet 23.0": 1,
    }
    assert sessions(got["os"]) == {"Windows": 2, "iOS": 1, "Android": 1}
    assert sessions(got["os_version"]) == {"Windows 10": 2, "iOS 17.4": 1, "Android 14": 1}
    assert {k: v["events"] for k, v in got["event"].items()} == {
        "page_view": 6,
        "purchase": 2,
        "sign_up": 1,
    }
    revenue = got["revenue"]
    assert revenue["currencies"] == [
        {"currency": "EUR", "revenue": 30.0, "orders": 1, "averageOrderValue": 30.0},
        {"currency": "USD", "revenue": 12.5, "orders": 1, "averageOrderValue": 12.5},
    ]
    assert revenue["topItems"] == [
        {"itemId": "sku1", "itemName": "Mug", "currency": "EUR", "quantity": 3.0, "revenue": 30.0},
        {"itemId": "sku2", "itemName": "Cap", "currency": "USD", "quantity": 1.0, "revenue": 12.5},
    ]


def test_both_forms_are_the_same_and_a_second_import_stores_nothing(
    imported: dict[str, Any],
) -> None:
    ndjson, parquet = (imported["counts"][imported["projects"][f]] for f in FORMS)
    assert ndjson == parquet
    again = imported["again"]
    assert (again["imported"], again["skipped"]) == (0, 9)


def test_ga4_country_names_are_iso_codes() -> None:
    names = {"Germany": "DE", "United States": "US", "Türkiye": "TR", "Czechia": "CZ",
             "Myanmar (Burma)": "MM", "Côte d’Ivoire": "CI", "St. Kitts & Nevis": "KN",
             "Bosnia & Herzegovina": "BA", "South Korea": "KR", "de": "DE", "(not set)": "",
             "Atlantis": ""}  # fmt: skip
    assert {name: country_code(name) for name in names} == names
