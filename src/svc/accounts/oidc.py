"""The OpenID Connect relying party: svc as a client of one provider (``SVC_OIDC_ISSUER``),
on Authlib's client (:class:`authlib.integrations.starlette_client.StarletteOAuth2App`,
used without its cookie session: the sign-in's state lives in the metadata store,
:mod:`svc.accounts.sso_store`).

- The provider's discovery document (``<issuer>/.well-known/openid-configuration``) is read
  on first use and kept by this process; its ``issuer`` must be the configured one.
- :meth:`OidcClient.begin`: an authorization URL of the code flow, with PKCE (S256), a
  random ``state`` and ``nonce`` (scopes ``openid email profile``).
- :meth:`OidcClient.finish`: the code exchanged at the token endpoint (with the PKCE
  verifier; the client secret by ``client_secret_basic``, else ``client_secret_post`` when
  the provider takes only that; none for a public client), and the ID token verified: its
  signature by a key of the provider's JWKS (fetched again once for an unknown key id), with
  an algorithm the provider announces (never ``none`` or an HMAC one), ``iss`` the issuer,
  ``aud`` containing the client id, ``exp`` not past (one minute's leeway), ``nonce`` the
  sign-in's and ``at_hash`` when present. The claims, completed from the userinfo endpoint
  when the ID token has no ``email`` (its ``sub`` must match).

Errors: :class:`ProviderUnavailable` when the provider cannot be reached or answers
nonsense, :class:`ProviderRefused` when it refuses the code (its error named),
:class:`BadIdToken` when the ID token fails a check.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.deprecate import AuthlibDeprecationWarning
from authlib.integrations.base_client import OAuthError
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

with warnings.catch_warnings():
    # Authlib's httpx client prefers the httpx2 package and warns once, at import, that it
    # falls back to httpx (svc's HTTP client): the same API, for as long as Authlib keeps it
    warnings.simplefilter("ignore", AuthlibDeprecationWarning)
    from authlib.integrations.starlette_client import StarletteIntegration, StarletteOAuth2App

SCOPES = "openid email profile"
LEEWAY_SECONDS = 60
TIMEOUT_SECONDS = 10.0
#: the ID token's algorithms svc accepts (asymmetric: verified with the provider's JWKS)
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class ProviderUnavailable(Exception):
    """The provider cannot be reached, or its answer is not what the protocol says."""


class ProviderRefused(Exception):
    """The provider refused the code (its ``error``, such as ``invalid_grant``)."""


class BadIdToken(Exception):
    """The ID token fails a check (its signature, iss, aud, exp, nonce...)."""


@dataclass(frozen=True)
class Begun:
    """A sign-in to send the browser to: ``url``, and what finishing it needs."""

    url: str
    state: str
    nonce: str
    code_verifier: str


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


class OidcClient:
    """svc's client at one provider; one per process (its discovery and keys kept)."""

    def __init__(self, issuer: str, client_id: str, client_secret: str, redirect_uri: str) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self.redirect_uri = redirect_uri
        self._secret = client_secret
        self._app = StarletteOAuth2App(
            StarletteIntegration("svc"),
            name="svc",
            client_id=client_id,
            client_secret=client_secret or None,
            server_metadata_url=discovery_url(issuer),
            client_kwargs={
                "scope": SCOPES,
                "code_challenge_method": "S256",
                "timeout": TIMEOUT_SECONDS,
            },
        )
        self._checked = False

    async def _metadata(self) -> dict[str, Any]:
        try:
            metadata: dict[str, Any] = await self._app.load_server_metadata()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(f"its discovery document cannot be read: {exc}") from exc
        if not self._checked:
            if metadata.get("issuer") != self.issuer:
                self._app.server_metadata.clear()  # read it again next time
                raise ProviderUnavailable(
                    f"its discovery document names the issuer {metadata.get('issuer')!r}, "
                    f"not SVC_OIDC_ISSUER {self.issuer!r}"
                )
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(metadata.get(key), str):
                    self._app.server_metadata.clear()
                    raise ProviderUnavailable(f"its discovery document has no {key}")
            self._app.client_kwargs["token_endpoint_auth_method"] = self._auth_method(metadata)
            self._checked = True
        return metadata

    def _auth_method(self, metadata: dict[str, Any]) -> str:
        if not self._secret:
            return "none"
        offered = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if "client_secret_basic" not in offered and "client_secret_post" in offered:
            return "client_secret_post"
        return "client_secret_basic"

    async def begin(self) -> Begun:
        """A new authorization URL: state, nonce and the PKCE verifier made here."""
        await self._metadata()
        made = await self._app.create_authorization_url(self.redirect_uri)
        return Begun(made["url"], made["state"], made["nonce"], made["code_verifier"])

    async def finish(self, code: str, code_verifier: str, nonce: str) -> dict[str, Any]:
        """The verified claims of the person the provider signed in (see the module)."""
        metadata = await self._metadata()
        try:
            token = await self._app.fetch_access_token(
                redirect_uri=self.redirect_uri, code=code, code_verifier=code_verifier
            )
        except OAuthError as exc:
            raise ProviderRefused(exc.error or "invalid_grant") from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(f"its token endpoint cannot be used: {exc}") from exc
        if not isinstance(token, dict) or not isinstance(token.get("id_token"), str):
            raise ProviderUnavailable("its token endpoint answered no id_token")
        claims = await self._verify(token, metadata, nonce)
        if "email" not in claims and isinstance(metadata.get("userinfo_endpoint"), str):
            info = await self._userinfo(token, metadata)
            if info.get("sub") != claims.get("sub"):
                raise BadIdToken("the userinfo endpoint's sub is not the ID token's")
            claims = {**info, **claims}
        return claims

    async def _verify(
        self, token: dict[str, Any], metadata: dict[str, Any], nonce: str
    ) -> dict[str, Any]:
        offered = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = [a for a in offered if a in ALGORITHMS]
        if not algorithms:
            raise BadIdToken(f"the provider signs ID tokens with none of {', '.join(ALGORITHMS)}")
        registry = JWSRegistry(algorithms=algorithms, strict_check_header=False)
        try:
            try:
                decoded = jwt.decode(token["id_token"], await self._keys(), registry=registry)
            except InvalidKeyIdError:  # the provider rolled its keys: read them once more
                decoded = jwt.decode(token["id_token"], await self._keys(True), registry=registry)
            claims = CodeIDToken(
                decoded.claims,
                decoded.header,
                {
                    "iss": {"essential": True, "value": self.issuer},
                    "aud": {"essential": True, "value": self.client_id},
                    "exp": {"essential": True},
                    "nonce": {"essential": True, "value": nonce},
                },
                {
                    "nonce": nonce,
                    "client_id": self.client_id,
                    "access_token": token.get("access_token"),
                },
            )
            claims.validate(leeway=LEEWAY_SECONDS)
        except (JoseError, ValueError) as exc:
            raise BadIdToken(str(exc) or type(exc).__name__) from exc
        return dict(claims)

    async def _keys(self, force: bool = False) -> KeySet:
        try:
            jwks = await self._app.fetch_jwk_set(force=force)
            return KeySet.import_key_set(jwks)
        except (httpx.HTTPError, ValueError, JoseError) as exc:
            raise ProviderUnavailable(f"its JWKS cannot be read: {exc}") from exc

    async def _userinfo(self, token: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
        try:
            async with self._app._get_oauth_client(**metadata) as client:
                client.token = token
                r = await client.get(metadata["userinfo_endpoint"])
                r.raise_for_status()
                info = r.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(f"its userinfo endpoint cannot be read: {exc}") from exc
        if not isinstance(info, dict):
            raise ProviderUnavailable("its userinfo endpoint answered no JSON object")
        return info
