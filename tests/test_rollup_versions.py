"""A day rolled up again keeps its older versions' rows while a reader may still use them
(svc.storage.rollups.KEEP_OLD_VERSIONS) and deletes them from every rolled table after; a
day's first rollup deletes nothing (it has no older version), and a day rolled up again
leaves the other days' rows alone. The DELETEs return at once and the engine applies them in
the background: what is kept is read once no mutation is left to apply."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from svc.ingestion.identity import stored_visitor_id
from svc.storage.rollups import KEEP_OLD_VERSIONS
from tests.support import run_store_script, stored_row

PROJECT = "versions"
NOON = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
DAYS = [NOON - timedelta(days=3), NOON - timedelta(days=4)]

_SCRIPT = """
import json, sys, time
from datetime import date
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import _ROLLED_TABLES as TABLES
from svc.storage.rollups import Rollups

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.migrate()
project, days, versions = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
store.insert_ndjson(sys.stdin.read().encode(), "versions-1")
rollups = Rollups(store)
deletes = []
command = store.client.command
def counted(sql, *args, **kwargs):
    if sql.startswith("DELETE"):
        deletes.append(sql.split()[2])
    return command(sql, *args, **kwargs)
store.client.command = counted

def kept():
    # the DELETEs are applied in the background: wait for them (at most 60 s)
    for _ in range(600):
        if not store.query("SELECT count() FROM system.mutations WHERE NOT is_done")[0][0]:
            break
        time.sleep(0.1)
    return {
        table: store.query(
            f"SELECT session_day, groupUniqArray(version) FROM {table} "
            "WHERE project_id = {p:String} GROUP BY session_day ORDER BY session_day",
            {"p": project},
        )
        for table in TABLES
    }

out = []
for step, version in enumerate(versions):
    deletes.clear()
    for day in days if step == 0 else days[:1]:  # then the first day alone, again
        rollups.compute(project, date.fromisoformat(day), version)
    out.append({"deletes": sorted(deletes), "kept": {
        t: {str(d): sorted(v) for d, v in rows} for t, rows in kept().items()
    }})
store.close()
print(json.dumps(out))
"""


def test_older_versions_go_once_no_reader_can_use_them(tmp_path: Path) -> None:
    start = [int(day.timestamp() * 1000) for day in DAYS]
    rows = [
        msgspec.json.encode(
            stored_row(
                PROJECT,
                start[d] + i * 60_000,
                start[d],
                name="page_view",
                session_id=1000 + d,
                visitor_id=stored_visitor_id(7 + d, start[d]),
                path=f"/{i}",
            )
        ).decode()
        for d, day in enumerate(DAYS)
        for i in range(3)
    ]
    first = 1_700_000_000_000
    keep = int(KEEP_OLD_VERSIONS.total_seconds() * 1000)
    # a first rollup of both days, the first day again within the window, then after it
    versions = [first, first + 1_000, first + keep + 2_000]
    days = [d.date().isoformat() for d in DAYS]
    out = run_store_script(
        _SCRIPT,
        str(tmp_path / "data"),
        PROJECT,
        json.dumps(days),
        json.dumps(versions),
        stdin="\n".join(rows),
    )
    again, other = days
    assert out[0]["deletes"] == []  # first rollups: nothing older to delete
    for table, by_day in out[0]["kept"].items():
        assert by_day == {again: [first], other: [first]}, table
    assert out[1]["deletes"] == []  # the first version may still be read
    for table, by_day in out[1]["kept"].items():
        assert by_day == {again: [first, first + 1_000], other: [first]}, table
    tables = ["rolled_sessions", "session_rollups", "visitor_steps"]
    assert out[2]["deletes"] == tables  # both older versions are past the window
    for table, by_day in out[2]["kept"].items():
        assert by_day == {again: [versions[2]], other: [first]}, table
