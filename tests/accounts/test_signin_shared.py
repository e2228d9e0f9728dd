"""Sign-in limits shared through Redis: two svc processes with one redis-server (the rate
limits' ``SVC_REDIS_URL``) count the same failures. Each process has its own data directory,
so an email is unknown to both: an unknown email is limited exactly as a known one, which is
what lets the test need no account. Each test sends from addresses of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from svc.accounts.throttle import SignInThrottle
from svc.errors import RateLimited
from svc.limits.shared import RedisBuckets, RedisLink
from tests.accounts.conftest import CHEAP_HASHES, call, unique_email
from tests.limits.conftest import redis_url  # noqa: F401  (the fixture)
from tests.support import Server, free_port, is_error


@pytest.fixture
def pair(tmp_path: Path, redis_url: str) -> Iterator[list[Server]]:  # noqa: F811
    env = {
        **CHEAP_HASHES,
        "SVC_REDIS_URL": redis_url,
        "SVC_TRUSTED_PROXIES": "127.0.0.1/32",
        "SVC_SIGNIN_LIMIT_PER_ACCOUNT": "3/h:3",
        "SVC_SIGNIN_LIMIT_PER_ADDRESS": "5/h:5",
    }
    servers: list[Server] = []
    try:
        for name in ("a", "b"):
            servers.append(Server(tmp_path / name / "data", env=env).start())
        yield servers
    finally:
        for srv in servers:
            srv.stop()


def _sign_in(srv: Server, address: str, email: str) -> httpx.Response:
    return call(
        srv,
        "POST",
        "/auth/signin",
        json={"email": email, "password": "not the password"},
        headers={"X-Forwarded-For": address},
    )


def test_sign_in_limits_are_counted_across_processes(
    pair: list[Server],
    redis_url: str,  # noqa: F811
) -> None:
    a, b = pair
    # per account: two failures on one process, one on the other, then both refuse
    email = unique_email("shared")
    for srv in (a, a, b):
        is_error(_sign_in(srv, "198.51.100.20", email), 401)
    for srv in (a, b):
        r = is_error(_sign_in(srv, "198.51.100.21", email.upper()), 429)
        assert "account" in r["error"]["message"]
    # per address: five failures spread over both (new emails each time), then both refuse
    for i in range(5):
        is_error(_sign_in(pair[i % 2], "198.51.100.30", unique_email("spread")), 401)
    for srv in (a, b):
        r = is_error(_sign_in(srv, "198.51.100.30", unique_email("fresh")), 429)
        assert "address" in r["error"]["message"]
    # the buckets are in Redis, keyed by digests: no email or address is written there
    keys = [k.decode() for k in redis.Redis.from_url(redis_url).keys("svc:rl:signin_*")]
    assert {k.split(":")[2] for k in keys} == {"signin_account", "signin_address"}
    assert not any("@" in k or "198.51" in k for k in keys)


def test_without_a_reachable_redis_the_limits_hold_in_this_process() -> None:
    async def run() -> None:
        link = RedisLink(f"redis://127.0.0.1:{free_port()}/0")  # nobody listens there
        throttle = SignInThrottle("5/h:5", "2/h:2", RedisBuckets(link))
        try:
            for _ in range(2):
                await throttle.check("192.0.2.1", "x@example.com")
                await throttle.failed("192.0.2.1", "x@example.com")
            with pytest.raises(RateLimited):
                await throttle.check("192.0.2.1", "x@example.com")
            await throttle.check("192.0.2.1", "y@example.com")  # another email: allowed
            assert link.failures >= 1 and throttle.backend == "redis"
        finally:
            await link.close()

    asyncio.run(run())
