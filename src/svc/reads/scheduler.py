"""Admission of reads: a fixed number at once, a few per tenant, tenants served in turn.

Every read of ``GET /metrics*`` asks :meth:`ReadScheduler.admit` for a slot before it touches
the store, naming its tenant (a project, or one share link of it: :func:`tenant_of`). A slot
is one of the store's read handles (:class:`svc.storage.read_handles.ReadHandles`), so at
most ``slots`` reads run at once, whatever the number of requests.

- **A few per tenant.** A tenant has at most ``per_tenant`` reads running; its other reads
  wait in its own queue, so one tenant's burst (a dashboard's fifteen panels, a script's
  loop) cannot take every slot.
- **Tenants in turn.** When a slot frees, the tenants with waiting reads are served round
  robin, from the one after the last served: a light read of one tenant waits for at most
  one read of each other tenant, never behind another's queue.
- **Never a hang.** A read that is not admitted within ``wait_s`` gets 503 ``busy`` with
  ``Retry-After``, and so does one past ``queue_limit`` waiting reads of its tenant.

A slot is held until the read's worker thread is done (:meth:`Ticket.release`), not until
its answer: a read answered 504 or abandoned by its client holds its handle until the store
has stopped it. Everything here runs on the event loop; nothing locks.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from dataclasses import dataclass, field

from svc.errors import Busy


@dataclass(eq=False)
class Ticket:
    """An admitted read's slot; :meth:`release` once its work is done (idempotent)."""

    scheduler: ReadScheduler
    tenant: str
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.scheduler._release(self.tenant)


@dataclass
class _Tenant:
    running: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


class ReadScheduler:
    def __init__(self, slots: int, per_tenant: int, wait_s: float, queue_limit: int = 100) -> None:
        """``slots`` reads at once, ``per_tenant`` of one tenant; a read waits at most
        ``wait_s`` for its slot, and a tenant at most ``queue_limit`` reads."""
        if slots < 1 or per_tenant < 1:
            raise ValueError("a read scheduler needs at least one slot, and one per tenant")
        self.slots = slots
        self.per_tenant = min(per_tenant, slots)
        self.wait_s = wait_s
        self.queue_limit = queue_limit
        self.running = 0
        self._tenants: dict[str, _Tenant] = {}
        self._turn: deque[str] = deque()  # tenants with waiting reads, next to serve first
        #: reads refused busy, and reads that waited, since start (/internal/metrics)
        self.refused = 0
        self.waited = 0

    @property
    def waiting(self) -> int:
        return sum(len(t.waiting) for t in self._tenants.values())

    def status(self) -> dict[str, int]:
        """The figures /health shows (``reads``): the bounds, and the reads running, waiting
        and refused (503 busy) since start."""
        return {
            "slots": self.slots,
            "perProject": self.per_tenant,
            "running": self.running,
            "waiting": self.waiting,
            "waitedTotal": self.waited,
            "refusedTotal": self.refused,
        }

    async def admit(self, tenant: str) -> Ticket:
        """A slot for a read of ``tenant``: at once when one is free and the tenant is under
        its share, else in its turn; :class:`Busy` past ``wait_s`` or ``queue_limit``."""
        state = self._tenants.setdefault(tenant, _Tenant())
        if not state.waiting and state.running < self.per_tenant and self.running < self.slots:
            self._start(tenant, state)
            return Ticket(self, tenant)
        if len(state.waiting) >= self.queue_limit:
            self.refused += 1
            raise self._busy(f"this project has {len(state.waiting)} reads waiting already")
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        state.waiting.append(granted)
        if tenant not in self._turn:
            self._turn.append(tenant)
        self.waited += 1
        try:
            await asyncio.wait_for(asyncio.shield(granted), self.wait_s)
        except TimeoutError:
            if granted.done():  # granted as the wait ran out: take it
                return Ticket(self, tenant)
            self._withdraw(tenant, state, granted)
            self.refused += 1
            raise self._busy(f"no read could start within {self.wait_s:g} s") from None
        except asyncio.CancelledError:
            if granted.done():
                self._release(tenant)
            else:
                self._withdraw(tenant, state, granted)
            raise
        return Ticket(self, tenant)

    def _busy(self, why: str) -> Busy:
        wait = max(1, math.ceil(self.wait_s / 2))
        return Busy(
            f"the store is busy: {why} (SVC_READ_SLOTS, SVC_READS_PER_PROJECT); retry in {wait} s",
            headers={"Retry-After": str(wait)},
        )

    def _start(self, tenant: str, state: _Tenant) -> None:
        state.running += 1
        self.running += 1

    def _withdraw(self, tenant: str, state: _Tenant, granted: asyncio.Future[None]) -> None:
        state.waiting.remove(granted)
        if not state.waiting:
            if tenant in self._turn:
                self._turn.remove(tenant)
            if state.running == 0:
                del self._tenants[tenant]

    def _release(self, tenant: str) -> None:
        state = self._tenants[tenant]
        state.running -= 1
        self.running -= 1
        self._dispatch()
        if state.running == 0 and not state.waiting:
            self._tenants.pop(tenant, None)

    def _dispatch(self) -> None:
        """Give free slots to waiting reads, tenants in turn (each under its share)."""
        while self.running < self.slots and self._turn:
            for _ in range(len(self._turn)):
                tenant = self._turn[0]
                self._turn.rotate(-1)
                state = self._tenants[tenant]
                if state.running < self.per_tenant:
                    granted = state.waiting.popleft()
                    if not state.waiting:
                        self._turn.remove(tenant)
                    self._start(tenant, state)
                    granted.set_result(None)
                    break
            else:
                return  # every waiting tenant is at its share


def tenant_of(project_id: str, kind: str, key_id: str | None) -> str:
    """The tenant a read is counted to: its project, or for a share link the link itself
    (a public dashboard's visitors do not take the project owner's share)."""
    if kind == "share" and key_id:
        return f"{project_id}/share/{key_id}"
    return project_id
