"""Single sign-on over HTTP against a real OpenID Connect provider (tests/accounts/
oidc_provider.py, Authlib's server in a process of its own): a new person gets an account in
the configured team and role; an existing account is linked by verified email and keeps its
projects and its password; an unverified email is refused and nothing is made; ID tokens that
fail a check (aud, exp, nonce, iss, signature) are refused; a state works once and only with
the binding of the browser that began, on any node of one store; with password sign-in off
the password routes answer 403 naming SVC_PASSWORD_SIGNIN. The browser's side:
tests/dashboard/test_dashboard_sso.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
from sqlalchemy import text

from svc.accounts import sso
from svc.meta.store import MetaStore
from svc.settings import Settings
from tests.accounts.conftest import CHEAP_HASHES, PASSWORD, call, sign_in
from tests.accounts.oidc_provider import Provider, User, svc_with_provider
from tests.parallel import free_port
from tests.support import Server, is_error
from tests.test_meta_store import postgres_url
from tests.test_openapi import _checker

NEW = User("newbie", "newbie@sso.test", name="New Person")
EXISTING = User("existing", "existing@sso.test")
UNVERIFIED = User("unverified", "unverified@sso.test", email_verified=False)
#: ID tokens that fail a check: another audience, expired, another nonce, another issuer
TAMPERED = [
    User(f"tampered-{claim}", f"tampered-{claim}@sso.test", id_token_claims={claim: value})
    for claim, value in (
        ("aud", "someone-else"),
        ("exp", 1_000_000_000),
        ("nonce", "not-the-sign-ins"),
        ("iss", "http://127.0.0.1:9/elsewhere"),
    )
]
FORGED = User("forged", "forged@sso.test", forged=True)  # signed by a key not in the JWKS
USERS = [NEW, EXISTING, UNVERIFIED, *TAMPERED, FORGED]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Provider, str]]:
    """svc signing in with the provider, new people joining a team as editors."""
    with svc_with_provider(tmp_path_factory.mktemp("sso"), USERS, "editor") as made:
        yield made


def begin(srv: Server) -> dict[str, str]:
    r = call(srv, "POST", "/auth/oidc/start")
    assert r.status_code == 200, r.text
    return dict(r.json())


def come_back(srv: Server, provider: Provider, user: User) -> tuple[dict[str, str], str]:
    """Begin, sign in at the provider, come back through svc's callback: the parameters the
    dashboard gets in its fragment, and the binding."""
    started = begin(srv)
    back = provider.authorize(started["authorizationUrl"], user)
    assert back.startswith(srv.url + sso.CALLBACK_PATH + "?"), back
    r = httpx.get(back, timeout=10)
    assert r.status_code == 303, r.text
    where = r.headers["location"]
    assert where.startswith("/dashboard#sso="), where
    params = {k: v[0] for k, v in parse_qs(unquote(urlsplit(where).fragment[4:])).items()}
    return params, started["binding"]


def finish(srv: Server, params: dict[str, str], binding: str) -> httpx.Response:
    body = {"code": params["code"], "state": params["state"], "binding": binding}
    return call(srv, "POST", "/auth/oidc/finish", json=body)


def test_methods_and_start(world: tuple[Server, Provider, str]) -> None:
    srv, provider, _ = world
    r = call(srv, "GET", "/auth/methods")
    assert r.json() == {"password": True, "sso": {"label": "Test ID"}}
    started = begin(srv)
    query = parse_qs(urlsplit(started["authorizationUrl"]).query)
    assert started["authorizationUrl"].startswith(provider.issuer + "/authorize?")
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]
    assert query["state"] and query["nonce"] and query["response_type"] == ["code"]
    assert query["redirect_uri"] == [srv.url + sso.CALLBACK_PATH]
    assert started["binding"].startswith("svc_sso_")
    is_error(call(srv, "POST", "/auth/oidc/start", json={"x": 1}), 400, "x")
    is_error(call(srv, "GET", sso.CALLBACK_PATH), 400, "code")


def test_a_new_person_joins_the_team_with_the_role(world: tuple[Server, Provider, str]) -> None:
    srv, provider, team_id = world
    params, binding = come_back(srv, provider, NEW)
    r = finish(srv, params, binding)
    assert r.status_code == 200, r.text
    check = _checker(call(srv, "GET", "/openapi.json").json())  # the documented types
    check("/auth/oidc/finish", "post", r)
    check("/auth/oidc/start", "post", call(srv, "POST", "/auth/oidc/start"))
    check("/auth/methods", "get", call(srv, "GET", "/auth/methods"))
    check("/auth/oidc/finish", "post", finish(srv, params, binding))  # 400: replayed
    session = r.json()
    assert session["token"].startswith("svc_sess_") and session["account"]["email"] == NEW.email
    me = call(srv, "GET", "/account", session["token"]).json()
    assert me["name"] == "New Person"
    assert [(t["id"], t["role"]) for t in me["teams"]] == [(team_id, "editor")]
    assert sign_in(srv, NEW.email, PASSWORD).status_code == 401  # no password of its own
    again, binding = come_back(srv, provider, NEW)  # the same account, by (issuer, sub)
    assert finish(srv, again, binding).json()["account"]["id"] == me["id"]


def test_an_existing_account_is_linked_by_verified_email(
    world: tuple[Server, Provider, str],
) -> None:
    srv, provider, team_id = world
    r = call(
        srv,
        "POST",
        "/accounts",
        srv.admin_token,
        json={"email": EXISTING.email, "password": PASSWORD, "teamName": "Own"},
    )
    assert r.status_code == 201, r.text
    account_id, own_team = r.json()["account"]["id"], r.json()["team"]["id"]
    token = sign_in(srv, EXISTING.email).json()["token"]
    r = call(srv, "POST", "/projects", token, json={"name": "kept", "teamId": own_team})
    assert r.status_code == 201, r.text
    project_id = r.json()["id"]

    params, binding = come_back(srv, provider, EXISTING)
    r = finish(srv, params, binding)
    assert r.status_code == 200, r.text
    assert r.json()["account"]["id"] == account_id
    me = call(srv, "GET", "/account", r.json()["token"]).json()
    teams = {t["id"]: t["role"] for t in me["teams"]}
    assert teams == {own_team: "owner"} and team_id not in teams  # no team added to it
    assert {"id": project_id, "role": "owner"} in me["projects"]
    assert sign_in(srv, EXISTING.email).status_code == 200  # the password still works


def test_an_unverified_email_is_refused_and_nothing_made(
    world: tuple[Server, Provider, str],
) -> None:
    srv, provider, _ = world
    params, binding = come_back(srv, provider, UNVERIFIED)
    error = is_error(finish(srv, params, binding), 403)["error"]
    assert error["code"] == "email_unverified" and UNVERIFIED.email in error["message"]
    accounts = call(srv, "GET", "/accounts", srv.admin_token).json()["accounts"]
    assert UNVERIFIED.email not in {a["email"] for a in accounts}


@pytest.mark.parametrize("user", [*TAMPERED, FORGED], ids=lambda u: u.username)
def test_an_id_token_failing_a_check_is_refused(
    world: tuple[Server, Provider, str], user: User
) -> None:
    srv, provider, _ = world
    params, binding = come_back(srv, provider, user)
    error = is_error(finish(srv, params, binding), 403)["error"]
    assert error["code"] == "sso_refused" and "ID token is not valid" in error["message"]
    named = next(iter(user.id_token_claims), "signature")
    assert named in error["message"], error
    accounts = call(srv, "GET", "/accounts", srv.admin_token).json()["accounts"]
    assert user.email not in {a["email"] for a in accounts}


def test_a_state_works_once_and_only_with_its_binding(
    world: tuple[Server, Provider, str],
) -> None:
    srv, provider, _ = world
    params, binding = come_back(srv, provider, NEW)
    is_error(finish(srv, params, "svc_sso_" + "x" * 40), 400, "binding")
    is_error(finish(srv, params, binding), 400, "state")  # spent by the wrong binding
    params, binding = come_back(srv, provider, NEW)
    assert finish(srv, params, binding).status_code == 200
    replayed = is_error(finish(srv, params, binding), 400, "state")["error"]
    assert "used or expired" in replayed["message"]
    is_error(finish(srv, {"code": "c", "state": "never-begun"}, binding), 400, "state")
    is_error(call(srv, "POST", "/auth/oidc/finish", json={"state": "s"}), 400, "code")


def test_password_sign_in_off(tmp_path: Path, world: tuple[Server, Provider, str]) -> None:
    _, provider, _ = world
    port = free_port()
    env = {
        **CHEAP_HASHES,
        **provider.svc_env(),
        "SVC_BASE_URL": f"http://127.0.0.1:{port}",
        "SVC_PASSWORD_SIGNIN": "false",
        "SVC_SSO_LIMIT_PER_ADDRESS": "1/h:2",
    }
    srv = Server(tmp_path / "data", env=env, port=port).start()
    try:
        assert call(srv, "GET", "/auth/methods").json() == {
            "password": False,
            "sso": {"label": "Test ID"},
        }
        for path, body in (
            ("/auth/signin", {"email": "a@b.test", "password": PASSWORD}),
            ("/auth/reset", {"email": "a@b.test"}),
            ("/auth/reset/confirm", {"token": "svc_reset_x", "password": PASSWORD}),
            ("/invitations/svc_invite_x/accept", {"password": PASSWORD}),
        ):
            error = is_error(call(srv, "POST", path, json=body), 403)["error"]
            assert error["code"] == "password_signin_off", path
            assert "SVC_PASSWORD_SIGNIN" in error["message"], path
        r = call(srv, "GET", "/teams", srv.admin_token)  # the admin token still works
        assert r.status_code == 200
        assert call(srv, "POST", "/auth/oidc/start").status_code == 200
        assert call(srv, "POST", "/auth/oidc/start").status_code == 200
        error = is_error(call(srv, "POST", "/auth/oidc/start"), 429)["error"]
        assert "SVC_SSO_LIMIT_PER_ADDRESS" in error["message"]  # each start is limited
    finally:
        srv.stop()


def test_settings_are_checked() -> None:
    base = {"base_url": "https://stats.example.com"}
    sso.check_settings(Settings())  # off: nothing to check
    for values, name in (
        ({"password_signin": False}, "SVC_PASSWORD_SIGNIN"),
        ({"oidc_issuer": "ftp://id.example.com", **base}, "SVC_OIDC_ISSUER"),
        ({"oidc_issuer": "http://id.example.com", **base}, "SVC_OIDC_ISSUER"),
        ({"oidc_issuer": "https://id.example.com", **base}, "SVC_OIDC_CLIENT_ID"),
        ({"oidc_issuer": "https://id.example.com", "oidc_client_id": "c"}, "SVC_BASE_URL"),
        (
            {
                "oidc_issuer": "https://id.example.com",
                "oidc_client_id": "c",
                "oidc_role": "god",
                **base,
            },
            "SVC_OIDC_ROLE",
        ),
        (
            {
                "oidc_issuer": "https://id.example.com",
                "oidc_client_id": "c",
                "oidc_team": "x",
                **base,
            },
            "SVC_OIDC_TEAM",
        ),
    ):
        with pytest.raises(ValueError, match=name):
            sso.check_settings(Settings(**values))


def test_sso_off_answers_404(srv: Server) -> None:
    assert call(srv, "GET", "/auth/methods").json() == {"password": True, "sso": None}
    is_error(call(srv, "POST", "/auth/oidc/start"), 404)
    is_error(call(srv, "GET", sso.CALLBACK_PATH, params={"code": "c", "state": "s"}), 404)
    body = {"code": "c", "state": "s", "binding": "b"}
    is_error(call(srv, "POST", "/auth/oidc/finish", json=body), 404)


def test_a_sign_in_begun_on_one_node_finishes_on_another(tmp_path: Path) -> None:
    """Two svc processes on one PostgreSQL metadata store behind one address (SVC_BASE_URL:
    the first's): begun on one, finished on the other, refused on the first when replayed."""
    url = postgres_url()
    fresh = MetaStore(url)
    with fresh.engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    fresh.close()
    person = User("nodes", "nodes@sso.test")
    port = free_port()
    callback = f"http://127.0.0.1:{port}{sso.CALLBACK_PATH}"
    provider = Provider(free_port(), callback, [person], tmp_path)
    env = {
        **CHEAP_HASHES,
        **provider.svc_env(),
        "SVC_META_URL": url,
        "SVC_BASE_URL": f"http://127.0.0.1:{port}",
    }
    a = Server(tmp_path / "a", env=env, port=port)
    b = Server(tmp_path / "b", env=env)
    try:
        provider.start()
        a.start()
        b.admin_token = a.admin_token
        b.start()
        body = {"email": person.email, "password": PASSWORD}
        r = call(a, "POST", "/accounts", a.admin_token, json=body)
        assert r.status_code == 201, r.text
        params, binding = come_back(a, provider, person)
        r = finish(b, params, binding)
        assert r.status_code == 200, r.text
        assert r.json()["account"]["email"] == person.email
        assert call(a, "GET", "/account", r.json()["token"]).status_code == 200
        is_error(finish(a, params, binding), 400, "state")
    finally:
        b.stop()
        a.stop()
        provider.stop()


@pytest.mark.parametrize("where", ["nobody listens", "another issuer"])
def test_a_provider_that_cannot_be_used_is_a_502(
    tmp_path: Path, world: tuple[Server, Provider, str], where: str
) -> None:
    _, provider, _ = world
    issuer = (
        f"http://127.0.0.1:{free_port()}" if where == "nobody listens" else provider.issuer + "/"
    )  # the same discovery document, whose issuer is not this one
    port = free_port()
    env = {
        **provider.svc_env(),
        "SVC_OIDC_ISSUER": issuer,
        "SVC_BASE_URL": f"http://127.0.0.1:{port}",
    }
    srv = Server(tmp_path / "data", env=env, port=port).start()
    try:
        assert call(srv, "GET", "/auth/methods").json()["sso"] == {"label": "Test ID"}
        error = is_error(call(srv, "POST", "/auth/oidc/start"), 502)["error"]
        assert error["code"] == "sso_unavailable", error
        if where == "another issuer":
            assert "SVC_OIDC_ISSUER" in error["message"], error
    finally:
        srv.stop()
