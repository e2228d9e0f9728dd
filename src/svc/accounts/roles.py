"""Roles and rights: THE table of what each role may do (docs/api.md, "Accounts and teams").

A right is what a route requires (its rule in :data:`svc.http.rules.RULES`):

- ``read``: read a project's metrics and exports;
- ``edit``: a project's goals, funnels, annotations and email reports;
- ``manage``: a project's settings and keys, and creating projects in the team;
- ``members``: the team's members, invitations and a project's guests;
- ``owner``: delete a project, transfer it to another team, make or unmake owners;
- ``ingest``: send events (keys only: no role sends events).

Keys keep their scopes (``ingest``, ``read``, ``manage``: :mod:`svc.meta.store`); a secret
key's ``manage`` covers ``edit`` of its own project. The admin token has every right.
"""

from __future__ import annotations

OWNER, ADMIN, EDITOR, VIEWER, GUEST = "owner", "admin", "editor", "viewer", "guest"
TEAM_ROLES = (OWNER, ADMIN, EDITOR, VIEWER)  # strongest first

READ, EDIT, MANAGE, MEMBERS, OWNS, INGEST = "read", "edit", "manage", "members", "owner", "ingest"

#: The one table: each role's rights on its team and the team's projects (a guest: on the
#: one project it was invited to).
ROLE_RIGHTS: dict[str, frozenset[str]] = {
    OWNER: frozenset({READ, EDIT, MANAGE, MEMBERS, OWNS}),
    ADMIN: frozenset({READ, EDIT, MANAGE, MEMBERS}),
    EDITOR: frozenset({READ, EDIT}),
    VIEWER: frozenset({READ}),
    GUEST: frozenset({READ}),
}

NO_RIGHTS: frozenset[str] = frozenset()


def rights_of(role: str | None) -> frozenset[str]:
    return ROLE_RIGHTS.get(role or "", NO_RIGHTS)


def stronger(a: str | None, b: str | None) -> str | None:
    """The stronger of two roles (a team role beats guest)."""
    order = {r: i for i, r in enumerate((*TEAM_ROLES, GUEST))}
    if a is None:
        return b
    if b is None:
        return a
    return a if order[a] <= order[b] else b
