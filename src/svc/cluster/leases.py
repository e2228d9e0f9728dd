"""Leases of the background jobs, in the metadata store: one node runs each job at a time.

A lease is one row of ``job_leases`` per job (``rollups``, ``retention``, ``lake``,
``backups``, ``mail``): its holder (this node's id and a token of this process: a node that
restarts is a new holder) and the time it expires. :meth:`Leases.hold` takes a lease that is
free, expired or already ours, and renews it, by one compare-and-set ``UPDATE`` (or the
``INSERT`` of its row the first time): on PostgreSQL two nodes racing for an expired lease
both run the ``UPDATE``, the second waits for the first's row lock and then finds the lease
taken. A holder that dies (``kill -9``) stops renewing; its lease is taken over by the first
node that asks once it expired, within ``ttl`` of its last renewal.

A job that runs longer than a lease is renewed while it runs (:meth:`Leases.run_held`). A
lease can still be lost (the metadata store out of reach longer than the ttl, a process
frozen): two nodes may then run one job at once for a while, which is why every job is
idempotent on its own (docs/architecture.md, Several nodes). Clocks: the nodes' clocks,
which must agree to well within the ttl (NTP).

Disabled (``enabled=False``: one node, an embedded store), every lease is held at once and
nothing is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine, case, select, update
from sqlalchemy.exc import IntegrityError

from svc.meta import tables

log = logging.getLogger(__name__)

T = TypeVar("T")
_t = tables.job_leases

#: The background jobs that take a lease.
JOBS = ("rollups", "retention", "lake", "backups", "mail")


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """One job's lease as the metadata store holds it."""

    job: str
    holder: str
    expires_at: int  # ms
    taken_at: int  # ms
    renewed_at: int  # ms


class Leases:
    """This node's side of the job leases (thread-safe: each call is one transaction)."""

    def __init__(self, engine: Engine, node_id: str, ttl_s: float, *, enabled: bool = True):
        self.engine = engine
        self.node_id = node_id
        #: This process as a holder: its node id and a token (a restart is a new holder).
        self.holder = f"{node_id}/{secrets.token_hex(4)}"
        self.ttl_ms = max(1, int(ttl_s * 1000))
        self.enabled = enabled
        #: job -> until when (ms) this process holds it, as its last renewal said
        self._until: dict[str, int] = {}
        #: leases taken from another holder (expired or released), renewals lost
        self.taken_over = 0
        self.lost = 0
        self.failures = 0

    def held_here(self, job: str, now_ms: int | None = None) -> bool:
        """Whether this process holds ``job``'s lease as far as it knows (reads nothing)."""
        now = _now() if now_ms is None else now_ms
        return not self.enabled or self._until.get(job, 0) > now

    def hold(self, job: str, now_ms: int | None = None) -> bool:
        """Take or renew ``job``'s lease; whether this process holds it now. A lease held
        with more than two thirds of its ttl left is not written again. Blocking (a worker
        thread); False when the metadata store cannot be reached."""
        if not self.enabled:
            return True
        now = _now() if now_ms is None else now_ms
        if self._until.get(job, 0) - now > self.ttl_ms * 2 // 3:
            return True
        try:
            held, from_other = self._take(job, now)
        except Exception as exc:  # the metadata store may be down: not held, try later
            self.failures += 1
            log.warning("lease %s: %s", job, exc)
            held, from_other = False, False
        if held:
            self._until[job] = now + self.ttl_ms
            if from_other:
                self.taken_over += 1
                log.info("lease %s taken by %s", job, self.holder)
        elif self._until.pop(job, 0) > now:
            self.lost += 1
            log.warning("lease %s lost by %s", job, self.holder)
        return held

    def _take(self, job: str, now: int) -> tuple[bool, bool]:
        """(held, taken from another holder) by a compare-and-set."""
        me = self.holder
        with self.engine.begin() as conn:
            previous = conn.scalar(select(_t.c.holder).where(_t.c.job == job))
            result = conn.execute(
                update(_t)
                .where(_t.c.job == job, (_t.c.holder == me) | (_t.c.expires_at <= now))
                .values(
                    holder=me,
                    expires_at=now + self.ttl_ms,
                    renewed_at=now,
                    taken_at=case((_t.c.holder == me, _t.c.taken_at), else_=now),
                )
            )
            if result.rowcount == 1:
                return True, previous is not None and previous != me
            if previous is not None:
                return False, False
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    _t.insert().values(
                        job=job,
                        holder=me,
                        expires_at=now + self.ttl_ms,
                        taken_at=now,
                        renewed_at=now,
                    )
                )
        except IntegrityError:  # another node inserted it first
            return False, False
        return True, False

    def release(self, job: str) -> None:
        """Give ``job``'s lease up (at stop), so that another node takes it at once."""
        if not self.enabled or self._until.pop(job, None) is None:
            return
        with self.engine.begin() as conn:
            conn.execute(
                update(_t).where(_t.c.job == job, _t.c.holder == self.holder).values(expires_at=0)
            )

    def release_all(self) -> None:
        for job in list(self._until):
            try:
                self.release(job)
            except Exception as exc:  # they expire anyway
                log.warning("lease %s not released: %s", job, exc)

    def rows(self) -> list[LeaseRow]:
        """Every job's lease in the metadata store (blocking)."""
        with self.engine.connect() as conn:
            return [
                LeaseRow(r.job, r.holder, int(r.expires_at), int(r.taken_at), int(r.renewed_at))
                for r in conn.execute(select(_t).order_by(_t.c.job))
            ]

    def status(self) -> dict[str, Any]:
        """For /health: this process as a holder, and every lease (blocking)."""
        now = _now()
        leases: list[dict[str, Any]] = []
        if self.enabled:
            try:
                found = self.rows()
            except Exception as exc:
                return {"enabled": True, "holder": self.holder, "error": type(exc).__name__}
            leases = [
                {
                    "job": r.job,
                    "holder": r.holder,
                    "heldHere": r.holder == self.holder and r.expires_at > now,
                    "expiresInSeconds": round((r.expires_at - now) / 1000, 1),
                    "heldForSeconds": round((now - r.taken_at) / 1000, 1),
                }
                for r in found
            ]
        return {
            "enabled": self.enabled,
            "holder": self.holder,
            "ttlSeconds": self.ttl_ms / 1000,
            "takenOver": self.taken_over,
            "lost": self.lost,
            "leases": leases,
        }

    async def held(self, job: str) -> bool:
        """:meth:`hold` off the event loop (on it when nothing needs writing)."""
        if not self.enabled or self._until.get(job, 0) - _now() > self.ttl_ms * 2 // 3:
            return True
        return await asyncio.to_thread(self.hold, job)

    async def run_held(self, job: str, work: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``work`` if this process holds ``job``'s lease, renewing it meanwhile; None
        when another node holds it."""
        if not await self.held(job):
            return None
        if not self.enabled:
            return await work()
        renewing = asyncio.create_task(self._renew(job), name=f"lease-{job}")
        try:
            return await work()
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    async def _renew(self, job: str) -> None:
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            await asyncio.to_thread(self.hold, job)


def _now() -> int:
    return int(time.time() * 1000)
