"""Admission of reads: a fixed number at once, a few per tenant, tenants served in turn.

Every read of ``GET /metrics*`` (and every export of ``GET /export``, for as long as it
streams) asks :meth:`ReadScheduler.admit` for a slot before it touches the store, naming its
tenant (a project, or one share link of it: :func:`tenant_of`). A slot is one of the store's
read handles (:class:`svc.storage.read_handles.ReadHandles`), so at most ``slots`` reads run
at once, whatever the number of requests.

- **A few per tenant.** A tenant has at most ``per_tenant`` reads running; its other reads
  wait in its own queue, so one tenant's burst (a dashboard's fifteen panels, a script's
  loop) cannot take every slot.
- **Tenants in turn.** When a slot frees, the tenants with waiting reads are served round
  robin, from the one after the last served: a light read of one tenant waits for at most
  one read of each other tenant, never behind another's queue.
- **Never a hang.** A read that is not admitted within ``wait_s`` gets 503 ``busy`` with
  ``Retry-After``, and so does one past ``queue_limit`` waiting reads of its tenant.
- **A lane for light reads.** A read its caller names light (the top figures, realtime: read
  from the rolled-up days, no pattern over the values) waits in a queue of its own, served
  before the others, and may take one of ``light_slots`` slots of its own beside the
  ``slots``; a tenant has ``per_tenant`` light reads beside its ``per_tenant`` others. A
  dashboard's top figures then wait for a slot to free, not for every tenant's panels, and
  an abusive tenant's costly reads cannot hold a light read back. In the store, the other
  reads yield to light ones (:data:`LIGHT_PRIORITY`, :data:`OTHER_PRIORITY`).
- **A memory budget.** With ``memory_limit_bytes``, while the process's resident memory is
  over it, no read starts beside another: one at a time, the others waiting their turn (or
  503 ``busy``) until the memory is back under the budget. Never none: the service whose
  idle memory is over its budget still answers, one read at a time. And a read admitted
  may take in the store no more than the room left under the budget, shared by the reads
  running (:meth:`ReadScheduler.read_memory_mb`): past it, 503 ``busy`` rather than a
  service over its budget.

A slot is held until the read's worker thread is done (:meth:`Ticket.release`), not until
its answer: a read answered 504 or abandoned by its client holds its handle until the store
has stopped it. Everything here runs on the event loop; nothing locks.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from svc.errors import Busy

#: ClickHouse's ``priority`` of a light read's queries and of the others': a query waits
#: while one of a smaller number (a higher priority) runs, so the other reads pause, between
#: blocks of rows, while a light one runs (0 would take no part in priorities).
LIGHT_PRIORITY = 1
OTHER_PRIORITY = 2

#: The least memory (MB) a read alone is given in the store however little room the memory
#: budget has left: one read at a time is the budget's last resort, and it must still answer
#: an ordinary report (an hourly series of a month of 10M events was refused at 64).
LEAST_READ_MEMORY_MB = 256
#: The least when other reads run beside it: a read past the room left is answered 503 busy
#: sooner, rather than each of several taking the service past its budget by the least above.
LEAST_SHARED_READ_MEMORY_MB = 16

#: How soon the waiting reads are looked at again while the memory is over the budget (s).
MEMORY_RECHECK_S = 0.1


@dataclass(eq=False)
class Ticket:
    """An admitted read's slot; :meth:`release` once its work is done (idempotent)."""

    scheduler: ReadScheduler
    tenant: str
    light: bool = False
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.scheduler._release(self.tenant, self.light)


@dataclass
class _Lane:
    """One tenant's reads of one kind (light or not): running, and waiting their turn."""

    running: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


@dataclass
class _Tenant:
    other: _Lane = field(default_factory=_Lane)
    light: _Lane = field(default_factory=_Lane)

    def lane(self, light: bool) -> _Lane:
        return self.light if light else self.other

    @property
    def idle(self) -> bool:
        """No read of it running or waiting."""
        lanes = (self.other, self.light)
        return not any(lane.running or lane.waiting for lane in lanes)


class ReadScheduler:
    def __init__(
        self,
        slots: int,
        per_tenant: int,
        wait_s: float,
        queue_limit: int = 100,
        memory_limit_bytes: int = 0,
        resident: Callable[[], int] | None = None,
        light_slots: int = 0,
    ) -> None:
        """``slots`` reads at once (and ``light_slots`` more, for light reads only),
        ``per_tenant`` of one tenant (and as many light ones); a read waits at most
        ``wait_s`` for its slot, and a tenant at most ``queue_limit`` reads; past
        ``memory_limit_bytes`` of the process's resident memory (``resident()``, read from
        /proc by default; 0: no budget) one read at a time."""
        if slots < 1 or per_tenant < 1 or light_slots < 0:
            raise ValueError("a read scheduler needs at least one slot, and one per tenant")
        self.slots = slots
        self.light_slots = light_slots
        self.per_tenant = min(per_tenant, slots)
        self.wait_s = wait_s
        self.queue_limit = queue_limit
        self.running = 0
        self.memory_limit_bytes = memory_limit_bytes
        self._resident = resident or resident_bytes
        self._rechecking = False
        self._tenants: dict[str, _Tenant] = {}
        # tenants with waiting reads of each kind, next to serve first
        self._turns: dict[bool, deque[str]] = {True: deque(), False: deque()}
        #: reads refused busy, reads that waited, and admissions held back by the memory
        #: budget, since start (/health)
        self.refused = 0
        self.waited = 0
        self.held_for_memory = 0

    @property
    def waiting(self) -> int:
        return sum(len(t.other.waiting) + len(t.light.waiting) for t in self._tenants.values())

    def status(self) -> dict[str, int]:
        """The figures /health shows (``reads``): the bounds, and the reads running, waiting
        and refused (503 busy) since start."""
        return {
            "slots": self.slots,
            "lightSlots": self.light_slots,
            "perProject": self.per_tenant,
            "running": self.running,
            "waiting": self.waiting,
            "waitedTotal": self.waited,
            "refusedTotal": self.refused,
            "memoryLimitBytes": self.memory_limit_bytes,
            "heldForMemoryTotal": self.held_for_memory,
        }

    async def admit(self, tenant: str, light: bool = False) -> Ticket:
        """A slot for a read of ``tenant`` (``light``: in the light reads' lane): at once
        when one is free and the tenant is under its share, else in its turn; :class:`Busy`
        past ``wait_s`` or ``queue_limit``."""
        state = self._tenants.setdefault(tenant, _Tenant())
        lane = state.lane(light)
        if not lane.waiting and self._may_start(lane, light):
            self._start(lane)
            return Ticket(self, tenant, light)
        if len(lane.waiting) >= self.queue_limit:
            self.refused += 1
            raise self._busy(f"this project has {len(lane.waiting)} reads waiting already")
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.waiting.append(granted)
        turn = self._turns[light]
        if tenant not in turn:
            turn.append(tenant)
        self.waited += 1
        try:
            await asyncio.wait_for(asyncio.shield(granted), self.wait_s)
        except TimeoutError:
            if granted.done():  # granted as the wait ran out: take it
                return Ticket(self, tenant, light)
            self._withdraw(tenant, light, granted)
            self.refused += 1
            raise self._busy(f"no read could start within {self.wait_s:g} s") from None
        except asyncio.CancelledError:
            if granted.done():
                self._release(tenant, light)
            else:
                self._withdraw(tenant, light, granted)
            raise
        return Ticket(self, tenant, light)

    def read_memory_mb(self, limit_mb: int) -> int | None:
        """The memory (MB) a read admitted now may take in the store: the room the memory
        budget has left, shared by the reads running (this one counted), within
        ``limit_mb`` (``SVC_READ_MEMORY_LIMIT_MB``; 0: none) and, within it, never under
        :data:`LEAST_READ_MEMORY_MB` for a read alone, :data:`LEAST_SHARED_READ_MEMORY_MB`
        beside others; None without a budget (``limit_mb`` then). A read past
        it is stopped and answered 503 busy instead of taking the service past its budget."""
        if not self.memory_limit_bytes:
            return None
        room = self.memory_limit_bytes - self._resident()
        share = room // max(1, self.running) // (1024 * 1024)
        least = LEAST_READ_MEMORY_MB if self.running <= 1 else LEAST_SHARED_READ_MEMORY_MB
        share = max(least, share)
        return min(share, limit_mb) if limit_mb > 0 else share

    def _busy(self, why: str) -> Busy:
        wait = max(1, math.ceil(self.wait_s / 2))
        return Busy(
            f"the store is busy: {why} (SVC_READ_SLOTS, SVC_READS_PER_PROJECT); retry in {wait} s",
            headers={"Retry-After": str(wait)},
        )

    def _may_start(self, lane: _Lane, light: bool) -> bool:
        """Whether a read of a tenant's ``lane`` may start now: a slot of its kind is free,
        the tenant is under its share, and the memory is under the budget (or no read
        runs)."""
        slots = self.slots + self.light_slots if light else self.slots
        if self.running >= slots or lane.running >= self.per_tenant:
            return False
        if self.running == 0 or not self.memory_limit_bytes:
            return True
        if self._resident() <= self.memory_limit_bytes:
            return True
        self.held_for_memory += 1
        self._recheck_soon()
        return False

    def _recheck_soon(self) -> None:
        """Look again in a moment (the memory a read freed goes back to the system after
        about a second, with no release to wake the waiting reads)."""
        if not self._rechecking:
            self._rechecking = True

            def again() -> None:
                self._rechecking = False
                self._dispatch()

            asyncio.get_running_loop().call_later(MEMORY_RECHECK_S, again)

    def _start(self, lane: _Lane) -> None:
        lane.running += 1
        self.running += 1

    def _withdraw(self, tenant: str, light: bool, granted: asyncio.Future[None]) -> None:
        state = self._tenants[tenant]
        lane = state.lane(light)
        lane.waiting.remove(granted)
        if not lane.waiting and tenant in self._turns[light]:
            self._turns[light].remove(tenant)
        if state.idle:
            del self._tenants[tenant]

    def _release(self, tenant: str, light: bool) -> None:
        state = self._tenants[tenant]
        state.lane(light).running -= 1
        self.running -= 1
        self._dispatch()
        if state.idle:
            self._tenants.pop(tenant, None)

    def _dispatch(self) -> None:
        """Give free slots to waiting reads: light ones first, then the others; tenants in
        turn within each kind (each under its share)."""
        for light in (True, False):
            while self._turns[light] and self._start_next(light):
                pass

    def _start_next(self, light: bool) -> bool:
        """Start the next waiting read of the kind, tenants in turn; whether one started."""
        turn = self._turns[light]
        for _ in range(len(turn)):
            tenant = turn[0]
            turn.rotate(-1)
            lane = self._tenants[tenant].lane(light)
            if self._may_start(lane, light):
                granted = lane.waiting.popleft()
                if not lane.waiting:
                    turn.remove(tenant)
                self._start(lane)
                granted.set_result(None)
                return True
        return False  # no slot of the kind, or every waiting tenant is at its share


def resident_bytes() -> int:
    """This process's resident memory (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def tenant_of(project_id: str, kind: str, key_id: str | None) -> str:
    """The tenant a read is counted to: its project, or for a share link the link itself
    (a public dashboard's visitors do not take the project owner's share)."""
    if kind == "share" and key_id:
        return f"{project_id}/share/{key_id}"
    return project_id
