"""The accounts' domain operations, called by the HTTP handlers (:mod:`svc.http.accounts`)
and ``svcm``: sign-in and out, the account's own settings, two-factor, teams and members,
invitations, password resets and transfers.

``actor`` is the caller: its :class:`~svc.accounts.access.Access`, or None for the admin
token (every right). Handlers check the route's right first (:mod:`svc.http.rules`); the
checks here are those a route's rule cannot express (making an owner needs ``owner``, a
transfer needs ``owner`` of both teams). Blocking methods run in worker threads; the
``async`` ones (sign-in, turning two-factor off) use the event loop for the throttle and
a thread for argon2.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from svc.accounts import invites, passwords, roles, store, teams, totp
from svc.accounts import mail as mailer
from svc.accounts.access import Access
from svc.accounts.pseudonyms import pseudonym
from svc.accounts.store import Account
from svc.accounts.throttle import SignInThrottle, reset_throttle
from svc.errors import ApiError, Conflict, Forbidden, InvalidRequest, NotFound
from svc.mail import links
from svc.meta.store import MetaStore
from svc.settings import Settings
from svc.timeutil import iso_ms

if TYPE_CHECKING:  # imported where SVC_REDIS_URL is set (svc.limits.core)
    from svc.limits.shared import RedisBuckets

log = logging.getLogger("svc.accounts")

HOUR_MS = 3600 * 1000


class InvalidCredentials(ApiError):
    """The one answer to a wrong password, an unknown email and a disabled account."""

    status, code = 401, "invalid_credentials"


class TotpRequired(ApiError):
    status, code = 401, "totp_required"


class AccountService:
    def __init__(
        self, meta: MetaStore, settings: Settings, shared_limits: RedisBuckets | None = None
    ) -> None:
        """``shared_limits``: the rate limits' Redis buckets, where the sign-in limits then
        live too (shared by every process); None: this process's own."""
        self.meta = meta
        self.settings = settings
        passwords.configure(settings.password_hash_memory_kib, settings.password_hash_iterations)
        self.throttle = SignInThrottle(
            settings.signin_limit_per_address, settings.signin_limit_per_account, shared_limits
        )
        self.reset_limits = reset_throttle(
            settings.reset_limit_per_address, settings.reset_limit_per_account, shared_limits
        )
        #: reset mails being prepared after their 202 was answered (:meth:`request_reset`)
        self._reset_work: set[asyncio.Task[None]] = set()

    @property
    def session_ms(self) -> int:
        return int(self.settings.session_hours * HOUR_MS)

    # sign-in ------------------------------------------------------------------------------

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

    # the account's own settings -------------------------------------------------------------

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

    # accounts for operators ---------------------------------------------------------------

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

    # teams --------------------------------------------------------------------------------

    def create_team(self, actor: Access | None, name: object) -> dict[str, Any]:
        """A new team; an account creating it is its owner."""
        team = teams.create_team(
            self.meta, teams.check_team_name(name), actor.account_id if actor else None
        )
        return {**team.to_json(), "role": roles.OWNER if actor else None}

    def list_teams(self, actor: Access | None) -> list[dict[str, Any]]:
        found = teams.list_teams(self.meta, actor.account_id if actor else None)
        return [{**team.to_json(), "role": role} for team, role in found]

    def team_detail(self, team_id: str) -> dict[str, Any]:
        team = teams.get_team(self.meta, team_id)
        return {
            **team.to_json(),
            "members": teams.members(self.meta, team_id),
            "projects": teams.projects_of_team(self.meta, team_id),
        }

    def rename_team(self, team_id: str, name: object) -> dict[str, Any]:
        return teams.rename_team(self.meta, team_id, teams.check_team_name(name)).to_json()

    def set_role(
        self, actor: Access | None, team_id: str, account_id: str, role_value: object
    ) -> dict[str, Any]:
        """Change a member's role: making or unmaking an owner needs ``owner``; the last owner
        cannot be demoted (409)."""
        role = teams.check_role(role_value)
        current = teams.role_in(self.meta, team_id, account_id)
        if current is None:
            raise NotFound(f"{account_id!r} is not a member of this team")
        if roles.OWNER in (role, current):
            _need(actor, roles.OWNS, team_id, "make or unmake an owner")
        teams.set_role(self.meta, team_id, account_id, role)
        return self.team_detail(team_id)

    def remove_member(self, actor: Access | None, team_id: str, account_id: str) -> None:
        """Remove a member, or leave (one's own id, with any role). Removing an owner needs
        ``owner``; the last owner cannot leave (409)."""
        current = teams.role_in(self.meta, team_id, account_id)
        if current is None:
            raise NotFound(f"{account_id!r} is not a member of this team")
        leaving = actor is not None and actor.account_id == account_id
        if not leaving:
            _need(actor, roles.MEMBERS, team_id, "remove members")
            if current == roles.OWNER:
                _need(actor, roles.OWNS, team_id, "remove an owner")
        teams.remove_member(self.meta, team_id, account_id)

    # invitations --------------------------------------------------------------------------

    def invite(
        self,
        actor: Access | None,
        email_value: object,
        *,
        team_id: str | None,
        project_id: str | None,
        role_value: object,
        answer_base: str,
    ) -> dict[str, Any]:
        """Invite an email to a team (a role) or to a project (a guest). With mail on, the
        link is mailed, and it starts with ``SVC_BASE_URL`` (:mod:`svc.mail.links`: never
        from a request); without, it is in the answer (``link``) for the inviter to pass on,
        starting with ``answer_base`` (``SVC_BASE_URL``, else the origin the inviter used)."""
        email = store.normalize_email(email_value)
        if project_id is not None:
            role = roles.GUEST
            where = f"the project {project_id}"
        else:
            assert team_id is not None
            role = teams.check_role(role_value)
            if role == roles.OWNER:
                _need(actor, roles.OWNS, team_id, "invite an owner")
            where = f"the team {teams.get_team(self.meta, team_id).name}"
        invitation, token = invites.create_invitation(
            self.meta,
            email,
            team_id=team_id,
            project_id=project_id,
            role=role,
            invited_by=actor.account_id if actor else None,
            ttl_ms=int(self.settings.invitation_hours * HOUR_MS),
        )
        mailed = mailer.mail_on(self.settings)
        if mailed:
            link = links.dashboard_link(self.settings, f"invite={token}")
        else:
            link = f"{answer_base.rstrip('/')}/dashboard#invite={token}"
        if mailed:
            inviter = actor.email if actor else "The operator of this svc"
            mailer.send(
                self.meta,
                email,
                f"You are invited to {where} on svc",
                f"{inviter} invites you to {where} on svc, as {role}.\n\n"
                f"Accept the invitation (by creating an account, or by signing in):\n{link}\n\n"
                f"The link works once, until {iso_ms(invitation.expires_at)}.\n",
                "invitation",
            )
        out: dict[str, Any] = {"invitation": invitation.to_json(), "mailed": mailed}
        if not mailed:
            out["link"] = link
        return out

    def invitations(
        self, *, team_id: str | None = None, project_id: str | None = None
    ) -> list[dict[str, Any]]:
        found = invites.pending_invitations(self.meta, team_id=team_id, project_id=project_id)
        return [i.to_json() for i in found]

    def preview_invitation(self, token: str) -> dict[str, Any]:
        """What an invitation link offers (for its page): the email, the team or project,
        the role, and whether that email has an account (sign in) or not (sign up)."""
        inv = invites.find_invitation(self.meta, token)
        out = inv.to_json()
        out["teamName"] = teams.get_team(self.meta, inv.team_id).name if inv.team_id else None
        out["accountExists"] = store.find_account(self.meta, inv.email) is not None
        return out

    def accept_invitation(
        self, token: str, actor: Access | None, password: object, name: object
    ) -> dict[str, Any]:
        """Accept an invitation: signed in (``actor``), the account joins; otherwise an
        account is created with the invited email and ``password``, and signed in. The
        token works once (404 after)."""
        inv = invites.find_invitation(self.meta, token)
        created: Account | None = None
        if actor is None:
            new_password = passwords.check_policy(password)
            new_name = store.check_name(name) if name is not None else ""
            if store.find_account(self.meta, inv.email) is not None:
                raise Conflict(
                    f"an account with the email {inv.email!r} exists: sign in, then accept"
                )
            invites.take_invitation(self.meta, inv.id)
            created = store.create_account(
                self.meta, inv.email, passwords.hash_password(new_password), new_name
            )
            account_id = created.id
        else:
            invites.take_invitation(self.meta, inv.id)
            account_id = actor.account_id
        if inv.project_id is not None:
            teams.add_guest(self.meta, inv.project_id, account_id)
            joined: dict[str, Any] = {"projectId": inv.project_id, "role": roles.GUEST}
        else:
            assert inv.team_id is not None
            role = teams.add_member(self.meta, inv.team_id, account_id, inv.role)
            joined = {"teamId": inv.team_id, "role": role}
        out: dict[str, Any] = {"joined": joined}
        if created is not None:
            out.update(self.new_session(created))
        return out

    def revoke_invitation(self, team_id: str, invitation_id: str) -> None:
        invites.revoke_invitation(self.meta, invitation_id, team_id)

    # password reset -----------------------------------------------------------------------

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

    # projects -----------------------------------------------------------------------------

    def transfer(self, actor: Access | None, project_id: str, team_id: str) -> dict[str, Any]:
        """Move a project to another team: the caller owns both (the admin token: any)."""
        teams.get_team(self.meta, team_id)
        if actor is not None:
            if roles.OWNS not in actor.on_project(project_id):
                raise Forbidden("only an owner of the project's team may transfer it")
            _need(actor, roles.OWNS, team_id, "receive a project into this team")
        teams.assign_project(self.meta, project_id, team_id)
        return {"projectId": project_id, "teamId": team_id}


def _need(actor: Access | None, right: str, team_id: str, what: str) -> None:
    if actor is not None and right not in actor.on_team(team_id):
        raise Forbidden(f"only a team member with the {right!r} right may {what}")
