"""Event ids and sessions in Redis (svc.cluster.shared): the same events, sent alternately to
two nodes' ingestion paths sharing one real redis-server, are stored with exactly the
session, start and visitor one node gives them, and deduplicated alike: derived sessions
(with their timeout, late events and a session crossing midnight under yesterday's visitor
hash), client-named sessions, page measurements and repeated event ids."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from svc.cluster.shared import Link, SharedIdentity, SharedReplays
from svc.ingestion.identity import CLIENT_SESSION_MEMORY_MS
from tests.cluster.helpers import MINUTE, START_MS, Node


def traffic(
    seed: int = 43, sizes: tuple[int, ...] = (1, 1, 1, 2, 3), requests_n: int = 400, tag: str = ""
) -> list[tuple[str, str, int, list[dict[str, Any]]]]:
    """Requests (address, user agent, receipt ms, events of one of ``sizes``) over 2.5 hours
    around midnight: visitors coming back within and after the timeout, late events, client
    sessions, page measurements, event ids sent twice (each ending in ``tag``)."""
    rnd = random.Random(seed)
    visitors = [
        (f"198.51.100.{i}", f"Mozilla/5.0 (X11; Linux x86_64) Chrome/{100 + i}.0")
        for i in range(12)
    ]
    requests = []
    now = START_MS
    n = 0
    sent_ids: list[str] = []
    step = 40_000 * 400 // requests_n
    for _ in range(requests_n):
        now += rnd.randrange(0, step)
        addr, ua = rnd.choice(visitors[: 4 + (now - START_MS) // (20 * MINUTE)])
        events = []
        for _ in range(rnd.choice(sizes)):
            n += 1
            kind = rnd.random()
            ts = now - (rnd.randrange(0, 90 * MINUTE) if kind < 0.1 else rnd.randrange(0, 2000))
            event: dict[str, Any] = {
                "event": "page_view",
                "url": f"https://nodes.test/p{rnd.randrange(5)}",
                "ts": ts,
                "eventId": f"e{n}{tag}",
            }
            if 0.1 <= kind < 0.25:
                event["sessionId"] = f"client-{rnd.randrange(6)}"
            elif 0.25 <= kind < 0.35:
                event["event"] = "engagement"
                event["properties"] = {"engaged_ms": 1000, "scroll_pct": 50}
            elif 0.35 <= kind < 0.42 and sent_ids:
                event["eventId"] = rnd.choice(sent_ids)  # sent before: a duplicate
            sent_ids.append(str(event["eventId"]))
            events.append(event)
        requests.append((addr, ua, now, events))
    return requests


def keyed(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    out = {}
    for r in rows:
        assert r["event_id"] not in out, "an event id stored twice"
        out[r["event_id"]] = (r["session_id"], r["visitor_id"], r["session_start"], r["ts"])
    return out


@pytest.mark.parametrize(
    "requests",
    [
        pytest.param(traffic(), id="small-requests"),
        # a visitor's batches of up to 20 events: a session read and written once a request
        # (svc.cluster.shared), event ids of any characters (given to the script by length)
        pytest.param(
            traffic(46, (1, 4, 9, 20), 120, tag=" é\t\n☃ 0 0"),
            id="batches",
        ),
    ],
)
def test_two_nodes_assign_as_one_node(
    tmp_path: Path, redis_url: str, requests: list[tuple[str, str, int, list[dict[str, Any]]]]
) -> None:

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]], SharedIdentity]:
        link = Link(redis_url)
        shared = SharedIdentity(link, 30 * MINUTE, 48 * 3_600_000, CLIENT_SESSION_MEMORY_MS)
        one = Node(tmp_path / "one", None)
        pair = [Node(tmp_path / "a", shared), Node(tmp_path / "b", shared)]
        nodes = [one, *pair]
        for node in nodes:
            await node.spool.start()
        for i, (addr, ua, received, events) in enumerate(requests):
            await one.send(addr, ua, received, events)
            await pair[i % 2].send(addr, ua, received, events)
        for node in nodes:
            await node.spool.close()
        await link.close()
        return one.rows(), pair[0].rows() + pair[1].rows(), shared

    single, shared_rows, shared = asyncio.run(run())
    assert shared.calls == len(requests) and shared.link.failures == 0
    expected, got = keyed(single), keyed(shared_rows)
    assert len(expected) < sum(len(r[3]) for r in requests)  # some were duplicates
    assert got == expected
    # what the events were: sessions over the timeout, late ones, one crossing midnight
    sessions: dict[int, set[str]] = {}
    for sid, _v, _start, ts in expected.values():
        sessions.setdefault(sid, set()).add(ts[:10])
    assert len(sessions) > 20
    assert any(len(days) == 2 for days in sessions.values())


def test_replays_are_refused_on_every_node(redis_url: str) -> None:
    async def run() -> list[bool | None]:
        one, two = Link(redis_url), Link(redis_url)  # each node its own connection
        a, b = SharedReplays(one), SharedReplays(two)
        until = datetime.now(UTC).timestamp() + 60
        try:
            return [
                await a.first(b"sig-1", until),
                await b.first(b"sig-1", until),
                await b.first(b"sig-2", until),
                await a.first(b"sig-2", until),
            ]
        finally:
            await one.close()
            await two.close()

    assert asyncio.run(run()) == [True, False, True, False]


def test_a_write_of_another_node_retires_every_nodes_memo(tmp_path: Path, redis_url: str) -> None:
    """The memo keys rows on (this node's writes, every node's writes): another node's write
    makes the rows kept here unused; Redis out of reach, nothing is kept."""
    from svc.cluster.shared import SharedGeneration
    from svc.storage.memo import ReadMemo

    here, there = Link(redis_url), Link(redis_url)
    mine, theirs = SharedGeneration(here), SharedGeneration(there)
    memo = ReadMemo(8)
    before = mine.current()
    assert before is not None
    memo.put("facts", (0, before), [(1,)])
    assert memo.get("facts", (0, mine.current())) == ((1,),)
    theirs.bump()  # another node's insert returned
    assert memo.get("facts", (0, mine.current())) is None
    gone = Link("redis://127.0.0.1:1/0")  # nothing listens there
    assert SharedGeneration(gone).current() is None
    asyncio.run(here.close())
    asyncio.run(there.close())
    asyncio.run(gone.close())


def test_an_event_id_pending_on_a_dead_node_is_retried_then_taken(
    tmp_path: Path, redis_url: str
) -> None:
    """A node reserves an event's id and dies before its spool took it: a retry of that
    event on another node is answered 503 while the reservation is pending, then stored
    once it expired; once stored (confirmed), a copy is a duplicate."""
    from svc.cluster.shared import Ask
    from svc.errors import Unavailable

    async def run() -> tuple[list[str], list[str]]:
        link = Link(redis_url)
        shared = SharedIdentity(
            link, 30 * MINUTE, 48 * 3_600_000, CLIENT_SESSION_MEMORY_MS, pending_ms=300
        )
        node = Node(tmp_path / "b", shared)
        await node.spool.start()
        now = START_MS
        # the dead node's reservation (its script ran, its fsync never did)
        await shared.assign([Ask("d", "lost-1", "svc_proj_nodes", 1, 2, now, now)])
        event = {"event": "page_view", "url": "https://nodes.test/", "ts": now, "eventId": "lost-1"}
        outcomes = []
        try:
            await node.send("198.51.100.1", "Mozilla/5.0 Chrome/120.0", now, [event])
        except Unavailable as exc:
            outcomes.append(f"{exc.status} {exc.headers}")
        await asyncio.sleep(0.5)  # the reservation expired: the retry is taken
        await node.send("198.51.100.1", "Mozilla/5.0 Chrome/120.0", now, [event])
        outcomes.append("stored")
        await node.send("198.51.100.1", "Mozilla/5.0 Chrome/120.0", now, [event])  # a copy
        await node.spool.close()
        await link.close()
        return outcomes, [r["event_id"] for r in node.rows()]

    outcomes, stored = asyncio.run(run())
    assert outcomes == ["503 {'Retry-After': '2'}", "stored"]
    assert stored == ["lost-1"]


def test_without_redis_a_node_goes_on_with_its_own_state(tmp_path: Path) -> None:
    """Redis out of reach: events are taken and assigned by the node alone, counted."""

    async def run() -> tuple[list[dict[str, object]], int]:
        link = Link("redis://127.0.0.1:1/0")  # nothing listens there
        shared = SharedIdentity(link, 30 * MINUTE, 48 * 3_600_000, CLIENT_SESSION_MEMORY_MS)
        node = Node(tmp_path / "alone", shared)
        await node.spool.start()
        for i in range(3):
            event = {"event": "page_view", "url": "https://nodes.test/", "eventId": f"x{i % 2}"}
            await node.send("198.51.100.9", "Mozilla/5.0 Chrome/121.0", START_MS + i, [event])
        await node.spool.close()
        await link.close()
        return node.rows(), link.fallbacks

    rows, fallbacks = asyncio.run(run())
    assert [r["event_id"] for r in rows] == ["x0", "x1"]  # x0 again: a duplicate, here too
    assert len({r["session_id"] for r in rows}) == 1 and fallbacks == 3
