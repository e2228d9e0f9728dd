"""GET /metrics over a range that ends on a day not rolled up yet ("today"), with and without
that day's snapshot (svc.storage.snapshots), on a store made by ``query_bench.py``.

The store's last day is over and rolled up by now, so it is read here as today would be: the
reads are told to leave its rollup out (the one patch of this script), and its snapshot is
taken as the runtime takes one, at a version ``--behind`` minutes before its last event (the
sessions that events received since reached are read from the sessions table: a snapshot a
few minutes old under live traffic). Then, alternated in one process, ``--runs`` warm
requests each of:

- ``rolled``: the last day from its rollup (the figure ``query_bench.py`` reports);
- ``raw``: the last day from the sessions table, as before the snapshots;
- ``snapshot``: the last day from its snapshot and the sessions changed since.

The three answers must be equal (the script fails otherwise). The runtime's own rollups and
snapshots are off while it runs.

Run: ``.venv/bin/python bench/today_bench.py --data-dir /tmp/qb100 --json out.json``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from _common import cold_reads
from svc.app import create_app
from svc.queries import plan as planner
from svc.queries import run as runner_module
from svc.settings import Settings
from svc.storage.snapshots import SNAPSHOT_TABLES, Snapshots

MARKER = "bench-dataset.json"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--behind", type=float, default=15.0, help="snapshot version (minutes)")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    dataset = json.loads((args.data_dir / MARKER).read_text())
    last = datetime.fromisoformat(dataset["end"]).date()
    first = last - timedelta(days=dataset["days"] - 1)
    settings = Settings(
        data_dir=args.data_dir,
        rollup_interval_seconds=86_400,
        snapshot_interval_seconds=0,
        **cold_reads(),
    )
    app = create_app(settings)
    mode = {"name": "rolled"}
    rolled_days = runner_module.Runner._rolled_days
    wanted = planner.snapshot_wanted

    def rolled_but_last(self: Any, *a: Any, **k: Any) -> Any:
        days = rolled_days(self, *a, **k)
        return days if mode["name"] == "rolled" else tuple(d for d in days if d[0] != last)

    def snapshot_wanted(plan: Any, facts: Any) -> list[date]:
        return wanted(plan, facts) if mode["name"] == "snapshot" else []

    runner_module.Runner._rolled_days = rolled_but_last  # type: ignore[method-assign]
    runner_module.planner.snapshot_wanted = snapshot_wanted  # type: ignore[assignment]
    url = f"/metrics?from={first}&to={last}"
    times: dict[str, list[float]] = {"rolled": [], "raw": [], "snapshot": []}
    answers: dict[str, Any] = {}
    with TestClient(app) as client:
        store = app.state.runtime.store
        newest = store.query(
            "SELECT max(received_at) FROM events WHERE project_id = {p:String} "
            "AND toDate(session_start) = {d:Date}",
            {"p": dataset["project"], "d": last},
        )[0][0].replace(tzinfo=UTC)
        version = int((newest - timedelta(minutes=args.behind)).timestamp() * 1000)
        for table in SNAPSHOT_TABLES:  # a snapshot of an earlier run under that version
            store.client.command(f"ALTER TABLE {table} DROP PARTITION {version:d}")
        started = time.perf_counter()
        Snapshots(store).take(dataset["project"], last, version)
        took_ms = (time.perf_counter() - started) * 1000
        changed = store.query(
            "SELECT uniqExact(session_id) FROM events WHERE project_id = {p:String} "
            "AND toDate(session_start) = {d:Date} "
            "AND toUnixTimestamp64Milli(received_at) >= {v:Int64}",
            {"p": dataset["project"], "d": last, "v": version},
        )[0][0]
        headers = {"Authorization": f"Bearer {dataset['secret']}"}
        for i in range(args.runs + 2):
            for name in times:
                mode["name"] = name
                t = time.perf_counter()
                r = client.get(url, headers=headers)
                elapsed = (time.perf_counter() - t) * 1000
                assert r.status_code == 200, r.text
                answers.setdefault(name, r.json())
                if i >= 2:  # warm
                    times[name].append(elapsed)
    assert answers["raw"] == answers["snapshot"] == answers["rolled"], answers
    report = {
        "dataset": dataset,
        "last_day": str(last),
        "snapshot_ms": round(took_ms),
        "changed_sessions": int(changed),
        "behind_minutes": args.behind,
        "p50_ms": {k: round(statistics.median(v), 1) for k, v in times.items()},
        "max_ms": {k: round(max(v), 1) for k, v in times.items()},
    }
    print(json.dumps({k: v for k, v in report.items() if k != "dataset"}))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
