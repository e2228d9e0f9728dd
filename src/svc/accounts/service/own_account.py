"""The signed-in account's own settings: its name, its password, two-factor sign-in."""

from __future__ import annotations

import asyncio
from typing import Any

from svc.accounts import invites, passwords, store, teams, totp
from svc.accounts.access import Access
from svc.accounts.service.signin import SignIn
from svc.errors import Conflict, InvalidRequest


class OwnAccount(SignIn):
    """The account's own settings; a password or code they take is checked as a sign-in is."""

    def me(self, access: Access) -> dict[str, Any]:
        account = store.get_account(self.meta, access.account_id)
        team_list = [
            {**team.to_json(), "role": role}
            for team, role in teams.list_teams(self.meta, access.account_id)
        ]
        return {
            **account.to_json(),
            "teams": team_list,
            "projects": [
                {"id": pid, "role": role} for pid, role in sorted(access.project_roles.items())
            ],
            "recoveryCodesLeft": store.recovery_codes_left(self.meta, account.id)
            if account.totp_secret
            else 0,
        }

    async def update_me(self, access: Access, body: dict[str, Any], address: str) -> dict[str, Any]:
        """Change the name, or the password (with ``currentPassword``, checked as a sign-in
        is: a wrong one is a failed sign-in, under the same limits; every other session of
        the account is signed out, and every reset link mailed before is spent)."""
        name = store.check_name(body["name"]) if "name" in body else None
        if "password" in body:
            new = passwords.check_policy(body["password"])
            account = await self._check_password(
                access, body.get("currentPassword"), "currentPassword", address
            )
            new_hash = await asyncio.to_thread(passwords.hash_password, new)
            await asyncio.to_thread(self._set_own_password, account.id, new_hash, access)
        if name is not None:
            await asyncio.to_thread(store.set_name, self.meta, access.account_id, name)
        return await asyncio.to_thread(self.me, access)

    def _set_own_password(self, account_id: str, password_hash: str, access: Access) -> None:
        store.set_password(self.meta, account_id, password_hash)
        store.delete_sessions(self.meta, account_id, keep=access.session_id)
        invites.spend_resets(self.meta, account_id)

    def totp_begin(self, access: Access) -> dict[str, Any]:
        """A new secret to enroll in an authenticator app; on once confirmed with a code."""
        account = store.get_account(self.meta, access.account_id)
        if account.totp_secret is not None:
            raise Conflict("two-factor sign-in is on already: turn it off first")
        secret = totp.new_secret()
        store.set_totp_pending(self.meta, account.id, secret)
        return {"secret": secret, "uri": totp.provisioning_uri(secret, account.email)}

    async def totp_confirm(
        self, access: Access, code: object, password: object, address: str
    ) -> dict[str, Any]:
        """Turn two-factor on with a code of the enrolled secret and the account's password
        (a session alone cannot: it would lock the owner out); the recovery codes, shown
        this once. The password is checked as a sign-in is (:meth:`_check_password`)."""
        if not isinstance(code, str):
            raise InvalidRequest(
                "`code` is required: the authenticator's current code", field="code"
            )
        account = await self._check_password(access, password, "password", address)
        if account.totp_pending is None:
            raise Conflict("no two-factor enrollment is under way: POST /account/totp first")
        step = totp.matched_step(account.totp_pending, code)
        if step is None:
            raise InvalidRequest("`code` is not the authenticator's current code", field="code")
        codes = totp.new_recovery_codes()
        await asyncio.to_thread(self._enable_totp, account.id, account.totp_pending, codes, step)
        return {"totpEnabled": True, "recoveryCodes": codes}

    def _enable_totp(self, account_id: str, secret: str, codes: list[str], step: int) -> None:
        store.enable_totp(self.meta, account_id, secret, [totp.recovery_hash(c) for c in codes])
        store.accept_totp_step(self.meta, account_id, step)  # the confirming code is spent

    async def totp_disable(
        self, access: Access, password: object, code: object, address: str
    ) -> None:
        """Turn two-factor off, proven by the password or by a current code of the
        authenticator (exactly one of them). A wrong one is a failed sign-in: it takes a
        token from the address's and the email's buckets, is logged, and answers 400 naming
        the field; while a bucket is empty, 429 without checking."""
        if (password is None) == (code is None):
            raise InvalidRequest(
                "send `password`, or `code` (the authenticator's current code): one of them",
                field="password",
            )
        field = "password" if password is not None else "code"
        value = password if password is not None else code
        if not isinstance(value, str) or not value or len(value) > passwords.MAX_LENGTH:
            raise InvalidRequest(f"`{field}` must be a non-empty string", field=field)
        await self.throttle.check(address, access.email)
        account = await asyncio.to_thread(store.get_account, self.meta, access.account_id)
        if field == "password":
            ok = await asyncio.to_thread(passwords.verify, account.password_hash, value)
        else:
            secret = account.totp_secret
            ok = secret is not None and await asyncio.to_thread(
                self._fresh_code, account.id, secret, value
            )
        if not ok:
            await self._failed(address, access.email, f"wrong_{field}", account)
            raise InvalidRequest(f"`{field}` is wrong", field=field)
        await asyncio.to_thread(store.disable_totp, self.meta, account.id)
