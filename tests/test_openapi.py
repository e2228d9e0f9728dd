"""The OpenAPI document tells the truth: every route is in it, and nothing else."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.routing import Route

from svc.app import create_app
from svc.http.openapi import openapi_document
from svc.settings import Settings
from tests.support import Server


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
