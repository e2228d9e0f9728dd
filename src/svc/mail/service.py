"""Mail's long-lived part in the runtime: the outbox's worker (when ``SVC_SMTP_URL`` is set)
and the scheduler of email reports and traffic alerts, which enqueue (so that their mail waits
in the outbox while mail is off)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from svc.mail import alerts, outbox, scheduler
from svc.mail.worker import MailWorker
from svc.meta.store import MetaStore
from svc.settings import Settings
from svc.storage.events import EventStore

log = logging.getLogger(__name__)

#: How often the scheduler looks for reports and alerts that are due (s).
SCHEDULE_S = 60.0


class MailService:
    def __init__(
        self,
        settings: Settings,
        meta: MetaStore,
        store: EventStore,
        loaded_through_ms: Callable[[], int] | None = None,
        raw_from: scheduler.RawFrom | None = None,
        held: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.settings = settings
        self.meta = meta
        self.store = store
        #: A time before which every event received is in the store (Runtime.loaded_through_ms).
        self.loaded_through_ms = loaded_through_ms or (lambda: 0)
        #: Where a project's raw events begin (RetentionJob.raw_from), as the API reads it.
        self.raw_from = raw_from
        #: Whether this node holds a job's lease (svc.cluster.leases): with several nodes,
        #: the holder of ``mail`` alone schedules reports and alerts and sends the outbox.
        self.held = held or _always
        self.worker = MailWorker(meta, settings, self.held) if settings.smtp_url else None
        self._scheduling: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        if self.worker is not None:
            await self.worker.start()
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._scheduling = asyncio.create_task(self._schedule(), name="mail-scheduler")

    async def stop(self) -> None:
        if self._scheduling is not None:
            self._scheduling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduling
            self._scheduling = None
        if self.worker is not None:
            await self.worker.stop()

    def notify(self) -> None:
        """Send what the outbox holds now, not at the next poll (from any thread)."""
        if self.worker is not None:
            self.worker.notify()

    def reschedule(self) -> None:
        """Look for due reports and alerts now (a subscription was added; from any thread)."""
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def _schedule(self) -> None:
        assert self._wake is not None
        while True:
            loaded = self.loaded_through_ms()  # read on the event loop, where it changes
            now = scheduler.utc_now()
            try:
                if not await self.held("mail"):
                    raise _NotHere
                n = await asyncio.to_thread(
                    scheduler.send_reports,
                    self.settings,
                    self.meta,
                    self.store,
                    now,
                    loaded,
                    self.raw_from,
                )
                n += await asyncio.to_thread(
                    alerts.check_all, self.settings, self.meta, self.store, now, loaded
                )
                keep_after = int(now.timestamp() * 1000) - outbox.KEEP_MS
                await asyncio.to_thread(outbox.prune, self.meta.engine, keep_after)
                if n:
                    self.notify()
            except _NotHere:  # another node holds the lease
                pass
            except Exception as exc:  # a store down: try again at the next tick
                log.warning("mail scheduler: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), SCHEDULE_S)
            self._wake.clear()


class _NotHere(Exception):
    """Another node holds the mail's lease."""


async def _always(job: str) -> bool:
    return True
