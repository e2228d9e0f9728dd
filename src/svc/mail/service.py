"""Mail's long-lived part in the runtime: the outbox's worker (when ``SVC_SMTP_URL`` is set)
and the scheduler of email reports and traffic alerts (which enqueue, so that their mail
waits in the outbox while mail is off)."""

from __future__ import annotations

from svc.mail.worker import MailWorker
from svc.meta.store import MetaStore
from svc.settings import Settings
from svc.storage.events import EventStore


class MailService:
    def __init__(self, settings: Settings, meta: MetaStore, store: EventStore) -> None:
        self.settings = settings
        self.meta = meta
        self.store = store
        self.worker = MailWorker(meta, settings) if settings.smtp_url else None

    async def start(self) -> None:
        if self.worker is not None:
            await self.worker.start()

    async def stop(self) -> None:
        if self.worker is not None:
            await self.worker.stop()

    def notify(self) -> None:
        """Send what the outbox holds now, not at the next poll (from any thread)."""
        if self.worker is not None:
            self.worker.notify()
