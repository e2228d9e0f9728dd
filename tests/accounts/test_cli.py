"""``svcm users``, ``svcm teams`` and ``svcm invite`` against the real server, with the admin
token: the first owner made from the command line signs in over HTTP."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.accounts.conftest import (
    CHEAP_HASHES,
    PASSWORD,
    call,
    invite_token,
    new_team,
    sign_in,
    unique_email,
)
from tests.cli.support import clean_env, svcm
from tests.support import Server, is_error


def test_operator_makes_the_first_owner_invites_and_disables(srv: Server, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "config.toml", SVC_URL=srv.url, SVC_TOKEN=srv.admin_token)
    email = unique_email("first")
    made = (
        svcm(
            "users",
            "create",
            "--email",
            email,
            "--owner",
            "--team",
            "First",
            "--json",
            env=env,
            stdin=PASSWORD + "\n",
        )
        .ok()
        .json()
    )
    assert made["team"]["role"] == "owner" and made["account"]["email"] == email
    token = sign_in(srv, email).json()["token"]
    assert call(srv, "GET", "/account", token).json()["teams"][0]["name"] == "First"
    listed = svcm("users", "list", "--json", env=env).ok().json()["accounts"]
    assert email in [a["email"] for a in listed]
    # an invitation from the command line: mail is off, so the link is printed
    guest = unique_email("cli")
    out = svcm("invite", guest, "--team", "First", "--role", "editor", env=env).ok().stdout
    link = next(word for word in out.split() if "#invite=" in word)
    r = call(srv, "POST", f"/invitations/{invite_token(link)}/accept", json={"password": PASSWORD})
    assert r.status_code == 200 and r.json()["joined"]["role"] == "editor"
    members = svcm("teams", "members", "First", "--json", env=env).ok().json()["members"]
    assert {m["email"]: m["role"] for m in members} == {email: "owner", guest: "editor"}
    assert "First" in svcm("teams", "list", env=env).ok().stdout
    # disabled: signed out, and sign-in fails like a wrong password
    svcm("users", "disable", email, env=env).ok()
    is_error(call(srv, "GET", "/account", token), 401)
    is_error(sign_in(srv, email), 401)
    svcm("users", "enable", email, env=env).ok()
    assert sign_in(srv, email).status_code == 200
    # a short password, or an email that has an account: one line, no traceback
    svcm("users", "create", "--email", unique_email(), env=env, stdin="short\n").fails(
        1, "password"
    )
    svcm("users", "create", "--email", email, env=env, stdin=PASSWORD + "\n").fails(1, "exists")


def test_init_makes_the_first_owner(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "config.toml", **CHEAP_HASHES)
    data = tmp_path / "data"
    args = ("init", "--data-dir", str(data), "--owner", "zed@example.com", "--json")
    made = svcm(*args, env=env, stdin=PASSWORD + "\n").ok().json()
    assert made["owner"]["team"]["role"] == "owner" and made["adminToken"]
    srv = Server(data, env=dict(CHEAP_HASHES)).start()
    try:
        token = sign_in(srv, "zed@example.com").json()["token"]
        assert call(srv, "GET", "/account", token).json()["teams"][0]["role"] == "owner"
    finally:
        srv.stop()


def test_operator_sets_a_password(srv: Server, tmp_path: Path) -> None:
    """``svcm users password``: the new password from stdin (never an argument, never
    printed), stored as argon2id; every session of the account ends."""
    env = clean_env(tmp_path / "config.toml", SVC_URL=srv.url, SVC_TOKEN=srv.admin_token)
    _, owner = new_team(srv)
    new = "set by the operator 7"
    done = svcm("users", "password", owner.email, env=env, stdin=new + "\n").ok()
    assert owner.email in done.stderr
    assert new not in done.stdout + done.stderr
    is_error(call(srv, "GET", "/account", owner.token), 401)  # signed out everywhere
    assert sign_in(srv, owner.email, new).status_code == 200
    is_error(sign_in(srv, owner.email), 401)
    with sqlite3.connect(f"file:{srv.data_dir / 'meta.db'}?mode=ro", uri=True) as db:
        (stored,) = db.execute(
            "SELECT password_hash FROM accounts WHERE email = ?", (owner.email,)
        ).fetchone()
    assert stored.startswith("$argon2id$") and new not in stored
    # by id, as JSON: the account, nothing secret
    again = "set by the operator 8"
    record = (
        svcm("users", "password", owner.account_id, "--json", env=env, stdin=again + "\n")
        .ok()
        .json()
    )
    assert record["email"] == owner.email and again not in json.dumps(record)
    assert sign_in(srv, owner.email, again).status_code == 200
    # the password is never an argument; a short one, or no one: one line, no traceback
    stray = svcm("users", "password", owner.email, again, env=env).fails(2, "not an argument")
    assert again not in stray.stderr
    svcm("users", "password", owner.email, env=env, stdin="short\n").fails(1, "password")
    svcm("users", "password", unique_email(), env=env, stdin=new + "\n").fails(2, "no account")
    assert sign_in(srv, owner.email, again).status_code == 200
