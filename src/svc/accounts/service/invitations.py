"""Invitations to a team (a role) or to a project (a guest): made, mailed or handed over,
previewed, accepted (signing up when there is no account yet), withdrawn."""

from __future__ import annotations

from typing import Any

from svc.accounts import invites, passwords, roles, store, teams
from svc.accounts import mail as mailer
from svc.accounts.access import Access
from svc.accounts.service.base import HOUR_MS, _need
from svc.accounts.service.signin import SignIn
from svc.accounts.store import Account
from svc.errors import Conflict
from svc.mail import links
from svc.timeutil import iso_ms


class Invitations(SignIn):
    """Invitations; accepting one without an account signs the new account in."""

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
