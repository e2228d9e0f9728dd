"""Accounts for operators (the admin token, ``svcm users``): create, list, disable, set a
password."""

from __future__ import annotations

from typing import Any

from svc.accounts import invites, passwords, roles, store, teams
from svc.accounts.service.base import ServiceBase, log
from svc.errors import InvalidRequest


class Operators(ServiceBase):
    """The operator's operations on accounts."""

    def create_account(
        self, email_value: object, password: object, name: str = "", *, team_name: str | None = None
    ) -> dict[str, Any]:
        """An account (``svcm users create``); with ``team_name``, a new team it owns."""
        email = store.normalize_email(email_value)
        secret = passwords.check_policy(password)
        account = store.create_account(
            self.meta, email, passwords.hash_password(secret), store.check_name(name)
        )
        out: dict[str, Any] = {"account": account.to_json()}
        if team_name is not None:
            team = teams.create_team(self.meta, teams.check_team_name(team_name), account.id)
            out["team"] = {**team.to_json(), "role": roles.OWNER}
        return out

    def list_accounts(self) -> list[dict[str, Any]]:
        """Every account with its teams and roles (the admin token; ``svcm users list``)."""
        out = []
        for account in store.list_accounts(self.meta):
            found = teams.list_teams(self.meta, account.id)
            out.append(
                {**account.to_json(), "teams": [{**t.to_json(), "role": r} for t, r in found]}
            )
        return out

    def set_disabled(self, account_id: str, disabled: object) -> dict[str, Any]:
        """Disable (signing it out everywhere) or enable an account (the admin token)."""
        if not isinstance(disabled, bool):
            raise InvalidRequest("`disabled` must be true or false", field="disabled")
        store.set_disabled(self.meta, account_id, disabled)
        return store.get_account(self.meta, account_id).to_json()

    def set_password(self, account_id: str, password: object) -> dict[str, Any]:
        """An operator sets an account's password (the admin token; ``svcm users password``):
        argon2id as every password, and every session of the account ends. The answer is the
        account, which holds nothing secret."""
        secret = passwords.check_policy(password)
        store.get_account(self.meta, account_id)  # 404 before the hash's work
        store.set_password(self.meta, account_id, passwords.hash_password(secret))
        ended = store.delete_sessions(self.meta, account_id)
        invites.spend_resets(self.meta, account_id)
        log.info(
            "password set by the operator",
            extra={"event": "password_set", "accountId": account_id, "sessionsEnded": ended},
        )
        return store.get_account(self.meta, account_id).to_json()
