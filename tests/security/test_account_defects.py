"""The account and mail defects of the security review (issue 38, items 1-5, 7 and 10), each
reproduced as an attacker would, against a real server that mails through a real SMTP server.

1. a reset link built from a forged ``Host`` (account takeover); mail without ``SVC_BASE_URL``;
2. a two-factor code that signs in twice;
3. a stolen session guessing the current password without limit;
4. a mailbox flooded through POST /auth/reset, and its answer's timing;
5. a flood of bad keys locking signed-in people out;
7. reset links that outlive a reset and a password change;
10. failed sign-in log lines whose address digest can be reversed.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest

from svc.mail import links
from svc.settings import Settings
from tests.accounts.conftest import (
    CHEAP_HASHES,
    PASSWORD,
    Person,
    call,
    new_team,
    sign_in,
    turn_on_totp,
    unique_email,
)
from tests.mail_server import MailServer, mail_server
from tests.support import Server, is_error
from tests.test_meta_faults import exclusive_lock

__all__ = ["mail_server"]

RESETS_PER_EMAIL = 3
RESETS_PER_ADDRESS = 6
SIGNIN_FAILURES_PER_ACCOUNT = 5
AUTH_FAILURES_PER_ADDRESS = 5


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, mail_server: MailServer) -> Iterator[Server]:
    server = mail_server.svc(
        tmp_path_factory.mktemp("account-defects") / "data",
        **CHEAP_HASHES,
        SVC_TRUSTED_PROXIES="127.0.0.1/32",  # each test speaks from addresses of its own
        SVC_RESET_LIMIT_PER_ACCOUNT=f"{RESETS_PER_EMAIL}/h:{RESETS_PER_EMAIL}",
        SVC_RESET_LIMIT_PER_ADDRESS=f"{RESETS_PER_ADDRESS}/h:{RESETS_PER_ADDRESS}",
        SVC_SIGNIN_LIMIT_PER_ACCOUNT=f"{SIGNIN_FAILURES_PER_ACCOUNT}/h",
        SVC_SIGNIN_LIMIT_PER_ADDRESS="1000",
        SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP=f"0.001:{AUTH_FAILURES_PER_ADDRESS}",
    )
    yield server
    server.stop()


def via(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


def links_in(msg: EmailMessage) -> list[str]:
    body = msg.get_body(("plain",))
    assert body is not None
    return re.findall(r"https?://\S+", body.get_content())


def reset_mails(mail: MailServer, email: str, count: int = 1) -> list[EmailMessage]:
    return mail.wait_for(count, match=lambda m: email in str(m["To"]) and "Reset" in m["Subject"])


def reset_token(msg: EmailMessage) -> str:
    (link,) = links_in(msg)
    return link.split("#reset=", 1)[1]


def ask_reset(srv: Server, email: str, address: str, **headers: str) -> httpx.Response:
    return call(
        srv, "POST", "/auth/reset", json={"email": email}, headers={**via(address), **headers}
    )


# 1. links in mail ------------------------------------------------------------------------


def test_a_forged_host_never_reaches_a_mailed_link(srv: Server, mail_server: MailServer) -> None:
    team_id, owner = new_team(srv, mail=mail_server)
    forged = {"Host": "attacker.example", "X-Forwarded-Host": "attacker.example"}
    r = ask_reset(srv, owner.email, "198.51.100.10", **forged)
    assert r.status_code == 202, r.text
    (msg,) = reset_mails(mail_server, owner.email)
    (link,) = links_in(msg)
    assert link.startswith(srv.url + "/dashboard#reset=svc_reset_"), link
    # an invitation mailed from a request with a forged Host points home too
    email = unique_email("invited")
    r = call(
        srv,
        "POST",
        f"/teams/{team_id}/invitations",
        owner.token,
        json={"email": email, "role": "viewer"},
        headers=forged,
    )
    assert r.status_code == 201 and r.json()["mailed"] is True, r.text
    (invitation,) = mail_server.wait_for(match=lambda m: email in str(m["To"]))
    assert all(link.startswith(srv.url + "/") for link in links_in(invitation))
    assert "attacker.example" not in str(invitation)


def test_mail_without_a_public_address_is_refused_at_start(
    tmp_path: Path, mail_server: MailServer
) -> None:
    for env, said in (
        ({"SVC_SMTP_URL": mail_server.url}, "SVC_BASE_URL is not"),
        (
            {"SVC_SMTP_URL": mail_server.url, "SVC_BASE_URL": "stats.example.com"},
            "SVC_BASE_URL: 'stats.example.com' is not an absolute",
        ),
    ):
        server = Server(tmp_path / f"data-{len(said)}", env=env)
        with pytest.raises(RuntimeError, match="exited with 2"):
            server.start(timeout=20)
        assert said in server.log() and "Traceback" not in server.log()
    with pytest.raises(links.NoBaseUrl, match="SVC_BASE_URL"):
        links.public_base(Settings())  # a report or alert while mail is off: no link guessed
    assert links.public_base(Settings(base_url="https://s.example.com/")) == (
        "https://s.example.com"
    )


# 2. a two-factor code works once ----------------------------------------------------------


def test_a_two_factor_code_signs_in_once(srv: Server, mail_server: MailServer) -> None:
    _, owner = new_team(srv, mail=mail_server)
    app, _ = turn_on_totp(srv, owner.token)
    code = app.code()
    assert sign_in(srv, owner.email, code=code).status_code == 200
    replayed = sign_in(srv, owner.email, code=code)
    assert is_error(replayed, 401)["error"]["code"] == "invalid_credentials"
    # nor can it, or an earlier one, turn two-factor off
    is_error(call(srv, "DELETE", "/account/totp", owner.token, json={"code": code}), 400, "code")
    later = app.code()
    assert sign_in(srv, owner.email, code=later).status_code == 200
    earlier = app.totp.generate_otp(app.totp.timecode(time.time()) - 1)
    if earlier not in (code, later):  # a step before the last accepted one
        is_error(sign_in(srv, owner.email, code=earlier), 401)
    assert call(srv, "GET", "/account", owner.token).json()["totpEnabled"] is True


# 3. the current password is guessed under the sign-in limits ------------------------------


def test_guessing_the_current_password_meets_the_sign_in_limit(
    srv: Server, mail_server: MailServer
) -> None:
    _, owner = new_team(srv, mail=mail_server)
    change = {"password": "a new password 12"}
    for i in range(SIGNIN_FAILURES_PER_ACCOUNT):
        r = call(
            srv,
            "PATCH",
            "/account",
            owner.token,
            json={**change, "currentPassword": f"guess number {i}"},
            headers=via(f"198.51.100.{30 + i}"),
        )
        is_error(r, 400, "currentPassword")
    r = call(
        srv,
        "PATCH",
        "/account",
        owner.token,
        json={**change, "currentPassword": PASSWORD},
        headers=via("198.51.100.40"),
    )
    assert is_error(r, 429)["error"]["code"] == "rate_limited" and "Retry-After" in r.headers
    # the guesses were failed sign-ins of the account: signing in waits out the same limit
    assert is_error(sign_in(srv, owner.email), 429)["error"]["code"] == "rate_limited"
    assert "wrong_currentPassword" in srv.log()


# 4. POST /auth/reset is limited, the same for every email, and answers at once -------------


def test_reset_requests_are_limited_per_email_and_per_address(
    srv: Server, mail_server: MailServer
) -> None:
    _, owner = new_team(srv, mail=mail_server)
    nobody = unique_email("nobody")
    for email in (owner.email, nobody):  # a known and an unknown email: the same answers
        answers = [
            ask_reset(srv, email, f"198.51.100.{50 + i}").status_code
            for i in range(RESETS_PER_EMAIL + 2)
        ]
        assert answers == [202] * RESETS_PER_EMAIL + [429, 429], (email, answers)
    reset_mails(mail_server, owner.email, RESETS_PER_EMAIL)
    time.sleep(1.0)  # what more could arrive
    resets = [m for m in mail_server.to(owner.email) if "Reset" in m["Subject"]]
    assert len(resets) == RESETS_PER_EMAIL
    # one address, many emails
    answers = [
        ask_reset(srv, unique_email("spray"), "198.51.100.60").status_code
        for _ in range(RESETS_PER_ADDRESS + 1)
    ]
    assert answers == [202] * RESETS_PER_ADDRESS + [429]
    r = ask_reset(srv, unique_email("spray"), "198.51.100.60")
    assert is_error(r, 429)["error"]["code"] == "rate_limited" and int(r.headers["Retry-After"]) > 0


def test_the_reset_answer_does_not_wait_on_the_account(
    srv: Server, mail_server: MailServer
) -> None:
    """Nothing about the account is looked up or written before the answer: with the
    metadata database locked by another process, a known email and an unknown one both get
    their 202 at once (the known one used to wait for the lock, writing its token), and the
    mail goes once the lock is gone."""
    _, owner = new_team(srv, mail=mail_server)
    with exclusive_lock(srv.data_dir / "meta.db"):
        for email in (owner.email, unique_email("nobody")):
            started = time.monotonic()
            r = ask_reset(srv, email, "198.51.100.70")
            took = time.monotonic() - started
            assert r.status_code == 202 and took < 2.0, (email, r.status_code, took)
        time.sleep(0.5)
    (msg,) = reset_mails(mail_server, owner.email)
    assert reset_token(msg).startswith("svc_reset_")


# 5. bad keys do not lock signed-in people out -------------------------------------------


def test_bad_keys_from_an_address_do_not_lock_its_signed_in_people_out(
    srv: Server, mail_server: MailServer
) -> None:
    team_id, owner = new_team(srv, mail=mail_server)
    r = call(srv, "POST", "/projects", owner.token, json={"name": "behind-a-proxy"})
    assert r.status_code == 201, r.text
    project_id = r.json()["id"]
    office = via("198.51.100.80")
    bad = "svc_live_" + "x" * 32
    params = {"projectId": project_id, "from": "2026-01-01"}
    for _ in range(AUTH_FAILURES_PER_ADDRESS):
        assert call(srv, "GET", "/metrics", bad, params=params, headers=office).status_code == 401
    r = call(srv, "GET", "/metrics", bad, params=params, headers=office)
    assert r.status_code == 429  # the address is over its failures
    # a person signed in before, and one signing in now, read as before from that address
    r = call(
        srv,
        "POST",
        "/auth/signin",
        json={"email": owner.email, "password": PASSWORD},
        headers=office,
    )
    fresh = r.json()["token"]
    for token in (owner.token, fresh):
        assert call(srv, "GET", "/projects", token, headers=office).status_code == 200
        r = call(srv, "GET", "/metrics", token, params=params, headers=office)
        assert r.status_code == 200, r.text
        assert call(srv, "GET", f"/teams/{team_id}", token, headers=office).status_code == 200
    # a forged session token gets no further than a bad key
    forged = "svc_sess_" + "A" * 40
    assert call(srv, "GET", "/projects", forged, headers=office).status_code == 429


# 7. a reset or a password change spends every other reset link ----------------------------


def test_other_reset_links_are_spent_by_a_reset(srv: Server, mail_server: MailServer) -> None:
    _, owner = new_team(srv, mail=mail_server)
    for i in range(2):
        assert ask_reset(srv, owner.email, f"198.51.100.{90 + i}").status_code == 202
    first, second = (reset_token(m) for m in reset_mails(mail_server, owner.email, 2))
    confirm = "/auth/reset/confirm"
    r = call(srv, "POST", confirm, json={"token": second, "password": "reset password 12"})
    assert r.status_code == 200, r.text
    is_error(call(srv, "POST", confirm, json={"token": first, "password": "attacker pw 123"}), 404)
    assert sign_in(srv, owner.email, "reset password 12").status_code == 200


def test_a_password_change_spends_the_reset_links(srv: Server, mail_server: MailServer) -> None:
    _, owner = new_team(srv, mail=mail_server)
    assert ask_reset(srv, owner.email, "198.51.100.95").status_code == 202
    (msg,) = reset_mails(mail_server, owner.email)
    r = call(
        srv,
        "PATCH",
        "/account",
        owner.token,
        json={"password": "changed password 1", "currentPassword": PASSWORD},
    )
    assert r.status_code == 200, r.text
    r = call(
        srv, "POST", "/auth/reset/confirm", json={"token": reset_token(msg), "password": "x" * 12}
    )
    is_error(r, 404)
    assert sign_in(srv, owner.email, "changed password 1").status_code == 200


# 10. failed sign-ins are logged under a digest nobody can reverse --------------------------


def test_failed_sign_in_logs_hold_no_recoverable_address(srv: Server) -> None:
    person = Person(unique_email("logged"), "", "")
    address = "203.0.113.7"
    for _ in range(2):
        r = call(
            srv,
            "POST",
            "/auth/signin",
            json={"email": person.email, "password": "not it at all"},
            headers=via(address),
        )
        assert r.status_code == 401
    lines = [
        json.loads(line)
        for line in srv.log_path.read_text().splitlines()  # type: ignore[union-attr]
        if '"signin_failed"' in line and line.startswith("{")
    ]
    digests = {line["addressHash"] for line in lines[-2:]}
    assert len(digests) == 1, lines[-2:]  # the lines of one address still match
    (digest,) = digests
    unkeyed = {
        hashlib.new(name, address.encode()).hexdigest()[: len(digest)]
        for name in ("md5", "sha1", "sha256", "blake2b", "blake2s")
    } | {hashlib.blake2b(address.encode(), digest_size=n).hexdigest() for n in (6, 8, 16)}
    assert digest not in unkeyed and address not in str(lines[-2:])
