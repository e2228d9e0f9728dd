"""``usage_months`` (storage migration 22): per project and UTC month of receipt, the events
stored, which a start seeds the monthly quota's counters from (svc.runtime): what a count of
the events gives, page measurements and late events (received this month, from the last)
included, a replayed block counted once, and the migration's count of the events stored
before it the same.

The rows are written into a real store (chDB) as ingestion writes them, in a process of its
own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from svc.storage.events import ch_time
from tests.support import REPLAYED_BLOCKS, run_store_script, stored_row

MS = 1000


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * MS)  # type: ignore[misc]


#: (project, ts, received, name): two projects, October and November, a late event (October's
#: time, received in November), a page measurement.
EVENTS = [
    ("a", ms(2026, 10, 30, 10), ms(2026, 10, 30, 10), "page_view"),
    ("a", ms(2026, 10, 31, 23), ms(2026, 10, 31, 23), "page_view"),
    ("a", ms(2026, 10, 31, 22), ms(2026, 11, 1, 0, 5), "signup"),
    ("a", ms(2026, 11, 2, 9), ms(2026, 11, 2, 9), "page_view"),
    ("a", ms(2026, 11, 2, 9, 1), ms(2026, 11, 2, 9, 1), "engagement"),
    ("b", ms(2026, 11, 3, 9), ms(2026, 11, 3, 9), "page_view"),
]

_SCRIPT = (
    REPLAYED_BLOCKS
    + """
from svc.queries import sql
seed = lambda: sorted([list(r) for r in store.query(
    *(lambda s: (s.sql, s.params))(sql.usage_by_project_month(sys.argv[2])))])
counted = sorted([list(r) for r in store.query(
    "SELECT project_id, formatDateTime(received_at, '%Y-%m', 'UTC') AS m, count() FROM events "
    "WHERE received_at >= {s:DateTime64(3, 'UTC')} GROUP BY project_id, m",
    {"s": sys.argv[2]})])
out = {"seed": seed(), "counted": counted}
# the migration again, as after a crash before it was recorded: the same rows
store.client.command("DELETE FROM svc_migrations WHERE version = 22")
store.migrate()
out["again"] = seed()
store.close()
print(json.dumps(out))
"""
)


def ndjson(events: list[tuple[str, int, int, str]]) -> str:
    rows = []
    for i, (project, ts, received, name) in enumerate(events):
        row = stored_row(project, ts, ts, name=name, session_id=i, visitor_id=i, path="/")
        rows.append(msgspec.structs.replace(row, received_at=ch_time(received)))
    return (b"\n".join(msgspec.json.encode(r) for r in rows) + b"\n").decode()


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    blocks = [("usage-1", ndjson(EVENTS[:3])), ("usage-2", ndjson(EVENTS[3:]))]
    out: dict[str, Any] = run_store_script(
        _SCRIPT,
        str(tmp_path_factory.mktemp("usage") / "data"),
        "2026-10-01 00:00:00",
        stdin=json.dumps(blocks),
    )
    return out


def test_the_months_hold_what_a_count_of_the_events_gives(read: dict[str, Any]) -> None:
    # a: two in October, the late one and two in November (a page measurement counts);
    # b: one; the replayed block once
    assert read["seed"] == [["a", "2026-10", 2], ["a", "2026-11", 3], ["b", "2026-11", 1]]
    assert read["seed"] == read["counted"]


def test_the_migration_counts_the_stored_events_again_the_same(read: dict[str, Any]) -> None:
    assert read["again"] == read["seed"]
