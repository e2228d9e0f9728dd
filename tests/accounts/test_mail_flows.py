"""Invitations and password resets end to end: mail through a real SMTP server (aiosmtpd,
tests/mail_server.py), read there, and its link followed over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email.message import EmailMessage

import httpx
import pytest

from tests.accounts.conftest import CHEAP_HASHES, PASSWORD, call, new_team, sign_in, unique_email
from tests.mail_server import MailServer, mail_server
from tests.support import Server, is_error

__all__ = ["mail_server"]


@pytest.fixture(scope="module")
def mailing(tmp_path_factory: pytest.TempPathFactory, mail_server: MailServer) -> Iterator[Server]:
    server = mail_server.svc(tmp_path_factory.mktemp("account-mail") / "data", **CHEAP_HASHES)
    yield server
    server.stop()


def _link(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None
    match = re.search(r"https?://\S+", body.get_content())
    assert match is not None, body.get_content()
    return match.group(0)


def test_invitation_mail_link_followed(mailing: Server, mail_server: MailServer) -> None:
    team_id, owner = new_team(
        mailing, mail=mail_server
    )  # the first owner: the admin token's invitation, mailed
    email = unique_email("mailed")
    r = call(
        mailing,
        "POST",
        f"/teams/{team_id}/invitations",
        owner.token,
        json={"email": email, "role": "editor"},
    )
    assert r.status_code == 201 and r.json()["mailed"] is True and "link" not in r.json()
    (msg,) = mail_server.wait_for(match=lambda m: email in str(m["To"]))
    assert "invite" in msg["Subject"].lower()
    link = _link(msg)
    page, _, fragment = link.partition("#")
    assert page.startswith(mailing.url) and fragment.startswith("invite=svc_invite_")
    assert httpx.get(page, timeout=10).status_code == 200  # the dashboard's page
    token = fragment.removeprefix("invite=")
    assert call(mailing, "GET", f"/invitations/{token}").json()["email"] == email
    r = call(mailing, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    assert r.status_code == 200 and r.json()["joined"]["role"] == "editor"


def test_password_reset_by_mail(mailing: Server, mail_server: MailServer) -> None:
    _, owner = new_team(mailing, mail=mail_server)
    # an unknown email gets the same answer, and no mail
    nobody = call(mailing, "POST", "/auth/reset", json={"email": unique_email("nobody")})
    r = call(mailing, "POST", "/auth/reset", json={"email": owner.email})
    assert r.status_code == nobody.status_code == 202 and r.json() == nobody.json()
    (msg,) = mail_server.wait_for(
        match=lambda m: owner.email in str(m["To"]) and "reset" in m["Subject"].lower()
    )
    page, _, fragment = _link(msg).partition("#")
    assert httpx.get(page, timeout=10).status_code == 200
    token = fragment.removeprefix("reset=")
    is_error(
        call(mailing, "POST", "/auth/reset/confirm", json={"token": token, "password": "short"}),
        400,
        "password",
    )
    new = "a brand new password"
    assert (
        call(
            mailing, "POST", "/auth/reset/confirm", json={"token": token, "password": new}
        ).status_code
        == 200
    )
    is_error(call(mailing, "GET", "/account", owner.token), 401)  # signed out everywhere
    assert sign_in(mailing, owner.email, new).status_code == 200
    is_error(sign_in(mailing, owner.email), 401)
    # the link works once
    is_error(
        call(
            mailing,
            "POST",
            "/auth/reset/confirm",
            json={"token": token, "password": "another one 2"},
        ),
        404,
    )
