"""Teams, their members, and the transfer of a project from one team to another."""

from __future__ import annotations

from typing import Any

from svc.accounts import roles, teams
from svc.accounts.access import Access
from svc.accounts.service.base import ServiceBase, _need
from svc.errors import Forbidden, NotFound


class TeamAdmin(ServiceBase):
    """Teams and members; moving a project between teams."""

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

    def transfer(self, actor: Access | None, project_id: str, team_id: str) -> dict[str, Any]:
        """Move a project to another team: the caller owns both (the admin token: any)."""
        teams.get_team(self.meta, team_id)
        if actor is not None:
            if roles.OWNS not in actor.on_project(project_id):
                raise Forbidden("only an owner of the project's team may transfer it")
            _need(actor, roles.OWNS, team_id, "receive a project into this team")
        teams.assign_project(self.meta, project_id, team_id)
        return {"projectId": project_id, "teamId": team_id}
