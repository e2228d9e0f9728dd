"""docs/benchmarks.md's tables are what bench/run_all.py renders from bench/results.json.

No benchmark runs here: the figures file is read as committed.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import query_bench  # noqa: E402
import run_all  # noqa: E402


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return run_all.load_results()


def test_the_doc_tables_are_rendered_from_the_results_file() -> None:
    diff = run_all.check_doc()
    assert not diff, "run bench/run_all.py --render:\n" + "\n".join(diff)


def test_the_results_file_is_saved_as_run_all_writes_it(
    results: dict[str, Any], tmp_path: Path
) -> None:
    copy_path = tmp_path / "results.json"
    run_all.save_results(results, copy_path)
    assert copy_path.read_text("utf-8") == run_all.RESULTS.read_text("utf-8")


def test_every_query_kind_of_the_bench_has_one_row(results: dict[str, Any]) -> None:
    timed = [name for name, _ in query_bench.endpoints(30, "2026-01-30", "2026-01-01")]
    rows = [kind for row in results["queries"]["rows"] for kind in row["kinds"]]
    assert sorted(rows) == sorted(timed)


def test_the_durability_rows_are_there(results: dict[str, Any]) -> None:
    whats = [row["what"] for row in results["durability"]]
    assert whats == [
        "ingestion throughput, framed vs unframed spool",
        "recovery after a 1 GiB spool backlog",
        "memory under three concurrent maximal reads",
    ]


def test_every_measured_row_says_when_where_and_at_which_commit(results: dict[str, Any]) -> None:
    rows = [*results["targets"], *results["durability"], *results["other"], *results["code"]]
    assert len({row["id"] for row in rows}) == len(rows)
    for row in [*rows, results["queries"]]:
        if row.get("values") or "rows" in row:
            taken = row["taken"]
            assert taken["machine"] in results["machines"], row.get("id")
            assert taken["date"] and taken["commit"] and taken["command"], row.get("id")


def test_pass_and_miss_come_from_the_figures(results: dict[str, Any]) -> None:
    data = copy.deepcopy(results)
    (row,) = [r for r in data["targets"] if r["id"] == "ingest_batch"]
    assert run_all.status(row) == "pass"
    row["values"]["events_per_s"] = [97_600, 108_100]  # a range is checked at its worst end
    assert run_all.status(row) == "**miss**"
    row["values"] = {}
    assert run_all.status(row) == "to be measured"

    (q,) = [r for r in data["queries"]["rows"] if r["kinds"] == ["funnel (3 steps)"]]
    q["p50_ms"], q["p95_ms"] = 301, 283
    assert "| funnel (3 steps) | 301 ms |" in run_all.render_queries(data)
    assert "| funnel (3 steps) | 301 ms | 283 ms | 300 ms | **miss** |" in run_all.render_queries(
        data
    )
    (kinds,) = [r for r in data["targets"] if r["id"] == "query_kinds"]
    assert run_all.status(run_all.derived(kinds, data)) == "**miss**"


def test_a_recorded_run_replaces_the_rows_it_measured(results: dict[str, Any]) -> None:
    data = copy.deepcopy(results)
    names = [name for name, _ in query_bench.endpoints(30, "2026-01-30", "2026-01-01")]
    raw = {
        "ingest": {
            "single": {"req_per_s": 9001.4, "p50_ms": 2.04, "p99_ms": 16.04, "max_ms": 30.2}
            | {"cpu_us_per_request": 90.4},
            "batch": {"events_per_s": 101234.5, "p50_ms": 28.0, "p99_ms": 61.23}
            | {"cpu_us_per_event": 15.04},
            "rss_max": 512_300_000,
            "startup_cold_s": 1.004,
            "startup_restart_s": 1.234,
            "drain_s": 2.04,
        },
        "query": {
            "dataset": {"events": 10_000_000, "sessions": 3, "visitors": 2},
            "timings": [{"name": n, "runs": 10, "p50_ms": 100.4, "p95_ms": 120.6} for n in names],
            "startup_s": 1.5,
            "rss_mb_after": 600.2,
            "rss_mb_settled": 450.7,
        },
        "sizes": {
            "tracker_min": 900,
            "tracker_gzip": 601,
            "tracker_brotli": 490,
            "dashboard_raw": 1000,
            "dashboard_gzip": 500,
            "dashboard_map_gzip": 100,
        },
    }
    taken = {"date": "2027-01-01", "machine": "intel-xeon-2026-11-23", "commit": "abc1234"}
    run_all.record(data, raw, taken | {"command": "bench/run_all.py --record"}, True)
    rows = {r["id"]: r for r in data["targets"]}
    assert run_all.status(rows["ingest_single"]) == "**miss**"  # p99 16.0 ms
    assert run_all.status(rows["ingest_batch"]) == "pass"
    assert run_all.status(rows["tracker_size"]) == "**miss**"  # 601 B gzipped
    assert len(data["queries"]["rows"]) == len(names)
    tables = run_all.sections(data)
    assert "| 9,001 req/s, p99 16.0 ms | **miss** |" in tables["targets"]
    assert "101,234 events/s" in tables["targets"]
    assert "2027-01-01, Intel Xeon, abc1234" in tables["targets"]
    assert f"{len(names) - 1} of {len(names) - 1} kinds within it" in tables["targets"]
    assert "| realtime | 100 ms | 121 ms | 300 ms | pass |" in tables["queries"]
    assert "600 MB right after the last query, 451 MB 2 s later" in tables["other"]
    # the rows no run measures keep their figures and dates
    assert rows["enrichment"] == next(r for r in results["targets"] if r["id"] == "enrichment")
