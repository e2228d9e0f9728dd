"""The read scheduler's rules on the event loop, without a store: slots, the share of a
tenant, tenants in turn, and never a hang (svc.reads.scheduler)."""

from __future__ import annotations

import asyncio

import pytest

from svc.errors import Busy
from svc.reads.scheduler import ReadScheduler, Ticket, tenant_of


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_tenant_runs_at_most_its_share_and_others_start_at_once() -> None:
    reads = ReadScheduler(slots=4, per_tenant=2, wait_s=5)
    a1, a2 = await reads.admit("a"), await reads.admit("a")
    third = asyncio.ensure_future(reads.admit("a"))
    await settle()
    assert not third.done() and reads.waiting == 1
    b = await asyncio.wait_for(reads.admit("b"), 0.1)  # a slot is free: b is not behind a
    a1.release()
    await settle()
    assert third.done() and reads.running == 3
    for ticket in (a2, third.result(), b):
        ticket.release()
    assert reads.running == 0 and reads.waiting == 0


async def test_tenants_are_served_in_turn() -> None:
    reads = ReadScheduler(slots=1, per_tenant=1, wait_s=5)
    first = await reads.admit("a")
    order: list[str] = []

    async def read(tenant: str) -> None:
        ticket = await reads.admit(tenant)
        order.append(tenant)
        await asyncio.sleep(0)
        ticket.release()

    # a queues three reads before b and c queue one each: b and c are not behind a's queue
    tasks = [asyncio.ensure_future(read(t)) for t in ("a", "a", "a", "b", "c")]
    await settle()
    first.release()
    await asyncio.gather(*tasks)
    assert order == ["a", "b", "c", "a", "a"], order


async def test_a_read_not_admitted_in_time_is_busy_with_retry_after() -> None:
    reads = ReadScheduler(slots=1, per_tenant=1, wait_s=0.05)
    held = await reads.admit("a")
    with pytest.raises(Busy) as refused:
        await reads.admit("b")
    assert refused.value.status == 503 and refused.value.code == "busy"
    assert int(refused.value.headers["Retry-After"]) >= 1
    assert reads.waiting == 0 and reads.refused == 1
    held.release()
    (await reads.admit("b")).release()  # nothing was left behind


async def test_a_full_queue_is_busy_at_once() -> None:
    reads = ReadScheduler(slots=1, per_tenant=1, wait_s=5, queue_limit=1)
    held = await reads.admit("a")
    queued = asyncio.ensure_future(reads.admit("a"))
    await settle()
    with pytest.raises(Busy):
        await asyncio.wait_for(reads.admit("a"), 0.1)
    held.release()
    (await queued).release()


async def test_a_cancelled_wait_leaves_no_slot_taken() -> None:
    reads = ReadScheduler(slots=1, per_tenant=1, wait_s=5)
    held = await reads.admit("a")
    waiting = asyncio.ensure_future(reads.admit("b"))
    await settle()
    waiting.cancel()
    await settle()
    held.release()
    assert reads.running == 0 and reads.waiting == 0
    ticket: Ticket = await asyncio.wait_for(reads.admit("c"), 0.1)
    ticket.release()
    ticket.release()  # idempotent
    assert reads.running == 0


def test_a_share_link_is_a_tenant_of_its_own() -> None:
    assert tenant_of("p1", "secret", "key_1") == "p1" == tenant_of("p1", "account", None)
    assert tenant_of("p1", "share", "key_2") == "p1/share/key_2"


async def test_over_the_memory_budget_reads_run_one_at_a_time() -> None:
    resident = [900]
    reads = ReadScheduler(
        slots=4, per_tenant=4, wait_s=5, memory_limit_bytes=800, resident=lambda: resident[0]
    )
    first = await asyncio.wait_for(reads.admit("a"), 0.1)  # none runs: one may, whatever
    second = asyncio.ensure_future(reads.admit("b"))
    await asyncio.sleep(0.05)
    assert not second.done() and reads.status()["heldForMemoryTotal"] >= 1
    resident[0] = 700  # the memory went back (no read ended to wake anyone)
    (await asyncio.wait_for(second, 1)).release()
    first.release()
    assert reads.running == 0


async def test_over_the_memory_budget_a_read_waits_then_is_busy() -> None:
    reads = ReadScheduler(
        slots=4, per_tenant=4, wait_s=0.2, memory_limit_bytes=800, resident=lambda: 900
    )
    held = await reads.admit("a")
    with pytest.raises(Busy):
        await reads.admit("b")
    held.release()
    (await asyncio.wait_for(reads.admit("b"), 0.1)).release()


async def test_a_light_read_takes_its_own_slot_beside_full_slots() -> None:
    reads = ReadScheduler(slots=2, per_tenant=2, wait_s=5, light_slots=1)
    heavy = [await reads.admit("a"), await reads.admit("b")]
    other = asyncio.ensure_future(reads.admit("c"))  # no slot for another heavy read
    light = await asyncio.wait_for(reads.admit("c", light=True), 0.1)  # its own slot
    await settle()
    assert not other.done() and reads.running == 3
    second_light = asyncio.ensure_future(reads.admit("d", light=True))
    await settle()
    assert not second_light.done()  # the light slot is taken: it waits, first in line
    heavy[0].release()
    await settle()
    assert second_light.done() and not other.done()  # the light read goes first
    for ticket in (heavy[1], light, second_light.result()):
        ticket.release()
    await settle()
    (await other).release()
    assert reads.running == 0 and reads.waiting == 0


async def test_a_tenant_runs_light_reads_beside_its_share_of_others() -> None:
    reads = ReadScheduler(slots=4, per_tenant=2, wait_s=5, light_slots=1)
    others = [await reads.admit("a"), await reads.admit("a")]
    light = await asyncio.wait_for(reads.admit("a", light=True), 0.1)
    assert reads.running == 3
    for ticket in (*others, light):
        ticket.release()
    assert reads.running == 0 and reads.status()["lightSlots"] == 1


async def test_without_light_slots_light_reads_go_first_in_the_shared_slots() -> None:
    reads = ReadScheduler(slots=1, per_tenant=1, wait_s=5)
    held = await reads.admit("a")
    order: list[str] = []

    async def read(tenant: str, light: bool) -> None:
        ticket = await reads.admit(tenant, light)
        order.append(f"{tenant}{'-light' if light else ''}")
        await asyncio.sleep(0)
        ticket.release()

    tasks = [asyncio.ensure_future(read(t, lt)) for t, lt in (("b", False), ("c", True))]
    await settle()
    held.release()
    await asyncio.gather(*tasks)
    assert order == ["c-light", "b"], order


async def test_a_read_may_take_the_budgets_room_shared_by_the_reads_running() -> None:
    mb = 1024 * 1024
    resident = [500 * mb]
    reads = ReadScheduler(
        slots=4, per_tenant=2, wait_s=5, memory_limit_bytes=900 * mb, resident=lambda: resident[0]
    )
    first = await reads.admit("a")
    assert reads.read_memory_mb(512) == 400  # the room under the budget, within the limit
    second = await reads.admit("b")
    assert reads.read_memory_mb(512) == 200  # shared by the two reads running
    assert reads.read_memory_mb(100) == 100
    resident[0] = 950 * mb  # over the budget: the least a read beside another is given
    assert reads.read_memory_mb(512) == 16
    assert reads.read_memory_mb(1) == 1  # never over the limit set
    second.release()
    assert reads.read_memory_mb(512) == 256  # and the least a read alone is given
    first.release()
    assert ReadScheduler(slots=1, per_tenant=1, wait_s=1).read_memory_mb(512) is None
