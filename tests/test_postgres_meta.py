"""The whole service with its metadata in real PostgreSQL."""

from __future__ import annotations

from sqlalchemy import text

from svc.meta.store import MetaStore
from tests.conftest import BROWSER_UA
from tests.support import Server
from tests.test_meta_store import postgres_url


def test_service_on_postgresql(fresh_server: Server) -> None:
    url = postgres_url()
    store = MetaStore(url)
    with store.engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    store.close()
    srv = fresh_server
    srv.env["SVC_META_URL"] = url
    srv.start()
    assert srv.health()["metadata"]["kind"] == "postgresql"
    p = srv.create_project("pg")
    r = srv.send(
        p["keys"]["public"], {"event": "page_view", "url": "/"}, headers={"User-Agent": BROWSER_UA}
    )
    assert r.status_code == 200
    srv.wait_loaded()
    assert srv.metrics(p["keys"]["secret"], **{"from": "2020-01-01"})["pageviews"] == 1
    srv.stop()
    srv.start()  # projects, keys and salts persist in PostgreSQL
    assert srv.metrics(p["keys"]["secret"], **{"from": "2020-01-01"})["pageviews"] == 1
