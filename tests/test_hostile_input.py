"""Hostile bodies on the write side (issue 16, item 7): an event of a batch that does not
decode (invalid UTF-8 in a string, ``"ts":1e400``) costs only itself, and invalid UTF-8 bodies
on /projects are a 400, not a 500."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import BROWSER_UA
from tests.support import Server, is_error
from tests.support import browser_bearer as bearer

GOOD = b'{"event":"page_view","url":"/good-%d","sessionId":"s"}'


def post_raw(server: Server, key: str, body: bytes) -> httpx.Response:
    headers = {**bearer(key), "Content-Type": "application/json"}
    return httpx.post(server.url + "/analytics", content=body, headers=headers)


def stored_urls(server: Server, project: dict[str, Any]) -> list[str]:
    server.wait_loaded()
    return sorted(e["url"] for e in server.events(project["id"], project["keys"]["secret"]))


def test_a_batch_keeps_its_good_events_past_ones_that_do_not_decode(server: Server) -> None:
    project = server.create_project("undecodable")
    key = project["keys"]["public"]
    batch = b"[%s]" % b",".join(
        [
            GOOD % 1,
            b'{"event":"page_view","url":"/bad-\xff","sessionId":"s"}',
            GOOD % 2,
            b'{"event":"page_view","url":"/x","ts":1e400}',
            b'{"event":"signup","url":"/x","properties":{"plan":"pro","k":"\xc3\x28"}}',
            b'{"event":"page_view","url":"/x","n\xffame":1}',
            GOOD % 3,
        ]
    )
    r = post_raw(server, key, batch)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["accepted"] == 3
    rejected = {item["index"]: item["error"] for item in body["rejected"]}
    assert {i: e["field"] for i, e in rejected.items()} == {
        1: "url",
        3: "ts",
        4: "properties.k",
        5: "event",
    }
    assert all(e["code"] == "invalid_request" for e in rejected.values())
    # {"events": [...]} alike
    wrapped = b'{"events":[%s,{"event":"x","url":"/\xfe"}]}' % (GOOD % 4)
    r = post_raw(server, key, wrapped)
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    # one event alone that does not decode: 400 naming the field
    is_error(post_raw(server, key, b'{"event":"page_view","url":"/x","ts":1e400}'), 400, "ts")
    is_error(post_raw(server, key, b'{"event":"page_view","url":"/\xff"}'), 400, "url")
    # a batch none of whose events decodes: 400, each named
    r = post_raw(server, key, b'[{"event":"a","url":"/\xff"},{"event":"b","url":"/","ts":-1e999}]')
    assert [e["error"]["field"] for e in is_error(r, 400)["rejected"]] == ["url", "ts"]
    # JSON that is not well-formed: 400 for the whole body, nothing stored
    for broken in (b"[%s,{]" % (GOOD % 5), b"[%s,\xff]" % (GOOD % 6), b'"\xff"'):
        is_error(post_raw(server, key, broken), 400, "body")
    # the admin token (the project named in the first event) answers alike, never a 500
    admin_batch = b'[{"event":"page_view","url":"/good-7","projectId":"%s"},%s]' % (
        project["id"].encode(),
        b'{"event":"x","url":"/\xff"}',
    )
    r = post_raw(server, server.admin_token, admin_batch)
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text
    is_error(post_raw(server, server.admin_token, b'[{"event":"x","url":"/\xff"}]'), 400)
    assert stored_urls(server, project) == ["/good-1", "/good-2", "/good-3", "/good-4", "/good-7"]


def test_invalid_utf8_bodies_on_projects_are_400(server: Server) -> None:
    project = server.create_project("utf8-bodies")
    headers = {**server.admin(), "Content-Type": "application/json"}
    base = f"{server.url}/projects"
    for method, url, body in (
        ("POST", base, b'{"name":"caf\xe9"}'),
        ("PATCH", f"{base}/{project['id']}", b'{"domains":["caf\xe9.test"]}'),
        ("POST", f"{base}/{project['id']}/keys", b'{"kind":"pub\xfflic"}'),
    ):
        r = httpx.request(method, url, content=body, headers=headers)
        body_json = is_error(r, 400, "body")
        assert "UTF-8" in body_json["error"]["message"]


def test_a_lone_surrogate_costs_its_event_only(server: Server) -> None:
    """JSON allows an escaped unpaired UTF-16 surrogate, which no text can hold: the event
    with one is refused naming its field, the batch's other events are stored."""
    project = server.create_project("surrogate")
    key = project["keys"]["secret"]
    body = (
        b'[{"event":"page_view","url":"/ok1"},'
        b'{"event":"page_view","url":"/bad","properties":{"who":"\\ud800"}},'
        b'{"event":"page_view","url":"/ok2"}]'
    )
    r = httpx.post(
        server.url + "/analytics",
        content=body,
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "User-Agent": BROWSER_UA,
        },
    )
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["accepted"] == 2
    (rejected,) = doc["rejected"]
    assert rejected["index"] == 1 and "properties.who" in rejected["error"]["message"]
    single = httpx.post(
        server.url + "/analytics",
        content=b'{"event":"\\udc00x","url":"/"}',
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert single.status_code == 400 and "`event`" in single.json()["error"]["message"]
    broken = httpx.post(
        server.url + "/analytics",
        content=b'[{"event":"\\ud800","url":"/"},',
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_request"
