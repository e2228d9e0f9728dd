"""Teams, their members and roles, which team owns a project, and a project's guests.

Synchronous functions over the metadata store (call them from a worker thread). The last
owner of a team can neither leave nor be demoted: 409 ``conflict``. A project belongs to at
most one team (none: only the admin token reaches it, until it is transferred).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from svc.accounts import roles, tokens
from svc.accounts.store import writable
from svc.errors import Conflict, InvalidRequest, NotFound
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import iso_ms, now_ms

T = tables.teams
M = tables.team_members
PT = tables.project_teams
G = tables.project_guests
A = tables.accounts


@dataclass(frozen=True)
class Team:
    id: str
    name: str
    created_at: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "createdAt": iso_ms(self.created_at)}


def check_role(value: object, field: str = "role") -> str:
    if value not in roles.TEAM_ROLES:
        raise InvalidRequest(f"`{field}` must be one of {', '.join(roles.TEAM_ROLES)}", field=field)
    assert isinstance(value, str)
    return value


def check_team_name(value: object, field: str = "name") -> str:
    if not isinstance(value, str) or not 1 <= len(value.strip()) <= 100:
        raise InvalidRequest(f"`{field}` must be a name of 1 to 100 characters", field=field)
    return value.strip()


# teams ------------------------------------------------------------------------------------


def create_team(meta: MetaStore, name: str, owner_id: str | None = None) -> Team:
    """A new team; with ``owner_id``, that account is its first owner."""
    writable(meta)
    now = now_ms()
    team = Team(tokens.new_id("team_"), name, now)
    with meta.engine.begin() as conn:
        conn.execute(insert(T).values(id=team.id, name=name, created_at=now))
        if owner_id is not None:
            conn.execute(
                insert(M).values(
                    team_id=team.id, account_id=owner_id, role=roles.OWNER, created_at=now
                )
            )
    return team


def get_team(meta: MetaStore, team_id: str) -> Team:
    with meta.engine.connect() as conn:
        row = conn.execute(select(T).where(T.c.id == team_id)).first()
    if row is None:
        raise NotFound(f"no team {team_id!r}")
    return Team(row.id, row.name, row.created_at)


def list_teams(meta: MetaStore, account_id: str | None = None) -> list[tuple[Team, str | None]]:
    """Every team (``account_id`` None), or the account's teams, with the account's role."""
    with meta.engine.connect() as conn:
        rows: list[tuple[Any, str | None]]
        if account_id is None:
            rows = [(r, None) for r in conn.execute(select(T)).all()]
        else:
            rows = [
                (r, r.role)
                for r in conn.execute(
                    select(T, M.c.role)
                    .join(M, M.c.team_id == T.c.id)
                    .where(M.c.account_id == account_id)
                ).all()
            ]
    out = [(Team(r.id, r.name, r.created_at), role) for r, role in rows]
    out.sort(key=lambda item: (item[0].created_at, item[0].id))
    return out


def rename_team(meta: MetaStore, team_id: str, name: str) -> Team:
    writable(meta)
    with meta.engine.begin() as conn:
        if conn.execute(update(T).where(T.c.id == team_id).values(name=name)).rowcount == 0:
            raise NotFound(f"no team {team_id!r}")
    return get_team(meta, team_id)


# members ----------------------------------------------------------------------------------


def members(meta: MetaStore, team_id: str) -> list[dict[str, Any]]:
    """The team's members: id, email, name, role, since."""
    with meta.engine.connect() as conn:
        rows = conn.execute(
            select(A.c.id, A.c.email, A.c.name, A.c.disabled_at, M.c.role, M.c.created_at)
            .join(M, M.c.account_id == A.c.id)
            .where(M.c.team_id == team_id)
            .order_by(M.c.created_at, A.c.email)
        ).all()
    return [
        {
            "id": r.id,
            "email": r.email,
            "name": r.name,
            "role": r.role,
            "disabled": r.disabled_at is not None,
            "since": iso_ms(r.created_at),
        }
        for r in rows
    ]


def role_in(meta: MetaStore, team_id: str, account_id: str) -> str | None:
    with meta.engine.connect() as conn:
        role: str | None = conn.scalar(
            select(M.c.role).where(M.c.team_id == team_id, M.c.account_id == account_id)
        )
    return role


def _owners(conn: Connection, team_id: str) -> int:
    return int(
        conn.scalar(
            select(func.count())
            .select_from(M)
            .where(M.c.team_id == team_id, M.c.role == roles.OWNER)
        )
        or 0
    )


def add_member(meta: MetaStore, team_id: str, account_id: str, role: str) -> str:
    """Make the account a member with ``role``; a member already keeps the stronger of its
    role and ``role``. The role it has now."""
    writable(meta)
    with meta.engine.begin() as conn:
        if conn.scalar(select(T.c.id).where(T.c.id == team_id)) is None:
            raise NotFound(f"no team {team_id!r}")
        current = conn.scalar(
            select(M.c.role).where(M.c.team_id == team_id, M.c.account_id == account_id)
        )
        if current is None:
            conn.execute(
                insert(M).values(
                    team_id=team_id, account_id=account_id, role=role, created_at=now_ms()
                )
            )
            return role
        best = roles.stronger(current, role) or role
        if best != current:
            conn.execute(
                update(M)
                .where(M.c.team_id == team_id, M.c.account_id == account_id)
                .values(role=best)
            )
        return best


def set_role(meta: MetaStore, team_id: str, account_id: str, role: str) -> None:
    """Change a member's role; 409 when that would leave the team without an owner."""
    writable(meta)
    with meta.engine.begin() as conn:
        current = conn.scalar(
            select(M.c.role).where(M.c.team_id == team_id, M.c.account_id == account_id)
        )
        if current is None:
            raise NotFound(f"{account_id!r} is not a member of team {team_id!r}")
        if current == roles.OWNER and role != roles.OWNER and _owners(conn, team_id) <= 1:
            raise Conflict("the last owner of a team cannot be demoted: make another owner first")
        conn.execute(
            update(M).where(M.c.team_id == team_id, M.c.account_id == account_id).values(role=role)
        )


def remove_member(meta: MetaStore, team_id: str, account_id: str) -> None:
    """Remove a member (or leave); 409 for the last owner."""
    writable(meta)
    with meta.engine.begin() as conn:
        current = conn.scalar(
            select(M.c.role).where(M.c.team_id == team_id, M.c.account_id == account_id)
        )
        if current is None:
            raise NotFound(f"{account_id!r} is not a member of team {team_id!r}")
        if current == roles.OWNER and _owners(conn, team_id) <= 1:
            raise Conflict("the last owner of a team cannot leave: make another owner first")
        conn.execute(delete(M).where(M.c.team_id == team_id, M.c.account_id == account_id))


# projects ---------------------------------------------------------------------------------


def team_of_project(meta: MetaStore, project_id: str) -> str | None:
    with meta.engine.connect() as conn:
        team_id: str | None = conn.scalar(select(PT.c.team_id).where(PT.c.project_id == project_id))
    return team_id


def assign_project(meta: MetaStore, project_id: str, team_id: str) -> None:
    """The project now belongs to the team (and to no other)."""
    writable(meta)
    with meta.engine.begin() as conn:
        conn.execute(delete(PT).where(PT.c.project_id == project_id))
        conn.execute(
            insert(PT).values(project_id=project_id, team_id=team_id, assigned_at=now_ms())
        )


def projects_of_team(meta: MetaStore, team_id: str) -> list[str]:
    with meta.engine.connect() as conn:
        return list(
            conn.scalars(
                select(PT.c.project_id).where(PT.c.team_id == team_id).order_by(PT.c.project_id)
            )
        )


# guests -----------------------------------------------------------------------------------


def add_guest(meta: MetaStore, project_id: str, account_id: str) -> None:
    writable(meta)
    with meta.engine.begin() as conn:
        exists = conn.scalar(
            select(G.c.account_id).where(G.c.project_id == project_id, G.c.account_id == account_id)
        )
        if exists is None:
            conn.execute(
                insert(G).values(project_id=project_id, account_id=account_id, created_at=now_ms())
            )


def remove_guest(meta: MetaStore, project_id: str, account_id: str) -> None:
    writable(meta)
    with meta.engine.begin() as conn:
        result = conn.execute(
            delete(G).where(G.c.project_id == project_id, G.c.account_id == account_id)
        )
    if result.rowcount == 0:
        raise NotFound(f"{account_id!r} is not a guest of {project_id!r}")


def guests(meta: MetaStore, project_id: str) -> list[dict[str, Any]]:
    with meta.engine.connect() as conn:
        rows = conn.execute(
            select(A.c.id, A.c.email, A.c.name, G.c.created_at)
            .join(G, G.c.account_id == A.c.id)
            .where(G.c.project_id == project_id)
            .order_by(A.c.email)
        ).all()
    return [
        {"id": r.id, "email": r.email, "name": r.name, "since": iso_ms(r.created_at)} for r in rows
    ]


# what an account may reach ----------------------------------------------------------------


def roles_of(meta: MetaStore, account_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """The account's role in each of its teams, and on each project it reaches (its team's
    role, or ``guest``; the stronger of the two when both)."""
    with meta.engine.connect() as conn:
        team_roles = {
            r.team_id: r.role
            for r in conn.execute(
                select(M.c.team_id, M.c.role).where(M.c.account_id == account_id)
            ).all()
        }
        project_roles: dict[str, str] = {}
        if team_roles:
            for r in conn.execute(
                select(PT.c.project_id, PT.c.team_id).where(PT.c.team_id.in_(list(team_roles)))
            ).all():
                project_roles[r.project_id] = team_roles[r.team_id]
        for pid in conn.scalars(select(G.c.project_id).where(G.c.account_id == account_id)):
            project_roles[pid] = roles.stronger(project_roles.get(pid), roles.GUEST) or roles.GUEST
    return team_roles, project_roles
