"""An acknowledged event survives kill -9, is counted once and never twice."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server


def test_kill_9_while_clients_send_loses_and_doubles_nothing(fresh_server: Server) -> None:
    srv = fresh_server.start()
    project = srv.create_project("crash")
    key = project["keys"]["secret"]
    acknowledged: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()
    counter = iter(range(10**9))

    def client() -> None:
        with httpx.Client(
            headers={"Authorization": f"Bearer {key}", "User-Agent": BROWSER_UA}, timeout=5
        ) as http:
            while not stop.is_set():
                with lock:
                    first = next(counter) * 10
                batch = [
                    {"event": "page_view", "url": "/p", "properties": {"seq": first + i}}
                    for i in range(10 if first % 20 else 1)
                ]
                try:
                    r = http.post(
                        srv.url + "/analytics", json=batch if len(batch) > 1 else batch[0]
                    )
                except httpx.HTTPError:
                    continue
                if r.status_code == 200:
                    with lock:
                        acknowledged.extend(e["properties"]["seq"] for e in batch)

    threads = [threading.Thread(target=client) for _ in range(16)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len(acknowledged) < 2000 and time.monotonic() < deadline:
        time.sleep(0.05)
    srv.stop(kill=True)
    stop.set()
    for t in threads:
        t.join()
    assert len(acknowledged) > 200, "the clients should have been acknowledged many events"

    srv.start()
    srv.wait_loaded()
    rows = srv.events(project["id"], key)
    seen = Counter(int(r["properties"]["seq"]) for r in rows)
    doubled = [s for s, n in seen.items() if n > 1]
    missing = [s for s in acknowledged if s not in seen]
    assert not doubled, f"{len(doubled)} events stored twice"
    assert not missing, f"{len(missing)} acknowledged events lost"
    m = srv.metrics(key, **{"from": "2000-01-01"})
    assert m["pageviews"] == len(rows)


def test_segment_loaded_twice_is_stored_once(fresh_server: Server) -> None:
    """A segment inserted but not deleted (a crash in between) is replayed at the next start;
    ClickHouse's insert deduplication token drops the second insert."""
    srv = fresh_server
    srv.env["SVC_SPOOL_FLUSH_INTERVAL_MS"] = "600000"  # keep the segment open
    srv.start()
    project = srv.create_project("replay")
    key = project["keys"]["secret"]
    events = [{"event": "page_view", "url": f"/r{i}"} for i in range(50)]
    assert srv.send(key, events, headers={"User-Agent": BROWSER_UA}).status_code == 200
    srv.stop(kill=True)
    spool = srv.data_dir / "spool"
    saved = {p.name: p.read_bytes() for p in spool.glob("*.log")}
    assert len(saved) == 1
    srv.start()
    srv.wait_loaded()
    assert srv.metrics(key, **{"from": "2000-01-01"})["pageviews"] == 50
    srv.stop()
    for name, data in saved.items():  # as if the loader had died before deleting it
        (spool / name).with_suffix(".ready").write_bytes(data)
    srv.start()
    srv.wait_loaded()
    assert not list(spool.glob("*.ready"))
    assert srv.metrics(key, **{"from": "2000-01-01"})["pageviews"] == 50


@pytest.mark.parametrize("n", [3])
def test_spool_survives_an_unreachable_store(fresh_server: Server, n: int) -> None:
    """With the store unreachable, events are acknowledged from the spool and /health says
    so; once the store is back, they are all loaded."""
    srv = fresh_server
    srv.env["SVC_CLICKHOUSE_URL"] = "http://127.0.0.1:9/nowhere"
    srv.start()
    project = srv.create_project("offline")
    key = project["keys"]["secret"]
    for i in range(n):
        r = srv.send(
            key, {"event": "page_view", "url": f"/o{i}"}, headers={"User-Agent": BROWSER_UA}
        )
        assert r.status_code == 200
    time.sleep(0.5)
    health = srv.health()
    assert health["store"]["reachable"] is False
    assert health["pipeline"]["backlogEvents"] == n
    assert health["ready"] is True
    srv.stop()
    del srv.env["SVC_CLICKHOUSE_URL"]
    srv.start()
    srv.wait_loaded()
    assert srv.metrics(key, **{"from": "2000-01-01"})["pageviews"] == n


def test_one_process_per_data_directory(fresh_server: Server) -> None:
    srv = fresh_server.start()
    second = Server(srv.data_dir)
    with pytest.raises(RuntimeError, match="in use by process"):
        second.start(timeout=20)
    assert srv.health()["ready"] is True
