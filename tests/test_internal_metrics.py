"""GET /internal/metrics, the service's figures for Prometheus (svc.http.internal_metrics).

Against the real server, scraped and parsed with prometheus-client's own parser: the figures
move with events, errors and reads; the token guards them; without one the path is a 404.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from svc.app import create_app
from svc.settings import Settings
from tests.conftest import BROWSER_UA
from tests.support import Samples, Server
from tests.support import sample as value
from tests.support import scrape as scrape_with

TOKEN = "metrics-" + "x" * 24
SCRAPE = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("internal-metrics")
    env = {
        "SVC_INTERNAL_METRICS_TOKEN": TOKEN,
        # the lake's and the scheduled backups' figures are there only when they are on
        "SVC_LAKE_URL": str(root / "lake"),
        "SVC_BACKUP_TO": str(root / "backups"),
    }
    server = Server(root / "data", env=env).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def keys(srv: Server) -> dict[str, str]:
    keys: dict[str, str] = srv.create_project("ops")["keys"]
    return keys


def scrape(srv: Server, **headers: str) -> Samples:
    return scrape_with(srv, TOKEN, **headers)


def test_the_figures_move_with_events_errors_and_reads(srv: Server, keys: dict[str, str]) -> None:
    before = scrape(srv)
    for name in (
        "svc_spool_backlog_events",
        "svc_spool_backlog_bytes",
        "svc_spool_oldest_waiting_seconds",
        "svc_loader_lag_seconds",
        "svc_quarantined_records",
        "svc_rollup_duration_seconds_count",
        "svc_store_probe_seconds",
        "svc_metadata_probe_seconds",
        "process_resident_memory_bytes",
    ):
        assert any(n == name for n, _ in before), f"{name} is not exposed"
    ua = {"User-Agent": BROWSER_UA}
    one = {"event": "page_view", "url": "https://ops.test/", "sessionId": "s1"}
    assert srv.send(keys["public"], one, headers=ua).status_code == 200
    batch = [{**one, "url": "/a"}, {**one, "url": "/b"}, {"event": "", "url": "/c"}]
    r = srv.send(keys["secret"], batch, headers=ua)
    assert r.status_code == 200 and r.json()["accepted"] == 2, r.text
    bad = srv.send(keys["public"], {"event": "page_view"}, headers=ua)  # no url: 400
    assert bad.status_code == 400
    bot = srv.send(keys["public"], one, headers={"User-Agent": "curl/8.4.0"})
    assert bot.status_code == 200
    reason = bot.headers["x-svc-dropped"]
    srv.wait_loaded()
    srv.metrics(keys["secret"], **{"from": "2020-01-01"})
    no_from = httpx.get(srv.url + "/metrics", headers={"Authorization": "Bearer " + keys["secret"]})
    assert no_from.status_code == 400
    assert httpx.get(srv.url + "/nope").status_code == 404
    assert httpx.get(srv.url + "/projects/svc_proj_nope", headers=srv.admin()).status_code == 404
    after = scrape(srv)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ingest = {"method": "POST", "route": "/analytics"}
    assert moved("svc_http_requests_total", **ingest, status="200") == 3
    assert moved("svc_http_requests_total", **ingest, status="400") == 1
    assert moved("svc_ingest_request_duration_seconds_count") == 3  # the 200s
    assert moved("svc_ingest_request_duration_seconds_bucket", le="+Inf") == 3
    assert moved("svc_ingest_request_duration_seconds_sum") > 0
    assert moved("svc_ingest_events_accepted_total") == 3
    assert moved("svc_ingest_events_rejected_total", code="invalid_request") == 2
    assert moved("svc_ingest_events_dropped_total", reason=reason) == 1
    assert moved("svc_loader_loaded_events_total") >= 3
    # the read: counted by route and status, timed by kind (its 400 counted, not timed)
    read = {"method": "GET", "route": "/metrics"}
    assert moved("svc_http_requests_total", **read, status="200") == 1
    assert moved("svc_http_requests_total", **read, status="400") == 1
    assert moved("svc_read_duration_seconds_count", kind="metrics") == 1
    assert moved("svc_read_duration_seconds_count", kind="breakdown") == 0
    # route templates, never raw paths
    assert moved("svc_http_requests_total", method="GET", route="unmatched", status="404") == 1
    project = {"method": "GET", "route": "/projects/{project_id}", "status": "404"}
    assert moved("svc_http_requests_total", **project) == 1
    assert not [labels for name, labels in after if ("route", "/nope") in labels]
    # everything loaded, nothing quarantined, both stores answer
    assert value(after, "svc_spool_backlog_events") == 0
    assert value(after, "svc_spool_oldest_waiting_seconds") == 0
    assert value(after, "svc_quarantined_records") == 0
    assert value(after, "svc_loader_failing") == 0
    assert value(after, "svc_store_up") == 1 and value(after, "svc_metadata_up") == 1
    assert value(after, "svc_metadata_lost") == 0 and value(after, "svc_ready") == 1
    assert value(after, "process_resident_memory_bytes") > 10_000_000
    assert value(after, "svc_rate_limited_requests_total", rule="ingest_ip") == 0


def test_openmetrics_on_request(srv: Server) -> None:
    r = httpx.get(
        srv.url + "/internal/metrics",
        headers={**SCRAPE, "Accept": "application/openmetrics-text; version=1.0.0"},
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.text.endswith("# EOF\n")


def test_the_metrics_want_the_token(srv: Server) -> None:
    url = srv.url + "/internal/metrics"
    missing = httpx.get(url)
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "missing_api_key"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrongs = ("Bearer " + TOKEN[:-1] + "y", "Bearer " + srv.admin_token, "Basic " + TOKEN)
    for wrong in (*wrongs, "Bearer", TOKEN):
        r = httpx.get(url, headers={"Authorization": wrong})
        assert r.status_code == 401, wrong
        # docs/api.md: a malformed or wrong credential is invalid, only none is missing
        assert r.json()["error"]["code"] == "invalid_api_key", wrong
        assert r.headers["www-authenticate"].startswith("Bearer"), wrong
        assert "svc_http_requests" not in r.text  # nothing of the figures
    assert httpx.get(url, headers=SCRAPE).status_code == 200


def test_without_a_token_the_path_does_not_exist(server: Server) -> None:
    r = httpx.get(server.url + "/internal/metrics", headers=SCRAPE)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_a_short_token_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SVC_INTERNAL_METRICS_TOKEN"):
        create_app(Settings(data_dir=tmp_path, internal_metrics_token="short"))


def test_every_metric_the_operations_guide_names_is_exposed(srv: Server) -> None:
    """docs/operations.md (its table, scrape config and alerts) names only real metrics."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text()
    named = set(re.findall(r"\b(svc_[a-z_]+[a-z])\b", doc))
    exposed = {name for name, _ in scrape(srv)}
    missing = {name for name in named if name not in exposed and f"{name}_count" not in exposed}
    assert len(named) > 40 and not missing, sorted(missing)


def test_the_example_alert_rules_name_only_exposed_metrics(srv: Server) -> None:
    """examples/prometheus/svc-alerts.yml (docs/operations.md, Alerts) reads real metrics:
    each name in its expressions, less a histogram's or summary's suffix, is scraped."""
    rules = Path(__file__).resolve().parent.parent / "examples" / "prometheus" / "svc-alerts.yml"
    named = set(re.findall(r"\b((?:svc|process)_[a-z_]+[a-z])\b", rules.read_text()))
    exposed = {name for name, _ in scrape(srv)}
    bare = {re.sub(r"_(bucket|count|sum)$", "", name) for name in named}
    missing = {n for n in bare if n not in exposed and f"{n}_count" not in exposed}
    assert len(bare) >= 15 and not missing, sorted(missing)


def test_signed_edge_headers_that_do_not_verify_are_counted(
    srv: Server, keys: dict[str, str]
) -> None:
    """svc_edge_signed_requests_total (svc.http.edge_auth): this origin knows no edge secret,
    so a signed request is served as unsigned and counted refused."""
    before = value(scrape(srv), "svc_edge_signed_requests_total", result="refused")
    r = httpx.post(
        srv.url + "/analytics",
        json={"event": "page_view", "url": "/edge"},
        headers={
            "authorization": f"Bearer {keys['public']}",
            "user-agent": BROWSER_UA,
            "x-svc-edge-ip": "81.2.69.160",
            "x-svc-edge-ts": "1",
            "x-svc-edge-signature": "v1=00",
        },
    )
    assert r.status_code == 200, r.text
    after = scrape(srv)
    assert value(after, "svc_edge_signed_requests_total", result="refused") == before + 1
    assert ("svc_edge_signed_requests_total", frozenset({("result", "out_of_scope")})) in after
