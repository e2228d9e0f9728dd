"""Brute force: failed sign-ins limited per email and per address; short-lived invitations
expire. A server of its own, with tight limits."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.accounts.conftest import (
    CHEAP_HASHES,
    call,
    invite_token,
    new_team,
    sign_in,
    unique_email,
)
from tests.support import Server, is_error


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(
        tmp_path_factory.mktemp("lockout") / "data",
        env={
            **CHEAP_HASHES,
            "SVC_SIGNIN_LIMIT_PER_ACCOUNT": "3/h:3",
            "SVC_SIGNIN_LIMIT_PER_ADDRESS": "8/h:8",
            "SVC_INVITATION_HOURS": "0.0003",  # about a second
        },
    ).start()
    yield server
    server.stop()


def test_lockout_per_account_then_per_address(tight: Server) -> None:
    _, owner = new_team(tight)
    # per account: three failures, then even the right password waits
    for _ in range(3):
        is_error(sign_in(tight, owner.email, "wrong password!"), 401)
    r = is_error(sign_in(tight, owner.email), 429)
    assert r["error"]["code"] == "rate_limited" and "account" in r["error"]["message"]
    # an unknown email is limited alike (nothing tells which emails exist)
    ghost = unique_email("ghost")
    for _ in range(3):
        is_error(sign_in(tight, ghost, "wrong password!"), 401)
    limited = sign_in(tight, ghost)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    # per address: two more failures of other emails use the address's eight up
    for _ in range(2):
        is_error(sign_in(tight, unique_email("other"), "wrong password!"), 401)
    r = is_error(sign_in(tight, unique_email("fresh"), "wrong password!"), 429)
    assert "address" in r["error"]["message"]
    log = tight.log()
    assert log.count("signin_failed") + log.count("sign-in failed") >= 8
    assert "wrong password!" not in log


def test_invitations_expire(tight: Server) -> None:
    team_id, owner = new_team(tight)
    r = call(
        tight,
        "POST",
        f"/teams/{team_id}/invitations",
        owner.token,
        json={"email": unique_email(), "role": "viewer"},
    )
    token = invite_token(r.json()["link"])
    time.sleep(1.5)
    is_error(call(tight, "GET", f"/invitations/{token}"), 404)
    is_error(
        call(tight, "POST", f"/invitations/{token}/accept", json={"password": "a long password"}),
        404,
    )
