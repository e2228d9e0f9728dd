"""Sign-in and out with a password (and a two-factor code when it is on), and the
password checks of the account's own settings: a wrong password is a failed sign-in."""

from __future__ import annotations

import asyncio
from typing import Any

from svc.accounts import passwords, store, totp
from svc.accounts.access import Access
from svc.accounts.pseudonyms import pseudonym
from svc.accounts.service.base import ServiceBase, log
from svc.accounts.store import Account
from svc.accounts.throttle import SignInThrottle
from svc.errors import ApiError, InvalidRequest
from svc.timeutil import iso_ms


class InvalidCredentials(ApiError):
    """The one answer to a wrong password, an unknown email and a disabled account."""

    status, code = 401, "invalid_credentials"


class TotpRequired(ApiError):
    status, code = 401, "totp_required"


class SignIn(ServiceBase):
    """Sign-in and out; the sign-in limits (``throttle``) every password check takes from."""

    throttle: SignInThrottle

    async def sign_in(
        self, email_value: object, password_value: object, code_value: object, address: str
    ) -> dict[str, Any]:
        """A new session for a right email and password (and two-factor code when on).

        A wrong password, an unknown email and a disabled account get the same 401
        ``invalid_credentials`` after the same work (an argon2 verification, against a dummy
        hash when there is no account); each failure takes a token from the address's and
        the email's buckets (:mod:`svc.accounts.throttle`) and is logged."""
        email = store.normalize_email(email_value)
        if not isinstance(password_value, str) or not password_value:
            raise InvalidRequest("`password` is required", field="password")
        if len(password_value) > passwords.MAX_LENGTH:
            raise InvalidRequest("`password` is too long", field="password")
        if code_value is not None and not isinstance(code_value, str):
            raise InvalidRequest("`code` must be a string", field="code")
        await self.throttle.check(address, email)
        account = await asyncio.to_thread(store.find_account, self.meta, email)
        usable = account is not None and account.active and account.password_hash
        target = account.password_hash if usable and account is not None else None
        ok = await asyncio.to_thread(passwords.verify, target, password_value)
        if not ok or account is None:
            reason = (
                "unknown_email"
                if account is None
                else "disabled"
                if not account.active
                else "wrong_password"
            )
            await self._failed(address, email, reason, account)
            raise InvalidCredentials("the email or the password is wrong")
        if account.totp_secret is not None:
            if not code_value:
                raise TotpRequired(
                    "this account has two-factor sign-in: send `code` (from the authenticator "
                    "app, or a recovery code)"
                )
            if not await asyncio.to_thread(self._second_factor, account, code_value):
                await self._failed(address, email, "wrong_code", account)
                raise InvalidCredentials("the two-factor code is wrong")
        if passwords.needs_rehash(account.password_hash):
            new_hash = await asyncio.to_thread(passwords.hash_password, password_value)
            await asyncio.to_thread(store.set_password, self.meta, account.id, new_hash)
        return await asyncio.to_thread(self.new_session, account)

    async def _failed(self, address: str, email: str, reason: str, account: Account | None) -> None:
        await self.throttle.failed(address, email)
        log.warning(
            "sign-in failed: %s",
            reason,
            extra={
                "event": "signin_failed",
                "reason": reason,
                "accountId": account.id if account is not None else None,
                "emailHash": pseudonym(email),
                "addressHash": pseudonym(address),
            },
        )

    def _second_factor(self, account: Account, code: str) -> bool:
        """Whether ``code`` is a two-factor code of the account not accepted before, or one
        of its unused recovery codes (spent now)."""
        assert account.totp_secret is not None
        if self._fresh_code(account.id, account.totp_secret, code):
            return True
        if totp.looks_like_recovery_code(code):
            return store.use_recovery_code(self.meta, account.id, totp.recovery_hash(code))
        return False

    def _fresh_code(self, account_id: str, secret: str, code: str) -> bool:
        """Whether ``code`` is a current code of ``secret`` of a later time step than any the
        account had accepted (recorded now: the same code is refused ever after)."""
        step = totp.matched_step(secret, code)
        return step is not None and store.accept_totp_step(self.meta, account_id, step)

    async def _check_password(
        self, access: Access, value: object, field: str, address: str
    ) -> Account:
        """The account, when ``value`` is its password: a wrong one is a failed sign-in (a
        token from the address's and the email's buckets, logged, 400 naming ``field``);
        while a bucket is empty, 429 without checking."""
        if not isinstance(value, str) or not value or len(value) > passwords.MAX_LENGTH:
            raise InvalidRequest(f"`{field}` must be your password", field=field)
        await self.throttle.check(address, access.email)
        account = await asyncio.to_thread(store.get_account, self.meta, access.account_id)
        if not await asyncio.to_thread(passwords.verify, account.password_hash, value):
            await self._failed(address, access.email, f"wrong_{field}", account)
            raise InvalidRequest(f"`{field}` is wrong", field=field)
        return account

    def new_session(self, account: Account) -> dict[str, Any]:
        """A new session of the account: the answer of a sign-in (password or SSO)."""
        _, token, expires = store.create_session(self.meta, account.id, self.session_ms)
        return {"token": token, "expiresAt": iso_ms(expires), "account": account.to_json()}

    def sign_out(self, access: Access) -> None:
        store.delete_session(self.meta, access.session_id)

    def sign_out_everywhere(self, access: Access) -> int:
        return store.delete_sessions(self.meta, access.account_id)
