"""Property-based fuzzing of the whole HTTP API from its own /openapi.json (schemathesis):
inputs that fit the document and inputs that break it, against the real server. No answer may
be a 5xx, and every error is the JSON error shape. The number of examples is bounded
(SVC_FUZZ_EXAMPLES, default 15 per operation and mode) so the suite stays fast; a deeper
run: `SVC_FUZZ_EXAMPLES=200 .venv/bin/python -m pytest tests/test_api_fuzz.py`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.openapi import from_dict

from tests.conftest import BROWSER_UA
from tests.support import Server

EXAMPLES = int(os.environ.get("SVC_FUZZ_EXAMPLES", "15"))
#: Never on the fixture's own project: it would delete the fixture.
UNPINNED = {("DELETE", "/projects/{project_id}")}


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    srv = Server(tmp_path_factory.mktemp("fuzz") / "data")
    # every limit off: the fuzzer's thousands of requests are to reach the handlers (the
    # limits have tests of their own)
    for name in ("INGEST_PER_IP", "INGEST_PER_PROJECT", "READ_PER_KEY", "MANAGE_PER_CREDENTIAL"):
        srv.env[f"SVC_RATE_LIMIT_{name}"] = "0"
    srv.env["SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP"] = "0"
    # accounts' passwords at a hundredth of argon2id's cost (the same code: tests/accounts)
    srv.env["SVC_PASSWORD_HASH_MEMORY_KIB"], srv.env["SVC_PASSWORD_HASH_ITERATIONS"] = "1024", "1"
    srv.env["SVC_SIGNIN_LIMIT_PER_ADDRESS"] = srv.env["SVC_SIGNIN_LIMIT_PER_ACCOUNT"] = "0"
    srv.start()
    project = srv.create_project("fuzz")
    r = httpx.post(
        f"{srv.url}/projects/{project['id']}/keys", json={"kind": "public"}, headers=srv.admin()
    )
    assert r.status_code in (200, 201), r.text
    project["fuzz_key_id"] = r.json()["id"]
    events = [
        {"event": name, "url": f"/p{i % 7}", "sessionId": f"s{i % 5}", "properties": {"k": i}}
        for i, name in enumerate(["page_view", "signup", "page_view", "purchase"] * 10)
    ]
    r = srv.send(project["keys"]["secret"], events, headers={"User-Agent": BROWSER_UA})
    assert r.status_code == 200, r.text
    srv.wait_loaded()
    yield srv, project
    srv.stop()


@pytest.fixture(scope="module")
def schema(fuzzed: tuple[Server, dict[str, Any]]) -> Any:
    """The server's own /openapi.json, read and loaded once for every operation's test."""
    r = httpx.get(fuzzed[0].url + "/openapi.json")
    assert r.status_code == 200
    return from_dict(r.json())


def _operations() -> list[tuple[str, str]]:
    """(method, path) of every operation, read from the app's document without a server."""
    from svc.http.openapi import openapi_document

    doc = openapi_document()
    return [
        (method.upper(), path)
        for path, item in sorted(doc["paths"].items())
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def _credential(path: str, srv: Server, project: dict[str, Any]) -> str:
    return srv.admin_token if path.startswith("/projects") else str(project["keys"]["secret"])


@pytest.mark.parametrize("mode", ["positive", "negative"])
@pytest.mark.parametrize(("method", "path"), _operations())
def test_no_input_gets_a_server_error(
    fuzzed: tuple[Server, dict[str, Any]], schema: Any, method: str, path: str, mode: str
) -> None:
    srv, project = fuzzed
    operation = schema[path][method]
    generation = schemathesis.GenerationMode(mode)
    auth = {"Authorization": f"Bearer {_credential(path, srv, project)}"}
    failures: list[str] = []

    cases = operation.as_strategy(generation_mode=generation)
    if path.startswith(("/metrics", "/export")):  # some cases with plausible ranges
        cases = st.one_of(
            cases,
            operation.as_strategy(
                generation_mode=generation,
                query={"projectId": project["id"], "from": "2026-01-01", "tz": "UTC"},
            ),
        )
    if (
        "{project_id}" in path and (method, path) not in UNPINNED
    ):  # half the cases on the fixture's project, to go past 404
        pinned = {"project_id": project["id"]}
        if "{key_id}" in path:
            pinned["key_id"] = project["fuzz_key_id"]
        cases = st.one_of(
            cases, operation.as_strategy(generation_mode=generation, path_parameters=pinned)
        )

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases, pick=st.booleans())
    def run(case: Any, pick: bool) -> None:
        headers = dict(case.headers or {})
        if "authorization" not in {k.lower() for k in headers} or pick:
            headers.update(auth)
        try:
            response = case.call(base_url=srv.url, headers=headers, timeout=30)
        except Exception as exc:  # a broken connection is a server failure too
            failures.append(f"{case.method} {case.formatted_path}: {type(exc).__name__}: {exc}")
            return
        status = response.status_code
        if status >= 500 and not (status == 503 and _is_json_error(response)):
            failures.append(f"{status} for {_describe(case)}: {response.text[:300]}")
        elif status >= 400 and not _is_json_error(response):
            failures.append(f"{status} without the JSON error shape for {_describe(case)}")

    try:
        run()
    except Unsatisfiable:  # an operation without parameters has no input to break
        assert mode == "negative"
    assert not failures, "\n".join(failures[:10])


def _is_json_error(response: Any) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    error = body.get("error") if isinstance(body, dict) else None
    return (
        isinstance(error, dict)
        and body.get("ok") is False
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    )


def _describe(case: Any) -> str:
    return f"{case.method} {case.formatted_path} query={case.query!r} body={str(case.body)[:200]!r}"
