"""The OpenAPI document tells the truth: every route is in it, and nothing else; the limits it
states are where the service starts refusing; every answer fits the type it documents."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
from starlette.routing import Route

from svc.app import create_app
from svc.http.openapi import openapi_document
from svc.schema.limits import MAX_ITEMS_JSON
from svc.settings import Settings
from tests.support import Server
from tests.test_schema import OK, check_properties, check_string_limits, verdict


def test_every_route_is_documented_and_nothing_else(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path))
    routes: set[tuple[str, str]] = set()
    for route in app.routes:
        assert isinstance(route, Route)
        for method in route.methods or ():
            if method != "HEAD":  # Starlette adds HEAD to every GET route
                routes.add((route.path, method.lower()))
    doc = openapi_document()
    documented = {
        (path.replace("{path}", "{path:path}"), method)
        for path, item in doc["paths"].items()
        for method in item
        if method not in ("parameters", "head")
    }
    assert documented == routes


def test_served_document_is_openapi_3_1(server: Server) -> None:
    r = httpx.get(server.url + "/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"].startswith("3.1")
    metrics = doc["components"]["schemas"]["Metrics"]
    assert metrics["properties"]["pageviews"]["type"] == "integer"
    assert metrics["properties"]["bounceRate"]["type"] == "string"


# the document's types and limits are the service's --------------------------------------------


def test_the_documents_event_limits_are_the_validators() -> None:
    """The Event schema is generated from the type the validator decodes: each limit it states
    is where the origin starts refusing (tests/test_schema.py: the general and fast paths)."""
    event = openapi_document()["components"]["schemas"]["Event"]
    fields = event["properties"]
    checked = check_string_limits(fields)
    # the referrer is cut to its length, not refused: the document states no maxLength for it
    assert set(checked) == {"event", "url", "sessionId", "projectId", "eventId", "userAgent", "ip"}
    assert set(event["required"]) == {"event", "url"}
    screen = fields["screen"]["anyOf"][0]
    assert verdict({**OK, "screen": screen["maximum"]}) != "screen"
    assert verdict({**OK, "screen": screen["maximum"] + 1}) == "screen"
    assert verdict({**OK, "screen": screen["minimum"] - 1}) == "screen"
    props = fields["properties"]
    items = props["properties"]["items"]["anyOf"][1]
    check_properties(
        props["maxProperties"],
        props["propertyNames"]["maxLength"],
        props["additionalProperties"]["anyOf"][0]["maxLength"],
        maxItems=items["maxItems"],
        maxJsonLength=MAX_ITEMS_JSON,
    )


def test_the_documents_batch_limit_is_the_services(server: Server) -> None:
    def batch_limit(doc: dict[str, Any]) -> int:
        body = doc["paths"]["/analytics"]["post"]["requestBody"]["content"]["application/json"]
        shapes = body["schema"]["oneOf"]
        assert shapes[2]["properties"]["events"] == shapes[1]
        limit: int = shapes[1]["maxItems"]
        return limit

    assert batch_limit(openapi_document(Settings(max_batch_events=5))) == 5
    served = httpx.get(server.url + "/openapi.json").json()
    top = batch_limit(served)
    assert top == Settings().max_batch_events
    key = server.create_project("openapi-batch")["keys"]["secret"]
    assert server.send(key, [{"event": "x", "url": "/"}] * top).status_code == 200
    too_many = server.send(key, [{"event": "x", "url": "/"}] * (top + 1))
    assert too_many.status_code == 413 and too_many.json()["error"]["field"] == "events"


def _checker(doc: dict[str, Any]) -> Callable[[str, str, httpx.Response], None]:
    def check(path: str, method: str, r: httpx.Response) -> None:
        """The answer fits the schema the document gives for its operation and status."""
        responses = doc["paths"][path][method]["responses"]
        assert str(r.status_code) in responses, (path, method, r.status_code, r.text)
        schema = responses[str(r.status_code)]["content"]["application/json"]["schema"]
        root = {**schema, "components": doc["components"]}
        validator = jsonschema_rs.validator_for(root, validate_formats=True)
        errors = [e.message for e in validator.iter_errors(r.json())]
        assert not errors, (path, method, r.status_code, errors, r.text[:500])

    return check


def test_every_answer_fits_the_documented_types(server: Server) -> None:
    """The answers' types are written once, in svc.http.openapi, and the service keeps them."""
    check = _checker(httpx.get(server.url + "/openapi.json").json())
    admin = server.admin()
    url = server.url
    r = httpx.post(f"{url}/projects", json={"name": "openapi-types"}, headers=admin)
    check("/projects", "post", r)
    project, secret = r.json()["id"], r.json()["keys"]["secret"]
    auth = {"Authorization": f"Bearer {secret}"}
    check("/projects", "get", httpx.get(f"{url}/projects", headers=admin))
    check("/projects/{project_id}", "get", httpx.get(f"{url}/projects/{project}", headers=auth))
    r = httpx.patch(f"{url}/projects/{project}", json={"domains": ["a.test"]}, headers=admin)
    check("/projects/{project_id}", "patch", r)
    keys = f"{url}/projects/{project}/keys"
    check("/projects/{project_id}/keys", "get", httpx.get(keys, headers=auth))
    r = httpx.post(keys, json={"kind": "public"}, headers=auth)
    check("/projects/{project_id}/keys", "post", r)
    key_id = r.json()["id"]
    r = httpx.post(f"{keys}/{key_id}/rotate", headers=auth)
    check("/projects/{project_id}/keys/{key_id}/rotate", "post", r)
    r = httpx.delete(f"{keys}/{r.json()['id']}", headers=auth)
    check("/projects/{project_id}/keys/{key_id}", "delete", r)

    now = int(time.time() * 1000)
    events = [
        {"event": "page_view", "url": "/a", "sessionId": "s1", "ts": now - 2000},
        {"event": "signup", "url": "/a", "sessionId": "s1", "properties": {"plan": "pro"}},
        {"event": "purchase", "url": "/buy", "sessionId": "s1", "properties": {
            "transaction_id": "T1", "value": 30, "currency": "EUR",
            "items": [{"item_id": "sku", "price": 10, "quantity": 3}]}},
        {"event": "exception", "url": "/a", "sessionId": "s2",
         "properties": {"description": "boom", "fatal": True}},
    ]  # fmt: skip
    check("/analytics", "post", server.send(secret, events[0]))
    check("/analytics", "post", server.send(secret, [*events[1:], {"event": ""}]))
    check("/analytics", "post", server.send(secret, {"event": ""}))
    server.wait_loaded()

    today = time.strftime("%Y-%m-%d", time.gmtime(now / 1000 - 86400))
    reports = {
        "/metrics": {},
        "/metrics/timeseries": {"interval": "day"},
        "/metrics/breakdown": {"by": "page"},
        "/metrics/realtime": {},
        "/metrics/goals": {"goal": "event:signup"},
        "/metrics/funnel": {"step": ["page:/a", "event:signup"]},
        "/metrics/journeys": {"depth": "2"},
        "/metrics/revenue": {},
        "/metrics/errors": {},
        "/metrics/properties": {},
    }
    for path, params in reports.items():
        r = httpx.get(url + path, params={"from": today, **params}, headers=auth)
        check(path, "get", r)
        assert r.status_code == 200, r.text
    r = httpx.get(f"{url}/metrics/properties", params={"from": today, "key": "plan"}, headers=auth)
    check("/metrics/properties", "get", r)
    assert r.json()["values"], r.text
    check("/metrics", "get", httpx.get(f"{url}/metrics", headers=auth))  # 400: no `from`
    check("/metrics", "get", httpx.get(f"{url}/metrics", params={"from": today}))  # 401
    check("/health", "get", httpx.get(f"{url}/health"))
    check("/projects/{project_id}", "delete", httpx.delete(f"{url}/projects/nope", headers=admin))
