"""A real OpenID Connect provider for the single sign-on tests, in a process of its own on a
loopback port: Authlib's server components (``authlib.integrations.flask_oauth2``'s
authorization server with the code grant, ``authlib.oidc.core``'s ``OpenIDCode`` and
``authlib.oauth2.rfc7636``'s PKCE, required) in a small Flask app, signing ID tokens with an
RSA key of its own (joserfc) published at its JWKS URI.

It has a discovery document, a sign-in form (username and password: Chromium fills it in),
a token endpoint (client_secret_basic or client_secret_post), a userinfo endpoint and its
users, given at start: each with an email, verified or not. Start it with :class:`Provider`
(or run ``python -m tests.accounts.oidc_provider PORT CONFIG.json``); point svc at it with
:meth:`Provider.svc_env`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from tests.support import Server

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID, CLIENT_SECRET = "svc-tests", "svc-tests-secret-of-the-client"


@dataclass(frozen=True)
class User:
    """A person of the provider: signs in with ``username`` and ``password``."""

    username: str
    email: str
    email_verified: bool = True
    name: str = ""
    password: str = "provider password"
    #: claims that override the ID token's own (``{"aud": "someone-else"}``): a provider
    #: gone wrong, for the tests of what svc verifies
    id_token_claims: dict[str, Any] = field(default_factory=dict)
    #: its ID tokens signed by a key not in the JWKS (under the JWKS key's id)
    forged: bool = False

    @property
    def subject(self) -> str:
        return "sub-" + self.username


@dataclass
class Config:
    issuer: str
    redirect_uri: str
    users: list[User] = field(default_factory=list)
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET


# the provider's side (runs in its own process) -----------------------------------------------


def build_app(config: Config) -> Any:
    """The provider: a Flask app on Authlib's authorization server."""
    from authlib.integrations.flask_oauth2 import AuthorizationServer
    from authlib.oauth2.rfc6749 import grants
    from authlib.oauth2.rfc7636 import CodeChallenge
    from authlib.oidc.core import UserInfo
    from authlib.oidc.core.grants import OpenIDCode
    from flask import Flask, Response, jsonify, request
    from joserfc.jwk import RSAKey

    key = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"})
    forger = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"})
    users = {u.username: u for u in config.users}
    codes: dict[str, dict[str, Any]] = {}
    tokens: dict[str, User] = {}

    class Client:
        """The one client: svc, with its registered redirect URI."""

        client_id = config.client_id
        client_secret = config.client_secret

        def get_client_id(self) -> str:
            return self.client_id

        def get_default_redirect_uri(self) -> str:
            return config.redirect_uri

        def get_allowed_scope(self, scope: str) -> str:
            return " ".join(s for s in scope.split() if s in ("openid", "email", "profile"))

        def check_redirect_uri(self, redirect_uri: str) -> bool:
            return redirect_uri == config.redirect_uri

        def check_client_secret(self, client_secret: str) -> bool:
            return client_secret == self.client_secret

        def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
            return method in ("client_secret_basic", "client_secret_post")

        def check_response_type(self, response_type: str) -> bool:
            return response_type == "code"

        def check_grant_type(self, grant_type: str) -> bool:
            return grant_type == "authorization_code"

    client = Client()

    class Code:
        """An authorization code as the grants read it."""

        def __init__(self, data: dict[str, Any]) -> None:
            self.data = data
            self.code_challenge = data["code_challenge"]
            self.code_challenge_method = data["code_challenge_method"]

        def get_redirect_uri(self) -> str:
            return str(self.data["redirect_uri"])

        def get_scope(self) -> str:
            return str(self.data["scope"])

        def get_nonce(self) -> str | None:
            nonce: str | None = self.data["nonce"]
            return nonce

        def get_auth_time(self) -> int:
            return int(self.data["auth_time"])

        def get_acr(self) -> None:
            return None

        def get_amr(self) -> None:
            return None

        def is_expired(self) -> bool:
            return time.time() > int(self.data["auth_time"]) + 300

    class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
        TOKEN_ENDPOINT_AUTH_METHODS = ("client_secret_basic", "client_secret_post")

        def save_authorization_code(self, code: str, req: Any) -> None:
            codes[code] = {
                "client_id": req.client.get_client_id(),
                "redirect_uri": req.payload.redirect_uri,
                "scope": req.payload.scope,
                "nonce": req.payload.data.get("nonce"),
                "code_challenge": req.payload.data.get("code_challenge"),
                "code_challenge_method": req.payload.data.get("code_challenge_method"),
                "auth_time": int(time.time()),
                "user": req.user.username,
            }

        def query_authorization_code(self, code: str, cl: Any) -> Code | None:
            data = codes.get(code)
            if data is None or data["client_id"] != cl.get_client_id():
                return None
            return Code(data)

        def delete_authorization_code(self, authorization_code: Code) -> None:
            codes.pop(next(k for k, v in codes.items() if v is authorization_code.data), None)

        def authenticate_user(self, authorization_code: Code) -> User:
            return users[authorization_code.data["user"]]

    class IdToken(OpenIDCode):  # type: ignore[misc]
        def exists_nonce(self, nonce: str, req: Any) -> bool:
            return any(c["nonce"] == nonce for c in codes.values())

        signing = key

        def encode_id_token(self, token: dict[str, Any], req: Any) -> Any:
            self.signing = forger if req.user.forged else key
            return super().encode_id_token(token, req)

        def resolve_client_private_key(self, cl: Any) -> Any:
            return self.signing

        def get_client_algorithm(self, cl: Any) -> str:
            return "RS256"

        def get_client_claims(self, cl: Any) -> dict[str, Any]:
            return {"iss": config.issuer, "aud": [cl.get_client_id()]}

        def get_encode_header(self, cl: Any) -> dict[str, str]:
            return {"alg": "RS256", "kid": "k1"}

        def generate_user_info(self, user: User, scope: str) -> Any:
            return UserInfo(
                sub=user.subject,
                name=user.name,
                email=user.email,
                email_verified=user.email_verified,
                **user.id_token_claims,
            )

    app = Flask("oidc_provider")

    def save_token(token: dict[str, Any], req: Any) -> None:
        tokens[token["access_token"]] = req.user

    server = AuthorizationServer(
        app,
        query_client=lambda cid: client if cid == client.client_id else None,
        save_token=save_token,
    )
    server.register_grant(CodeGrant, [IdToken(require_nonce=True), CodeChallenge(required=True)])

    @app.get("/.well-known/openid-configuration")
    def discovery() -> Response:
        return jsonify(
            issuer=config.issuer,
            authorization_endpoint=config.issuer + "/authorize",
            token_endpoint=config.issuer + "/token",
            userinfo_endpoint=config.issuer + "/userinfo",
            jwks_uri=config.issuer + "/jwks",
            response_types_supported=["code"],
            subject_types_supported=["public"],
            id_token_signing_alg_values_supported=["RS256"],
            scopes_supported=["openid", "email", "profile"],
            token_endpoint_auth_methods_supported=["client_secret_basic", "client_secret_post"],
            code_challenge_methods_supported=["S256"],
            claims_supported=["sub", "email", "email_verified", "name"],
        )

    @app.get("/jwks")
    def jwks() -> Response:
        return jsonify(keys=[key.as_dict(private=False)])

    @app.route("/authorize", methods=["GET", "POST"])
    def authorize() -> Any:
        error = ""
        if request.method == "POST":
            user = users.get(request.form.get("username", ""))
            if user is not None and request.form.get("password") == user.password:
                return server.create_authorization_response(grant_user=user)
            error = '<p role="alert">Wrong username or password.</p>'
        try:
            server.get_consent_grant(end_user=None)
        except Exception as exc:  # the request is not one to sign in for: say why
            return Response(f"bad authorization request: {exc}", status=400)
        action = "/authorize?" + request.query_string.decode()
        return Response(
            f"""<!doctype html><html lang="en"><head><title>Test provider</title></head>
<body><main><h1>Test provider</h1>{error}
<form method="post" action="{action}">
<label for="username">Username</label><input id="username" name="username">
<label for="password">Password</label><input id="password" name="password" type="password">
<button type="submit">Sign in</button></form></main></body></html>""",
            mimetype="text/html",
        )

    @app.post("/token")
    def issue_token() -> Any:
        return server.create_token_response()

    @app.get("/userinfo")
    def userinfo() -> Any:
        auth = request.headers.get("Authorization", "")
        user = tokens.get(auth.removeprefix("Bearer "))
        if user is None:
            return jsonify(error="invalid_token"), 401
        return jsonify(sub=user.subject, email=user.email, email_verified=user.email_verified)

    return app


def main(argv: list[str]) -> None:
    from werkzeug.serving import make_server

    port, config_path = int(argv[0]), argv[1]
    raw = json.loads(Path(config_path).read_text())
    config = Config(**{**raw, "users": [User(**u) for u in raw["users"]]})
    make_server("127.0.0.1", port, build_app(config), threaded=True).serve_forever()


# the tests' side --------------------------------------------------------------------------


class Provider:
    """The provider's process, started with :meth:`start` (its discovery answering)."""

    def __init__(self, port: int, redirect_uri: str, users: list[User], work: Path) -> None:
        self.port = port
        self.config = Config(
            issuer=f"http://127.0.0.1:{port}", redirect_uri=redirect_uri, users=users
        )
        self.work = work
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def issuer(self) -> str:
        return self.config.issuer

    def svc_env(
        self, team_id: str = "", role: str = "viewer", label: str = "Test ID"
    ) -> dict[str, str]:
        """The settings of a svc signing in with this provider."""
        return {
            "SVC_OIDC_ISSUER": self.issuer,
            "SVC_OIDC_CLIENT_ID": self.config.client_id,
            "SVC_OIDC_CLIENT_SECRET": self.config.client_secret,
            "SVC_OIDC_TEAM": team_id,
            "SVC_OIDC_ROLE": role,
            "SVC_OIDC_LABEL": label,
        }

    def start(self, timeout: float = 30.0) -> Provider:
        self.work.mkdir(parents=True, exist_ok=True)
        config_path = self.work / "oidc-provider.json"
        raw = asdict(self.config)
        config_path.write_text(json.dumps(raw))
        log = open(self.work / "oidc-provider.log", "ab")  # noqa: SIM115 (the process keeps it)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.accounts.oidc_provider",
                str(self.port),
                str(config_path),
            ],
            cwd=str(ROOT),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the provider exited: {self.log()}")
            try:
                if httpx.get(
                    self.issuer + "/.well-known/openid-configuration", timeout=1
                ).is_success:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the provider did not answer in {timeout}s: {self.log()}")

    def authorize(self, authorization_url: str, user: User) -> str:
        """Sign ``user`` in at ``authorization_url`` as a browser would (the form posted):
        the address the provider sends the browser back to (svc's callback, code, state)."""
        r = httpx.get(authorization_url, timeout=10)
        assert r.status_code == 200, r.text
        r = httpx.post(
            authorization_url,
            data={"username": user.username, "password": user.password},
            timeout=10,
        )
        assert r.status_code == 302, r.text
        return r.headers["location"]

    def log(self) -> str:
        path = self.work / "oidc-provider.log"
        return path.read_text()[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@contextmanager
def svc_with_provider(
    work: Path, users: list[User], role: str = "viewer", **env: str
) -> Iterator[tuple[Server, Provider, str]]:
    """A svc signing in with a provider of ``users`` (its own process): new people join a
    team made here (``SVC_OIDC_TEAM``) with ``role``; ``env``: more settings. Yields the
    server, the provider and the team's id; stops both after."""
    from tests.parallel import free_port
    from tests.support import Server

    port = free_port()
    provider = Provider(free_port(), f"http://127.0.0.1:{port}/auth/oidc/callback", users, work)
    provider.start()
    settings = {
        "SVC_PASSWORD_HASH_MEMORY_KIB": "1024",  # cheap hashes (tests/accounts/conftest.py)
        "SVC_PASSWORD_HASH_ITERATIONS": "1",
        "SVC_BASE_URL": f"http://127.0.0.1:{port}",
    }
    srv = Server(work / "data", env=settings, port=port)
    try:
        srv.start()
        r = httpx.post(srv.url + "/teams", json={"name": "Everyone"}, headers=srv.admin())
        assert r.status_code == 201, r.text
        team_id = r.json()["id"]
        srv.stop()  # SVC_OIDC_TEAM names a team, so the team is made first
        srv.env.update({**provider.svc_env(team_id, role), **env})
        srv.start()
        yield srv, provider, team_id
    finally:
        srv.stop()
        provider.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
