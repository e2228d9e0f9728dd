"""Two svc processes sharing one redis-server: the rate limits and the quota hold across them.

Each process has its own data directory (and so its own embedded event store): the tests
assert on the answers of both processes and on the counters in Redis, not on shared metrics.
A project of the same name has the same id on both, as it would with a shared metadata store.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from svc.limits.quota import current_month
from tests.limits.helpers import event, patch_project, post, server, usage
from tests.limits.test_rate_limits import bad_key
from tests.support import Server


@pytest.fixture
def pair(tmp_path: Path, redis_url: str, request: pytest.FixtureRequest) -> Iterator[list[Server]]:
    env: dict[str, str] = {"SVC_REDIS_URL": redis_url, **getattr(request, "param", {})}
    servers: list[Server] = []
    try:
        for name in ("a", "b"):
            servers.append(server(tmp_path / name / "data", **env))
        yield servers
    finally:
        for srv in servers:
            srv.stop()


def same_project(servers: list[Server], name: str) -> tuple[str, list[str]]:
    """The project on both processes: its id and each process's public key."""
    records = [srv.create_project(name) for srv in servers]
    assert records[0]["id"] == records[1]["id"]
    return records[0]["id"], [r["keys"]["public"] for r in records]


def test_the_quota_holds_across_processes(pair: list[Server], redis_url: str) -> None:
    pid, keys = same_project(pair, "shared-quota")
    quota = 150
    for srv in pair:
        assert patch_project(srv, pid, {"options": {"monthlyQuota": quota}}).status_code == 200
    accepted: list[int] = []
    codes: list[str] = []
    lock = threading.Lock()

    def sender(i: int) -> None:
        srv, key = pair[i % 2], keys[i % 2]
        with httpx.Client() as client:
            for j in range(30):
                n = (i + j) % 4 + 1
                body = event(j) if n == 1 else [event(j * 10 + k) for k in range(n)]
                r = post(srv, key, body, client=client)
                with lock:
                    if r.status_code == 200:
                        accepted.append(r.json().get("accepted", 1))
                    else:
                        codes.append(r.json()["error"]["code"])

    threads = [threading.Thread(target=sender, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == quota
    assert codes and set(codes) == {"quota_exceeded"}
    shared = redis.Redis.from_url(redis_url).get(f"svc:usage:{pid}:{current_month()}")
    assert int(shared or 0) == quota
    for srv, key in zip(pair, keys, strict=True):
        r = post(srv, key, event())
        assert r.status_code == 429 and r.json()["error"]["code"] == "quota_exceeded"
        assert usage(srv, pid)["events"] == quota  # each shows the shared count
    # each process stored its own share, together exactly the quota
    stored = 0
    for srv in pair:
        srv.wait_loaded()
        stored += srv.health()["pipeline"]["accepted"]
    assert stored == quota
    limits = pair[0].health()["limits"]
    assert limits["backend"] == "redis" and limits["redis"]["reachable"] is True


@pytest.mark.parametrize(
    "pair",
    [
        {
            "SVC_RATE_LIMIT_INGEST_PER_PROJECT": "0.2:6",
            "SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP": "0.2:4",
        }
    ],
    indirect=True,
)
def test_rate_limits_hold_across_processes(pair: list[Server], redis_url: str) -> None:
    pid, keys = same_project(pair, "shared-rate")
    codes = [post(pair[i % 2], keys[i % 2], event(i)).status_code for i in range(10)]
    assert codes[:6] == [200] * 6 and set(codes[6:]) == {429}
    r = post(pair[1], keys[1], event())
    assert r.status_code == 429 and r.headers["RateLimit-Limit"] == "6"
    assert "SVC_RATE_LIMIT_INGEST_PER_PROJECT" in r.json()["error"]["message"]
    assert redis.Redis.from_url(redis_url).exists(f"svc:rl:ingest_project:{pid}")
    # failed authentications from one address count on both processes together
    failures = [post(pair[i % 2], bad_key(), event()).status_code for i in range(4)]
    assert failures == [401] * 4
    for srv in pair:
        r = post(srv, bad_key(), event())
        assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
    refused = sum(srv.health()["limits"]["rateLimited"]["ingest_project"] for srv in pair)
    assert refused >= 4
