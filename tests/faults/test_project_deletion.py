"""Issue 16, problem 3: a deleted project's events must never reach a new project of the same
id (they waited in the spool, or in the in-memory state: sessions, event ids, usage)."""

from __future__ import annotations

import httpx

from tests.faults.support import HOLD_SPOOL, client
from tests.support import Server


def _usage(srv: Server, project_id: str) -> int:
    r = httpx.get(f"{srv.url}/projects/{project_id}", headers=srv.admin())
    assert r.status_code == 200, r.text
    used: int = r.json()["usage"]["events"]
    return used


def test_a_deleted_projects_spooled_events_do_not_reach_its_successor(
    fresh_server: Server,
) -> None:
    srv = fresh_server
    srv.env.update(HOLD_SPOOL)  # the first event stays in the open spool segment
    srv.start()
    old = srv.create_project("reuse")
    event = {"event": "page_view", "url": "/old", "eventId": "same", "sessionId": "s1"}
    with client(old["keys"]["secret"]) as http:
        assert http.post(srv.url + "/analytics", json=event).status_code == 200
        assert http.post(srv.url + "/analytics", json={**event, "eventId": "x"}).status_code == 200
    r = httpx.delete(f"{srv.url}/projects/{old['id']}", headers=srv.admin(), timeout=60)
    assert r.status_code == 200, r.text
    with client(old["keys"]["secret"]) as http:  # the old key is gone with its project
        assert http.post(srv.url + "/analytics", json=event).status_code == 401

    new = srv.create_project("reuse")
    assert new["id"] == old["id"]
    assert _usage(srv, new["id"]) == 0
    with client(new["keys"]["secret"]) as http:
        # the same eventId is not a duplicate of the deleted project's event
        r = http.post(srv.url + "/analytics", json={**event, "url": "/new"})
        assert r.status_code == 200 and "x-svc-dropped" not in {k.lower() for k in r.headers}
    srv.stop()  # closes and loads the open segment
    srv.start()
    srv.wait_loaded()
    rows = srv.events(new["id"], new["keys"]["secret"])
    assert [r["path"] for r in rows] == ["/new"]
    assert _usage(srv, new["id"]) == 1
    m = srv.metrics(new["keys"]["secret"], **{"from": "2000-01-01"})
    assert m["pageviews"] == 1 and m["sessions"] == 1
    srv.stop()


def test_deleting_a_project_waits_for_nothing_when_the_spool_is_empty(
    fresh_server: Server,
) -> None:
    """Not the drain's 30 s. On a server of its own: on the suite's shared server, whose store
    holds every other test's projects, the deletes' mutations over every part of the tables
    once took over 5 s under the other worker's load (a flake, not the drain)."""
    server = fresh_server.start()
    project = server.create_project("gone-fast")
    r = httpx.delete(f"{server.url}/projects/{project['id']}", headers=server.admin(), timeout=30)
    assert r.status_code == 200
    assert r.elapsed.total_seconds() < 5
