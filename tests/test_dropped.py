"""What the bot filter and the project's exclusions dropped, per project (issue 42, item 5).

Against a real server: events dropped for each reason the pipeline has (a bot's user agent,
an excluded address, path or host name, a repeated eventId) are counted per UTC day and
reason in GET /projects/{id}/dropped, with samples of them that hold no address; the samples
are bounded per day and per reason across a restart; only the project's managers may read
it; a deleted project's counts go with it; samples are pruned after 3 days.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from svc.ingestion.dropped import REASONS
from svc.ingestion.identity import Salts
from svc.ingestion.pipeline import RequestContext
from svc.ingestion.service import IngestService
from svc.ingestion.wire import validate_event
from svc.meta import dropped
from svc.meta.dropped import SAMPLE_KEEP_MS, SAMPLES_PER_DAY, SAMPLES_PER_REASON
from svc.meta.store import MetaStore, Project
from svc.settings import Settings
from tests.support import BROWSER_UA, Server, is_error
from tests.test_meta_store import postgres_url
from tests.test_openapi import _checker

LONG_UA = "curl/8.5.0 " + "x" * 600  # an HTTP library's, past the 256 kept
ADDRESSES = ("203.0.113.9", "203.0.113.10", "8.8.8.8", "52.94.236.248", "127.0.0.1")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(
        tmp_path_factory.mktemp("dropped") / "data",
        env={"SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.2"},
    ).start()
    yield server
    server.stop()


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def _report(srv: Server, project_id: str, token: str, **params: str) -> httpx.Response:
    return httpx.get(
        f"{srv.url}/projects/{project_id}/dropped",
        params=params,
        headers={"Authorization": f"Bearer {token}"},
    )


def _wait_for(srv: Server, project_id: str, total: int, samples: int) -> dict[str, Any]:
    """The report once it counts ``total`` events and ``samples`` samples (recorded by the
    housekeeping every 0.2 s)."""
    deadline = time.monotonic() + 15
    while True:
        r = _report(srv, project_id, srv.admin_token)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        if body["total"] >= total and len(body["samples"]) >= samples:
            assert body["total"] == total, body["totals"]
            assert len(body["samples"]) == samples, body["samples"]
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def _send(srv: Server, key: str, event: dict[str, Any], ua: str | None = BROWSER_UA) -> str | None:
    """Send one event; the reason it was dropped for, or None when accepted."""
    headers = {"User-Agent": ua} if ua is not None else {}
    r = srv.send(key, {"event": "page_view", "sessionId": "s", **event}, headers=headers)
    assert r.status_code == 200, r.text
    return r.headers.get("x-svc-dropped")


def test_drops_are_counted_per_day_and_reason_with_samples_without_addresses(
    srv: Server,
) -> None:
    project = srv.create_project("drops", domains=["mine.test"])
    project_id, public, secret = project["id"], project["keys"]["public"], project["keys"]["secret"]
    options = {
        "excludeAddresses": ["203.0.113.0/24"],
        "excludePaths": ["/admin/*"],
        "onlyOwnDomains": True,
    }
    r = httpx.patch(
        f"{srv.url}/projects/{project_id}", json={"options": options}, headers=srv.admin()
    )
    assert r.status_code == 200, r.text
    day = _today()
    page = "https://mine.test/pricing?utm_source=x&email=a@b.test"
    referrer = "https://news.example.org/story?id=1"
    sent = [  # (key, event, user agent header, reason)
        (public, {"url": page, "referrer": referrer}, LONG_UA, "http_library"),
        (public, {"url": page}, "Mozilla/5.0 HeadlessChrome/126.0", "headless"),
        (public, {"url": page}, "Googlebot/2.1 (+http://www.google.com/bot.html)", "bot"),
        (public, {"url": page}, "-", "missing_user_agent"),
        # a server-side sender passes on its visitor's user agent and address
        (secret, {"url": page, "userAgent": "curl/8.0", "ip": "8.8.8.8"}, None, "http_library"),
        (secret, {"url": page, "ip": "203.0.113.9"}, BROWSER_UA, "excluded_address"),
        (secret, {"url": page, "ip": "203.0.113.10"}, BROWSER_UA, "excluded_address"),
        (public, {"url": "https://mine.test/admin/users"}, BROWSER_UA, "excluded_path"),
        (public, {"url": "https://elsewhere.test/"}, BROWSER_UA, "foreign_hostname"),
        (public, {"url": page, "eventId": "e-1"}, BROWSER_UA, None),
        (public, {"url": page, "eventId": "e-1"}, BROWSER_UA, "duplicate_event_id"),
        # a data centre's address (AWS) without SVC_DATACENTRE_RANGES: stored, not counted
        # (with it: tests/test_dropped_refused.py)
        (secret, {"url": page, "ip": "52.94.236.248"}, BROWSER_UA, None),
        (public, {"url": page}, BROWSER_UA, None),
    ]
    for key, event, ua, reason in sent:
        assert _send(srv, key, event, ua) == reason, (event, ua)
    want = Counter(reason for *_, reason in sent if reason is not None)

    body = _wait_for(srv, project_id, sum(want.values()), sum(want.values()))
    assert body["to"] == day and len(body["days"]) == 30, body["days"]
    assert body["days"][-1] == {
        "date": day,
        "reasons": {r: want[r] for r in REASONS},
        "refused": {"rate_limit": 0, "quota": 0},  # requests (tests/test_dropped_refused.py)
    }
    assert all(not any(d["reasons"].values()) for d in body["days"][:-1])
    assert body["totals"] == {r: want[r] for r in REASONS}
    assert Counter(s["reason"] for s in body["samples"]) == want
    # every sample: its time, the path without its query, the referrer's host, the country
    times = [s["time"] for s in body["samples"]]
    assert times == sorted(times, reverse=True) and all(t.startswith(day) for t in times)
    assert {s["path"] for s in body["samples"]} == {"/pricing", "/admin/users", "/"}
    long = [s for s in body["samples"] if s["userAgent"].startswith("curl/8.5.0")]
    assert [s["userAgent"] for s in long] == [LONG_UA[:256]]
    assert long[0]["referrerHost"] == "news.example.org" and long[0]["path"] == "/pricing"
    passed_on = [s for s in body["samples"] if s["userAgent"] == "curl/8.0"]
    assert [s["country"] for s in passed_on] == ["US"]  # 8.8.8.8's, the address not kept
    excluded = [s for s in body["samples"] if s["reason"] == "excluded_address"]
    assert [s["country"] for s in excluded] == [None, None]  # a documentation range
    # no address anywhere: neither the sender's nor the ones passed on
    text = json.dumps(body)
    assert not [a for a in ADDRESSES if a in text], text
    assert "email" not in text and "a@b.test" not in text
    # the answer is the documented one
    check = _checker(httpx.get(srv.url + "/openapi.json").json())
    check("/projects/{project_id}/dropped", "get", _report(srv, project_id, secret))
    check("/projects/{project_id}/dropped", "get", _report(srv, project_id, public))
    # a range of days
    r = _report(srv, project_id, secret, **{"from": day, "to": day})
    assert r.status_code == 200 and r.json()["days"] == [body["days"][-1]], r.text
    r = _report(srv, project_id, secret, **{"from": "2020-01-01", "to": "2020-01-02"})
    assert r.json()["total"] == 0 and r.json()["samples"] == [] and len(r.json()["days"]) == 2
    is_error(_report(srv, project_id, secret, **{"from": day, "to": "2020-01-01"}), 400, "to")
    is_error(_report(srv, project_id, secret, **{"from": "yesterday"}), 400, "from")
    is_error(_report(srv, project_id, secret, **{"from": "2020-01-01"}), 400, "from")  # > 400


def test_only_the_projects_managers_read_what_was_dropped(srv: Server) -> None:
    project = srv.create_project("drops-rights")
    other = srv.create_project("drops-other")
    project_id = project["id"]
    r = httpx.post(
        f"{srv.url}/projects/{project_id}/keys", json={"kind": "share"}, headers=srv.admin()
    )
    assert r.status_code == 201, r.text
    share = r.json()["key"]
    assert _report(srv, project_id, project["keys"]["secret"]).status_code == 200
    assert _report(srv, project_id, srv.admin_token).status_code == 200
    is_error(_report(srv, project_id, project["keys"]["public"]), 403)
    is_error(_report(srv, project_id, share), 403)
    is_error(_report(srv, project_id, other["keys"]["secret"]), 403)
    assert _report(srv, project_id, "svc_live_" + "x" * 32).status_code == 401
    is_error(_report(srv, "svc_proj_none", srv.admin_token), 404)


def test_samples_are_bounded_per_day_and_reason_across_a_restart(
    tmp_path: Path,
) -> None:
    srv = Server(tmp_path / "data", env={"SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.2"}).start()
    try:
        project = srv.create_project("bounded", domains=["mine.test"])
        project_id, public = project["id"], project["keys"]["public"]
        r = httpx.patch(
            f"{srv.url}/projects/{project_id}",
            json={"options": {"excludePaths": ["/admin/*"]}},
            headers=srv.admin(),
        )
        assert r.status_code == 200, r.text
        kinds = [  # (user agent, url, reason), 30 of each, one reason after the other
            ("curl/8.0", "/", "http_library"),
            ("Mozilla/5.0 HeadlessChrome/126.0", "/", "headless"),
            ("Googlebot/2.1 (+http://www.google.com/bot.html)", "/", "bot"),
            ("-", "/", "missing_user_agent"),
            (BROWSER_UA, "/admin/x", "excluded_path"),
        ]
        for ua, path, reason in kinds:
            body = [{"event": "page_view", "url": "https://mine.test" + path}] * 30
            r = srv.send(public, body, headers={"User-Agent": ua})
            assert r.status_code == 200 and r.json()["dropped"] == 30, (reason, r.text)
        body = _wait_for(srv, project_id, 150, SAMPLES_PER_DAY)
        taken = Counter(s["reason"] for s in body["samples"])
        assert taken == {r: SAMPLES_PER_REASON for _, _, r in kinds[:4]}, taken
        assert body["totals"]["excluded_path"] == 30

        srv.stop()  # the counts add up over a restart; the samples stay bounded
        srv.start()
        for ua, path, reason in kinds[3:]:
            r = srv.send(
                public, [{"event": "page_view", "url": "https://mine.test" + path}] * 10,
                headers={"User-Agent": ua},
            )  # fmt: skip
            assert r.status_code == 200 and r.json()["dropped"] == 10, (reason, r.text)
        body = _wait_for(srv, project_id, 170, SAMPLES_PER_DAY)
        assert body["totals"]["missing_user_agent"] == 40
        assert body["totals"]["excluded_path"] == 40
        assert Counter(s["reason"] for s in body["samples"]) == taken

        # a deleted project's counts and samples go with it
        r = httpx.delete(f"{srv.url}/projects/{project_id}", headers=srv.admin())
        assert r.status_code == 200, r.text
        again = srv.create_project("bounded")
        assert again["id"] == project_id
        r = _report(srv, project_id, again["keys"]["secret"])
        assert r.json()["total"] == 0 and r.json()["samples"] == [], r.text
    finally:
        srv.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def meta(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetaStore]:
    """A fresh metadata store of each kind."""
    if request.param == "sqlite":
        store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    else:
        store = MetaStore(postgres_url())
        with store.engine.begin() as conn:
            conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    store.migrate()
    yield store
    store.close()


def test_counts_add_up_and_samples_are_pruned_three_days_after_receipt(meta: MetaStore) -> None:
    meta.create_project("prune")
    project_id = "svc_proj_prune"
    now = int(time.time() * 1000)

    def sample(at_ms: int, reason: str = "bot") -> dropped.DroppedSample:
        day = datetime.fromtimestamp(at_ms / 1000, UTC).date().isoformat()
        return dropped.DroppedSample(project_id, day, at_ms, reason, "ua", "/", "", "")

    old, recent = now - SAMPLE_KEEP_MS - 1, now - SAMPLE_KEEP_MS + 60_000
    dropped.record(meta, {(project_id, "2020-01-01", "bot"): 2}, [sample(old), sample(recent)])
    dropped.record(meta, {(project_id, "2020-01-01", "bot"): 3}, [])  # added, not replaced
    dropped.record(meta, {("svc_proj_gone", "2020-01-01", "bot"): 3}, [])  # no such project
    recorder = dropped.DroppedRecorder(meta)
    assert recorder.prune_if_due(now) == 1
    assert recorder.prune_if_due(now + 1) == 0  # at most hourly
    first = datetime(2020, 1, 1).date()
    report = dropped.read(meta, project_id, first, first, REASONS)
    assert report.to_json()["totals"]["bot"] == 5
    assert dropped.read(meta, "svc_proj_gone", first, first, REASONS).to_json()["total"] == 0
    left = []
    for days_back in range(4):
        d = datetime.fromtimestamp((now - days_back * 86_400_000) / 1000, UTC).date()
        left += dropped.read(meta, project_id, d, d, REASONS).samples
    assert [s.at_ms for s in left] == [recent]


def test_what_could_not_be_recorded_is_given_back_and_recorded_once(tmp_path: Path) -> None:
    """The housekeeping takes the counts, and gives them back when the store failed: the next
    take has them, once; a deleted project's are forgotten."""
    service = IngestService.build(
        Settings(data_dir=tmp_path), None, Salts(lambda days: {d: b"s" * 16 for d in days})
    )  # no spool: nothing is stored
    pipeline, drops = service.pipeline, service.drops
    now = int(time.time() * 1000)
    day = datetime.fromtimestamp(now / 1000, UTC).date().isoformat()
    for name in ("a", "b"):
        project = Project(f"svc_proj_{name}", name, "UTC", (), "free", {})
        ctx = RequestContext(project, "public", "192.0.2.1", "curl/8.0", None, now)
        for _ in range(7):
            raw = validate_event({"event": "page_view", "url": "/x?k=v"}, now)
            draft = pipeline.draft(raw, ctx)
            reason = pipeline.run(draft)
            assert reason is not None
            drops.add(draft, reason, pipeline)
    counts, samples = drops.take()
    assert counts == {
        ("svc_proj_a", day, "http_library"): 7,
        ("svc_proj_b", day, "http_library"): 7,
    }
    assert len(samples) == 2 * SAMPLES_PER_REASON
    assert drops.take() == ({}, [])  # taken once
    drops.give_back(counts, samples)  # the store failed
    drops.forget_project("svc_proj_b")
    again, kept = drops.take()
    assert again == {("svc_proj_a", day, "http_library"): 7}
    assert [s.project_id for s in kept] == ["svc_proj_a"] * SAMPLES_PER_REASON
    assert {(s.path, s.user_agent, s.country) for s in kept} == {("/x", "curl/8.0", "")}
