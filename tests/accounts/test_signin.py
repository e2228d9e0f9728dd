"""Sign-in, sign-out, sign-out everywhere, the account's settings and two-factor."""

from __future__ import annotations

from tests.accounts.conftest import (
    PASSWORD,
    Authenticator,
    call,
    new_team,
    sign_in,
    turn_on_totp,
)
from tests.support import Server, is_error


def test_sign_in_gives_a_session_that_signs_out(srv: Server) -> None:
    _, owner = new_team(srv)
    r = sign_in(srv, owner.email.upper())  # emails are not case-sensitive
    assert r.status_code == 200, r.text
    body = r.json()
    token = body["token"]
    assert token.startswith("svc_sess_") and body["account"]["email"] == owner.email
    assert "expiresAt" in body and "password" not in r.text
    me = call(srv, "GET", "/account", token).json()
    assert me["email"] == owner.email and me["teams"][0]["role"] == "owner"
    assert call(srv, "POST", "/auth/signout", token).status_code == 200
    is_error(call(srv, "GET", "/account", token), 401)
    assert call(srv, "GET", "/account", owner.token).status_code == 200  # the other session


def test_sign_out_everywhere_ends_every_session(srv: Server) -> None:
    _, owner = new_team(srv)
    second = sign_in(srv, owner.email).json()["token"]
    r = call(srv, "POST", "/auth/signout-everywhere", second)
    assert r.status_code == 200 and r.json()["sessionsEnded"] == 2
    is_error(call(srv, "GET", "/account", owner.token), 401)
    is_error(call(srv, "GET", "/account", second), 401)


def test_bad_sign_in_requests_name_the_field(srv: Server) -> None:
    is_error(call(srv, "POST", "/auth/signin", json={"password": "x" * 12}), 400, "email")
    is_error(call(srv, "POST", "/auth/signin", json={"email": "a@b.co"}), 400, "password")
    is_error(
        call(srv, "POST", "/auth/signin", json={"email": "a@b.co", "password": "x", "x": 1}),
        400,
        "x",
    )
    is_error(call(srv, "GET", "/account", "svc_sess_short"), 401)


def test_password_change_needs_the_current_one_and_signs_out_others(srv: Server) -> None:
    _, owner = new_team(srv)
    other = sign_in(srv, owner.email).json()["token"]
    is_error(
        call(srv, "PATCH", "/account", owner.token, json={"password": "another password 1"}),
        400,
        "currentPassword",
    )
    is_error(
        call(
            srv,
            "PATCH",
            "/account",
            owner.token,
            json={"password": "short", "currentPassword": PASSWORD},
        ),
        400,
        "password",
    )
    r = call(
        srv,
        "PATCH",
        "/account",
        owner.token,
        json={"password": "another password 1", "currentPassword": PASSWORD, "name": "Ada"},
    )
    assert r.status_code == 200 and r.json()["name"] == "Ada"
    is_error(call(srv, "GET", "/account", other), 401)
    assert call(srv, "GET", "/account", owner.token).status_code == 200
    assert sign_in(srv, owner.email, "another password 1").status_code == 200
    is_error(sign_in(srv, owner.email), 401)


def test_two_factor_enroll_verify_and_single_use_recovery_codes(srv: Server) -> None:
    _, owner = new_team(srv)
    begun = call(srv, "POST", "/account/totp", owner.token).json()
    assert begun["uri"].startswith("otpauth://totp/")
    app = Authenticator(begun["secret"])
    confirm = "/account/totp/confirm"
    is_error(
        call(srv, "POST", confirm, owner.token, json={"code": "000000", "password": PASSWORD}),
        400,
        "code",
    )
    # turning it on needs the password too: a session alone could lock the owner out
    code = app.code()
    is_error(call(srv, "POST", confirm, owner.token, json={"code": code}), 400, "password")
    is_error(
        call(srv, "POST", confirm, owner.token, json={"code": code, "password": "nope" * 3}),
        400,
        "password",
    )
    r = call(srv, "POST", confirm, owner.token, json={"code": code, "password": PASSWORD})
    assert r.status_code == 200, r.text
    codes = r.json()["recoveryCodes"]
    assert len(codes) == 10 and len(set(codes)) == 10
    # now the password alone is not enough
    assert is_error(sign_in(srv, owner.email), 401)["error"]["code"] == "totp_required"
    assert sign_in(srv, owner.email, code=app.code()).status_code == 200
    now = app.totp.now()
    is_error(sign_in(srv, owner.email, code="123456" if now != "123456" else "654321"), 401)
    # a recovery code works once
    assert sign_in(srv, owner.email, code=codes[0]).status_code == 200
    assert is_error(sign_in(srv, owner.email, code=codes[0]), 401)["error"]["code"] == (
        "invalid_credentials"
    )
    assert sign_in(srv, owner.email, code=codes[1].upper()).status_code == 200
    assert call(srv, "GET", "/account", owner.token).json()["recoveryCodesLeft"] == 8
    # off again, with the password
    is_error(
        call(srv, "DELETE", "/account/totp", owner.token, json={"password": "nope"}),
        400,
        "password",
    )
    assert (
        call(srv, "DELETE", "/account/totp", owner.token, json={"password": PASSWORD}).status_code
        == 200
    )
    assert sign_in(srv, owner.email).status_code == 200


def test_two_factor_off_needs_a_current_code_or_the_password(srv: Server) -> None:
    _, owner = new_team(srv)
    app, _ = turn_on_totp(srv, owner.token)
    totp = app.totp
    off = "/account/totp"
    is_error(call(srv, "DELETE", off, owner.token, json={}), 400, "password")
    both = {"password": PASSWORD, "code": totp.now()}
    is_error(call(srv, "DELETE", off, owner.token, json=both), 400, "password")
    is_error(call(srv, "DELETE", off, owner.token, json={"code": 123456}), 400, "code")
    wrong = f"{(int(totp.now()) + 500_000) % 1_000_000:06d}"
    is_error(call(srv, "DELETE", off, owner.token, json={"code": wrong}), 400, "code")
    is_error(call(srv, "DELETE", off, owner.token, json={"code": "x" * 300}), 400, "code")
    assert call(srv, "GET", "/account", owner.token).json()["totpEnabled"] is True
    r = call(srv, "DELETE", off, owner.token, json={"code": app.code()})
    assert r.status_code == 200 and r.json() == {"ok": True, "totpEnabled": False}
    assert sign_in(srv, owner.email).status_code == 200
