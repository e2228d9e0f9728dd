"""Fixtures of the accounts tests: one real server for the package (sign-in limits high, so
that only the lockout tests, on their own server, meet them), and helpers that make people
the way a person does: an invitation, accepted over HTTP."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pyotp
import pytest

from tests.mail_server import MailServer
from tests.support import CHEAP_HASHES as CHEAP_HASHES  # re-exported: tests import it here
from tests.support import Server

PASSWORD = "correct horse battery"
_serial = itertools.count(1)


@pytest.fixture(scope="package")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(
        tmp_path_factory.mktemp("accounts") / "data",
        env={
            **CHEAP_HASHES,
            "SVC_SIGNIN_LIMIT_PER_ADDRESS": "1000",
            "SVC_SIGNIN_LIMIT_PER_ACCOUNT": "1000",
        },
    ).start()
    yield server
    server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def unique_email(label: str = "person") -> str:
    return f"{label}{next(_serial)}@example.com"


def call(
    srv: Server, method: str, path: str, token: str | None = None, **kw: Any
) -> httpx.Response:
    headers = {**kw.pop("headers", {}), **(bearer(token) if token else {})}
    return httpx.request(method, srv.url + path, headers=headers, timeout=30, **kw)


def invite_token(link: str) -> str:
    return link.split("#invite=", 1)[1]


@dataclass
class Person:
    email: str
    token: str  # a session token
    account_id: str


def invite_and_accept(
    srv: Server,
    inviter: str,
    team_id: str,
    role: str,
    email: str | None = None,
    mail: MailServer | None = None,
) -> Person:
    """Invite an email to the team and accept it by signing up. The link is in the answer
    when mail is off, else in the mail ``mail`` received."""
    email = email or unique_email(role)
    r = call(
        srv, "POST", f"/teams/{team_id}/invitations", inviter, json={"email": email, "role": role}
    )
    assert r.status_code == 201, r.text
    if mail is None:
        link = r.json()["link"]
    else:
        (msg,) = mail.wait_for(match=lambda m: email in str(m["To"]))
        text = msg.get_body(("plain",))
        assert text is not None
        link = next(w for w in text.get_content().split() if "#invite=" in w)
    token = invite_token(link)
    r = call(srv, "POST", f"/invitations/{token}/accept", json={"password": PASSWORD})
    assert r.status_code == 200, r.text
    body = r.json()
    return Person(email, body["token"], body["account"]["id"])


def new_team(srv: Server, name: str = "team", mail: MailServer | None = None) -> tuple[str, Person]:
    """A team made with the admin token, and its first owner (invited, signed up)."""
    r = call(srv, "POST", "/teams", srv.admin_token, json={"name": name})
    assert r.status_code == 201, r.text
    team_id = r.json()["id"]
    return team_id, invite_and_accept(srv, srv.admin_token, team_id, "owner", mail=mail)


def sign_in(srv: Server, email: str, password: str = PASSWORD, **extra: Any) -> httpx.Response:
    return call(srv, "POST", "/auth/signin", json={"email": email, "password": password, **extra})


class Authenticator:
    """An authenticator app that never shows a code twice: each :meth:`code` is of a later
    30-second time step than the one before (svc accepts each step once, RFC 6238 section
    5.2), from one step behind the clock (the drift svc allows; not within 5 s of the next
    step) to one ahead, waiting for the clock when it has used those up."""

    def __init__(self, secret: str) -> None:
        self.totp = pyotp.TOTP(secret)
        self.last: int | None = None

    def code(self) -> str:
        while True:
            now = time.time()
            current = self.totp.timecode(now)
            lowest = current - 1 if now % 30 < 25 else current
            step = lowest if self.last is None else max(self.last + 1, lowest)
            if step <= current + 1:
                self.last = step
                return self.totp.generate_otp(step)
            time.sleep(30 - now % 30 + 0.05)


def turn_on_totp(srv: Server, token: str, password: str = PASSWORD) -> tuple[Authenticator, Any]:
    """Turn two-factor on for the session's account (enroll, confirm with a code and the
    password): its authenticator and the confirmation's answer (with the recovery codes)."""
    begun = call(srv, "POST", "/account/totp", token)
    assert begun.status_code == 200, begun.text
    app = Authenticator(begun.json()["secret"])
    r = call(
        srv, "POST", "/account/totp/confirm", token, json={"code": app.code(), "password": password}
    )
    assert r.status_code == 200, r.text
    return app, r.json()
