"""Brute force: the same answer in the same time for an unknown email and a wrong password;
failed sign-ins limited per email and per address; short-lived invitations expire. A server of
its own, with tight limits and argon2id at its default cost (so that the hash, not the
machine's noise, is what a sign-in's time is made of). Each test sends from an address of its
own (X-Forwarded-For, from a trusted loopback proxy)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.accounts.conftest import (
    PASSWORD,
    call,
    invite_token,
    new_team,
    turn_on_totp,
    unique_email,
)
from tests.support import Server, is_error


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(
        tmp_path_factory.mktemp("lockout") / "data",
        env={
            "SVC_TRUSTED_PROXIES": "127.0.0.1/32",
            "SVC_SIGNIN_LIMIT_PER_ACCOUNT": "3/h:3",
            "SVC_SIGNIN_LIMIT_PER_ADDRESS": "8/h:8",
            "SVC_INVITATION_HOURS": "0.0008",  # about three seconds
        },
    ).start()
    yield server
    server.stop()


def _sign_in(srv: Server, address: str, email: str, password: str = PASSWORD) -> httpx.Response:
    return call(
        srv,
        "POST",
        "/auth/signin",
        json={"email": email, "password": password},
        headers={"X-Forwarded-For": address},
    )


def test_wrong_password_and_unknown_email_get_the_same_answer(tight: Server) -> None:
    owners = [new_team(tight)[1] for _ in range(3)]
    timings: dict[str, list[float]] = {"wrong": [], "unknown": []}
    answers = {}
    for n, owner in enumerate(owners):  # an address of its own (the address's limit is 8)
        for _ in range(3):  # three failures: an account's limit
            for kind, email in (("wrong", owner.email), ("unknown", unique_email("nobody"))):
                started = time.perf_counter()
                r = _sign_in(tight, f"198.51.100.2{n}", email, "not the password at all")
                timings[kind].append(time.perf_counter() - started)
                error = r.json()["error"]
                answers[kind] = (r.status_code, error["code"], error["message"])
    assert (
        answers["wrong"]
        == answers["unknown"]
        == (
            401,
            "invalid_credentials",
            "the email or the password is wrong",
        )
    )
    # both verify an argon2id hash (a dummy one for the unknown email): the fastest of nine
    # of each within a factor of four (a loaded machine's pauses do not reach all nine; an
    # unknown email that skipped the hash would answer tens of times faster)
    wrong, unknown = min(timings["wrong"]), min(timings["unknown"])
    assert 0.25 < wrong / unknown < 4.0, timings
    log = tight.log()
    assert "signin_failed" in log and "not the password at all" not in log


def test_lockout_per_account_then_per_address(tight: Server) -> None:
    _, owner = new_team(tight)
    address = "198.51.100.2"
    # per account: three failures, then even the right password waits
    for _ in range(3):
        is_error(_sign_in(tight, address, owner.email, "wrong password!"), 401)
    r = is_error(_sign_in(tight, address, owner.email), 429)
    assert r["error"]["code"] == "rate_limited" and "account" in r["error"]["message"]
    # an unknown email is limited alike (nothing tells which emails exist)
    ghost = unique_email("ghost")
    for _ in range(3):
        is_error(_sign_in(tight, address, ghost, "wrong password!"), 401)
    limited = _sign_in(tight, address, ghost)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    # per address: two more failures of other emails use the address's eight up
    for _ in range(2):
        is_error(_sign_in(tight, address, unique_email("other"), "wrong password!"), 401)
    r = is_error(_sign_in(tight, address, unique_email("fresh"), "wrong password!"), 429)
    assert "address" in r["error"]["message"]
    log = tight.log()
    assert log.count("signin_failed") >= 8 and "wrong password!" not in log


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
    time.sleep(3.2)
    is_error(call(tight, "GET", f"/invitations/{token}"), 404)
    is_error(
        call(tight, "POST", f"/invitations/{token}/accept", json={"password": "a long password"}),
        404,
    )


def test_guessing_codes_to_turn_two_factor_off_is_limited(tight: Server) -> None:
    """A session that guesses codes (or passwords) to turn two-factor off meets the sign-in
    limit of its account: wrong guesses are failed sign-ins."""
    _, owner = new_team(tight)
    app, _ = turn_on_totp(tight, owner.token)
    totp = app.totp
    wrong = f"{(int(totp.now()) + 500_000) % 1_000_000:06d}"
    via = {"X-Forwarded-For": "198.51.100.3"}
    for _ in range(3):
        r = call(tight, "DELETE", "/account/totp", owner.token, json={"code": wrong}, headers=via)
        is_error(r, 400, "code")
    r = call(tight, "DELETE", "/account/totp", owner.token, json={"code": app.code()}, headers=via)
    assert is_error(r, 429)["error"]["code"] == "rate_limited"
    assert call(tight, "GET", "/account", owner.token).json()["totpEnabled"] is True
    assert "wrong_code" in tight.log()
