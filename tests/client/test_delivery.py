"""The Python client against the real server: what it sends is stored, once, with its fields."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from typing import Any

from svc_client import AsyncClient, Client, create_async_client, create_client

from tests.client.helpers import (
    BROWSER_UA,
    AsyncLosesFirstResponse,
    Errors,
    LosesFirstResponse,
    Recording,
    batch_sizes,
    until,
)
from tests.support import ROOT, Server

FROM = {"from": "2020-01-01"}


def client(project: dict[str, Any], endpoint: str, errors: Errors, **kw: Any) -> Client:
    return create_client(
        api_key=project["keys"]["secret"],
        project_id=project["id"],
        endpoint=endpoint,
        on_error=errors,
        **kw,
    )


def async_client(project: dict[str, Any], endpoint: str, errors: Errors, **kw: Any) -> AsyncClient:
    return create_async_client(
        api_key=project["keys"]["secret"],
        project_id=project["id"],
        endpoint=endpoint,
        on_error=errors,
        **kw,
    )


def stored(server: Server, project: dict[str, Any]) -> list[dict[str, Any]]:
    server.wait_loaded()
    return server.events(project["id"], project["keys"]["secret"])


def by_name(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {e["event"]: e for e in events}
    assert len(out) == len(events), [e["event"] for e in events]
    return out


def send_the_four_calls(c: Client | AsyncClient) -> None:
    c.track("signup", {"plan": "pro", "source": "newsletter", "seats": 3, "trial": True})
    c.page_view(
        "https://acme.test/pricing?utm_source=Newsletter",
        referrer="https://www.google.com/search?q=acme",
        user_agent=BROWSER_UA,
        ip="203.0.113.7",
        session_id="visit-1",
    )
    c.purchase(
        "T1",
        30,
        "eur",
        [{"item_id": "sku1", "price": 10, "quantity": 3}],
        coupon="SPRING",
        url="https://acme.test/checkout/done",
    )
    try:
        raise ValueError("boom")
    except ValueError as exc:
        c.capture_exception(exc, fatal=True)


def check_the_four_events(events: list[dict[str, Any]]) -> None:
    ev = by_name(events)
    assert set(ev) == {"signup", "page_view", "purchase", "exception"}
    assert ev["signup"]["properties"] == {
        "plan": "pro",
        "source": "newsletter",
        "seats": "3",
        "trial": "true",
    }
    assert ev["signup"]["url"] == "/"

    pv = ev["page_view"]
    assert pv["url"] == "https://acme.test/pricing?utm_source=Newsletter"
    assert pv["path"] == "/pricing"
    assert pv["referrer"] == "https://www.google.com/search?q=acme"
    assert pv["utm_source"] == "newsletter"
    assert pv["browser"] == "Chrome", "the end user's user agent, passed with the secret key"
    assert pv["properties"] == {}

    buy = ev["purchase"]
    assert buy["url"] == "https://acme.test/checkout/done"
    assert buy["properties"] == {
        "transaction_id": "T1",
        "value": "30",
        "currency": "EUR",
        "coupon": "SPRING",
        "items": '[{"item_id":"sku1","price":10,"quantity":3}]',
    }

    exc = ev["exception"]["properties"]
    assert exc["description"] == "ValueError: boom"
    assert exc["fatal"] == "true"
    assert exc["stack"].startswith("Traceback (most recent call last):")
    assert 'raise ValueError("boom")' in exc["stack"]
    assert exc["stack"].endswith("ValueError: boom")

    ids = [e["event_id"] for e in events]
    assert len(set(ids)) == 4 and all(len(i) == 36 for i in ids)


def test_sync_client_delivers_every_kind_of_event(server: Server, project, endpoint) -> None:
    errors = Errors()
    with client(project, endpoint, errors) as c:
        send_the_four_calls(c)
        assert c.flush(10) is True
        stats = c.stats()
    assert errors == []
    assert (stats.sent, stats.failed, stats.queued, stats.in_flight) == (4, 0, 0, 0)
    check_the_four_events(stored(server, project))


async def test_async_client_delivers_every_kind_of_event(server: Server, project, endpoint) -> None:
    errors = Errors()
    async with async_client(project, endpoint, errors) as c:
        send_the_four_calls(c)
        assert await c.flush(10) is True
        assert c.stats().sent == 4
    assert errors == []
    check_the_four_events(stored(server, project))


def test_ga4_helpers_and_context_are_stored(server: Server, project, endpoint) -> None:
    errors = Errors()
    items = [{"item_id": "SKU_1", "item_name": "Shirt", "price": 10.5, "quantity": 2}]
    with client(project, endpoint, errors, session_id="client-session") as c:
        c.login("google")
        c.add_to_cart(items, currency="usd", value=21, extra={"cart_size": 1})
        c.search("t-shirts", session_id="own-session", url="https://acme.test/search")
        at = int(time.time() * 1000) - 60_000
        c.join_group("G_1", timestamp=at, event_id="join-1")
    assert errors == []
    ev = by_name(stored(server, project))
    assert ev["login"]["properties"] == {"method": "google"}
    assert ev["add_to_cart"]["properties"] == {
        "currency": "USD",
        "value": "21",
        "items": '[{"item_id":"SKU_1","item_name":"Shirt","price":10.5,"quantity":2}]',
        "cart_size": "1",
    }
    assert ev["search"]["url"] == "https://acme.test/search"
    assert ev["join_group"]["event_id"] == "join-1"
    assert ev["join_group"]["ts_ms"] == at
    # A session id sent by the client names its session: two sessions here.
    assert ev["login"]["session_id"] == ev["add_to_cart"]["session_id"]
    assert ev["search"]["session_id"] != ev["login"]["session_id"]
    assert server.metrics(project["keys"]["secret"], **FROM)["sessions"] == 2


def test_a_full_batch_goes_at_once_and_the_rest_on_flush(server: Server, project, endpoint):
    errors, transport = Errors(), Recording()
    c = client(project, endpoint, errors, max_batch_size=100, flush_interval=0, transport=transport)
    for i in range(250):
        c.track("bulk", {"i": i})
    until(lambda: len(transport.requests) >= 2, what="two full batches")
    assert c.stats().queued == 50, "a partial batch waits (no interval: until flush)"
    assert c.flush(10)
    assert batch_sizes(transport.requests) == [100, 100, 50]
    c.close()
    assert errors == []
    events = stored(server, project)
    assert sorted(int(e["properties"]["i"]) for e in events) == list(range(250))


def test_a_partial_batch_goes_after_flush_interval(server: Server, project, endpoint) -> None:
    errors, transport = Errors(), Recording()
    c = client(project, endpoint, errors, flush_interval=0.3, transport=transport)
    start = time.monotonic()
    for name in ("a", "b", "c"):
        c.track(name)
    until(lambda: len(transport.requests) == 1, what="the interval flush")
    assert time.monotonic() - start >= 0.25
    assert batch_sizes(transport.requests) == [3]
    until(lambda: c.stats().sent == 3, what="the acknowledgement")
    c.close()
    assert len(transport.requests) == 1
    assert sorted(e["event"] for e in stored(server, project)) == ["a", "b", "c"]


async def test_async_batches_by_size_and_by_interval(server: Server, project, endpoint) -> None:
    errors = Errors()
    c = async_client(project, endpoint, errors, max_batch_size=10, flush_interval=0.2)
    for i in range(25):
        c.track("bulk", {"i": i})
    # Two full batches leave at once; the last five after the interval, without flush().
    start = time.monotonic()
    while c.stats().sent < 25:
        assert time.monotonic() - start < 5, c.stats()
        await asyncio.sleep(0.01)
    assert time.monotonic() - start >= 0.15
    await c.aclose()
    assert errors == []
    assert len(stored(server, project)) == 25


def test_a_retry_after_a_lost_response_is_stored_once(server: Server, project, endpoint) -> None:
    errors, transport = Errors(), LosesFirstResponse()
    c = client(project, endpoint, errors, transport=transport, retry_base_delay=0.01)
    c.track("signup", {"plan": "pro"})
    c.page_view("/pricing")
    assert c.flush(10)
    c.close()
    assert errors == []
    assert len(transport.requests) == 2
    assert transport.requests[0].content == transport.requests[1].content, "the same eventIds"
    assert transport.responses[0]["accepted"] == 2
    assert transport.responses[1].get("accepted", 0) == 0
    assert transport.responses[1]["dropped"] == 2, "the resent events are known duplicates"
    assert c.stats().retries == 1 and c.stats().sent == 2
    events = stored(server, project)
    assert sorted(e["event"] for e in events) == ["page_view", "signup"]
    assert server.metrics(project["keys"]["secret"], **FROM)["pageviews"] == 1


async def test_async_retry_after_a_lost_response_is_stored_once(server: Server, project, endpoint):
    errors, transport = Errors(), AsyncLosesFirstResponse()
    c = async_client(project, endpoint, errors, transport=transport, retry_base_delay=0.01)
    c.track("signup")
    await c.aclose()
    assert errors == []
    assert len(transport.requests) == 2
    assert transport.responses[1]["dropped"] == 1
    assert [e["event"] for e in stored(server, project)] == ["signup"]


def test_the_same_event_id_sent_twice_is_stored_once(server: Server, project, endpoint) -> None:
    errors = Errors()
    with client(project, endpoint, errors) as c:
        c.track("order", {"n": 1}, event_id="order-1001")
        c.flush()
        c.track("order", {"n": 2}, event_id="order-1001")
    assert errors == []
    events = stored(server, project)
    assert [(e["event"], e["properties"]) for e in events] == [("order", {"n": "1"})]


def test_refusals_are_reported_not_retried(server: Server, project, endpoint) -> None:
    errors = Errors()
    bad = create_client(
        api_key="svc_live_" + "x" * 30, project_id=project["id"], endpoint=endpoint, on_error=errors
    )
    bad.track("e")
    bad.close()
    assert [(e.code, e.status, e.count) for e in errors] == [("invalid_api_key", 401, 1)]
    assert bad.stats().retries == 0 and bad.stats().failed == 1

    errors.clear()
    other = server.create_project("pyclient-other-" + project["id"][-6:])
    wrong = create_client(
        api_key=other["keys"]["secret"],
        project_id=project["id"],
        endpoint=endpoint,
        on_error=errors,
    )
    wrong.track("e")
    wrong.close()
    assert [(e.code, e.status) for e in errors] == [("forbidden", 403)]
    assert wrong.stats().retries == 0


def test_events_the_service_refuses_are_reported_with_their_errors(server, project, endpoint):
    # `ts` more than 7 days back passes the client (it cannot know the server's clock) and is
    # refused by the service, event by event.
    errors = Errors()
    old = int(time.time() * 1000) - 8 * 24 * 3600 * 1000
    with client(project, endpoint, errors) as c:
        c.track("fresh")
        c.track("stale", timestamp=old)
        c.flush()
        c.track("stale_alone", timestamp=old)  # a batch none of whose events is valid: 400
    assert [(e.code, e.status, e.count) for e in errors] == [
        ("events_rejected", 200, 1),
        ("invalid_request", 400, 1),
    ]
    assert [(r.event, r.code, r.field) for r in errors[0].rejected] == [
        ("stale", "invalid_request", "ts")
    ]
    assert [(r.event, r.field) for r in errors[1].rejected] == [("stale_alone", "ts")]
    assert c.stats().sent == 1 and c.stats().failed == 2 and c.stats().retries == 0
    assert [e["event"] for e in stored(server, project)] == ["fresh"]


def test_close_sends_what_is_queued_then_refuses(server: Server, project, endpoint) -> None:
    errors = Errors()
    c = client(project, endpoint, errors, flush_interval=60)
    c.track("before_close")
    c.close()
    c.close()  # twice is fine
    c.track("after_close")
    assert [e.code for e in errors] == ["client_closed"]
    assert c.stats().sent == 1 and c.stats().failed == 1
    assert [e["event"] for e in stored(server, project)] == ["before_close"]


def run_script(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_in_a_real_process_exit_and_fork_lose_nothing(server: Server, project, endpoint):
    # One Python process (a fresh interpreter, as an app would run):
    # - a sync client never closed: its atexit hook closes it, sending what is queued;
    # - an async client whose loop ended (asyncio.run) before aclose(): its events are sent by
    #   a blocking request at exit;
    # - a sync client used across fork(): the child starts a sender of its own and sends its
    #   own events only; the parent's queued event is sent once, by the parent.
    args = json.dumps([project["keys"]["secret"], project["id"], endpoint])
    r = run_script(
        f"""
        import asyncio, json, os
        from svc_client import create_async_client, create_client
        key, pid, endpoint = json.loads({args!r})
        options = dict(api_key=key, project_id=pid, endpoint=endpoint)

        c = create_client(**options, flush_interval=60)
        c.track("parent")
        child = os.fork()
        if child == 0:
            c.track("child")
            c.close()
            os._exit(0 if c.stats().sent == 1 else 3)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status

        async def main():
            a = create_async_client(**options)
            a.track("async_at_exit")
        asyncio.run(main())
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    events = sorted(e["event"] for e in stored(server, project))
    assert events == ["async_at_exit", "child", "parent"]
