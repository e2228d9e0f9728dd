"""A session token to what its account may do: :class:`Access`, read fresh from the store on
every request (no cache: a sign-out, a removal or a role change takes effect at once)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from svc.accounts import roles, store, teams
from svc.meta.store import MetaStore


@dataclass(frozen=True)
class Access:
    """An account signed in with one session, and its roles."""

    account_id: str
    email: str
    session_id: str
    team_roles: Mapping[str, str]  # team id: role
    project_roles: Mapping[str, str]  # project id: the team's role, or guest

    def on_project(self, project_id: str) -> frozenset[str]:
        """The account's rights on a project (:data:`svc.accounts.roles.ROLE_RIGHTS`)."""
        return roles.rights_of(self.project_roles.get(project_id))

    def on_team(self, team_id: str) -> frozenset[str]:
        return roles.rights_of(self.team_roles.get(team_id))

    def teams_with(self, right: str) -> list[str]:
        """The teams on which the account has ``right``."""
        return [t for t, role in self.team_roles.items() if right in roles.rights_of(role)]


def load(meta: MetaStore, token: str) -> Access | None:
    """The access of a session token; None when it is unknown, signed out or expired, or its
    account is disabled."""
    found = store.find_session(meta, token)
    if found is None:
        return None
    session_id, account = found
    team_roles, project_roles = teams.roles_of(meta, account.id)
    return Access(account.id, account.email, session_id, team_roles, project_roles)
