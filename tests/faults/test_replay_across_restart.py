"""A spool segment inserted again by a later process is counted once in every table.

The loader deletes a segment only after its insert returned; a process killed in between leaves
it, and the next start inserts it again with the same deduplication token. Each stored table
must then drop what it already holds and take what it missed, and no other: also when the kill
fell between two materialized views' writes. tests/test_durability.py meets this case in about
one run of twenty (kill -9 at a random point); here it is made on purpose, each step in its own
process as after a restart (ClickHouse dropped a repeated block in `events` but let it through
the views under another token when the block's first insert was made by another process).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from svc.schema.row import EVENT_COLUMNS, EventRow

DAY = 1_795_500_000.0  # 2026-11-24, seconds

#: Per table, a figure that counts each event once (aggregating tables read with FINAL).
FIGURES = {
    "events": "SELECT count() FROM events",
    "sessions": "SELECT sum(events) FROM sessions FINAL",
    "session_pages": "SELECT sum(events) FROM session_pages FINAL",
    "event_hours": "SELECT sum(events) FROM event_hours",
    "report_events": "SELECT count() FROM report_events",
    "page_measurements": "SELECT count() FROM page_measurements",
    "long_sessions": "SELECT count() FROM long_sessions FINAL",
}

#: Run in a fresh interpreter: open the store at argv[1], optionally detach the views named in
#: argv[4] during the insert (a kill between the views' writes), insert argv[2] with the token
#: argv[3], print every figure as JSON.
STEP = """
import json, sys
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings.from_env(data_dir=sys.argv[1]))
store.migrate()
missed = [v for v in sys.argv[4].split(",") if v]
for view in missed:
    store.client.command(f"DETACH TABLE {view}")
store.insert_ndjson(open(sys.argv[2], "rb").read(), sys.argv[3])
for view in missed:
    store.client.command(f"ATTACH TABLE {view}")
figures = {t: store.client.query(q).result_rows[0][0] for t, q in json.loads(sys.argv[5]).items()}
print(json.dumps({t: int(n or 0) for t, n in figures.items()}))
store.close()
"""


def _row(n: int, name: str, ts: float, session: int, **fields: object) -> dict[str, object]:
    values: dict[str, object] = dict.fromkeys(EVENT_COLUMNS, "")
    values.update(
        project_id="replay",
        ts=f"{ts:.3f}",
        received_at=f"{ts:.3f}",
        event_id=f"e{n}",
        name=name,
        session_id=session,
        visitor_id=session * 7,
        path=f"/p{n % 3}",
        properties={},
        screen_width=0,
        session_start=f"{DAY:.3f}" if session == 3 else "",
    )
    values.update(fields)
    # left out when empty, as the spool writes it (the column's default, ts, applies)
    return {k: v for k, v in values.items() if k in EventRow.__struct_fields__ and v != ""}


def _segment(path: Path) -> Path:
    rows = [_row(n, "page_view", DAY + n * 60, 1 + n % 2) for n in range(8)]
    rows.append(_row(8, "signup", DAY + 600, 1, properties={"plan": "pro"}))
    rows.append(_row(9, "engagement", DAY + 660, 2, properties={"engaged_ms": "1200"}))
    rows.append(_row(10, "page_view", DAY + 3 * 86_400, 3))  # a session of several days
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    return path


def _step(data: Path, segment: Path, token: str, missed: str = "") -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", STEP, str(data), str(segment), token, missed, json.dumps(FIGURES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


EXPECTED = {
    "events": 11,
    "sessions": 10,  # the engagement is a page measurement, not an interaction
    "session_pages": 10,
    "event_hours": 10,
    "report_events": 1,
    "page_measurements": 1,
    "long_sessions": 1,
}


def test_a_segment_inserted_again_after_a_restart_is_counted_once(tmp_path: Path) -> None:
    segment = _segment(tmp_path / "segment.ndjson")
    data = tmp_path / "data"
    assert _step(data, segment, "seg-1") == EXPECTED
    assert _step(data, segment, "seg-1") == EXPECTED, "the replay was taken again somewhere"
    assert _step(data, segment, "seg-1") == EXPECTED


@pytest.mark.parametrize("missed", ["sessions_mv,report_events_mv", "events_mv"])
def test_a_replay_fills_in_what_a_kill_between_two_views_left_out(
    tmp_path: Path, missed: str
) -> None:
    segment = _segment(tmp_path / "segment.ndjson")
    data = tmp_path / "data"
    partial = _step(data, segment, "seg-1", missed)
    left_out = {m.removesuffix("_mv") for m in missed.split(",")}
    assert partial == {t: 0 if t in left_out else n for t, n in EXPECTED.items()}
    assert _step(data, segment, "seg-1") == EXPECTED
