"""GET /metrics takes a range's last day from its rollup (the range ends at a UTC midnight)
only while no event of its sessions has been received since that rollup: the day's sessions
are corrected with their events after the end as they are now, and a rollup computed before
a session's later events arrived counts that session as it was (a bounce, where it now has
two page views). Until the next pass rolls the day up again, the day is read from the
session rows. (Seen in CI: a rollup pass between the two loads of one session.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from svc.ingestion.identity import stored_visitor_id
from svc.storage.events import ch_time
from tests.support import run_store_script, stored_row

PROJECT = "last-day-race"
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
DAY = TODAY - timedelta(days=3)


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


_READ = """
import json, sys
from datetime import date, datetime
from pathlib import Path
from svc.queries.dates import DateRange
from svc.queries.filters import parse_filters
from svc.queries.metrics import query_metrics
from svc.queries.plan import Query
from svc.settings import Settings
from svc.storage.events import EventStore
from svc.storage.rollups import Rollups

store = EventStore(Settings.from_env(data_dir=Path(sys.argv[1]), snapshot_interval_seconds=0))
store.migrate()
project, day = sys.argv[2], date.fromisoformat(sys.argv[3])
now, version = datetime.fromisoformat(sys.argv[4]), int(sys.argv[5])
first, second = json.load(sys.stdin)
rng = DateRange(day, day, "UTC")
every = tuple(parse_filters(["event:matches:."]))

def read():
    return [query_metrics(store, Query(project, rng, f)).to_json() for f in ((), every)]

out = {}
store.insert_ndjson((first + "\\n").encode(), "race-1")
out["rolled"] = Rollups(store).refresh(now, version)
store.insert_ndjson((second + "\\n").encode(), "race-2")
out["stale"] = read()
out["again"] = Rollups(store).refresh(now, version + 3_600_000)
out["fresh"] = read()
store.close()
print(json.dumps(out))
"""


def test_a_rollup_older_than_an_event_of_its_sessions_is_not_taken(tmp_path: Path) -> None:
    start = ms(DAY + timedelta(hours=23, minutes=50))
    version = ms(TODAY + timedelta(hours=1))  # the day's rollup, an hour past its end
    first, second = (
        stored_row(
            PROJECT,
            ts,
            start,
            name="page_view",
            session_id=7,
            visitor_id=stored_visitor_id(7, start),
            path=path,
            received_at=ch_time(received),
        )
        for ts, path, received in (
            (start, "/a", start),
            (start + 20 * 60_000, "/b", version + 60_000),  # received after the rollup
        )
    )
    out = run_store_script(
        _READ,
        str(tmp_path / "data"),
        PROJECT,
        DAY.date().isoformat(),
        (TODAY + timedelta(hours=2)).isoformat(),
        str(version),
        stdin=json.dumps([msgspec.json.encode(r).decode() for r in (first, second)]),
    )
    assert out["rolled"] >= 1 and out["again"] >= 1
    for tag in ("stale", "fresh"):
        fast, events = out[tag]
        assert fast == events, tag
        assert (fast["pageviews"], fast["sessions"], fast["bounces"]) == (1, 1, 0), tag
