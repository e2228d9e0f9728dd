"""The raw-event lake (svc.lake) against a real S3-compatible server (moto, started here) and
a local directory: each finished UTC day of each project as Parquet, the same rows as GET
/export for that day, the same bytes when written again, written again after a late event."""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from svc.lake.expiry import expire_days
from svc.lake.places import Place, S3Access, open_place
from svc.lake.writer import day_prefix
from tests.s3_server import KEY_ID, REGION, SECRET, S3Server, s3_server
from tests.support import BROWSER_UA, Server, is_error

TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
D1, D2 = TODAY - timedelta(days=3), TODAY - timedelta(days=2)
BUCKET = "svc-lake"


def at(day: datetime, hour: int, minute: int = 0) -> int:
    return int((day + timedelta(hours=hour, minutes=minute)).timestamp() * 1000)


def event(ts: int, n: int, **extra: Any) -> dict[str, Any]:
    return {
        "event": "signup" if n % 4 == 0 else "page_view",
        "url": f"https://lake.test/p{n % 3}?utm_source=news",
        "referrer": "https://www.google.com/" if n % 2 else "",
        "ts": ts,
        "sessionId": f"s{n % 5}",
        "eventId": f"e{n}",
        "properties": {"n": str(n), "plan": "pro"} if n % 3 == 0 else {},
        **extra,
    }


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        server.bucket(BUCKET)
        yield server


@pytest.fixture(scope="module")
def lake_server(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "SVC_LAKE_URL": f"s3://{BUCKET}/events",
        **s3.env("LAKE"),
        "SVC_LAKE_SETTLE_SECONDS": "0",
        "SVC_LAKE_INTERVAL_SECONDS": "0.3",
    }
    srv = Server(tmp_path_factory.mktemp("lake") / "data", env=env).start()
    yield srv
    srv.stop()


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def export_rows(srv: Server, secret: str, day: datetime) -> pa.Table:
    r = httpx.get(
        srv.url + "/export",
        params={"from": day.date().isoformat(), "to": day.date().isoformat(), "format": "parquet"},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return pq.read_table(io.BytesIO(r.content))


def rows_of(table: pa.Table) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in table.to_pylist())


def day_keys(project_id: str, day: datetime) -> tuple[str, str]:
    prefix = f"events/project={project_id}/day={day.date().isoformat()}/"
    return prefix + "events.parquet", prefix + "manifest.json"


def test_days_in_s3_match_the_export_are_idempotent_and_follow_late_events(
    lake_server: Server, s3: S3Server
) -> None:
    srv = lake_server
    project = srv.create_project("lake-s3")
    pid, secret = project["id"], project["keys"]["secret"]
    d1 = [event(at(D1, h, n), n) for n, h in enumerate([0, 3, 3, 9, 12, 23])]
    d2 = [event(at(D2, h), 100 + n) for n, h in enumerate([1, 5, 22])]
    today = [event(int(time.time() * 1000) - 1000, 200)]  # not over: not written
    r = srv.send(secret, d1 + d2 + today, headers={"User-Agent": BROWSER_UA})
    assert r.json()["accepted"] == 10, r.text
    srv.wait_loaded()

    def manifest(day: datetime) -> dict[str, Any] | None:
        data = s3.get(BUCKET, day_keys(pid, day)[1])
        return json.loads(data) if data else None

    m1 = wait_for(lambda: manifest(D1), "day 1 in the lake")
    m2 = wait_for(lambda: manifest(D2), "day 2 in the lake")
    for day, m, n in ((D1, m1, 6), (D2, m2, 3)):
        data = s3.get(BUCKET, day_keys(pid, day)[0])
        assert data is not None
        assert m["rows"] == n and m["bytes"] == len(data)
        assert m["sha256"] == hashlib.sha256(data).hexdigest()
        assert m["schemaVersion"] == 1 and m["project"] == pid
        assert m["timeRange"]["from"] == day.strftime("%Y-%m-%dT00:00:00.000Z")
        table = pq.read_table(io.BytesIO(data))
        exported = export_rows(srv, secret, day)
        assert table.schema.equals(exported.schema), (table.schema, exported.schema)
        assert rows_of(table) == rows_of(exported)
        assert table.column("ts_ms").to_pylist() == sorted(table.column("ts_ms").to_pylist())
    assert s3.keys(BUCKET, f"events/project={pid}/") == sorted(
        [*day_keys(pid, D1), *day_keys(pid, D2)]
    )

    # written again by hand (svcm lake export): the same bytes, the same sha256
    first_bytes = s3.get(BUCKET, day_keys(pid, D1)[0])
    r = httpx.post(
        srv.url + "/internal/lake",
        json={"day": D1.date().isoformat(), "project": pid},
        headers=srv.admin(),
        timeout=60,
    )
    assert r.status_code == 200, r.text
    again = r.json()["written"]
    assert [m["sha256"] for m in again] == [m1["sha256"]]
    assert again[0]["receivedThroughMs"] > m1["receivedThroughMs"]
    assert s3.get(BUCKET, day_keys(pid, D1)[0]) == first_bytes

    # a late event of day 1: the day is written again with it, day 2 is left alone
    late = event(at(D1, 18), 7, eventId="late-1")
    assert srv.send(secret, late, headers={"User-Agent": BROWSER_UA}).status_code == 200
    srv.wait_loaded()
    m1b = wait_for(lambda: (m := manifest(D1)) and m["rows"] == 7 and m, "day 1 written again", 30)
    table = pq.read_table(io.BytesIO(s3.get(BUCKET, day_keys(pid, D1)[0]) or b""))
    assert "late-1" in table.column("event_id").to_pylist()
    assert m1b["sha256"] != m1["sha256"]
    assert rows_of(table) == rows_of(export_rows(srv, secret, D1))
    assert manifest(D2) == m2  # untouched

    health = srv.health()["lake"]
    assert health["url"] == f"s3://{BUCKET}/events"
    assert health["daysWritten"] >= 4 and health["failures"] == 0, health
    assert health["lastDayWritten"] == D2.date().isoformat()


def test_svcm_lake_export_and_bad_requests(lake_server: Server, server: Server) -> None:
    srv = lake_server
    project = srv.create_project("lake-cli")
    pid, secret = project["id"], project["keys"]["secret"]
    assert srv.send(secret, event(at(D2, 4), 1), headers={"User-Agent": BROWSER_UA}).json()["ok"]
    srv.wait_loaded()
    from tests.test_backup import svcm

    proc = svcm(
        "lake",
        "export",
        "--day",
        D2.date().isoformat(),
        "--project",
        pid,
        "--json",
        srv=srv,
        config=srv.data_dir.parent / "svcm.toml",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [(m["project"], m["rows"]) for m in doc["written"]] == [(pid, 1)]

    def post(body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.post(srv.url + "/internal/lake", json=body, headers=headers or srv.admin())

    is_error(post({}), 400, "day")
    is_error(post({"day": "2026-13-01"}), 400, "day")
    is_error(post({"day": TODAY.date().isoformat()}), 400, "day")
    is_error(post({"day": D2.date().isoformat(), "project": "svc_proj_nope"}), 400, "project")
    is_error(post({"day": D2.date().isoformat(), "colour": 1}), 400, "colour")
    r = post({"day": D2.date().isoformat()}, {"Authorization": f"Bearer {secret}"})
    assert is_error(r, 403)["error"]["code"] == "forbidden"
    r = httpx.post(
        server.url + "/internal/lake", json={"day": D2.date().isoformat()}, headers=server.admin()
    )
    assert is_error(r, 409)["error"]["code"] == "lake_not_configured"
    assert server.health()["lake"] is None


def test_a_lake_in_a_local_directory(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    env = {
        "SVC_LAKE_URL": str(lake),
        "SVC_LAKE_SETTLE_SECONDS": "0",
        "SVC_LAKE_INTERVAL_SECONDS": "0.3",
    }
    srv = Server(tmp_path / "data", env=env).start()
    try:
        project = srv.create_project("lake-dir")
        pid, secret = project["id"], project["keys"]["secret"]
        events = [event(at(D1, h), n) for n, h in enumerate([2, 7, 7, 20])]
        assert srv.send(secret, events, headers={"User-Agent": BROWSER_UA}).json()["ok"]
        srv.wait_loaded()
        day_dir = lake / f"project={pid}" / f"day={D1.date().isoformat()}"
        m = wait_for(
            lambda: (
                (day_dir / "manifest.json").exists()
                and json.loads((day_dir / "manifest.json").read_text())
            ),
            "the day in the directory",
        )
        data = (day_dir / "events.parquet").read_bytes()
        assert m["sha256"] == hashlib.sha256(data).hexdigest() and m["rows"] == 4
        assert rows_of(pq.read_table(io.BytesIO(data))) == rows_of(export_rows(srv, secret, D1))
        assert sorted(p.name for p in day_dir.iterdir()) == ["events.parquet", "manifest.json"]

        # a day the lake cannot take (a file where its directory goes) is counted as a
        # failure, said in /health, and written at a later pass once the lake takes it
        other = srv.create_project("lake-dir-blocked")
        blocker = lake / f"project={other['id']}"
        blocker.write_text("in the way")
        r = srv.send(
            other["keys"]["secret"], event(at(D2, 5), 1), headers={"User-Agent": BROWSER_UA}
        )
        assert r.status_code == 200
        srv.wait_loaded()
        health = wait_for(
            lambda: (h := srv.health()["lake"])["failures"] > 0 and h, "the failure in /health"
        )
        assert other["id"] in health["lastError"], health
        blocker.unlink()
        wait_for(
            lambda: (blocker / f"day={D2.date().isoformat()}" / "manifest.json").exists(),
            "the day written once the lake takes it",
        )
    finally:
        srv.stop()


def test_retention_deletes_the_days_before_a_horizon_in_a_bucket_and_a_directory(
    s3: S3Server, tmp_path: Path
) -> None:
    """svc.lake.expiry (the retention job's call, svc.retention.job): each project's days
    before its horizon go, manifest and file, a half-deleted one too; later days, other
    names and the projects not given stay; a second call finds nothing."""
    access = S3Access(s3.endpoint, KEY_ID, SECRET, REGION)
    july, aug1, aug2 = date(2026, 7, 31), date(2026, 8, 1), date(2026, 8, 2)
    horizons = {"svc_proj_a": aug1, "svc_proj_b": date(2026, 9, 1), "svc_proj_new": aug1}
    places: list[Place] = [open_place(f"s3://{BUCKET}/expiry", access), open_place(str(tmp_path))]
    for place in places:
        for pid in ("svc_proj_a", "svc_proj_b", "svc_proj_other"):
            for day in (july, aug1, aug2):
                place.put_bytes(day_prefix(pid, day) + "events.parquet", b"PAR1")
                place.put_bytes(day_prefix(pid, day) + "manifest.json", b"{}")
        half = day_prefix("svc_proj_a", date(2026, 6, 30)) + "events.parquet"
        place.put_bytes(half, b"PAR1")  # a day whose manifest went, its file not yet
        place.put_bytes("project=svc_proj_a/README", b"not a day")
        gone = expire_days(place, horizons)
        assert gone == [
            ("svc_proj_a", date(2026, 6, 30)),
            ("svc_proj_a", july),
            *(("svc_proj_b", day) for day in (july, aug1, aug2)),
        ], place.url
        assert place.keys("project=svc_proj_a/") == [
            "project=svc_proj_a/README",
            *(
                day_prefix("svc_proj_a", d) + f
                for d in (aug1, aug2)
                for f in ("events.parquet", "manifest.json")
            ),
        ]
        assert place.keys("project=svc_proj_b/") == []
        assert len(place.keys("project=svc_proj_other/")) == 6  # not given: left alone
        assert expire_days(place, horizons) == []
