"""The metadata store's ``usage`` table records each project's monthly events, on SQLite and
PostgreSQL: written by the running service from its in-memory counts, as absolute counts, so a
restart (which rebuilds the counts from the event store and the spool) never adds twice."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import text

from svc.limits.quota import current_month
from svc.meta.store import MetaStore
from tests.conftest import BROWSER_UA
from tests.support import Server
from tests.test_meta_store import postgres_url


@pytest.fixture(params=["sqlite", "postgresql"])
def meta_url(request: pytest.FixtureRequest, fresh_server: Server) -> str:
    """The metadata store of ``fresh_server``: SQLite in its data directory, or PostgreSQL."""
    srv = fresh_server
    if request.param == "sqlite":
        return f"sqlite:///{srv.data_dir / 'meta.db'}"
    url = postgres_url()
    store = MetaStore(url)
    with store.engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    store.close()
    srv.env["SVC_META_URL"] = url
    return url


def _send(srv: Server, key: str, n: int) -> None:
    batch = [{"event": "page_view", "url": f"/{i}"} for i in range(n)]
    r = srv.send(key, batch, headers={"User-Agent": BROWSER_UA})
    assert r.status_code == 200 and r.json()["accepted"] == n, r.text


def _recorded(url: str, project_id: str) -> int:
    store = MetaStore(url)
    try:
        return store.usage_of(project_id, current_month())
    finally:
        store.close()


def test_usage_is_recorded_and_restarts_do_not_double_it(
    fresh_server: Server, meta_url: str
) -> None:
    srv = fresh_server.start()
    p = srv.create_project("usage")
    pid, public = p["id"], p["keys"]["public"]
    _send(srv, public, 3)
    srv.wait_loaded()
    srv.stop()  # a clean stop records the last counts
    assert _recorded(meta_url, pid) == 3

    srv.start()  # the counts are rebuilt from the store: 3, recorded as 3, not added
    _send(srv, public, 2)
    r = httpx.get(f"{srv.url}/projects/{pid}", headers=srv.admin())
    assert r.json()["usage"]["events"] == 5
    srv.stop(kill=True)  # no last flush: the spool keeps the 2 events
    assert _recorded(meta_url, pid) in (3, 5)  # 5 only if housekeeping ran in between

    srv.start()  # rebuilt from the store and the spool
    srv.stop()
    assert _recorded(meta_url, pid) == 5


def test_a_segment_loaded_but_not_deleted_is_counted_once(fresh_server: Server) -> None:
    """A process killed between a segment's insert and its deletion leaves the segment in the
    spool and its events in the store. The next start loads it again (the insert's
    deduplication token drops it) before counting, so usage and the store hold it once."""
    srv = fresh_server
    srv.env["SVC_SPOOL_FLUSH_INTERVAL_MS"] = "600000"  # the segment stays open until the stop
    srv.start()
    p = srv.create_project("replayed")
    pid, public, secret = p["id"], p["keys"]["public"], p["keys"]["secret"]
    _send(srv, public, 4)
    srv.stop(kill=True)  # the acknowledged events are in an open segment
    spool = srv.data_dir / "spool"
    kept = {path.name: path.read_bytes() for path in spool.iterdir() if path.is_file()}
    assert kept, "the killed process left its segment"

    srv.start()  # loads the segment into the store and deletes it
    srv.wait_loaded()
    srv.stop()
    for name, data in kept.items():  # the segment is back, as if its deletion never happened
        (spool / name).write_bytes(data)

    srv.start()
    r = httpx.get(f"{srv.url}/projects/{pid}", headers=srv.admin())
    assert r.json()["usage"]["events"] == 4
    srv.wait_loaded()
    assert len(srv.events(pid, secret)) == 4
    assert srv.metrics(secret, **{"from": "2000-01-01"})["pageviews"] == 4
    srv.stop()
    assert _recorded(f"sqlite:///{srv.data_dir / 'meta.db'}", pid) == 4
