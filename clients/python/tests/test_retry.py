"""Delivery rules at the network boundary (an ``httpx.MockTransport`` plays the service):
retries, Retry-After, backoff, no retry on 4xx, 413 splitting, the bounded queue, close()."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from scripted import ENDPOINT, Errors, Script, error, ok, until
from svc_client import Client, create_async_client, create_client
from svc_client._core import parse_retry_after


def make(script: Script | None = None, **kw: Any) -> tuple[Client, Script, Errors]:
    script = script or Script()
    errors = Errors()
    options: dict[str, Any] = {
        "api_key": "svc_live_testkey",
        "project_id": "svc_proj_test",
        "endpoint": ENDPOINT,
        "flush_interval": 0,
        "retry_base_delay": 0.001,
        "on_error": errors,
        "transport": script.transport(),
        **kw,
    }
    return create_client(**options), script, errors


def test_the_request_is_a_bearer_json_post_of_events() -> None:
    c, script, errors = make()
    c.track("a")
    c.flush()
    (call,) = script.calls
    r = call.request
    assert r.method == "POST" and str(r.url) == ENDPOINT
    assert r.headers["authorization"] == "Bearer svc_live_testkey"
    assert r.headers["content-type"] == "application/json"
    assert r.headers["user-agent"].startswith("svc-python/")
    assert call.body.startswith(b'{"events":[{"event":"a","url":"/","projectId":"svc_proj_test"')
    c.close()
    assert errors == []


def test_5xx_is_retried_with_the_same_body() -> None:
    c, script, errors = make(
        Script(lambda call, i: error(503, "unavailable") if i < 2 else ok(call))
    )
    c.track("a")
    c.track("b")
    assert c.flush(5)
    assert len(script.calls) == 3
    assert script.calls[0].body == script.calls[1].body == script.calls[2].body
    assert c.stats().retries == 2 and c.stats().sent == 2
    assert errors == []
    c.close()


def test_network_errors_and_timeouts_are_retried() -> None:
    def flaky(call: Any, i: int) -> httpx.Response | Exception:
        if i == 0:
            return httpx.ConnectError("connection refused")
        if i == 1:
            return httpx.ReadTimeout("read timed out")
        return ok(call)

    c, script, errors = make(Script(flaky))
    c.track("a")
    assert c.flush(5)
    assert len(script.calls) == 3 and c.stats().sent == 1
    assert errors == []
    c.close()


def test_429_waits_for_retry_after_seconds() -> None:
    responses = [error(429, "rate_limited", headers={"Retry-After": "1"})]
    c, script, errors = make(
        Script(lambda call, i: responses[i] if i < len(responses) else ok(call)),
        retry_base_delay=10,  # Retry-After wins over the backoff
    )
    c.track("a")
    assert c.flush(5)
    assert len(script.calls) == 2
    waited = script.calls[1].at - script.calls[0].at
    assert 0.95 <= waited < 2, waited
    assert c.stats().retries == 1 and errors == []
    c.close()


def test_retry_after_as_an_http_date_and_as_seconds() -> None:
    assert parse_retry_after("3") == 3
    assert parse_retry_after(" 0.25 ") == 0.25
    when = datetime.now(UTC) + timedelta(seconds=30)
    assert 28 <= (parse_retry_after(format_datetime(when, usegmt=True)) or 0) <= 30
    assert (
        parse_retry_after(format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)) == 0
    )
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_a_retry_after_longer_than_retry_max_delay_gives_up_at_once() -> None:
    c, script, errors = make(
        Script(lambda call, i: error(429, "quota_exceeded", "used up", {"Retry-After": "864000"}))
    )
    c.track("a")
    assert c.flush(5)
    assert len(script.calls) == 1
    (e,) = errors
    assert (e.code, e.status, e.count) == ("quota_exceeded", 429, 1)
    assert "longer than retry_max_delay" in e.message
    assert c.stats().failed == 1
    c.close()


@pytest.mark.parametrize(
    "status,code",
    [(400, "invalid_request"), (401, "invalid_api_key"), (403, "forbidden"), (404, "not_found")],
)
def test_other_4xx_are_reported_and_never_retried(status: int, code: str) -> None:
    c, script, errors = make(Script(lambda call, i: error(status, code, "nope")))
    c.track("a")
    c.track("b")
    assert c.flush(5)
    assert len(script.calls) == 1
    (e,) = errors
    assert (e.code, e.status, e.count) == (code, status, 2)
    assert e.message == f"svc: 2 event(s) not sent: HTTP {status} {code}: nope"
    assert c.stats().retries == 0 and c.stats().failed == 2
    c.close()


def test_a_4xx_without_a_json_body_is_reported_with_its_status() -> None:
    c, _, errors = make(Script(lambda call, i: httpx.Response(400, text="<html>bad</html>")))
    c.track("a")
    c.flush()
    assert [(e.code, e.status) for e in errors] == [("http_400", 400)]
    c.close()


def test_retries_stop_after_max_retries() -> None:
    c, script, errors = make(Script(lambda call, i: error(500, "internal")), max_retries=3)
    c.track("a")
    assert c.flush(5)
    assert len(script.calls) == 4
    (e,) = errors
    assert e.code == "retries_exhausted" and e.status == 500 and e.count == 1
    assert "after 4 attempts" in e.message
    assert e.cause is not None and getattr(e.cause, "code", None) == "internal"
    c.close()


def test_backoff_is_exponential_capped_with_full_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    bounds: list[tuple[float, float]] = []

    def uniform(a: float, b: float) -> float:
        bounds.append((a, b))
        return 0.0

    monkeypatch.setattr(random, "uniform", uniform)
    c, _script, _ = make(
        Script(lambda call, i: error(503, "unavailable")),
        max_retries=6,
        retry_base_delay=0.5,
        retry_max_delay=4,
    )
    c.track("a")
    assert c.flush(5)
    assert bounds == [(0, 0.5), (0, 1), (0, 2), (0, 4), (0, 4), (0, 4)]
    c.close()


def test_413_splits_the_batch_in_halves() -> None:
    def small_only(call: Any, i: int) -> httpx.Response:
        return error(413, "payload_too_large") if len(call.events) > 2 else ok(call)

    c, script, errors = make(Script(small_only))
    for i in range(5):
        c.track(f"e{i}")
    assert c.flush(5)
    assert [len(call.events) for call in script.calls] == [5, 2, 3, 1, 2]
    assert c.stats().sent == 5 and errors == []
    c.close()


def test_events_the_service_rejects_in_a_batch_are_reported_not_retried() -> None:
    rejected = [
        {"index": 1, "error": {"code": "invalid_request", "message": "bad ts", "field": "ts"}}
    ]
    c, script, errors = make(Script(lambda call, i: ok(call, accepted=2, rejected=rejected)))
    for name in ("a", "b", "c"):
        c.track(name)
    assert c.flush(5)
    assert len(script.calls) == 1
    (e,) = errors
    assert e.code == "events_rejected" and e.count == 1 and e.status == 200
    (r,) = e.rejected
    assert (r.event, r.code, r.message, r.field) == ("b", "invalid_request", "bad ts", "ts")
    assert r.event_id == script.calls[0].events[1]["eventId"]
    assert c.stats().sent == 2 and c.stats().failed == 1
    c.close()


def test_the_queue_is_bounded_and_drops_the_oldest_with_a_counted_warning() -> None:
    c, script, errors = make(max_queue_size=10)
    for i in range(1000):
        c.track("e", {"i": i})
    assert c.stats().dropped == 990 and c.stats().queued == 10
    c.flush(5)
    assert [e["properties"]["i"] for e in script.events] == list(range(990, 1000))
    c.close()
    reports = [e for e in errors if e.code == "queue_overflow"]
    assert sum(e.count for e in reports) == 990
    assert 1 <= len(reports) <= 3, "a burst of drops is reported once, not once per event"
    assert "queue full (max_queue_size 10)" in reports[0].message
    assert c.stats().sent == 10


def test_the_queue_stays_bounded_while_the_service_is_down() -> None:
    c, _, _ = make(
        Script(lambda call, i: httpx.ConnectError("down")),
        max_queue_size=50,
        max_batch_size=10,
        retry_base_delay=0.05,
    )
    for i in range(500):
        c.track("e", {"i": i})
    s = c.stats()
    assert s.queued + s.in_flight <= 60 and s.dropped >= 440
    c.close(timeout=0.2)
    assert c.stats().queued == 0


def test_a_failing_on_error_does_not_break_the_client(caplog: pytest.LogCaptureFixture) -> None:
    def explode(e: Any) -> None:
        raise RuntimeError("bug in on_error")

    c, _script, _ = make(Script(lambda call, i: error(400, "invalid_request")), on_error=explode)
    c.track("a")
    with caplog.at_level(logging.ERROR, logger="svc_client"):
        assert c.flush(5)
    assert "on_error raised" in caplog.text
    c.close()


def test_without_on_error_failures_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    c, _, _ = make(
        Script(lambda call, i: error(401, "invalid_api_key", "unknown key")), on_error=None
    )
    c.track("a")
    with caplog.at_level(logging.WARNING, logger="svc_client"):
        c.flush(5)
    assert "HTTP 401 invalid_api_key: unknown key" in caplog.text
    c.close()


def test_flush_with_a_timeout_returns_false_and_keeps_the_events() -> None:
    gate = threading.Event()

    def slow(call: Any, i: int) -> httpx.Response:
        gate.wait(5)
        return ok(call)

    c, _script, _ = make(Script(slow))
    c.track("a")
    t = time.monotonic()
    assert c.flush(0.1) is False
    assert time.monotonic() - t < 1
    assert c.stats().in_flight == 1
    gate.set()
    assert c.flush(5) is True
    c.close()


def test_flush_with_nothing_queued_returns_at_once() -> None:
    c, script, _ = make()
    assert c.flush() is True
    assert script.calls == []
    c.close()


def test_close_gives_up_after_its_timeout_when_the_service_hangs() -> None:
    gate = threading.Event()

    def hang(call: Any, i: int) -> httpx.Response:
        gate.wait(3)
        return ok(call)

    c, _, errors = make(Script(hang), timeout=0.5)
    c.track("a")
    assert c.flush(0) is False  # starts sending, does not wait
    until(lambda: c.stats().in_flight == 1)
    c.track("b")
    t = time.monotonic()
    c.close(timeout=0.3)
    assert time.monotonic() - t < 2.5
    gate.set()
    assert c.stats().queued == 0
    assert {e.code for e in errors} == {"shutdown_timeout"}
    assert sum(e.count for e in errors) >= 1


def test_close_does_not_wait_out_a_long_backoff() -> None:
    c, script, errors = make(
        Script(lambda call, i: error(503, "unavailable", headers={"Retry-After": "20"})),
        retry_max_delay=60,
    )
    c.track("a")
    t = time.monotonic()
    c.close(timeout=0.5)
    assert time.monotonic() - t < 1.5
    assert len(script.calls) == 1
    assert [e.code for e in errors] == ["shutdown_timeout"]
    assert c.stats().failed == 1


def test_an_injected_http_client_is_used_and_left_open() -> None:
    script = Script()
    http = httpx.Client(transport=script.transport())
    c = create_client(
        api_key="svc_live_k", project_id="svc_proj_test", endpoint=ENDPOINT, http_client=http
    )
    c.track("a")
    c.close()
    assert len(script.calls) == 1
    assert not http.is_closed
    http.close()


# ----- the async client ----------------------------------------------------------------------


def make_async(script: Script, **kw: Any) -> tuple[Any, Errors]:
    errors = Errors()
    c = create_async_client(
        api_key="svc_live_testkey",
        project_id="svc_proj_test",
        endpoint=ENDPOINT,
        flush_interval=0,
        retry_base_delay=0.001,
        on_error=errors,
        transport=script.transport(),
        **kw,
    )
    return c, errors


async def test_async_retries_5xx_and_honours_retry_after() -> None:
    def respond(call: Any, i: int) -> httpx.Response:
        if i == 0:
            return error(503, "unavailable")
        if i == 1:
            return error(429, "rate_limited", headers={"Retry-After": "0.3"})
        return ok(call)

    script = Script(respond)
    c, errors = make_async(script)
    c.track("a")
    assert await c.flush(5)
    assert len(script.calls) == 3
    assert script.calls[2].at - script.calls[1].at >= 0.29
    assert len({call.body for call in script.calls}) == 1
    assert c.stats().retries == 2 and errors == []
    await c.aclose()


async def test_async_never_retries_400() -> None:
    script = Script(lambda call, i: error(400, "invalid_request", "`url` is required"))
    c, errors = make_async(script)
    c.track("a")
    await c.flush()
    assert len(script.calls) == 1
    assert [(e.code, e.status) for e in errors] == [("invalid_request", 400)]
    await c.aclose()


async def test_async_queue_bound_and_one_report_per_burst() -> None:
    script = Script()
    c, errors = make_async(script, max_queue_size=5)
    for i in range(100):
        c.track("e", {"i": i})
    await asyncio.sleep(0)
    assert c.stats().dropped == 95
    assert [(e.code, e.count) for e in errors] == [("queue_overflow", 95)]
    await c.aclose()
    assert [e["properties"]["i"] for e in script.events] == [95, 96, 97, 98, 99]


async def test_async_a_request_over_timeout_is_abandoned_and_retried() -> None:
    async def slow_then_ok(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            await asyncio.sleep(2)
        return httpx.Response(200, json={"ok": True, "ts": 0, "accepted": 1})

    calls: list[httpx.Request] = []
    errors = Errors()
    c = create_async_client(
        api_key="svc_live_k",
        project_id="svc_proj_test",
        endpoint=ENDPOINT,
        flush_interval=0,
        timeout=0.2,
        retry_base_delay=0.001,
        on_error=errors,
        transport=httpx.MockTransport(slow_then_ok),
    )
    c.track("a")
    t = time.monotonic()
    assert await c.flush(5)
    assert time.monotonic() - t < 1.5
    assert len(calls) == 2 and c.stats().sent == 1 and c.stats().retries == 1
    assert errors == []
    await c.aclose()


async def test_async_aclose_gives_up_after_its_timeout() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json={"ok": True, "ts": 0})

    errors = Errors()
    c = create_async_client(
        api_key="svc_live_k",
        project_id="svc_proj_test",
        endpoint=ENDPOINT,
        flush_interval=0,
        on_error=errors,
        transport=httpx.MockTransport(hang),
    )
    c.track("a")
    t = time.monotonic()
    await c.aclose(timeout=0.3)
    assert time.monotonic() - t < 1.5
    assert [e.code for e in errors] == ["shutdown_timeout"]
    c.track("late")
    assert [e.code for e in errors] == ["shutdown_timeout", "client_closed"]
