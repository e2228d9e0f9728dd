"""The outbox's worker: sends due mail, one at a time, in a thread, with retries and backoff.

Started by the runtime when ``SVC_SMTP_URL`` is set. Every second (sooner after
:meth:`MailWorker.notify`) it takes the mails that are due (:func:`outbox.claim_due`) and
hands each to the SMTP server. A mail the server did not take (down, a 4xx answer, a
timeout) is tried again after ``SVC_MAIL_RETRY_SECONDS``, doubled at each attempt up to an
hour, for as long as it takes; one it refused for good (a 5xx answer) is marked failed. The
attempts and the last error are kept on the mail's row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from svc.mail import outbox
from svc.mail.smtp import PermanentError, SmtpConfig, build_message, send, sender
from svc.meta.store import MetaStore
from svc.settings import Settings
from svc.timeutil import now_ms

log = logging.getLogger(__name__)

#: How often the outbox is looked at when nothing notified the worker (s).
POLL_S = 1.0


class MailWorker:
    def __init__(
        self,
        meta: MetaStore,
        settings: Settings,
        held: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.meta = meta
        #: Whether this node holds the ``mail`` lease (svc.cluster.leases); the claim of
        #: each mail (outbox.claim_due) keeps two workers from sending one mail anyway.
        self.held = held
        self.settings = settings
        self.config = SmtpConfig.parse(settings.smtp_url)
        self.from_addr = sender(settings)
        self.sent = 0
        self.failed_attempts = 0
        self.last_error: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="mail-worker")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def notify(self) -> None:
        """Look at the outbox now (callable from any thread)."""
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            try:
                if self.held is None or await self.held("mail"):
                    await asyncio.to_thread(self.send_due)
            except Exception as exc:  # the metadata store may be down: try again later
                log.warning("mail: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_S)
            self._wake.clear()

    def send_due(self) -> int:
        """Send every mail that is due (blocking); return how many the server took."""
        engine = self.meta.engine
        taken = 0
        while True:
            due = outbox.claim_due(engine, now_ms())
            if not due:
                return taken
            for mail in due:
                try:
                    send(self.config, build_message(mail, self.from_addr))
                except Exception as exc:
                    permanent = isinstance(exc, PermanentError)
                    error = f"{type(exc).__name__}: {exc}"
                    next_at = outbox.mark_failed(
                        engine,
                        mail,
                        error,
                        now_ms(),
                        self.settings.mail_retry_seconds * 1000,
                        permanent,
                    )
                    self.failed_attempts += 1
                    self.last_error = error[:500]
                    log.warning(
                        "mail %s to %s, attempt %d: %s (%s)",
                        mail.id,
                        mail.to,
                        mail.attempts,
                        error,
                        "given up" if next_at is None else "retried later",
                    )
                else:
                    outbox.mark_sent(engine, mail.id, now_ms())
                    self.sent += 1
                    taken += 1
