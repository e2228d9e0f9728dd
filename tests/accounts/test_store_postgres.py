"""The accounts' store functions on SQLite and PostgreSQL (the ``meta`` fixture runs each test
on both): accounts, sessions, teams and the last owner, invitations and resets (expiry and
single use), recovery codes."""

from __future__ import annotations

import pytest

from svc.accounts import access, invites, roles, store, teams, tokens
from svc.errors import Conflict, NotFound
from svc.meta.store import MetaStore
from tests.test_meta_store import meta

__all__ = ["meta"]


def test_accounts_sessions_and_roles(meta: MetaStore) -> None:
    account = store.create_account(meta, "ada@example.com", "hash", "Ada")
    with pytest.raises(Conflict):
        store.create_account(meta, "ada@example.com", "hash")
    assert store.find_account(meta, "ada@example.com") == account
    team = teams.create_team(meta, "t", account.id)
    project, _ = meta.create_project("pgacc", "UTC", [])
    teams.assign_project(meta, project.id, team.id)
    session_id, token, _ = store.create_session(meta, account.id, 60_000)
    got = access.load(meta, token)
    assert got is not None and got.session_id == session_id
    assert got.on_project(project.id) == roles.ROLE_RIGHTS["owner"]
    _, expired, _ = store.create_session(meta, account.id, -1)
    assert access.load(meta, expired) is None
    assert access.load(meta, tokens.new_token(tokens.SESSION_PREFIX)[0]) is None
    store.set_disabled(meta, account.id, True)
    assert access.load(meta, token) is None
    # the last owner
    with pytest.raises(Conflict):
        teams.remove_member(meta, team.id, account.id)
    with pytest.raises(Conflict):
        teams.set_role(meta, team.id, account.id, "viewer")
    other = store.create_account(meta, "bob@example.com", "hash")
    assert teams.add_member(meta, team.id, other.id, "viewer") == "viewer"
    assert teams.add_member(meta, team.id, other.id, "owner") == "owner"  # the stronger
    teams.remove_member(meta, team.id, account.id)
    # a deleted project leaves no team row
    meta.delete_project(project.id)
    assert teams.projects_of_team(meta, team.id) == []


def test_invitations_and_resets_expire_and_work_once(meta: MetaStore) -> None:
    account = store.create_account(meta, "cy@example.com", "hash")
    team = teams.create_team(meta, "t", account.id)
    inv, token = invites.create_invitation(
        meta,
        "dee@example.com",
        team_id=team.id,
        project_id=None,
        role="editor",
        invited_by=None,
        ttl_ms=60_000,
    )
    assert invites.find_invitation(meta, token).id == inv.id
    invites.take_invitation(meta, inv.id)
    with pytest.raises(NotFound):
        invites.take_invitation(meta, inv.id)
    with pytest.raises(NotFound):
        invites.find_invitation(meta, token)
    _, old = invites.create_invitation(
        meta,
        "eve@example.com",
        team_id=team.id,
        project_id=None,
        role="viewer",
        invited_by=None,
        ttl_ms=-1,
    )
    with pytest.raises(NotFound):
        invites.find_invitation(meta, old)
    reset = invites.create_reset(meta, account.id, 60_000)
    assert invites.take_reset(meta, reset) == account.id
    assert invites.take_reset(meta, reset) is None
    assert invites.take_reset(meta, invites.create_reset(meta, account.id, -1)) is None
    # recovery codes: each once
    store.enable_totp(meta, account.id, "SECRET", ["h1", "h2"])
    assert store.use_recovery_code(meta, account.id, "h1")
    assert not store.use_recovery_code(meta, account.id, "h1")
    assert store.recovery_codes_left(meta, account.id) == 1
