"""Jobs run once with several nodes (svc.cluster.leases) on real PostgreSQL: two nodes'
mail workers send each mail of the outbox once to a real SMTP server, and two nodes' lake
writers write each day once; with the leases off (two nodes that both believe they hold
one), each mail still goes once (its claim) and a day written by both has the same bytes."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from svc.cluster.leases import Leases
from svc.lake import writer
from svc.lake.places import open_place
from svc.lake.schedule import Lake
from svc.mail import outbox
from svc.mail.worker import MailWorker
from svc.meta.store import MetaStore
from svc.settings import Settings
from svc.storage.events import EventStore
from tests.cluster.helpers import PROJECT, Node
from tests.mail_server import MailServer

DAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=3)


@pytest.fixture
def smtp() -> Iterator[MailServer]:
    server = MailServer().start()
    yield server
    server.stop()


def run_workers(workers: list[MailWorker], smtp: MailServer, count: int) -> None:
    async def run() -> None:
        for w in workers:
            await w.start()
        deadline = time.monotonic() + 60
        while len(smtp.messages) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # more polls of every worker: nothing goes again
        for w in workers:
            await w.stop()

    asyncio.run(run())


def test_two_nodes_send_each_mail_once(pg_meta: MetaStore, smtp: MailServer, tmp_path: Path):
    settings = Settings(
        data_dir=tmp_path, smtp_url=smtp.url, base_url="http://svc.test", mail_retry_seconds=0.2
    )
    nodes = [Leases(pg_meta.engine, name, 30) for name in ("a", "b")]
    for i in range(10):
        for _node in nodes:  # both nodes' schedulers enqueue the report: one row
            outbox.enqueue(pg_meta, f"u{i}@example.org", f"report {i}", "t", dedupe_key=f"r{i}")
    workers = [MailWorker(pg_meta, settings, n.held) for n in nodes]
    run_workers(workers, smtp, 10)
    subjects = Counter(str(m["Subject"]) for m in smtp.messages)
    assert subjects == Counter({f"report {i}": 1 for i in range(10)})
    assert sorted(w.sent for w in workers) == [0, 10]  # the lease holder's worker alone

    # leases lost (both nodes believe they hold it): each mail's claim still sends it once
    for i in range(10, 30):
        outbox.enqueue(pg_meta, f"u{i}@example.org", f"report {i}", "t", dedupe_key=f"r{i}")
    both = [MailWorker(pg_meta, settings, None), MailWorker(pg_meta, settings, None)]
    run_workers(both, smtp, 30)
    subjects = Counter(str(m["Subject"]) for m in smtp.messages)
    assert subjects == Counter({f"report {i}": 1 for i in range(30)})


def test_two_nodes_write_each_lake_day_once(pg_meta: MetaStore, tmp_path: Path) -> None:
    first = int(DAY.timestamp() * 1000)

    async def ingest(node: Node, days: range, tag: str, late: bool = False) -> None:
        await node.spool.start()
        for d in days:
            for i in range(5):
                at = first + d * 86_400_000 + i * 3_600_000
                received = int(time.time() * 1000) if late else at
                event = {"event": "page_view", "url": "https://nodes.test/", "ts": at}
                await node.send(f"203.0.113.{i}", f"Mozilla/5.0 {tag}{i}", received, [event])
        await node.spool.close()

    node = Node(tmp_path / "ingest", None)
    asyncio.run(ingest(node, range(2), "x"))
    store = EventStore(Settings(data_dir=tmp_path / "store"))
    store.migrate()
    store.insert_ndjson(node.payload(), "first")
    place = open_place(str(tmp_path / "lake"))

    def lake(name: str, leases: Leases | None) -> Lake:
        return Lake(
            store,
            place,
            settle_seconds=0,
            interval_seconds=0.05,
            work_dir=tmp_path / f"work-{name}",
            watermark=lambda: int(time.time() * 1000),
            leases=leases,
        )

    lakes = [lake(n, Leases(pg_meta.engine, n, 30)) for n in ("a", "b")]

    async def passes(lakes: list[Lake], seconds: float) -> None:
        tasks = [asyncio.create_task(lk.run()) for lk in lakes]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and max(lk.passes for lk in lakes) < 2:
            await asyncio.sleep(0.05)
        await asyncio.sleep(seconds)
        for t in tasks:
            t.cancel()
        for lk in lakes:
            await lk.finish()

    asyncio.run(passes(lakes[:1], 0.5))  # a holds the lease and writes
    asyncio.run(passes(lakes, 0.5))  # both run: b never holds it
    assert [lk.days_written for lk in lakes] == [2, 0]
    assert lakes[1].passes == 0

    def file_hash(day_offset: int) -> str:
        day = (DAY + timedelta(days=day_offset)).date()
        data = place.get_bytes(writer.day_prefix(PROJECT.id, day) + writer.FILE)
        assert data is not None
        return hashlib.sha256(data).hexdigest()

    # leases off: both write a day changed by a late event, with the same bytes
    before = file_hash(0)
    late = Node(tmp_path / "late", None)
    asyncio.run(ingest(late, range(1), "late", late=True))
    store.insert_ndjson(late.payload(), "late")
    overlapping = [lake("c", None), lake("d", None)]
    for lk in overlapping:  # one after the other: the second finds the day written
        lk.run_pass(int(time.time() * 1000))
    assert [lk.days_written for lk in overlapping] == [1, 0]
    after = file_hash(0)
    assert after != before
    # at once, the same day: the same bytes
    through = int(time.time() * 1000)
    day = DAY.date()

    async def both() -> None:
        await asyncio.gather(
            *(asyncio.to_thread(lk.write, PROJECT.id, day, through) for lk in overlapping)
        )

    asyncio.run(both())
    assert file_hash(0) == after
    store.close()
