"""Single sign-on with OpenID Connect (docs/operations.md, "SSO"): begin a sign-in at the
provider, finish it with the code the provider sent back, and hand out the very session a
password sign-in makes (:meth:`AccountService.new_session`).

Who the person is: the provider's ``(issuer, sub)`` linked to an account before; else the
account of the same email, which the provider must have verified (``email_verified``), and
which is linked now (unless it is linked to another subject of this provider: 409); else,
with ``SVC_OIDC_TEAM`` set, a new account (no password) made just in time, a member of that
team with ``SVC_OIDC_ROLE``. An unverified email is refused (403 ``email_unverified``) and
nothing is made or linked; so is a disabled account, and a new person when ``SVC_OIDC_TEAM``
is empty (403 ``sso_refused``). svc's own two-factor is not asked: the provider's sign-in
(and its own second factor) stands for it.

The browser that began a sign-in must finish it: :meth:`SsoService.start` answers a random
``binding`` (the dashboard keeps it in the tab's sessionStorage) whose hash is stored with
the state; finishing needs both (no cookie is set). The state works once and for
:data:`LOGIN_MINUTES`.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from svc import credentials
from svc.accounts import roles, sso_store, store, teams, tokens
from svc.accounts.pseudonyms import pseudonym
from svc.accounts.service import AccountService
from svc.accounts.store import Account
from svc.accounts.throttle import SignInThrottle
from svc.errors import ApiError, Conflict, InvalidRequest, NotFound
from svc.mail import links
from svc.settings import Settings
from svc.timeutil import iso_ms

if TYPE_CHECKING:  # imported when single sign-on is used: Authlib and its cryptography
    from svc.accounts.oidc import OidcClient, ProviderUnavailable

log = logging.getLogger("svc.accounts")

LOGIN_MINUTES = 10
CALLBACK_PATH = "/auth/oidc/callback"
MAX_PARAM = 2048
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class SsoOff(NotFound):
    """Single sign-on is not configured."""


class SsoRefused(ApiError):
    status, code = 403, "sso_refused"


class EmailUnverified(ApiError):
    status, code = 403, "email_unverified"


class SsoUnavailable(ApiError):
    """The provider cannot be reached or answers outside the protocol (its fault, not the
    request's: 502)."""

    status, code = 502, "sso_unavailable"


class PasswordSignInOff(ApiError):
    status, code = 403, "password_signin_off"


def sso_on(settings: Settings) -> bool:
    return bool(settings.oidc_issuer)


def require_sso(settings: Settings) -> None:
    """404 while single sign-on is off."""
    if not sso_on(settings):
        raise SsoOff("single sign-on is off on this service (SVC_OIDC_ISSUER is not set)")


def require_password_signin(settings: Settings) -> None:
    """403 ``password_signin_off`` when the operator turned password sign-in off."""
    if not settings.password_signin:
        raise PasswordSignInOff(
            "sign-in with a password is off on this service (SVC_PASSWORD_SIGNIN=false): "
            "sign in with single sign-on (GET /auth/methods)"
        )


def check_settings(settings: Settings) -> None:
    """ValueError naming the setting when single sign-on is configured wrong, or password
    sign-in is off without it. Called at start-up (:func:`svc.app.create_app`)."""
    if not settings.oidc_issuer:
        if not settings.password_signin:
            raise ValueError(
                "setting SVC_PASSWORD_SIGNIN is false but SVC_OIDC_ISSUER is not set: nobody "
                "could sign in; configure single sign-on, or keep password sign-in on"
            )
        return
    issuer = urlsplit(settings.oidc_issuer)
    local = issuer.scheme == "http" and issuer.hostname in LOOPBACK
    if not (issuer.scheme == "https" or local) or not issuer.hostname or issuer.query:
        raise ValueError(
            f"setting SVC_OIDC_ISSUER: {settings.oidc_issuer!r} is not an https address "
            "without a query (such as https://id.example.com/realms/acme)"
        )
    if not settings.oidc_client_id:
        raise ValueError("setting SVC_OIDC_ISSUER is set but SVC_OIDC_CLIENT_ID is not")
    if not settings.base_url:
        raise ValueError(
            "setting SVC_OIDC_ISSUER is set but SVC_BASE_URL is not: the redirect URI "
            f"registered at the provider is <SVC_BASE_URL>{CALLBACK_PATH}: {links.HINT}"
        )
    if settings.oidc_role not in roles.TEAM_ROLES:
        raise ValueError(
            f"setting SVC_OIDC_ROLE: {settings.oidc_role!r} is not one of "
            f"{', '.join(roles.TEAM_ROLES)}"
        )
    if settings.oidc_team and not settings.oidc_team.startswith("team_"):
        raise ValueError(
            f"setting SVC_OIDC_TEAM: {settings.oidc_team!r} is not a team id (team_...)"
        )


def methods(settings: Settings) -> dict[str, Any]:
    """How people sign in here (GET /auth/methods; the dashboard's sign-in screen)."""
    sso = {"label": settings.oidc_label or "SSO"} if sso_on(settings) else None
    return {"password": settings.password_signin, "sso": sso}


def callback_fragment(params: dict[str, str]) -> str:
    """The dashboard's fragment carrying the provider's answer (``code`` and ``state``, or
    ``error``): ``sso=`` and the parameters, URL-encoded. 400 naming ``code`` when neither
    ``code`` nor ``error`` is there."""
    kept = {
        k: v[:MAX_PARAM]
        for k, v in params.items()
        if k in ("code", "state", "error", "error_description")
    }
    if not kept.get("code") and not kept.get("error"):
        raise InvalidRequest(
            "`code` is required: this is where the provider sends a browser back", field="code"
        )
    return "sso=" + quote(urlencode(kept), safe="")


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_PARAM:
        raise InvalidRequest(f"`{field}` is required: a string the sign-in was given", field=field)
    return value


class SsoService:
    """Single sign-on of one process (its client keeps the provider's discovery and keys)."""

    def __init__(self, accounts: AccountService) -> None:
        self.accounts = accounts
        self.meta = accounts.meta
        self.settings = accounts.settings
        self._client: OidcClient | None = None
        #: every start takes a token from its address's bucket (each writes a row); shared by
        #: the processes as the sign-in limits are (SVC_REDIS_URL)
        self.starts = SignInThrottle(
            self.settings.sso_limit_per_address,
            "0",
            accounts.throttle.shared,
            kind="sso",
            what="single sign-ons begun",
        )

    @property
    def client(self) -> OidcClient:
        require_sso(self.settings)
        if self._client is None:
            from svc.accounts.oidc import OidcClient

            s = self.settings
            redirect = links.public_base(s) + CALLBACK_PATH
            self._client = OidcClient(
                s.oidc_issuer, s.oidc_client_id, s.oidc_client_secret, redirect
            )
        return self._client

    async def start(self, address: str) -> dict[str, Any]:
        """A sign-in begun: where to send the browser, and the binding it keeps. Each takes
        a token from the client address's bucket (``SVC_SSO_LIMIT_PER_ADDRESS``; 429 while
        it is empty)."""
        from svc.accounts.oidc import ProviderUnavailable

        client = self.client
        await self.starts.take(address, "")
        try:
            begun = await client.begin()
        except ProviderUnavailable as exc:
            raise _unavailable(exc) from exc
        binding = "svc_sso_" + credentials.random_base62(40)
        expires = await asyncio.to_thread(
            sso_store.create_login,
            self.meta,
            begun.state,
            binding,
            begun.nonce,
            begun.code_verifier,
            LOGIN_MINUTES * 60 * 1000,
        )
        return {"authorizationUrl": begun.url, "binding": binding, "expiresAt": iso_ms(expires)}

    async def finish(self, code: object, state: object, binding: object) -> dict[str, Any]:
        """The session of the person the provider signed in (see the module)."""
        from svc.accounts.oidc import BadIdToken, ProviderRefused, ProviderUnavailable

        client = self.client
        code_text = _text(code, "code")
        state_text = _text(state, "state")
        binding_text = _text(binding, "binding")
        pending = await asyncio.to_thread(sso_store.take_login, self.meta, state_text)
        if pending is None:
            raise InvalidRequest(
                "this sign-in is unknown, used or expired: sign in again", field="state"
            )
        if not hmac.compare_digest(tokens.digest(binding_text), pending.binding_hash):
            raise InvalidRequest(
                "this sign-in was begun in another browser tab: sign in again", field="binding"
            )
        try:
            claims = await client.finish(code_text, pending.code_verifier, pending.nonce)
        except ProviderUnavailable as exc:
            raise _unavailable(exc) from exc
        except ProviderRefused as exc:
            _refused("code_refused", None, str(exc))
            raise InvalidRequest(
                f"the provider refused the code ({exc}): sign in again", field="code"
            ) from exc
        except BadIdToken as exc:
            _refused("bad_id_token", None, str(exc))
            raise SsoRefused(f"the provider's ID token is not valid: {exc}") from exc
        account = await asyncio.to_thread(self._account_of, client.issuer, claims)
        return await asyncio.to_thread(self.accounts.new_session, account)

    def _account_of(self, issuer: str, claims: dict[str, Any]) -> Account:
        """The account the verified claims sign in to, linked or made now (see the module)."""
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise SsoRefused("the provider's ID token has no usable subject (sub)")
        raw_email = claims.get("email")
        if not isinstance(raw_email, str) or not raw_email:
            _refused("no_email", None, subject)
            raise SsoRefused(
                "the provider did not say your email address: allow svc the `email` scope"
            )
        try:
            email = store.normalize_email(raw_email)
        except InvalidRequest as exc:
            raise SsoRefused(f"the provider's email {raw_email!r} is not an address") from exc
        if claims.get("email_verified") not in (True, "true"):
            _refused("email_unverified", email, subject)
            raise EmailUnverified(
                f"the provider has not verified the email {email}: verify it there, then sign "
                "in again (svc links accounts by verified email only)"
            )
        linked = sso_store.find_identity(self.meta, issuer, subject)
        if linked is not None:
            account = store.get_account(self.meta, linked)
            sso_store.touch_identity(self.meta, issuer, subject, email)
            how = "linked"
        else:
            found = store.find_account(self.meta, email)
            if found is not None:
                if sso_store.identity_of(self.meta, issuer, found.id) is not None:
                    _refused("linked_elsewhere", email, subject)
                    raise Conflict(
                        f"the svc account of {email} is linked to another identity at the "
                        "provider: sign in with that one, or ask an operator"
                    )
                _active(found, email, subject)
                account, how = found, "linked_now"
            else:
                account, how = self._new_account(email, claims), "created"
            sso_store.link_identity(self.meta, issuer, subject, account.id, email)
        _active(account, email, subject)
        log.info(
            "signed in with single sign-on",
            extra={"event": "sso_signin", "how": how, "accountId": account.id},
        )
        return account

    def _new_account(self, email: str, claims: dict[str, Any]) -> Account:
        team_id, role = self.settings.oidc_team, self.settings.oidc_role
        if not team_id:
            _refused("no_account", email, None)
            raise SsoRefused(
                f"no svc account has the email {email}, and this service makes none at "
                "single sign-on (SVC_OIDC_TEAM is not set): ask for an invitation"
            )
        try:
            teams.get_team(self.meta, team_id)
        except NotFound as exc:
            log.error("SVC_OIDC_TEAM names no team", extra={"event": "sso_no_team"})
            raise SsoRefused(
                f"SVC_OIDC_TEAM names no team ({team_id!r}): ask an operator to fix it"
            ) from exc
        name = claims.get("name")
        name = name.strip()[: store.MAX_NAME] if isinstance(name, str) else ""
        account = store.create_account(self.meta, email, "", name)  # "": no password sign-in
        teams.add_member(self.meta, team_id, account.id, role)
        return account


def _active(account: Account, email: str, subject: str) -> None:
    if not account.active:
        _refused("disabled", email, subject)
        raise SsoRefused("this svc account is disabled: ask an operator")


def _unavailable(exc: ProviderUnavailable) -> SsoUnavailable:
    log.error("single sign-on provider unavailable: %s", exc, extra={"event": "sso_unavailable"})
    return SsoUnavailable(f"the sign-in provider cannot be used now: {exc}")


def _refused(reason: str, email: str | None, detail: str | None) -> None:
    log.warning(
        "single sign-on refused: %s",
        reason,
        extra={
            "event": "sso_refused",
            "reason": reason,
            "emailHash": pseudonym(email) if email else None,
            "detail": detail if reason in ("bad_id_token", "code_refused") else None,
        },
    )
