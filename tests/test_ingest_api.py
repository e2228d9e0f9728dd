"""POST /analytics through the real server: every status of CONTRACT, exact JSON types."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server

UA = {"User-Agent": BROWSER_UA}


@pytest.fixture(scope="module")
def project(server: Server) -> dict[str, Any]:
    return server.create_project("ingest-" + uuid.uuid4().hex[:8])


def event(**fields: Any) -> dict[str, Any]:
    return {"event": "page_view", "url": "https://acme.test/", "sessionId": "s1", **fields}


def post(server: Server, key: str | None, body: Any, **kw: Any) -> httpx.Response:
    headers = {**UA, **kw.pop("headers", {})}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.post(server.url + "/analytics", json=body, headers=headers, **kw)


def assert_error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = r.json()
    assert body["ok"] is False
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body


def test_single_event_acknowledged_with_ok_and_ms_timestamp(server: Server, project: dict) -> None:
    before = int(time.time() * 1000)
    r = post(server, project["keys"]["secret"], event(projectId=project["id"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True
    assert type(body["ts"]) is int
    assert before - 1000 <= body["ts"] <= int(time.time() * 1000) + 1000
    assert set(body) == {"ok", "ts"}
    assert "set-cookie" not in r.headers


def test_public_key_may_ingest(server: Server, project: dict) -> None:
    r = post(server, project["keys"]["public"], event())
    assert r.status_code == 200, r.text


def test_missing_key_is_401(server: Server) -> None:
    assert_error(post(server, None, event()), 401, "missing_api_key")


@pytest.mark.parametrize(
    "key",
    ["nonsense", "svc_live_short", "svc_live_" + "A" * 32, "svc_admin_" + "B" * 32],
)
def test_invalid_key_is_401(server: Server, key: str) -> None:
    assert_error(post(server, key, event()), 401, "invalid_api_key")


def test_bad_authorization_scheme_is_401(server: Server, project: dict) -> None:
    r = post(server, None, event(), headers={"Authorization": "Basic abc"})
    assert_error(r, 401, "invalid_api_key")


def test_key_of_another_project_is_403(server: Server, project: dict) -> None:
    r = post(server, project["keys"]["secret"], event(projectId="svc_proj_someone-else"))
    body = assert_error(r, 403, "forbidden")
    assert body["error"]["field"] == "projectId"


def test_public_key_cannot_read_metrics(server: Server, project: dict) -> None:
    r = httpx.get(
        server.url + "/metrics",
        params={"from": "2026-01-01"},
        headers={"Authorization": f"Bearer {project['keys']['public']}"},
    )
    assert_error(r, 403, "forbidden")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "/"}, "event"),
        ({"event": "", "url": "/"}, "event"),
        ({"event": "x" * 201, "url": "/"}, "event"),
        ({"event": "page_view"}, "url"),
        ({"event": "page_view", "url": "/" + "a" * 2048}, "url"),
        ({"event": "page_view", "url": "no-scheme"}, "url"),
        ({"event": "page_view", "url": "/", "sessionId": "s" * 129}, "sessionId"),
        ({"event": "page_view", "url": "/", "sessionId": 5}, "sessionId"),
        ({"event": "page_view", "url": "/", "properties": []}, "properties"),
        ({"event": "page_view", "url": "/", "properties": {"a": {"b": 1}}}, "properties.a"),
        (
            {"event": "page_view", "url": "/", "properties": {f"k{i}": i for i in range(51)}},
            "properties",
        ),
        ({"event": "page_view", "url": "/", "ts": "yesterday"}, "ts"),
        ({"event": "page_view", "url": "/", "ts": 1}, "ts"),
        ({"event": "page_view", "url": "/", "ts": int(time.time() * 1000) + 3600_000}, "ts"),
    ],
)
def test_invalid_event_is_400_naming_the_field(
    server: Server, project: dict, body: dict, field: str
) -> None:
    r = post(server, project["keys"]["secret"], body)
    err = assert_error(r, 400, "invalid_request")
    assert err["error"]["field"] == field
    assert field.split(".")[0] in err["error"]["message"]


def test_malformed_json_is_400_and_stores_nothing(server: Server, project: dict) -> None:
    r = httpx.post(
        server.url + "/analytics",
        content=b'[{"event": "page_view", "url": "/"}, {"event": ',
        headers={**UA, "Authorization": f"Bearer {project['keys']['secret']}"},
    )
    assert_error(r, 400, "invalid_request")


def test_batch_keeps_the_valid_events(server: Server) -> None:
    p = server.create_project("batch-" + uuid.uuid4().hex[:8])
    key = p["keys"]["secret"]
    batch = [event(sessionId="a"), {"event": "page_view"}, event(sessionId="b"), "nope"]
    r = post(server, key, batch)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True and body["accepted"] == 2
    assert [x["index"] for x in body["rejected"]] == [1, 3]
    assert body["rejected"][0]["error"]["code"] == "invalid_request"
    assert body["rejected"][0]["error"]["field"] == "url"
    r = post(server, key, {"events": [event(sessionId="c")]})
    assert r.json()["accepted"] == 1
    server.wait_loaded()
    m = server.metrics(key, **{"from": "2000-01-01"})
    assert m["pageviews"] == 3


def test_batch_with_no_valid_event_is_400_with_every_error(server: Server, project: dict) -> None:
    r = post(server, project["keys"]["secret"], [{"event": ""}, {"url": "/"}])
    body = assert_error(r, 400, "invalid_request")
    assert [x["index"] for x in body["rejected"]] == [0, 1]


def test_body_over_1_mib_is_413(server: Server, project: dict) -> None:
    big = [event(properties={"pad": "x" * 2000}) for _ in range(600)]
    assert_error(post(server, project["keys"]["secret"], big), 413, "payload_too_large")


def test_batch_over_1000_events_is_413(server: Server, project: dict) -> None:
    assert_error(
        post(server, project["keys"]["secret"], [event()] * 1001), 413, "payload_too_large"
    )


def test_event_id_deduplicates(server: Server) -> None:
    p = server.create_project("dedup-" + uuid.uuid4().hex[:8])
    key = p["keys"]["secret"]
    e = event(eventId="evt-1")
    assert post(server, key, e).status_code == 200
    r = post(server, key, [e, event(eventId="evt-2"), event(eventId="evt-2")])
    assert r.json()["accepted"] == 1
    assert r.json()["dropped"] == 2
    server.wait_loaded()
    assert server.metrics(key, **{"from": "2000-01-01"})["pageviews"] == 2


def test_late_event_with_ts_is_stored_on_its_day(server: Server) -> None:
    p = server.create_project("late-" + uuid.uuid4().hex[:8])
    key = p["keys"]["secret"]
    three_days_ago = int(time.time() * 1000) - 3 * 86400_000
    assert post(server, key, event(ts=three_days_ago)).status_code == 200
    server.wait_loaded()
    day = time.strftime("%Y-%m-%d", time.gmtime(three_days_ago / 1000))
    assert server.metrics(key, **{"from": day, "to": day})["pageviews"] == 1


def test_bot_is_dropped_with_200_and_a_reason(server: Server, project: dict) -> None:
    r = httpx.post(
        server.url + "/analytics",
        json=event(),
        headers={
            "Authorization": f"Bearer {project['keys']['public']}",
            "User-Agent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        },
    )
    assert r.status_code == 200
    assert r.headers["x-svc-dropped"] == "bot"
    dropped = server.health()["pipeline"]["dropped"]
    assert dropped.get("bot", 0) >= 1


def test_browser_form_public_key_in_query_with_text_plain(server: Server, project: dict) -> None:
    r = httpx.post(
        server.url + "/analytics",
        params={"key": project["keys"]["public"]},
        content=b'{"event":"page_view","url":"https://acme.test/x"}',
        headers={**UA, "Content-Type": "text/plain;charset=UTF-8", "Origin": "https://acme.test"},
    )
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == "*"


def test_secret_key_in_query_is_refused(server: Server, project: dict) -> None:
    r = httpx.post(
        server.url + "/analytics", params={"key": project["keys"]["secret"]}, json=event()
    )
    assert_error(r, 403, "forbidden")


def test_cors_preflight(server: Server) -> None:
    r = httpx.options(
        server.url + "/analytics",
        headers={"Origin": "https://x.test", "Access-Control-Request-Method": "POST"},
    )
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "*"
    assert "Authorization" in r.headers["access-control-allow-headers"]


def test_unknown_route_and_method_are_json(server: Server) -> None:
    assert_error(httpx.get(server.url + "/nope"), 404, "not_found")
    assert_error(httpx.get(server.url + "/analytics"), 405, "method_not_allowed")
