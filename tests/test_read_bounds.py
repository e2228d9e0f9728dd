"""The read side under hostile or unlucky requests (issue 16): every report is bounded (days,
points of a series, time), a bad parameter is a 400 that names it (never a 500), a read whose
client went away is stopped, and an export that fails after its headers breaks the transfer
instead of ending like a complete file."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import ROOT, Server
from tests.test_metrics_golden import DAY, at, ev

READS = [
    ("/metrics", {}),
    ("/metrics/timeseries", {}),
    ("/metrics/breakdown", {"by": "source"}),
    ("/metrics/goals", {"goal": "event:signup"}),
    ("/metrics/funnel", {"step": ["page:/", "page:/b"]}),
    ("/metrics/revenue", {}),
    ("/metrics/errors", {}),
    ("/metrics/properties", {}),
]
D = DAY.date().isoformat()


@pytest.fixture(scope="module")
def acme(server: Server) -> dict[str, Any]:
    p = server.create_project("bounds-" + uuid.uuid4().hex[:8], domains=["acme.test"])
    events = [ev(1, at(10, 0)), ev(1, at(10, 5), path="/b"), ev(2, at(11, 0), name="signup")]
    r = server.send(p["keys"]["secret"], events)
    assert r.status_code == 200, r.text
    server.wait_loaded()
    return p


def read(srv: Server, p: dict[str, Any], path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        srv.url + path,
        params=params,
        headers={"Authorization": f"Bearer {p['keys']['secret']}"},
        timeout=60,
    )


def assert_400(r: httpx.Response, field: str) -> str:
    assert r.status_code == 400, (r.status_code, r.text[:300])
    error = r.json()["error"]
    assert error["code"] == "invalid_request" and error["field"] == field, error
    assert f"`{field}`" in error["message"], error
    message: str = error["message"]
    return message


# Regular expressions ------------------------------------------------------------------------

#: Python's `re` takes them, RE2 (ClickHouse) refuses them: they were 500s.
RE2_REFUSES = ["(?=a)", r"(a)\1", "a++", "(?<=a)b", "(?!a)", "(?P=n)", r"\Z", "a{1001}"]
#: RE2 takes them, Python's `re` refused them (a 400 for a good filter), or overflowed its
#: stack on them (a 500; 120 deep: a pattern has at most 256 characters, tests/test_filter_cost).
RE2_TAKES = [r"\p{L}", "(?<n>a)", r"\z", r"\x{41}", "(" * 120 + "a" + ")" * 120]


@pytest.mark.parametrize("pattern", RE2_REFUSES)
@pytest.mark.parametrize(("path", "extra"), READS)
def test_a_pattern_re2_refuses_is_a_400_naming_the_filter(
    server: Server, acme: dict, path: str, extra: dict, pattern: str
) -> None:
    for op in ("matches", "not_matches"):
        r = read(server, acme, path, **extra, **{"from": D}, filter=f"page:{op}:{pattern}")
        assert "RE2" in assert_400(r, "filter")


@pytest.mark.parametrize("pattern", RE2_TAKES)
def test_a_pattern_re2_takes_is_taken(server: Server, acme: dict, pattern: str) -> None:
    r = read(server, acme, "/metrics", **{"from": D}, filter=f"page:matches:{pattern}")
    assert r.status_code == 200, r.text[:300]


# Days and time zones ------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "extra"), [*READS, ("/export", {})])
def test_days_outside_the_bounds_are_400s_naming_the_day(
    server: Server, acme: dict, path: str, extra: dict
) -> None:
    assert_400(
        read(server, acme, path, **extra, **{"from": "0001-01-01", "tz": "Asia/Tokyo"}), "from"
    )
    assert_400(
        read(server, acme, path, **extra, **{"from": "1000-01-02", "to": "9999-12-29"}), "from"
    )
    assert_400(read(server, acme, path, **extra, **{"from": "1989-12-31", "to": D}), "from")
    assert_400(read(server, acme, path, **extra, **{"from": D, "to": "2100-01-01"}), "to")
    assert_400(read(server, acme, path, **extra, **{"from": "2026-02-30"}), "from")


def test_the_widest_range_is_read(server: Server, acme: dict) -> None:
    both = {"from": "1990-01-01", "to": "2099-12-31", "tz": "Pacific/Kiritimati"}  # UTC+14
    body = read(server, acme, "/metrics", **both).json()
    assert body["pageviews"] == 2 and body["from"] == "1990-01-01", body
    both["tz"] = "Pacific/Pago_Pago"  # UTC-11
    assert read(server, acme, "/metrics/breakdown", by="page", **both).status_code == 200
    assert read(server, acme, "/export", **both).text.count("\n") == 3


def test_a_comparison_outside_the_bounds_is_a_400_naming_compare(
    server: Server, acme: dict
) -> None:
    for compare in ("previous_period", "previous_year"):
        r = read(server, acme, "/metrics", **{"from": "1990-06-01", "compare": compare})
        assert_400(r, "compare")
    body = read(server, acme, "/metrics", **{"from": "1991-01-01", "compare": "previous_year"})
    assert body.json()["compare"]["from"] == "1990-01-01"


@pytest.mark.parametrize("zone", ["right/UTC", "posix/Europe/Berlin", "localtime", "Mars/Base"])
def test_a_zone_the_store_does_not_know_is_a_400_naming_it(
    server: Server, acme: dict, zone: str
) -> None:
    for path, extra in [*READS, ("/export", {})]:
        assert_400(read(server, acme, path, **extra, **{"from": D, "tz": zone}), "tz")
    admin = server.admin()
    r = httpx.post(server.url + "/projects", json={"name": "tz-x", "timezone": zone}, headers=admin)
    assert_400(r, "timezone")
    r = httpx.patch(f"{server.url}/projects/{acme['id']}", json={"timezone": zone}, headers=admin)
    assert_400(r, "timezone")


# Time series --------------------------------------------------------------------------------


def test_a_series_has_at_most_the_points_it_may_have(server: Server, acme: dict) -> None:
    widest = {"from": "1990-01-01", "to": "2099-12-31"}
    # the default interval (day) and day itself: 40,177 points; week fits (5,740)
    assert "interval=week" in assert_400(
        read(server, acme, "/metrics/timeseries", **widest), "interval"
    )
    assert_400(read(server, acme, "/metrics/timeseries", **widest, interval="day"), "interval")
    body = read(server, acme, "/metrics/timeseries", **widest, interval="month").json()
    assert len(body["points"]) == 110 * 12
    assert sum(p["pageviews"] for p in body["points"]) == 2
    # an hour a point: 416 days are 9,984 points, 417 days 10,008
    first = date(2025, 1, 1)
    last = first + timedelta(days=415)
    hours = {"from": first.isoformat(), "to": last.isoformat(), "interval": "hour"}
    assert len(read(server, acme, "/metrics/timeseries", **hours).json()["points"]) == 9984
    hours["to"] = (last + timedelta(days=1)).isoformat()
    assert "interval=day" in assert_400(
        read(server, acme, "/metrics/timeseries", **hours), "interval"
    )


def vm_hwm_kb(pid: int) -> int:
    """The peak resident memory of a process so far (kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_three_maximal_series_at_once_stay_small(fresh_server: Server) -> None:
    """Before the bounds, one time series of the days 1000-01-02 to 9999-12-29 took 18 s and
    a 388 MB answer, the server 455 MB -> 1.8 GB; three at once 4 GB."""
    srv = fresh_server.start()
    p = srv.create_project("maximal", domains=["acme.test"])
    assert srv.send(p["keys"]["secret"], [ev(1, at(10, 0))]).status_code == 200
    srv.wait_loaded()
    assert srv.proc is not None
    read(srv, p, "/metrics/timeseries", **{"from": D})  # warm: the engine's first reads
    before = vm_hwm_kb(srv.proc.pid)
    the_issues = {"from": "1000-01-02", "to": "9999-12-29", "interval": "day"}
    hour = {"from": "2025-01-01", "to": "2026-02-20", "interval": "hour"}  # 9,984 points
    day = {"from": "2000-01-01", "to": "2027-05-18", "interval": "day"}  # 10,000 points
    week = {"from": "1990-01-01", "to": "2099-12-31", "interval": "week"}  # 5,740 points
    answers: dict[str, httpx.Response] = {}

    def fetch(name: str, params: dict[str, str]) -> None:
        answers[name] = read(srv, p, "/metrics/timeseries", **params)

    for batch in ([the_issues] * 3, [hour, day, week]):
        threads = [
            threading.Thread(target=fetch, args=(f"{i}{sorted(b.items())}", b))
            for i, b in enumerate(batch)
        ]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert time.monotonic() - started < 20
    for name, r in answers.items():
        assert r.status_code == (400 if "1000-01-02" in name else 200), (name, r.text[:200])
        assert len(r.content) < 2_000_000, (name, len(r.content))
    grown_mb = (vm_hwm_kb(srv.proc.pid) - before) / 1024
    assert grown_mb < 150, f"the server's peak grew by {grown_mb:.0f} MB"


# Time limit ---------------------------------------------------------------------------------


def test_a_read_past_its_time_is_a_504_and_exports_have_no_limit(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data", env={"SVC_QUERY_TIMEOUT_SECONDS": "0.001"}).start()
    try:
        p = srv.create_project("slow", domains=["acme.test"])
        events = [ev(i, at(10, i)) for i in range(1, 6)]
        assert srv.send(p["keys"]["secret"], events).status_code == 200
        srv.wait_loaded()
        for path, extra in READS:
            r = read(srv, p, path, **extra, **{"from": D})
            assert r.status_code == 504, (path, r.status_code, r.text[:300])
            error = r.json()["error"]
            assert (
                error["code"] == "query_timeout" and "SVC_QUERY_TIMEOUT_SECONDS" in error["message"]
            )
        assert "Traceback" not in srv.log()
        r = read(srv, p, "/export", **{"from": D})
        assert r.status_code == 200 and r.text.count("\n") == 5
    finally:
        srv.stop()


STORE_SCRIPT = """
import json, sys, threading, time
from pathlib import Path
from clickhouse_connect.driver.exceptions import DatabaseError
from svc.errors import InvalidRequest
from svc.settings import Settings
from svc.storage.events import EventStore, QueryTimeout, Read, ReadCancelled

SLOW = "SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) % 7 = 1"
store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
out = {}

def outcome(fn, *args):
    started = time.monotonic()
    try:
        fn(*args)
        what = "finished"
    except Exception as exc:
        what = type(exc).__name__
        if isinstance(exc, InvalidRequest):
            what += ":" + str(exc.field)
    return [what, round(time.monotonic() - started, 2)]

# ClickHouse stops a query past the time its read has left (max_execution_time)
out["timeout"] = outcome(Read(timeout_s=0.5).run, store.query, SLOW)
# the time is the read's, not each query's: the second query gets what the first left
read = Read(timeout_s=1.0)
out["shared"] = outcome(read.run, lambda: (store.query("SELECT sleep(0.6)"), store.query(SLOW)))
def stopped(fn, *args):
    # fn(*args) under a read that another thread stops after 0.5 s
    read = Read()
    result = {}
    worker = threading.Thread(target=lambda: result.update(o=outcome(read.run, fn, *args)))
    worker.start()
    time.sleep(0.5)
    started = time.monotonic()
    idle = store.stop_read(read)
    worker.join(30)
    # a stopped read starts no further query
    after = outcome(read.run, store.query, "SELECT 1")[0]
    took = round(time.monotonic() - started, 2)
    return [result.get("o", ["still running"])[0], idle, took, after]

# both queries of a pair run side by side on two handles
out["pair"] = stopped(store.query_named_together, (SLOW, {}), (SLOW, {}))
# a piece of an export (the export handle), a Parquet file written by the store
out["piece"] = stopped(store.raw_query, SLOW, {}, "TabSeparated")
outfile = Path(sys.argv[1]) / "x.tsv"
out["outfile"] = stopped(store.export_command, f"{SLOW} INTO OUTFILE '{outfile}'", {})
# a regular expression RE2 refuses is the filter's 400 under a read, the store's error outside
match = ("SELECT match('a', {p:String})", {"p": "(?=a)"})
out["regex"] = outcome(Read(timeout_s=5).run, store.query, *match)[0]
out["regex_outside_a_read"] = outcome(store.query, *match)[0]
out["no_limit"] = outcome(Read().run, store.query, "SELECT sleep(1.2)")[0]
# a read's lane: its queries' priority and their threads' nice value
lane = "SELECT getSetting('priority'), getSetting('os_thread_priority')"
out["lane"] = [Read(priority=p, nice=n).run(store.query, lane) for p, n in ((2, 10), (1, 0))]
print(json.dumps(out))
"""


def test_the_store_bounds_and_stops_the_queries_of_a_read(tmp_path: Path) -> None:
    """Through the real chDB: `max_execution_time` per query from the read's time left, and
    KILL QUERY (by the read's marker, on a handle of its own) from another thread."""
    run = subprocess.run(
        [sys.executable, "-c", STORE_SCRIPT, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    what, took = out["timeout"]
    assert what == "QueryTimeout" and took < 3, out
    what, took = out["shared"]
    assert what == "QueryTimeout" and took < 3, out
    for kind in ("pair", "piece", "outfile"):
        what, idle, took, after = out[kind]
        assert (what, idle, after) == ("ReadCancelled", True, "ReadCancelled"), out
        assert took < 3, out
    assert out["regex"] == "InvalidRequest:filter", out
    assert out["regex_outside_a_read"] == "DatabaseError", out
    assert out["no_limit"] == "finished", out
    assert out["lane"] == [[[2, 10]], [[1, 0]]], out


# Exports ------------------------------------------------------------------------------------


@pytest.fixture
def hourly(tmp_path: Path) -> Iterator[tuple[Server, dict[str, Any], int]]:
    """A server that exports one event a piece, and a project with an event in each of the
    last 150 hours: an export of 150 pieces."""
    env = {"SVC_EXPORT_PIECE_EVENTS": "1", "SVC_LOG_LEVEL": "info"}
    srv = Server(tmp_path / "data", env=env).start()
    try:
        p = srv.create_project("hourly", domains=["acme.test"])
        now = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)
        events = [
            ev(i % 200 + 1, int((now - timedelta(hours=i + 1)).timestamp() * 1000), path=f"/{i}")
            for i in range(150)
        ]
        r = srv.send(p["keys"]["secret"], events)
        assert r.status_code == 200 and r.json()["accepted"] == 150, r.text
        srv.wait_loaded()
        yield srv, p, len(events)
    finally:
        srv.stop()


def test_an_export_whose_client_leaves_is_stopped(hourly: tuple[Server, dict, int]) -> None:
    srv, p, n = hourly
    since = (datetime.now(UTC) - timedelta(days=8)).date().isoformat()
    headers = {"Authorization": f"Bearer {p['keys']['secret']}"}
    for trial in range(3):
        with httpx.stream(
            "GET", srv.url + "/export", params={"from": since}, headers=headers, timeout=60
        ) as r:
            assert r.status_code == 200
            first = next(r.iter_raw())
            assert first.startswith(b"{"), first[:100]
        # the client left after the first piece; give the server a moment to notice
        deadline = time.monotonic() + 10
        while srv.log().count("the client went away") <= trial and time.monotonic() < deadline:
            time.sleep(0.05)
    log = srv.log()
    assert log.count("the client went away") == 3, log[-3000:]
    assert "generator already executing" not in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    # and the service goes on: a whole export, every event once
    whole = httpx.get(srv.url + "/export", params={"from": since}, headers=headers, timeout=60)
    assert whole.status_code == 200 and whole.text.count("\n") == n


def test_an_export_that_fails_after_its_headers_breaks_the_transfer(
    hourly: tuple[Server, dict, int],
) -> None:
    """A Parquet export is written to a file in the data directory first; with `exports` not
    a directory that fails after the 200 headers were sent. The client must see a broken
    transfer (no last chunk), not an empty file that ends cleanly."""
    srv, p, _ = hourly
    (srv.data_dir / "exports").write_text("not a directory")
    since = (datetime.now(UTC) - timedelta(days=8)).date().isoformat()
    headers = {"Authorization": f"Bearer {p['keys']['secret']}"}
    with httpx.stream(
        "GET",
        srv.url + "/export",
        params={"from": since, "format": "parquet"},
        headers=headers,
        timeout=60,
    ) as r:
        assert r.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
            r.read()
    # NDJSON, cut into pieces, is not written to a file: it still works
    r = httpx.get(srv.url + "/export", params={"from": since}, headers=headers, timeout=60)
    assert r.status_code == 200 and r.text.count("\n") == 150


# Slow reads, for real ---------------------------------------------------------------------

#: A regular expression RE2 runs slowly over long paths of random a and b (no literal for
#: ClickHouse to look for first, a DFA too large to keep: RE2 falls back to its NFA): some
#: 5-10 ms a path of 1,500 characters, so a report over 400 of them takes seconds. ClickHouse
#: checks its time limit and kills between blocks of rows only, and these 400 rows are one.
#: At the bounds of a pattern filter (svc.queries.filters: a counted repetition of 100).
SLOW_FILTER = "page:matches:a.{100}[^ab]"
SLOW_EVENTS = 400


def slow_server(tmp_path: Path, **env: str) -> tuple[Server, dict[str, Any]]:
    srv = Server(tmp_path / "data", env={"SVC_LOG_LEVEL": "info", **env}).start()
    p = srv.create_project("slow", domains=["acme.test"])
    rng = random.Random(16)
    for batch in range(2):
        events = [
            ev(i % 250 + 1, at(10, i % 60), path="/" + "".join(rng.choices("ab", k=1500)))
            for i in range(batch * SLOW_EVENTS // 2, (batch + 1) * SLOW_EVENTS // 2)
        ]
        r = srv.send(p["keys"]["secret"], events)
        assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text[:300]
    srv.wait_loaded()
    return srv, p


def wait_for_log(srv: Server, text: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while text not in srv.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    return srv.log()


def test_a_slow_read_is_answered_504_at_its_time_and_stopped(tmp_path: Path) -> None:
    srv, p = slow_server(tmp_path, SVC_QUERY_TIMEOUT_SECONDS="1")
    try:
        started = time.monotonic()
        r = read(srv, p, "/metrics", **{"from": D}, filter=SLOW_FILTER)
        took = time.monotonic() - started
        assert r.status_code == 504 and r.json()["error"]["code"] == "query_timeout", r.text
        assert took < 3, took
        log = wait_for_log(srv, "was stopped (past its 1 s)")
        assert "was stopped (past its 1 s)" in log, log[-3000:]
        assert "Traceback" not in log, log[-3000:]
    finally:
        srv.stop()


def test_a_read_whose_client_leaves_is_stopped(tmp_path: Path) -> None:
    srv, p = slow_server(tmp_path)
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(
                srv.url + "/metrics",
                params={"from": D, "filter": SLOW_FILTER},
                headers={"Authorization": f"Bearer {p['keys']['secret']}"},
                timeout=1.0,
            )
        log = wait_for_log(srv, "was stopped (the client went away)")
        assert "was stopped (the client went away)" in log, log[-3000:]
        assert "Traceback" not in log, log[-3000:]
        assert read(srv, p, "/metrics", **{"from": D}).json()["pageviews"] == SLOW_EVENTS
    finally:
        srv.stop()
