"""Password resets: a link mailed to the account of an email, after an answer that tells
nothing of it, and the new password set with its token."""

from __future__ import annotations

import asyncio

from svc.accounts import invites, passwords, store
from svc.accounts import mail as mailer
from svc.accounts.pseudonyms import pseudonym
from svc.accounts.service.base import ServiceBase, log
from svc.accounts.throttle import SignInThrottle
from svc.errors import InvalidRequest, NotFound
from svc.mail import links


class PasswordResets(ServiceBase):
    """Password resets; the mails being prepared after their answer (``_reset_work``)."""

    reset_limits: SignInThrottle
    _reset_work: set[asyncio.Task[None]]

    async def request_reset(self, email_value: object, address: str) -> None:
        """Ask for a reset link to be mailed to the account of that email, if there is one.

        The answer is the same either way, and takes the same time: past the limits (every
        request, known email or not, takes a token from its client address's and its email's
        buckets, :func:`svc.accounts.throttle.reset_throttle`; 429 while one is empty), the
        account is looked up and the mail made after this returns (:meth:`_mail_reset`), so
        nothing about the account shows in the answer or its timing. Without mail, nothing is
        sent: the operator resets (``svcm users password``)."""
        email = store.normalize_email(email_value)
        await self.reset_limits.take(address, email)
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(self._mail_reset, email))
        self._reset_work.add(task)
        task.add_done_callback(self._reset_done)

    def _reset_done(self, task: asyncio.Task[None]) -> None:
        self._reset_work.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "password reset mail not made",
                exc_info=task.exception(),
                extra={"event": "reset_failed"},
            )

    async def reset_work_done(self) -> None:
        """Wait for the reset mails being prepared (at shutdown)."""
        if self._reset_work:
            await asyncio.gather(*self._reset_work, return_exceptions=True)

    def _mail_reset(self, email: str) -> None:
        """Mail a reset link to the active account of ``email``, if there is one (blocking;
        run after the request's answer, :meth:`request_reset`)."""
        account = store.find_account(self.meta, email)
        if account is None or not account.active:
            log.info(
                "password reset asked for no account",
                extra={"event": "reset_unknown", "emailHash": pseudonym(email)},
            )
            return
        if not mailer.mail_on(self.settings):
            log.warning(
                "password reset asked, but mail is off (SVC_SMTP_URL)",
                extra={"event": "reset_no_mail", "accountId": account.id},
            )
            return
        token = invites.create_reset(
            self.meta, account.id, int(self.settings.reset_minutes * 60 * 1000)
        )
        link = links.dashboard_link(self.settings, f"reset={token}")
        mailer.send(
            self.meta,
            account.email,
            "Reset your svc password",
            "Someone (you, we hope) asked to reset the password of your svc account.\n\n"
            f"Choose a new password here:\n{link}\n\n"
            f"The link works once, for {self.settings.reset_minutes:g} minutes. If you did "
            "not ask, ignore this mail: your password stays as it is.\n",
            "password_reset",
        )

    def confirm_reset(self, token: object, password: object) -> None:
        """Set a new password with a reset token (once); every session is signed out."""
        if not isinstance(token, str):
            raise InvalidRequest("`token` is required", field="token")
        new = passwords.check_policy(password)
        account_id = invites.take_reset(self.meta, token)
        if account_id is None:
            raise NotFound("this reset link is unknown, used or expired")
        store.set_password(self.meta, account_id, passwords.hash_password(new))
        store.delete_sessions(self.meta, account_id)
