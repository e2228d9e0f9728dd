"""GET /health: readiness and diagnostics, no credential, nothing secret."""

from __future__ import annotations

import httpx

from tests.support import Server


def test_health_reports_pipeline_stores_and_node(server: Server) -> None:
    r = httpx.get(server.url + "/health")
    assert r.status_code == 200
    body = r.json()
    assert body["ready"] is True
    pipeline = body["pipeline"]
    for field in ("backlogEvents", "backlogBytes", "oldestWaitingMs", "dropped", "accepted"):
        assert field in pipeline
    assert body["store"]["reachable"] is True and body["store"]["kind"] == "chdb"
    assert isinstance(body["store"]["latencyMs"], float)
    assert body["metadata"]["reachable"] is True and body["metadata"]["kind"] == "sqlite"
    node = body["node"]
    assert node["version"] and node["uptimeSeconds"] >= 0 and node["memoryRssBytes"] > 0
    assert server.admin_token not in r.text and "svc_live_" not in r.text


def test_health_is_503_when_events_cannot_be_accepted(fresh_server: Server) -> None:
    srv = fresh_server
    srv.env["SVC_SPOOL_MAX_BACKLOG_BYTES"] = "0"
    srv.start(healthy=False)
    r = httpx.get(srv.url + "/health")
    assert r.status_code == 503
    assert r.json()["ready"] is False
