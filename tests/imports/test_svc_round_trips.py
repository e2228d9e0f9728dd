"""svc's own exports imported again keep everything: a project's events, exported as NDJSON, CSV
and Parquet (GET /export) and imported into fresh projects, on the data directory and over
HTTP, give every count of every dimension the original gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.imports.support import counts, import_direct, project
from tests.support import ROOT, Server

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0"
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)
# (address, user agent, path, referrer, event, properties)
VISITS: list[tuple[str, str, str, str, str, dict[str, Any]]] = [
    ("8.8.8.8", FIREFOX, "/?utm_source=news&utm_campaign=june", "", "page_view", {}),
    ("8.8.8.8", FIREFOX, "/pricing", "", "page_view", {}),
    ("8.8.8.8", FIREFOX, "/pricing", "", "signup", {"plan": "pro"}),
    ("81.2.69.160", IPHONE, "/blog/a", "https://www.google.com/", "page_view", {}),
    ("81.2.69.160", IPHONE, "/pricing", "", "page_view", {}),
    ("81.2.69.160", IPHONE, "/pricing", "", "purchase", {"value": 30, "currency": "EUR"}),
    ("1.1.1.1", CHROME, "/", "https://news.ycombinator.com/", "page_view", {}),
    ("9.9.9.9", CHROME, "/blog/a", "", "page_view", {}),
]
HOST = "shop.test"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A server's project with the visits, its exports in three formats, the same imported over
    HTTP into another project (the server then stopped)."""
    tmp = tmp_path_factory.mktemp("svc-round-trips")
    srv = Server(tmp / "data").start()
    try:
        orig = srv.create_project("orig-" + uuid.uuid4().hex[:6], domains=[HOST])
        key = orig["keys"]["secret"]
        for address, agent, path, referrer, name, props in VISITS:
            event: dict[str, Any] = {
                "event": name,
                "url": f"https://{HOST}{path}",
                "ip": address,
                "userAgent": agent,
                "properties": props,
            }
            if referrer:
                event["referrer"] = referrer
            assert srv.send(key, event).status_code == 200
        srv.wait_loaded()
        files = {}
        for fmt in ("ndjson", "csv", "parquet"):
            r = httpx.get(
                srv.url + "/export",
                params={"from": today(), "to": today(), "format": fmt},
                headers={"Authorization": f"Bearer {key}"},
                timeout=60,
            )
            assert r.status_code == 200, r.text
            files[fmt] = tmp / f"export.{fmt}"
            files[fmt].write_bytes(r.content)
        over_http = srv.create_project("http-" + uuid.uuid4().hex[:6], domains=[HOST])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SVC_", "SVCM_"))}
        env.update(PYTHONPATH=str(ROOT / "src"), SVC_CONFIG=str(tmp / "c.toml"))
        done = subprocess.run(
            [sys.executable, "-m", "svc", "import", "-p", over_http["id"], str(files["parquet"]),
             "--url", srv.url, "--token", srv.admin_token, "--json"],
            env=env, capture_output=True, text=True, timeout=120, cwd=str(ROOT),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["imported"] == len(VISITS)
        srv.wait_loaded()
    finally:
        srv.stop()
    return {"data": srv.data_dir, "orig": orig["id"], "http": over_http["id"], "files": files}


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def test_every_export_imports_with_every_count_per_dimension(exported: dict[str, Any]) -> None:
    data: Path = exported["data"]
    copies = {}
    for fmt, path in exported["files"].items():
        copies[fmt] = project(data, f"{fmt}-{uuid.uuid4().hex[:6]}", "UTC", HOST)
        summary = import_direct(data, copies[fmt], str(path))
        assert summary["files"] == [{"file": path.name, "format": fmt}]
        assert (summary["imported"], summary["refused"]) == (len(VISITS), 0)
    ids = [exported["orig"], exported["http"], *copies.values()]
    got = counts(data, ids, today(), today())
    want = got[exported["orig"]]
    # the oracle, by hand: 4 visitors, 4 sessions, 6 page views, 8 events
    m = want["metrics"]
    assert (m["visitors"], m["sessions"], m["pageviews"], m["events"]) == (4, 4, 6, 8)
    assert {k: v["sessions"] for k, v in want["country"].items()} == {"US": 2, "GB": 1, "AU": 1}
    assert {k: v["pageviews"] for k, v in want["os"].items()} == {
        "Windows": 2,
        "Linux": 2,
        "iOS": 2,
    }
    assert set(want["browser"]) == {"Firefox", "Safari", "Chrome"}
    assert set(want["device"]) == {"desktop", "mobile"}
    assert want["revenue"]["currencies"][0]["revenue"] == 30.0
    for name, pid in [("http", exported["http"]), *copies.items()]:
        for dimension, rows in want.items():
            assert got[pid][dimension] == rows, (name, dimension)


def test_the_parquet_export_is_told_apart_without_an_extension(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    data: Path = exported["data"]
    blind = tmp_path / "events.bin"
    blind.write_bytes(exported["files"]["parquet"].read_bytes())
    copy = project(data, f"blind-{uuid.uuid4().hex[:6]}")
    dry = import_direct(data, copy, str(blind))
    assert dry["files"] == [{"file": "events.bin", "format": "parquet"}]
    assert dry["imported"] == len(VISITS)
