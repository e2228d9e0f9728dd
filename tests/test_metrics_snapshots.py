"""GET /metrics over a range that ends on a day not rolled up yet (today), read from that
day's snapshot (svc.storage.snapshots, svc.queries.sql.snapshots): the same answer as the
session rows give, when the snapshot is current and when events received since changed
its sessions (a session that went on and stopped being a bounce, a visitor's new session,
new visitors); snapshots taken once per change and not within the interval; versions no
reader uses dropped, one never named (a crash) never read; a rebuild of the sessions forgets
them.

The rows are written into a real store (chDB) as ingestion writes them, each received when
it happened (``received_at`` = ``ts``), and read in a process of its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from svc.ingestion.identity import SessionTracker, stored_visitor_id
from tests.support import run_store_script, stored_row

PROJECT = "snapshots"
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
MINUTE = 60_000
#: Events before this are in the first snapshot; those at or after it are received later.
CUT_HOURS = 11
SOURCES = ("google", "direct", "bing")
#: Ranges read (first, last: days before today).
RANGES = [(0, 0), (3, 0), (2, 0)]


def at(k: int, hour: int, minute: int = 0) -> int:
    """Milliseconds at ``hour:minute`` UTC on the day ``k`` days before today."""
    return (
        int((TODAY - timedelta(days=k) + timedelta(hours=hour, minutes=minute)).timestamp()) * 1000
    )


def arrivals() -> list[tuple[int, int, str]]:
    """Every page view (person, ts, source), in the order ingestion sees them: sessions on
    days 3 to 1 before today and today, across midnight into today, and around the cut: a
    bounce that goes on after it, a session that does not, a visitor's second session after
    it, new visitors after it."""
    out: list[tuple[int, int, str]] = []
    for k in (3, 2, 1):
        for p in range(6):
            out += [(p, at(k, 8 + p) + i * MINUTE, SOURCES[p % 3]) for i in range(1 + p % 2)]
    out.append((40, at(1, 23, 50), "bing"))
    out.append((40, at(0, 0, 10), "bing"))  # across midnight into today
    for p in range(8):  # today before the cut
        out += [(p, at(0, 2 + p) + i * MINUTE, SOURCES[p % 3]) for i in range(1 + p % 3)]
    out.append((20, at(0, 10, 50), "google"))  # a bounce at the cut ...
    out.append((21, at(0, 10, 40), "direct"))
    out.append((21, at(0, 10, 45), "direct"))
    out.append((20, at(0, CUT_HOURS, 5), "google"))  # ... that goes on after it
    out.append((0, at(0, 13), "bing"))  # a visitor's second session today
    out += [(30 + p, at(0, 12 + p), SOURCES[p % 3]) for p in range(3)]  # new visitors
    out.append((33, at(0, 14), "newsource"))
    return sorted(out, key=lambda a: a[1])


def inserts() -> list[tuple[str, str, bool]]:
    """(token, NDJSON, after the cut) per batch: the events before the cut, then after it."""
    tracker = SessionTracker(30 * MINUTE)
    before: list[bytes] = []
    after: list[bytes] = []
    for person, ts, source in arrivals():
        sid, start = tracker.assign(PROJECT, person, ts)
        row = stored_row(
            PROJECT,
            ts,
            start,
            name="page_view",
            session_id=sid,
            visitor_id=stored_visitor_id(person, start),
            path="/",
            source=source,
            channel=source,
        )
        (after if ts >= at(0, CUT_HOURS) else before).append(msgspec.json.encode(row))
    return [
        ("snap-before", (b"\n".join(before) + b"\n").decode(), False),
        ("snap-after", (b"\n".join(after) + b"\n").decode(), True),
    ]


_READ = """
import json, sys
from datetime import date, datetime, timedelta, UTC
from pathlib import Path
from svc.queries.dates import DateRange
from svc.queries.metrics import query_metrics
from svc.queries.plan import Needs, Query, plan
from svc.queries.run import Runner
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups
from svc.storage.snapshots import Snapshots

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1])))
store.migrate()
project, cases = sys.argv[2], json.loads(sys.argv[3])
cut, last = datetime.fromisoformat(sys.argv[4]), datetime.fromisoformat(sys.argv[5])
batches = json.load(sys.stdin)
snapshots = Snapshots(store)
minute = timedelta(minutes=1)

def read():
    out, used = {}, {}
    for first, last in cases:
        rng = DateRange(date.fromisoformat(first), date.fromisoformat(last), "UTC")
        q = Query(project, rng, ())
        out[f"{first} {last}"] = query_metrics(store, q).to_json()
        facts = Runner(store).facts(plan(q), Needs(edges=True, rollups=True, last_day=True))
        used[f"{first} {last}"] = [str(d) for d, _ in facts.snapshots]
    return out, used

def raw():
    # the same, with the snapshots unnamed for a moment: from the session rows
    named = store.query("SELECT project_id, session_day, version FROM snapshot_days")
    store.client.command("TRUNCATE TABLE snapshot_days")
    out, used = read()
    assert not any(used.values()), used
    for p, d, v in named:
        store.client.command("INSERT INTO snapshot_days VALUES ({p:String}, {d:Date}, {v:UInt64})",
                             parameters={"p": p, "d": d, "v": v})
    return out

def partitions():
    return sorted(int(r[0]) for r in store.query(
        "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() "
        "AND table = 'snapshot_sessions' AND active"))

def ms(t):
    return int(t.timestamp() * 1000)

out = {}
token, data, _ = batches[0]
store.insert_ndjson(data.encode(), token)
out["rolled"] = Rollups(store).refresh(cut, ms(cut))
out["first"] = snapshots.refresh(cut, ms(cut))
out["again"] = snapshots.refresh(cut + minute, ms(cut + minute))
out["raw_before"] = raw()
out["snap_before"], out["used_before"] = read()
token, data, _ = batches[1]
store.insert_ndjson(data.encode(), token)
out["raw_after"] = raw()
out["snap_changed"], out["used_changed"] = read()
out["within_interval"] = snapshots.refresh(cut + 2 * minute, ms(cut + 2 * minute))
now = last + minute
out["after_interval"] = snapshots.refresh(now, ms(now))
out["snap_after"], _ = read()
out["partitions_kept"] = partitions()
# a snapshot cut short before its name was written: never read, dropped once old
crash = max(out["partitions_kept"]) + 1
store.client.command("INSERT INTO snapshot_sessions SELECT project_id, session_day, "
                     "{v:UInt64}, session_id, visitor_id, 1000, 1000, 0, 'crash' "
                     "FROM snapshot_sessions", parameters={"v": crash})
store.client.command("INSERT INTO snapshot_sums SELECT project_id, session_day, {v:UInt64}, "
                     "dimension, value, 1000, 1000, 1000, 0, 0, 0, 1000 FROM snapshot_sums",
                     parameters={"v": crash})
out["crash"] = crash
out["snap_crash"], _ = read()
out["dropped"] = snapshots.drop_unused(ms(now + timedelta(minutes=30)))
out["partitions_left"] = partitions()
out["snap_dropped"], _ = read()
store.rebuild_sessions(project)
out["named_after_rebuild"] = store.query("SELECT count() FROM snapshot_days")[0][0]
store.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    day = lambda k: (TODAY - timedelta(days=k)).date().isoformat()  # noqa: E731
    cases = [(day(first), day(last)) for first, last in RANGES]
    out: dict[str, Any] = run_store_script(
        _READ,
        str(tmp_path_factory.mktemp("snapshots") / "data"),
        PROJECT,
        json.dumps(cases),
        (TODAY + timedelta(hours=CUT_HOURS)).isoformat(),
        datetime.fromtimestamp(max(a[1] for a in arrivals()) / 1000, UTC).isoformat(),
        stdin=json.dumps(inserts()),
    )
    return out


def test_today_is_read_from_its_snapshot(read: dict[str, Any]) -> None:
    assert read["rolled"] >= 3  # days 3 to 1 before today
    assert read["first"] == 1  # today
    today = TODAY.date().isoformat()
    for used in (read["used_before"], read["used_changed"]):
        assert all(days == [today] for days in used.values()), used


def test_a_snapshot_is_taken_once_per_change_and_not_within_the_interval(
    read: dict[str, Any],
) -> None:
    assert read["again"] == 0  # nothing received since
    assert read["within_interval"] == 0  # changed, but snapshot 2 minutes ago
    assert read["after_interval"] == 1


def test_the_snapshot_answers_as_the_session_rows(read: dict[str, Any]) -> None:
    assert read["snap_before"] == read["raw_before"]


def test_changes_since_the_snapshot_are_counted(read: dict[str, Any]) -> None:
    assert read["snap_changed"] == read["raw_after"]
    assert read["snap_after"] == read["raw_after"]
    today = TODAY.date().isoformat()
    before, after = read["raw_before"][f"{today} {today}"], read["raw_after"][f"{today} {today}"]
    # by hand: 3 new visitors and 1 more (visitor 33); a session went on, one began for a
    # visitor seen before, 4 for new ones; the bounce at the cut went on
    assert after["visitors"] == before["visitors"] + 4
    assert after["sessions"] == before["sessions"] + 5
    assert after["pageviews"] == before["pageviews"] + 6
    assert after["bounces"] == before["bounces"] - 1 + 5
    assert after["trafficSources"]["newsource"] == 1


def test_a_snapshot_never_named_is_not_read_and_old_versions_are_dropped(
    read: dict[str, Any],
) -> None:
    assert read["snap_crash"] == read["raw_after"]
    assert len(read["partitions_kept"]) == 2  # the current one, and the one just replaced
    assert read["dropped"] == [read["partitions_kept"][0], read["crash"]]
    assert read["partitions_left"] == [read["partitions_kept"][1]]
    assert read["snap_dropped"] == read["raw_after"]


def test_rebuilding_the_sessions_forgets_the_snapshots(read: dict[str, Any]) -> None:
    assert read["named_after_rebuild"] == 0
