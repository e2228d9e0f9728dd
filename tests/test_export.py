"""GET /export on the store reads NDJSON and CSV in pieces of whole hours: the same
file as one piece would give (each event once, oldest first, the CSV header once)."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq

from svc.queries.export import plan_windows
from tests.support import Server
from tests.test_metrics_golden import DAY, at, ev

T0 = datetime(2026, 11, 1)


def h(hour: int) -> datetime:
    return T0 + timedelta(hours=hour)


def test_windows_cut_at_hours_and_cover_the_range() -> None:
    end = h(24)
    hours = [(h(1), 2), (h(2), 1), (h(3), 5), (h(7), 1), (h(8), 1)]
    assert plan_windows(hours, T0, end, 3) == [(T0, h(3)), (h(3), h(7)), (h(7), end)]
    assert plan_windows(hours, T0, end, 100) == [(T0, end)]
    assert plan_windows([], T0, end, 3) == []
    # an hour over the limit is a window of its own
    assert plan_windows([(h(0), 9), (h(1), 9)], T0, end, 3) == [(T0, h(1)), (h(1), end)]
    # a range in a zone half an hour off UTC starts and ends within an hour
    start, stop = T0 + timedelta(minutes=30), h(24) + timedelta(minutes=30)
    hours = [(h(0), 2), (h(1), 2), (h(24), 2)]
    assert plan_windows(hours, start, stop, 2) == [(start, h(1)), (h(1), h(24)), (h(24), stop)]


def _export(srv: Server, secret: str, fmt: str, day: str) -> httpx.Response:
    r = httpx.get(
        srv.url + "/export",
        params={"from": day, "to": day, "format": fmt},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return r


def test_an_export_in_pieces_is_the_export_in_one(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data", env={"SVC_EXPORT_PIECE_EVENTS": "2"}).start()
    try:
        project = srv.create_project("pieces", domains=["acme.test"])
        secret = project["keys"]["secret"]
        day = DAY.date().isoformat()
        assert _export(srv, secret, "ndjson", day).content == b""
        assert _export(srv, secret, "csv", day).text.splitlines()[0].startswith('"ts_ms"')
        # 9 events over 5 hours, two at the same time, so that pieces of at most 2 events
        # split the day at four hour starts (and one hour of 3 events is a piece of its own)
        times = [at(0, 5), at(0, 50), at(3, 0), at(3, 0), at(3, 30), at(7, 1), at(9, 0)]
        times += [at(23, 59), at(23, 59)]
        events = [
            ev(n % 3 + 1, ts, path=f"/p{n}", properties={"n": str(n), "comma": "a,b"})
            for n, ts in enumerate(times)
        ]
        assert srv.send(secret, events).json()["accepted"] == len(events)
        srv.wait_loaded()
        whole = pq.read_table(io.BytesIO(_export(srv, secret, "parquet", day).content))
        expected = sorted((r["ts_ms"], r["path"]) for r in whole.to_pylist())
        assert [ts for ts, _ in expected] == sorted(times)
        text = _export(srv, secret, "ndjson", day).text
        ndjson = [json.loads(line) for line in text.split("\n") if line]
        rows: list[dict[str, Any]] = list(
            csv.DictReader(io.StringIO(_export(srv, secret, "csv", day).text))
        )
        for got in (
            [(r["ts_ms"], r["path"]) for r in ndjson],
            [(int(r["ts_ms"]), r["path"]) for r in rows],
        ):
            assert [ts for ts, _ in got] == sorted(times)  # oldest first, each event once
            assert sorted(got) == expected
        assert "a,b" in rows[0]["properties"]  # a comma inside a field, quoted
        exports = tmp_path / "data" / "exports"  # the Parquet file went (a server streams it)
        assert not exports.exists() or list(exports.iterdir()) == []
    finally:
        srv.stop()
