"""The facts a report reads first, kept while nothing is written (svc.storage.memo): the next
report of the same range takes them from the memo, and no write leaves a stale one behind
(the store's generation moves with every command and insert, on every handle)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from svc.storage.memo import MAX_ROWS, ReadMemo, statement_key
from tests.conftest import BROWSER_UA
from tests.support import Server, run_store_script, scrape

TOKEN = "metrics-" + "m" * 24


def test_rows_serve_only_at_the_generation_they_were_read() -> None:
    memo = ReadMemo(2)
    key = statement_key("SELECT {a:UInt8}", {"a": 1})
    assert memo.put(key, 5, [(1, "x")]) == ((1, "x"),)
    assert memo.get(key, 5) == ((1, "x"),)
    assert memo.get(key, 6) is None  # written since
    assert memo.get(statement_key("SELECT {a:UInt8}", {"a": 2}), 5) is None  # other values
    assert (memo.hits, memo.misses) == (1, 2)


def test_the_least_recently_used_go_first_and_large_results_are_not_kept() -> None:
    memo = ReadMemo(2)
    for name in ("a", "b"):
        memo.put(name, 0, [[name]])
    assert memo.get("a", 0) is not None  # "b" is now the least recently used
    memo.put("c", 0, [["c"]])
    assert memo.get("b", 0) is None and memo.get("a", 0) and memo.get("c", 0)
    memo.put("big", 0, [[i] for i in range(MAX_ROWS + 1)])
    assert memo.get("big", 0) is None
    off = ReadMemo(0)
    off.put("a", 0, [[1]])
    assert off.get("a", 0) is None


_GENERATIONS = """
import json, sys
from pathlib import Path
from svc.settings import Settings
from svc.storage.events import EventStore
store = EventStore(Settings(data_dir=Path(sys.argv[1])))
moved = {}
def step(name, call):
    before = store.generation
    call()
    moved[name] = store.generation - before
step("migrate", store.migrate)
step("query", lambda: store.query("SELECT count() FROM events"))
step("query_named", lambda: store.query_named("SELECT 1 AS one"))
step("raw_query", lambda: store.client.raw_query(" with 1 AS a SELECT a", fmt="TSV"))
step("purge", lambda: store.client.command("SYSTEM JEMALLOC PURGE"))
step("command that reads", lambda: store.client.command("SELECT currentDatabase()"))
step("command", lambda: store.client.command("CREATE TABLE t (x UInt8) ENGINE = Memory"))
step("insert", lambda: store.client.insert("t", [[1]], column_names=["x"]))
step("insert via query", lambda: store.client.query("INSERT INTO t VALUES (2)"))
loader = store.insert_client
step("loader's", lambda: loader.raw_insert("t", ["x"], insert_block=b"3\\n", fmt="TSV"))
step("export's handle", lambda: store.export_client.command("TRUNCATE TABLE t"))
store.close()
print(json.dumps(moved))
"""


def test_every_write_on_every_handle_moves_the_generation(tmp_path: object) -> None:
    moved = run_store_script(_GENERATIONS, str(tmp_path))
    reads = ("query", "query_named", "raw_query", "purge", "command that reads")
    assert [moved.pop(read) for read in reads] == [0] * len(reads)
    assert all(n >= 1 for n in moved.values()), moved


def _memo_reads(srv: Server) -> dict[str, float]:
    samples = scrape(srv, TOKEN)
    name = "svc_read_memo_reads_total"
    return {s: samples[(name, frozenset({("served", s)}))] for s in ("memo", "store")}


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def test_reports_share_facts_until_an_event_changes_them(fresh_server: Server) -> None:
    """A session seen only before the range is not in it; once an event of it arrives inside,
    it crosses the start and counts its events in the range only: a crossing fact kept from
    before would count both (2 page views instead of 1)."""
    srv = fresh_server
    srv.env.update(SVC_ROLLUP_INTERVAL_SECONDS="3600", SVC_INTERNAL_METRICS_TOKEN=TOKEN)
    srv.start()
    key = srv.create_project("memo")["keys"]["secret"]
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=2)
    span = {"from": start.date().isoformat(), "to": (today - timedelta(days=1)).date().isoformat()}
    headers = {"User-Agent": BROWSER_UA}

    def send(url: str, at: datetime) -> None:
        body = [{"event": "page_view", "url": url, "sessionId": "x", "ts": _ms(at)}]
        assert srv.send(key, body, headers=headers).status_code == 200
        srv.wait_loaded()

    send("/before", start - timedelta(minutes=10))
    first = srv.metrics(key, **span)
    assert (first["pageviews"], first["sessions"]) == (0, 0)
    reads = _memo_reads(srv)
    assert srv.metrics(key, **span) == first
    r = httpx.get(
        srv.url + "/metrics/breakdown",
        params={**span, "by": "page"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 200 and r.json()["rows"] == [], r.text
    again = _memo_reads(srv)
    assert again["memo"] >= reads["memo"] + 2, (reads, again)  # both reports' facts

    send("/inside", start + timedelta(minutes=5))
    now = srv.metrics(key, **span)
    assert (now["pageviews"], now["sessions"]) == (1, 1), now
    assert _memo_reads(srv)["store"] > again["store"]
    srv.stop()
