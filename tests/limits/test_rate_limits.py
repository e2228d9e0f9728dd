"""Rate limits through the real server: a burst past each limit gets 429 with the headers, and
is served again once the bucket has refilled. Tiny limits come from the SVC_* settings."""

from __future__ import annotations

import secrets
import string
from pathlib import Path

import httpx

from tests.limits.helpers import assert_rate_limited, event, post, server, wait_out


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def bad_key() -> str:
    alphabet = string.ascii_letters + string.digits
    return "svc_live_" + "".join(secrets.choice(alphabet) for _ in range(32))


def test_ingest_per_address_and_project(tmp_path: Path) -> None:
    srv = server(
        tmp_path / "data",
        SVC_RATE_LIMIT_INGEST_PER_IP="0.5:3",
        SVC_TRUSTED_PROXIES="127.0.0.1/32",
    )
    try:
        p = srv.create_project("ingest-ip")
        q = srv.create_project("ingest-ip-other")
        key = p["keys"]["public"]
        codes = []
        for i in range(3):
            r = post(srv, key, event(i), address="203.0.113.7")
            codes.append(r.status_code)
            if i == 0:  # ingestion answers carry RateLimit-* once half the burst is used
                assert "RateLimit-Limit" not in r.headers
            else:
                assert r.headers["RateLimit-Limit"] == "3"
                assert r.headers["RateLimit-Remaining"] == str(2 - i)
        assert codes == [200, 200, 200]
        r = post(srv, key, event(9), address="203.0.113.7")
        retry = assert_rate_limited(r, 3, "SVC_RATE_LIMIT_INGEST_PER_IP")
        assert retry == 2  # one token every 2 s
        # another address, or the same address to another project: its own bucket
        assert post(srv, key, event(1), address="203.0.113.8").status_code == 200
        assert post(srv, q["keys"]["public"], event(1), address="203.0.113.7").status_code == 200
        # a batch is one request
        assert (
            post(srv, key, [event(i) for i in range(5)], address="198.51.100.1").json()["accepted"]
            == 5
        )
        wait_out(retry)
        assert post(srv, key, event(10), address="203.0.113.7").status_code == 200
        assert srv.health()["limits"]["rateLimited"]["ingest_ip"] >= 1
    finally:
        srv.stop()


def test_ingest_per_project_whatever_the_address(tmp_path: Path) -> None:
    srv = server(
        tmp_path / "data",
        SVC_RATE_LIMIT_INGEST_PER_PROJECT="0.5:4",
        SVC_TRUSTED_PROXIES="127.0.0.1/32",
    )
    try:
        p = srv.create_project("ingest-project")
        other = srv.create_project("ingest-project-other")
        key = p["keys"]["public"]
        codes = [post(srv, key, event(i), address=f"192.0.2.{i}").status_code for i in range(4)]
        assert codes == [200] * 4
        r = post(srv, key, event(5), address="192.0.2.99")
        retry = assert_rate_limited(r, 4, "SVC_RATE_LIMIT_INGEST_PER_PROJECT")
        assert post(srv, other["keys"]["public"], event(), address="192.0.2.1").status_code == 200
        wait_out(retry)
        assert post(srv, key, event(6), address="192.0.2.100").status_code == 200
    finally:
        srv.stop()


def test_reads_per_key(tmp_path: Path) -> None:
    srv = server(tmp_path / "data", SVC_RATE_LIMIT_READ_PER_KEY="0.5:3")
    try:
        p = srv.create_project("reads")
        secret = p["keys"]["secret"]
        r = httpx.post(
            srv.url + f"/projects/{p['id']}/keys", json={"kind": "secret"}, headers=srv.admin()
        )
        second = r.json()["key"]
        url = srv.url + "/metrics"
        params = {"from": "2024-01-01"}
        for i in range(3):
            r = httpx.get(url, params=params, headers=bearer(secret))
            assert r.status_code == 200, r.text
            assert r.headers["RateLimit-Remaining"] == str(2 - i)
        r = httpx.get(srv.url + "/metrics/timeseries", params=params, headers=bearer(secret))
        retry = assert_rate_limited(r, 3, "SVC_RATE_LIMIT_READ_PER_KEY")
        r = httpx.get(srv.url + "/export", params=params, headers=bearer(secret))
        assert r.status_code == 429  # /export counts as a read too
        assert httpx.get(url, params=params, headers=bearer(second)).status_code == 200
        wait_out(retry)
        assert httpx.get(url, params=params, headers=bearer(secret)).status_code == 200
    finally:
        srv.stop()


def test_project_management_per_credential(tmp_path: Path) -> None:
    srv = server(tmp_path / "data", SVC_RATE_LIMIT_MANAGE_PER_CREDENTIAL="0.5:3")
    try:
        p = srv.create_project("manage")  # the admin's first
        secret = p["keys"]["secret"]
        url = srv.url + f"/projects/{p['id']}"
        for _ in range(3):
            assert httpx.get(url, headers=bearer(secret)).status_code == 200
        r = httpx.get(url + "/keys", headers=bearer(secret))
        retry = assert_rate_limited(r, 3, "SVC_RATE_LIMIT_MANAGE_PER_CREDENTIAL")
        # the admin token has its own bucket (one used by the creation)
        assert httpx.get(url, headers=srv.admin()).status_code == 200
        assert httpx.get(srv.url + "/projects", headers=srv.admin()).status_code == 200
        assert_rate_limited(httpx.get(url, headers=srv.admin()), 3)
        # ingestion and reads are not project management
        assert post(srv, p["keys"]["public"], event()).status_code == 200
        wait_out(retry)
        assert httpx.get(url, headers=bearer(secret)).status_code == 200
    finally:
        srv.stop()


def test_a_flood_of_bad_keys_from_one_address(tmp_path: Path) -> None:
    srv = server(
        tmp_path / "data",
        SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP="0.5:3",
        SVC_TRUSTED_PROXIES="127.0.0.1/32",
    )
    try:
        p = srv.create_project("flood")
        key = p["keys"]["public"]
        flooder = "198.51.100.66"
        assert post(srv, key, event(), address=flooder).status_code == 200  # verified: cached
        for _ in range(3):
            r = post(srv, bad_key(), event(), address=flooder)
            assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        r = post(srv, bad_key(), event(), address=flooder)
        retry = assert_rate_limited(r, 3, "SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP")
        # every route, and no credential at all, once the address is over its failures
        r = httpx.get(srv.url + "/metrics", headers={"X-Forwarded-For": flooder})
        assert r.status_code == 429
        # a credential verified a moment ago still works from there; other addresses too
        assert post(srv, key, event(), address=flooder).status_code == 200
        assert post(srv, bad_key(), event(), address="198.51.100.67").status_code == 401
        wait_out(retry)
        assert post(srv, bad_key(), event(), address=flooder).status_code == 401
        assert srv.health()["limits"]["rateLimited"]["auth_failures_ip"] >= 2
    finally:
        srv.stop()


def test_zero_turns_limits_off_and_no_headers_are_sent(tmp_path: Path) -> None:
    srv = server(tmp_path / "data")  # every SVC_RATE_LIMIT_* = 0
    try:
        p = srv.create_project("unlimited")
        key = p["keys"]["public"]
        with httpx.Client() as client:
            codes = {post(srv, key, event(i), client=client).status_code for i in range(300)}
        assert codes == {200}
        r = post(srv, key, event())
        assert "RateLimit-Limit" not in r.headers
        rules = srv.health()["limits"]["rules"]
        assert not any(rule["enabled"] for rule in rules.values())
    finally:
        srv.stop()


def test_defaults_are_on_and_reported() -> None:
    """The default limits are on (documented in docs/limits.md) and shown in /health."""
    from svc.limits.core import Limits
    from svc.settings import Settings

    limits = Limits(Settings(), usage=_NoUsage())
    assert all(rule.enabled for rule in limits.rules.values())
    assert limits.rules["ingest_ip"].burst >= 100  # a browser never comes close
    assert limits.plans.quota("free") == 100_000


class _NoUsage:
    def of(self, project_id: str, month: str) -> int:
        return 0

    def add(self, project_id: str, month: str, n: int) -> None:
        pass
