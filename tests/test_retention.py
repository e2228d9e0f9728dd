"""Retention (issue 22): raw events are kept N months (the setting, or a project's own
option), the daily rollups longer; the days past the raw horizon still answer /metrics and
the breakdowns and the time series by day and week, from the rollups, exactly as before their
events were deleted; the API says when a range reaches past the raw events; the raw-event lake
(a bucket of a moto server) loses those days too.

One data directory for the module: months-old history goes in through `svcm import` on the
data directory (the live API takes events 7 days old at most), a first run of the service
without retention records the answers, a second run with retention deletes and answers again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.meta.store import Project
from svc.queries.dates import DateRange
from svc.queries.plan import Query, plan
from svc.retention.notice import note
from svc.retention.policy import Retention, horizon, retention_of
from svc.settings import Settings
from tests.cli.support import clean_env
from tests.s3_server import S3Server, s3_server
from tests.support import Server, is_error

TODAY = datetime.now(UTC).date()
CHROMIUM = Path("/usr/bin/chromium")  # Debian's (tests/dashboard/conftest.py)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]


def month_start(back: int) -> date:
    """The first day of the month ``back`` months before this one."""
    found = horizon(back, TODAY)
    assert found is not None
    return found


def month_end(first: date) -> date:
    return month_start_after(first) - timedelta(days=1)


def month_start_after(first: date) -> date:
    return date(first.year + first.month // 12, first.month % 12 + 1, 1)


OLD = month_start(5) + timedelta(days=14)  # before every horizon below
MID = month_start(2) + timedelta(days=14)  # before `own`'s (1 month), after the default (3)
RECENT = TODAY - timedelta(days=3)  # inside every horizon
DEFAULT_MONTHS, OWN_MONTHS = 3, 1
METRICS_TOKEN = "retention-metrics-" + "x" * 16
LAKE_BUCKET = "svc-retention-lake"


def _ms(day: date, hour: int, minute: int = 0) -> int:
    return int(datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC).timestamp() * 1000)


def history(project: str) -> list[dict[str, Any]]:
    """Three sessions a day: sources, pages, a custom event with a property, a bounce, and
    one that crosses midnight."""
    rows: list[dict[str, Any]] = []
    for day in (OLD, MID, RECENT):
        nxt = day + timedelta(days=1)
        site = "https://shop.example"
        plan_of = {"plan": "pro"}
        events = [
            ("s1", "page_view", "/a", _ms(day, 10), "https://www.google.com/", None),
            ("s1", "page_view", "/b", _ms(day, 10, 5), None, None),
            ("s1", "signup", "/b", _ms(day, 10, 6), None, plan_of),
            ("s2", "page_view", "/a", _ms(day, 11), None, None),
            ("s3", "page_view", "/c", _ms(day, 23, 50), "https://news.ycombinator.com/", None),
            ("s3", "page_view", "/a", _ms(nxt, 0, 10), None, None),
        ]
        for n, (session, name, path, ts, referrer, props) in enumerate(events):
            row: dict[str, Any] = {
                "event": name,
                "url": site + path,
                "ts": ts,
                "sessionId": f"{day}-{session}",
                "eventId": f"{project}-{day}-{n}",
            }
            if referrer:
                row["referrer"] = referrer
            if props:
                row["properties"] = props
            rows.append(row)
    return rows


# the policy, without a store --------------------------------------------------------------


def test_a_horizon_is_the_first_of_a_month_n_months_back() -> None:
    assert horizon(0, date(2026, 11, 24)) is None  # forever
    assert horizon(3, date(2026, 11, 24)) == date(2026, 8, 1)
    assert horizon(11, date(2026, 11, 1)) == date(2025, 12, 1)
    assert horizon(13, date(2026, 1, 31)) == date(2024, 12, 1)


def test_a_projects_own_retention_wins_and_rollups_never_go_first() -> None:
    settings = Settings(retention_months=3, rollup_retention_months=24)
    assert retention_of(None, settings) == Retention(3, 24)

    def project(**options: Any) -> Project:
        return Project("svc_proj_p", "p", "UTC", (), "free", options=options)

    assert retention_of(project(retentionMonths=1), settings) == Retention(1, 24)
    assert retention_of(project(retentionMonths=0), settings) == Retention(0, 0)  # forever
    # rollups kept less than raw events are kept as long as those
    assert retention_of(project(retentionMonths=30), settings) == Retention(30, 30)
    assert retention_of(project(rollupRetentionMonths=0), settings) == Retention(3, 0)
    assert retention_of(None, Settings()) == Retention(0, 0)


def test_days_before_the_raw_events_are_the_rollups_whole_utc_days() -> None:
    raw_from = date(2026, 8, 1)

    def span(first: date, last: date, tz: str = "UTC", **kw: Any) -> tuple[date, date] | None:
        return plan(Query("p", DateRange(first, last, tz), raw_from=raw_from, **kw)).rollup_span

    # wholly before: every day of the range, its ends too
    assert span(date(2026, 5, 1), date(2026, 5, 31)) == (date(2026, 5, 1), date(2026, 5, 31))
    # across the horizon: from the first day to the usual last (the day before the last)
    assert span(date(2026, 7, 1), date(2026, 8, 20)) == (date(2026, 7, 1), date(2026, 8, 19))
    # Berlin's days begin at 22:00 or 23:00 UTC the day before: the UTC day sharing most
    assert span(date(2026, 5, 1), date(2026, 5, 31), "Europe/Berlin") == (
        date(2026, 5, 1),
        date(2026, 5, 31),
    )
    # Honolulu's (10:00 UTC): the same day
    assert span(date(2026, 5, 1), date(2026, 5, 31), "Pacific/Honolulu") == (
        date(2026, 5, 1),
        date(2026, 5, 31),
    )
    # no horizon, or inside it: as before (a UTC range: from its first day to the day before
    # its last)
    within = plan(
        Query("p", DateRange(date(2026, 9, 1), date(2026, 9, 30), "UTC"), raw_from=raw_from)
    )
    assert within.rollup_span == (date(2026, 9, 1), date(2026, 9, 29))


def test_the_note_says_what_the_days_before_hold_in_each_report() -> None:
    day = date(2026, 8, 1)
    rolled = "answered from the daily rollups"
    assert rolled in note("metrics", False, day)
    for by in ("source", "page", "event", "hostname", "prop:plan", "entry_page", "country"):
        assert rolled in note("breakdown", False, day, by), by
    for interval in ("day", "week", "month", None):
        said = note("timeseries", False, day, interval)
        assert "hourly rollups" in said and "daily rollups" in said, interval
    assert "not counted by the hour" in note("timeseries", False, day, "hour")
    nothing = "not counted"
    assert nothing in note("metrics", True, day)  # filtered
    assert nothing in note("breakdown", False, day, "engagement")  # needs raw events
    for kind in ("funnel", "goals", "revenue", "errors", "properties", "vitals", None):
        assert nothing in note(kind, False, day), kind
    assert rolled in note("properties", False, day, "prop:plan")  # a key's values


# the service --------------------------------------------------------------------------------


def _reads(srv: Server, key: str, first: date, last: date) -> dict[str, Any]:
    """The answers compared before and after the deletion."""
    rng = {"from": first.isoformat(), "to": last.isoformat()}
    auth = {"Authorization": f"Bearer {key}"}
    out: dict[str, Any] = {"metrics": _drop_notice(srv.metrics(key, **rng))}
    for by in ("source", "page", "event", "prop:plan", "entry_page"):
        r = httpx.get(srv.url + "/metrics/breakdown", params={**rng, "by": by}, headers=auth)
        assert r.status_code == 200, r.text
        out[by] = _drop_notice(r.json())
    r = httpx.get(srv.url + "/metrics/properties", params={**rng, "key": "plan"}, headers=auth)
    assert r.status_code == 200, r.text
    out["values of plan"] = _drop_notice(r.json())
    for interval in ("day", "week"):  # every figure of every point
        r = httpx.get(
            srv.url + "/metrics/timeseries", params={**rng, "interval": interval}, headers=auth
        )
        assert r.status_code == 200, r.text
        out[f"series-{interval}"] = r.json()["points"]
    return out


def _drop_notice(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("rawDataFrom", "notes")}


def _stored_days(srv: Server, pid: str, key: str) -> set[date]:
    """The UTC days of the project's raw events (GET /export reads the events table)."""
    return {datetime.fromtimestamp(e["ts_ms"] / 1000, UTC).date() for e in srv.events(pid, key)}


class History:
    """The module's service with retention on, its projects, the answers read before, and
    the S3 server of its raw-event lake."""

    def __init__(
        self,
        srv: Server,
        projects: dict[str, dict[str, Any]],
        before: dict[tuple[str, str], dict[str, Any]],
        s3: S3Server,
    ) -> None:
        self.srv, self.projects, self.before, self.s3 = srv, projects, before, s3

    def key(self, name: str) -> str:
        key: str = self.projects[name]["keys"]["secret"]
        return key

    def lake_keys(self, name: str) -> list[str]:
        """The project's keys in the lake (``project=<id>/day=<day>/<file>``)."""
        return self.s3.keys(LAKE_BUCKET, f"lake/project={self.projects[name]['id']}/")

    def lake_days(self, name: str) -> set[date]:
        return {date.fromisoformat(k.split("/day=")[1][:10]) for k in self.lake_keys(name)}


RANGES = {
    "old": (month_start(5), month_end(month_start(5))),
    "mid": (month_start(2), month_end(month_start(2))),
    "wide": (month_start(5), TODAY),
}


#: The (project, range) pairs read before and after the deletion.
COMPARED = (("dflt", "old"), ("dflt", "wide"), ("own", "old"), ("own", "mid"))

#: Run in one process (one start of the embedded store): make the data directory and the
#: projects, and import each project's history (``svcm`` on the data directory).
SETUP = """
import contextlib, io, json, sys
from svc.cli.main import main
data_dir, out = sys.argv[1], {}
for name in ("dflt", "own"):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if name == "dflt":
            assert main(["init", "--data-dir", data_dir]) == 0
            printed.seek(0); printed.truncate()
        assert main(["projects", "create", name, "--data-dir", data_dir, "--json"]) == 0
        out[name] = json.loads(printed.getvalue())
        printed.seek(0); printed.truncate()
        history = sys.argv[2 if name == "dflt" else 3]
        assert main(["import", "-p", name, history, "--data-dir", data_dir, "--json", "-q"]) == 0
        out[name]["imported"] = json.loads(printed.getvalue())["imported"]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    root = tmp_path_factory.mktemp("retention")
    data_dir = root / "data"
    files = []
    for name in ("dflt", "own"):
        files.append(root / f"{name}.ndjson")
        files[-1].write_text("\n".join(json.dumps(r) for r in history(name)) + "\n")
    env = clean_env(root / "config.toml")
    made = subprocess.run(
        [sys.executable, "-c", SETUP, str(data_dir), *map(str, files)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    projects = json.loads(made.stdout.splitlines()[-1])
    assert all(p["imported"] == len(history(n)) for n, p in projects.items()), projects
    with s3_server() as s3:
        s3.bucket(LAKE_BUCKET)
        lake = {
            "SVC_LAKE_URL": f"s3://{LAKE_BUCKET}/lake",
            **s3.env("LAKE"),
            "SVC_LAKE_SETTLE_SECONDS": "0",
            "SVC_LAKE_INTERVAL_SECONDS": "0.3",
        }
        srv = Server(data_dir, env={"SVC_ROLLUP_INTERVAL_SECONDS": "0.2", **lake})
        yield from _run(srv, projects, s3)


def _run(srv: Server, projects: dict[str, dict[str, Any]], s3: S3Server) -> Iterator[History]:
    """The fixture's two runs of the service: without retention, then with it."""
    try:
        srv.start()  # no retention: every day raw, the finished ones rolled up and in the lake
        _wait_until(lambda: srv.health()["store"]["rolledUpDays"] >= 2 * 3)
        before = {
            (n, r): _reads(srv, projects[n]["keys"]["secret"], *RANGES[r]) for n, r in COMPARED
        }
        # each project's 6 days (3 with sessions, and the next with the one that crossed
        # midnight), a file and a manifest each
        _wait_until(lambda: len(s3.keys(LAKE_BUCKET, "lake/")) == 2 * 6 * 2)
        srv.stop()
        srv.env.update(
            SVC_RETENTION_MONTHS=str(DEFAULT_MONTHS),
            SVC_ROLLUP_RETENTION_MONTHS="24",
            SVC_RETENTION_INTERVAL_SECONDS="0.2",
            SVC_INTERNAL_METRICS_TOKEN=METRICS_TOKEN,
        )
        srv.start()
        r = httpx.patch(
            f"{srv.url}/projects/{projects['own']['id']}",
            json={"options": {"retentionMonths": OWN_MONTHS}},
            headers=srv.admin(),
        )
        assert r.status_code == 200, r.text
        kept = History(srv, projects, before, s3)
        _wait_until(lambda: MID not in _stored_days(srv, projects["own"]["id"], kept.key("own")))
        yield kept
    finally:
        srv.stop()


def _wait_until(done: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_events_past_the_horizon_are_deleted_and_those_inside_kept(kept: History) -> None:
    srv, projects = kept.srv, kept.projects
    dflt = _stored_days(srv, projects["dflt"]["id"], kept.key("dflt"))
    own = _stored_days(srv, projects["own"]["id"], kept.key("own"))
    nxt = timedelta(days=1)
    # the default (3 months) kept MID and RECENT, a project's own 1 month only RECENT
    assert dflt == {MID, MID + nxt, RECENT, RECENT + nxt}
    assert own == {RECENT, RECENT + nxt}


def test_the_lake_loses_the_days_past_the_horizon_too(kept: History) -> None:
    """The job deletes a project's days before its raw horizon from the lake (a bucket
    here), file and manifest, and keeps the others whole."""
    nxt = timedelta(days=1)
    kept_days = {"dflt": {MID, MID + nxt, RECENT, RECENT + nxt}, "own": {RECENT, RECENT + nxt}}
    _wait_until(lambda: all(kept.lake_days(n) == d for n, d in kept_days.items()), 30)
    for name, days in kept_days.items():
        files = {k.rsplit("/", 1)[1] for k in kept.lake_keys(name)}
        assert files == {"events.parquet", "manifest.json"}
        assert len(kept.lake_keys(name)) == 2 * len(days), name
    # dflt lost OLD and the day after, own those and MID's two
    assert kept.srv.health()["lake"]["daysExpired"] == 6
    r = httpx.get(
        kept.srv.url + "/internal/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
    )
    assert "svc_retention_lake_days_deleted_total 6.0" in r.text


def test_the_rollups_answer_the_deleted_days_as_before(kept: History) -> None:
    for name, r in COMPARED:
        after = _reads(kept.srv, kept.key(name), *RANGES[r])
        before = kept.before[(name, r)]
        for report in ("metrics", "source", "page", "event", "prop:plan", "entry_page"):
            assert after[report] == before[report], (name, r, report)
        # the time series by day and by week: the hourly page views, events and visitors, and
        # the daily sessions, bounce rate and duration
        for series in ("series-day", "series-week"):
            assert after[series] == before[series], (name, r, series)
    assert kept.before[("dflt", "old")]["metrics"]["pageviews"] == 5
    old_day = next(p for p in kept.before[("dflt", "old")]["series-day"] if p["time"] == str(OLD))
    assert old_day["sessions"] == 3 and old_day["bounceRate"] == "33.3%", old_day


def test_the_api_says_when_a_range_reaches_past_the_raw_events(kept: History) -> None:
    srv = kept.srv
    auth = {"Authorization": f"Bearer {kept.key('dflt')}"}
    first, last = RANGES["old"]
    rng = {"from": first.isoformat(), "to": last.isoformat()}
    raw_from = month_start(DEFAULT_MONTHS).isoformat()
    r = httpx.get(srv.url + "/metrics", params=rng, headers=auth)
    assert r.headers["X-Svc-Raw-Data-From"] == raw_from
    body = r.json()
    assert body["rawDataFrom"] == raw_from and "daily rollups" in body["notes"][0]
    # a report that needs raw events counts nothing there, and says so
    filtered = httpx.get(
        srv.url + "/metrics", params={**rng, "filter": "source:is:google"}, headers=auth
    )
    assert filtered.json()["pageviews"] == 0
    assert "not counted" in filtered.json()["notes"][0]
    # an hourly series: the hourly page views there, but no sessions (the rollups hold days)
    hourly = httpx.get(
        srv.url + "/metrics/timeseries",
        params={"from": OLD.isoformat(), "to": OLD.isoformat(), "interval": "hour"},
        headers=auth,
    ).json()
    assert sum(p["pageviews"] for p in hourly["points"]) == 4
    assert sum(p["sessions"] for p in hourly["points"]) == 0
    assert "not counted by the hour" in hourly["notes"][0]
    # a project's own retention: its own horizon
    own = httpx.get(
        srv.url + "/metrics/breakdown",
        params={**rng, "by": "source"},
        headers={"Authorization": f"Bearer {kept.key('own')}"},
    )
    assert own.json()["rawDataFrom"] == month_start(OWN_MONTHS).isoformat()
    # inside the horizon: nothing said
    recent = httpx.get(srv.url + "/metrics", params={"from": RECENT.isoformat()}, headers=auth)
    assert "rawDataFrom" not in recent.json() and "X-Svc-Raw-Data-From" not in recent.headers


def test_the_job_reports_to_prometheus(kept: History) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    r = httpx.get(
        kept.srv.url + "/internal/metrics",
        headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    got = {s.name: s.value for f in text_string_to_metric_families(r.text) for s in f.samples}
    assert got["svc_retention_runs_total"] >= 1 and got["svc_retention_failures_total"] == 0
    assert got["svc_retention_partitions_dropped_total"] + got["svc_retention_deletes_total"] > 0
    assert got["svc_retention_last_success_timestamp_seconds"] > 0


def test_the_dashboard_says_so_too(kept: History) -> None:
    """The dashboard shows the notice above its figures for a range past the raw events, and
    none for a recent range (Debian's Chromium, the server's own dashboard)."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    first, last = RANGES["old"]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{kept.srv.url}/?from={first}&to={last}")
            page.get_by_label("Secret key or admin token").fill(kept.key("dflt"))
            page.get_by_role("button", name="Sign in").click()
            notice = page.get_by_test_id("raw-data-from")
            notice.wait_for(timeout=30_000)
            assert f"kept from {month_start(DEFAULT_MONTHS)}" in notice.inner_text()
            page.goto(f"{kept.srv.url}/?from={RECENT}&to={TODAY}")
            page.wait_for_selector("[data-testid=stat-visitors]:not([data-value=''])")
            assert page.get_by_test_id("raw-data-from").count() == 0
        finally:
            browser.close()


def test_only_the_admin_sets_a_retention_and_bad_values_name_the_field(kept: History) -> None:
    srv, project = kept.srv, kept.projects["dflt"]
    url = f"{srv.url}/projects/{project['id']}"
    for bad in (-1, 1.5, "3", True, 1201):
        r = httpx.patch(url, json={"options": {"retentionMonths": bad}}, headers=srv.admin())
        is_error(r, 400, "options.retentionMonths")
    r = httpx.patch(url, json={"options": {"rollupRetentionMonths": "x"}}, headers=srv.admin())
    is_error(r, 400, "options.rollupRetentionMonths")
    secret = {"Authorization": f"Bearer {kept.key('own')}"}
    own_url = f"{srv.url}/projects/{kept.projects['own']['id']}"
    is_error(httpx.patch(own_url, json={"options": {"retentionMonths": 12}}, headers=secret), 403)
    # options sent without it keep it
    r = httpx.patch(own_url, json={"options": {"onlyOwnDomains": False}}, headers=secret)
    assert r.status_code == 200, r.text
    assert r.json()["options"]["retentionMonths"] == OWN_MONTHS


def test_an_import_after_the_deletion_keeps_the_rollups_of_the_deleted_days(
    kept: History, tmp_path: Path
) -> None:
    """An import rebuilds its project's recent rollups; those of the days whose raw events
    are gone are all that is left of them, and stay (svc.storage.rollups.Rollups.forget).
    Last in the module: it restarts the service."""
    srv = kept.srv
    srv.stop()
    one = tmp_path / "one.ndjson"
    one.write_text(
        json.dumps(
            {"event": "page_view", "url": "https://shop.example/new", "ts": _ms(RECENT, 12)}
            | {"sessionId": "late", "eventId": "own-late"}
        )
    )
    svcm = [sys.executable, "-m", "svc", "import", "-p", "own", str(one), "--json", "-q"]
    done = subprocess.run(
        [*svcm, "--data-dir", str(srv.data_dir)],
        env=clean_env(tmp_path / "config.toml"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["imported"] == 1, done.stderr
    srv.start()
    for r in ("old", "mid"):
        after = _reads(srv, kept.key("own"), *RANGES[r])
        for report in ("metrics", "source", "page", "event"):
            assert after[report] == kept.before[("own", r)][report], (r, report)
