"""Monthly quotas through the real server: exact at the boundary under concurrent senders,
nothing stored past it, reading still allowed, durable across a restart, changed by the admin
through PATCH /projects/{id}."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import httpx

from tests.limits.helpers import event, patch_project, post, server, usage


def assert_quota_exceeded(r: httpx.Response) -> None:
    assert r.status_code == 429, r.text
    assert r.json()["error"]["code"] == "quota_exceeded"
    assert 1 <= int(r.headers["Retry-After"]) <= 31 * 86400
    assert r.headers["Svc-Quota-Warning"].startswith("100% of ")


def test_concurrent_senders_store_exactly_the_quota_and_nothing_more(tmp_path: Path) -> None:
    srv = server(tmp_path / "data")
    try:
        p = srv.create_project("exact")
        pid, key, secret = p["id"], p["keys"]["public"], p["keys"]["secret"]
        quota = 257
        r = patch_project(srv, pid, {"options": {"monthlyQuota": quota}})
        assert r.status_code == 200 and r.json()["options"]["monthlyQuota"] == quota
        accepted: list[int] = []
        refusals: list[httpx.Response] = []
        lock = threading.Lock()

        def sender(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client() as client:
                for i in range(40):
                    n = rng.choice([1, 1, 2, 5, 9])
                    body = event(i) if n == 1 else [event(i * 10 + j) for j in range(n)]
                    r = post(srv, key, body, client=client)
                    with lock:
                        if r.status_code == 200:
                            accepted.append(r.json().get("accepted", 1))
                        else:
                            refusals.append(r)

        threads = [threading.Thread(target=sender, args=(s,)) for s in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(accepted) == quota  # exact at the boundary
        assert refusals, "the senders should have gone past the quota"
        for r in refusals:
            assert_quota_exceeded(r)
        srv.wait_loaded()
        assert len(srv.events(pid, secret)) == quota  # nothing past it was stored
        u = usage(srv, pid)
        assert u["events"] == quota and u["quota"] == quota and u["exceeded"] is True
        assert u["quotaSource"] == "project" and u["remaining"] == 0
        # reading stays allowed
        assert srv.metrics(secret, **{"from": "2000-01-01"})["pageviews"] == quota
        health = srv.health()["limits"]["quota"]
        assert health["projectsAtQuota"] == 1 and health["eventsCounted"] >= quota
        # still refused after a restart: the count is rebuilt from the store
        srv.stop()
        srv.start()
        assert_quota_exceeded(post(srv, key, event()))
        assert usage(srv, pid)["events"] == quota
        # a larger own quota lets events in again
        assert patch_project(srv, pid, {"options": {"monthlyQuota": quota + 1}}).status_code == 200
        assert post(srv, key, event()).status_code == 200
        assert_quota_exceeded(post(srv, key, event()))
    finally:
        srv.stop()


def test_a_batch_straddling_the_quota_stores_exactly_up_to_it(tmp_path: Path) -> None:
    srv = server(tmp_path / "data", SVC_MONTHLY_QUOTA="10")  # the free plan's quota
    try:
        p = srv.create_project("straddle")
        pid, key, secret = p["id"], p["keys"]["public"], p["keys"]["secret"]
        assert usage(srv, pid)["quota"] == 10
        r = post(srv, key, [event(i) for i in range(7)])
        assert r.json()["accepted"] == 7 and "Svc-Quota-Warning" not in r.headers
        # an invalid event takes no room
        r = post(srv, key, [event(7), {"event": "x"}, event(8), event(9), event(10), event(11)])
        body = r.json()
        assert r.status_code == 200 and body["accepted"] == 3
        rejected = {e["index"]: e["error"]["code"] for e in body["rejected"]}
        assert rejected == {1: "invalid_request", 4: "quota_exceeded", 5: "quota_exceeded"}
        assert r.headers["Svc-Quota-Warning"] == "100% of 10 events used this month"
        # now refused before the body is even read, single events and batches alike
        assert_quota_exceeded(post(srv, key, event()))
        assert_quota_exceeded(post(srv, key, [event(1), event(2)]))
        srv.wait_loaded()
        assert len(srv.events(pid, secret)) == 10
        assert srv.health()["limits"]["quota"]["requestsRefused"] >= 2
    finally:
        srv.stop()


def test_warning_header_from_80_percent(tmp_path: Path) -> None:
    srv = server(tmp_path / "data", SVC_MONTHLY_QUOTA="20")
    try:
        p = srv.create_project("warn")
        key = p["keys"]["public"]
        r = post(srv, key, [event(i) for i in range(15)])  # 75 %
        assert "Svc-Quota-Warning" not in r.headers
        r = post(srv, key, event())  # 16 of 20
        assert r.headers["Svc-Quota-Warning"] == "80% of 20 events used this month"
        r = post(srv, key, event())
        assert r.headers["Svc-Quota-Warning"] == "85% of 20 events used this month"
        assert "Svc-Quota-Warning" in r.headers["Access-Control-Expose-Headers"]
    finally:
        srv.stop()


def test_plans_and_own_quota_are_the_admins(tmp_path: Path) -> None:
    srv = server(tmp_path / "data", SVC_MONTHLY_QUOTA="3", SVC_PLANS="pro=5,unlimited=0")
    try:
        p = srv.create_project("plans")
        pid, key, secret = p["id"], p["keys"]["public"], p["keys"]["secret"]
        assert post(srv, key, [event(i) for i in range(4)]).json()["accepted"] == 3
        assert_quota_exceeded(post(srv, key, event()))
        # a project's secret key may not change its plan or its own quota
        assert patch_project(srv, pid, {"plan": "pro"}, secret).status_code == 403
        r = patch_project(srv, pid, {"options": {"monthlyQuota": 1000}}, secret)
        assert r.status_code == 403
        r = patch_project(srv, pid, {"plan": "platinum"})
        assert r.status_code == 400 and r.json()["error"]["field"] == "plan"
        r = patch_project(srv, pid, {"options": {"monthlyQuota": -5}})
        assert r.status_code == 400 and r.json()["error"]["field"] == "options.monthlyQuota"
        # the admin moves it to pro: 2 more this month
        assert patch_project(srv, pid, {"plan": "pro"}).json()["plan"] == "pro"
        assert post(srv, key, [event(i) for i in range(3)]).json()["accepted"] == 2
        u = usage(srv, pid)
        assert (u["plan"], u["quota"], u["events"], u["quotaSource"]) == ("pro", 5, 5, "plan")
        # an own limit wins over the plan; a secret key's options change keeps it
        assert patch_project(srv, pid, {"options": {"monthlyQuota": 6}}).status_code == 200
        r = patch_project(srv, pid, {"options": {"excludePaths": ["/admin/*"]}}, secret)
        assert r.status_code == 200, r.text
        assert r.json()["options"] == {"excludePaths": ["/admin/*"], "monthlyQuota": 6}
        assert post(srv, key, event()).status_code == 200
        assert_quota_exceeded(post(srv, key, event()))
        # null goes back to the plan; the unlimited plan has no quota at all
        r = patch_project(srv, pid, {"plan": "unlimited", "options": {"monthlyQuota": None}})
        assert r.status_code == 200 and "monthlyQuota" not in r.json()["options"]
        assert post(srv, key, [event(i) for i in range(50)]).json()["accepted"] == 50
        u = usage(srv, pid)
        assert u["unlimited"] is True and u["quota"] is None and u["events"] == 56
    finally:
        srv.stop()
