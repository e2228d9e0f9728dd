"""Data-centre addresses and refused requests in what was dropped (issue 42, item 5).

Against a real server: with ``SVC_DATACENTRE_RANGES``, events from an address in the list
(the client's as a trusted proxy forwards it or an edge signs it, or one a server-side sender
passes on) are dropped as ``data_centre``, counted and sampled without the address; an
address outside is stored, an unsigned edge address is not believed, a server-side sender's
own address is not judged, and a project that keeps data-centre traffic stores them. A
malformed list refuses the start naming its line. Requests to POST /analytics refused with
429 by the ingest rate limit or over the monthly quota are counted per project and UTC day
under ``refused`` (requests, not events).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from svc.ingestion.enrich.datacentres import RangesFileError, load_ranges
from svc.ingestion.service import IngestService
from svc.settings import Settings
from tests.edge.support import SECRET
from tests.edge.test_signed_headers import signed
from tests.support import BROWSER_UA, Server, is_error
from tests.test_openapi import _checker

RANGES = """\
# a test list: documentation ranges stand for the hosting networks
198.51.100.0/24
198.51.101.0/24   # adjacent: merged with the one above

2001:db8:dc::/48
"""
INSIDE = ("198.51.100.7", "198.51.101.200", "2001:db8:dc::5", "198.51.100.9", "198.51.100.33")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    where = tmp_path_factory.mktemp("dropped-refused")
    ranges = where / "datacentres.txt"
    ranges.write_text(RANGES)
    server = Server(
        where / "data",
        env={
            "SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.2",
            "SVC_DATACENTRE_RANGES": str(ranges),
            "SVC_TRUSTED_PROXIES": "127.0.0.1/32",  # X-Forwarded-For names the client
            "SVC_EDGE_SECRET": SECRET,  # and so do an edge's signed headers (docs/edge.md)
            "SVC_RATE_LIMIT_INGEST_PER_IP": "1/h:5",  # 5 requests per address and project
        },
    ).start()
    yield server
    server.stop()


def _send(
    srv: Server, key: str, forwarded: str, body: Any | None = None, **event: Any
) -> httpx.Response:
    headers = {"User-Agent": BROWSER_UA, "X-Forwarded-For": forwarded}
    payload = body if body is not None else {"event": "page_view", "url": "/pricing", **event}
    return srv.send(key, payload, headers=headers)


def _report_when(srv: Server, project_id: str, done: Any) -> dict[str, Any]:
    """The report once ``done(report)`` holds (recorded by the housekeeping every 0.2 s)."""
    deadline = time.monotonic() + 15
    while True:
        r = httpx.get(f"{srv.url}/projects/{project_id}/dropped", headers=srv.admin())
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        if done(body):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def _options(srv: Server, project_id: str, options: dict[str, Any]) -> httpx.Response:
    return httpx.patch(
        f"{srv.url}/projects/{project_id}", json={"options": options}, headers=srv.admin()
    )


def test_data_centre_addresses_are_dropped_counted_and_sampled(srv: Server) -> None:
    project = srv.create_project("dc")
    project_id, public, secret = project["id"], project["keys"]["public"], project["keys"]["secret"]
    sent = [  # (key, forwarded client address, event fields, reason)
        (public, "198.51.100.7", {}, "data_centre"),
        (public, "198.51.101.200", {}, "data_centre"),
        (public, "2001:db8:dc::5", {}, "data_centre"),
        (public, "192.0.2.44", {}, None),  # outside the list: stored
        (public, "2001:db8:dd::5", {}, None),
        # a server-side sender passes on its visitor's address: that one is checked
        (secret, "192.0.2.45", {"ip": "198.51.100.9"}, "data_centre"),
        (secret, "192.0.2.45", {"ip": "192.0.2.46"}, None),
        # a server-side sender's own address, in a data centre, is no reason to drop
        (secret, "198.51.100.8", {}, None),
    ]
    for key, forwarded, event, reason in sent:
        r = _send(srv, key, forwarded, **event)
        assert r.status_code == 200, r.text
        assert r.headers.get("x-svc-dropped") == reason, (forwarded, event)
    # an edge's signed client address is the one judged; an unsigned one is not believed
    content = json.dumps({"event": "page_view", "url": "/pricing"}).encode()
    for ip, reason in (("198.51.100.33", "data_centre"), ("192.0.2.48", None)):
        headers = signed(content, key=public, ip=ip)
        r = httpx.post(srv.url + "/analytics", content=content, headers=headers)
        assert r.status_code == 200 and r.headers.get("x-svc-dropped") == reason, (ip, r.text)
    forged = {"x-svc-edge-ip": "198.51.100.34", "x-svc-edge-signature": "v1=forged"}
    r = srv.send(
        public,
        {"event": "page_view", "url": "/pricing"},
        headers={"User-Agent": BROWSER_UA, "X-Forwarded-For": "192.0.2.49", **forged},
    )
    assert r.status_code == 200 and "x-svc-dropped" not in r.headers, r.headers

    body = _report_when(srv, project_id, lambda b: len(b["samples"]) >= 5)
    assert body["totals"]["data_centre"] == 5 and body["total"] == 5, body["totals"]
    assert body["days"][-1]["reasons"]["data_centre"] == 5
    assert [s["reason"] for s in body["samples"]] == ["data_centre"] * 5
    assert {s["path"] for s in body["samples"]} == {"/pricing"}
    assert {s["userAgent"] for s in body["samples"]} == {BROWSER_UA}
    text = json.dumps(body)
    assert not [a for a in INSIDE if a in text], text  # never an address
    check = _checker(httpx.get(srv.url + "/openapi.json").json())
    check("/projects/{project_id}/dropped", "get", httpx.get(
        f"{srv.url}/projects/{project_id}/dropped", headers={"Authorization": f"Bearer {secret}"}
    ))  # fmt: skip

    # a project that keeps data-centre traffic stores it
    assert _options(srv, project_id, {"keepDataCentres": True}).status_code == 200
    r = _send(srv, public, "198.51.100.17")
    assert r.status_code == 200 and "x-svc-dropped" not in r.headers, r.headers
    r = _send(srv, secret, "192.0.2.47", ip="2001:db8:dc::7")
    assert r.status_code == 200 and "x-svc-dropped" not in r.headers, r.headers
    got = httpx.get(f"{srv.url}/projects/{project_id}", headers=srv.admin())
    assert got.json()["options"]["keepDataCentres"] is True
    check("/projects/{project_id}", "get", got)
    assert _options(srv, project_id, {"keepDataCentres": False}).status_code == 200
    assert _send(srv, public, "198.51.100.18").headers.get("x-svc-dropped") == "data_centre"
    is_error(_options(srv, project_id, {"keepDataCentres": "yes"}), 400, "options.keepDataCentres")


def test_rate_limited_requests_are_counted_per_project_and_day(srv: Server) -> None:
    project = srv.create_project("limited")
    other = srv.create_project("not-limited")
    public = project["keys"]["public"]
    statuses = [_send(srv, public, "192.0.2.60").status_code for _ in range(8)]
    assert statuses == [200] * 5 + [429] * 3, statuses
    assert _send(srv, other["keys"]["public"], "192.0.2.60").status_code == 200  # its own bucket

    day = datetime.now(UTC).date().isoformat()
    body = _report_when(srv, project["id"], lambda b: b["refusedTotal"] >= 3)
    assert body["refusedTotals"] == {"rate_limit": 3, "quota": 0}, body
    assert body["refusedTotal"] == 3 and body["total"] == 0  # requests, not dropped events
    assert body["days"][-1]["date"] == day
    assert body["days"][-1]["refused"] == {"rate_limit": 3, "quota": 0}
    assert all(d["refused"] == {"rate_limit": 0, "quota": 0} for d in body["days"][:-1])
    assert body["samples"] == []  # no sample of a refused request
    time.sleep(0.5)  # two housekeeping rounds: the other project has nothing refused
    r = httpx.get(f"{srv.url}/projects/{other['id']}/dropped", headers=srv.admin())
    assert r.json()["refusedTotal"] == 0, r.text


def test_requests_over_the_quota_are_counted_once_each(srv: Server) -> None:
    project = srv.create_project("quota")
    project_id, public = project["id"], project["keys"]["public"]
    assert _options(srv, project_id, {"monthlyQuota": 3}).status_code == 200
    batch = [{"event": "page_view", "url": f"/p{i}"} for i in range(5)]
    r = _send(srv, public, "192.0.2.70", body=batch)  # 3 stored, 2 refused: one request
    assert r.status_code == 200 and r.json()["accepted"] == 3, r.text
    assert [e["error"]["code"] for e in r.json()["rejected"]] == ["quota_exceeded"] * 2
    for address in ("192.0.2.71", "192.0.2.72"):  # refused whole
        is_error(_send(srv, public, address), 429)
    body = _report_when(srv, project_id, lambda b: b["refusedTotal"] >= 3)
    assert body["refusedTotals"] == {"rate_limit": 0, "quota": 3}, body
    assert body["days"][-1]["refused"]["quota"] == 3 and body["total"] == 0


def test_a_malformed_ranges_file_refuses_the_start_naming_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "ranges.txt"
    bad.write_text("# hosting\n198.51.100.0/24\n198.51.100.0/33\n")
    with pytest.raises(RuntimeError) as failed:
        Server(tmp_path / "data", env={"SVC_DATACENTRE_RANGES": str(bad)}).start()
    message = str(failed.value)
    assert "exited with 2" in message and f"{bad}, line 3" in message, message
    assert "198.51.100.0/33" in message
    with pytest.raises(RangesFileError, match="cannot read"):
        load_ranges(tmp_path / "missing.txt")


def test_ranges_are_merged_and_looked_up_by_bisection(tmp_path: Path) -> None:
    path = tmp_path / "ranges.txt"
    path.write_text(RANGES + "203.0.113.4\n203.0.113.0/30\n10.0.0.0/8\n10.1.0.0/16\n")
    ranges = load_ranges(path)
    assert ranges.count == 4  # 198.51.100-101 in one, 203.0.113.0-4 in one, 10/8, the IPv6
    inside = ["198.51.100.0", "198.51.101.255", "203.0.113.3", "203.0.113.4", "10.255.0.1"]
    inside += ["2001:db8:dc::1", "[2001:db8:dc::1]", "2001:db8:dc:0:1::%eth0", "::ffff:10.1.2.3"]
    outside = ["198.51.102.0", "198.51.99.255", "203.0.113.5", "11.0.0.0", "2001:db8:dd::1"]
    outside += ["", "junk", "::ffff:192.0.2.1", "0.0.0.0", "ffff:ffff::1"]
    assert [a for a in inside if not ranges.contains(a)] == []
    assert [a for a in outside if ranges.contains(a)] == []


def test_without_a_list_the_pipeline_has_no_such_step(tmp_path: Path) -> None:
    """No cost for accepted events when no list is configured: the step is not run at all."""
    from svc.ingestion.identity import Salts

    salts = Salts(lambda days: {d: b"s" * 16 for d in days})
    off = IngestService.build(Settings(data_dir=tmp_path), None, salts)  # type: ignore[arg-type]
    assert "drop_data_centres" not in dict(off.pipeline.steps)
    path = tmp_path / "ranges.txt"
    path.write_text(RANGES)
    on = IngestService.build(
        Settings(data_dir=tmp_path, datacentre_ranges=str(path)),
        None,  # type: ignore[arg-type]
        salts,
    )
    names = [name for name, _ in on.pipeline.steps]
    assert names.index("drop_bots") < names.index("drop_data_centres") < names.index("locate")
