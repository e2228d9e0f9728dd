"""Who is calling: turning a credential into a :class:`Principal`, and checking its rights.

Credentials: the admin token (every right on every project), a project's public key
(``ingest``), its secret key (``ingest``, ``read``, ``manage``), share tokens (``read``) and an
account's session token (``svc_sess_...``: the rights of its role on each project and team,
:data:`svc.accounts.roles.ROLE_RIGHTS`; read fresh from the store on every request, so a
sign-out or a role change takes effect at once).
A missing credential is 401 ``missing_api_key``; a malformed, unknown, revoked or expired one is
401 ``invalid_api_key``; a valid one used on another project or outside its scopes is 403.
Verified keys are cached for a few seconds; a revocation in this process takes effect at once
(in another process sharing the metadata store, within the cache time).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from svc import credentials
from svc.accounts import access as account_access
from svc.accounts.access import Access
from svc.accounts.tokens import SESSION_PREFIX
from svc.errors import Forbidden, InvalidApiKey, MissingApiKey
from svc.meta.store import ApiKey, MetaStore, Project
from svc.timeutil import now_ms


@dataclass(frozen=True, slots=True)
class Principal:
    kind: str  # admin, public, secret, share or account
    project: Project | None
    key_id: str | None
    scopes: frozenset[str]
    access: Access | None = field(default=None, compare=False)  # an account's session

    @property
    def is_admin(self) -> bool:
        return self.kind == "admin"

    @property
    def is_account(self) -> bool:
        return self.access is not None

    def require(self, scope: str, project_id: str | None = None) -> None:
        """403 unless this principal has ``scope`` on ``project_id`` (or on its own project).
        An account needs the right on the project named (its role there); a secret key's
        ``manage`` covers ``edit``."""
        if self.is_admin:
            return
        if self.access is not None:
            if scope == "ingest":
                raise Forbidden("an account's session does not send events: use a public key")
            if project_id is None:
                raise Forbidden("with an account's session, name the project: `projectId`")
            if scope not in self.access.on_project(project_id):
                raise Forbidden(
                    f"your role on {project_id!r} does not allow this: it needs {scope!r}"
                )
            return
        if scope not in self.scopes and not (scope == "edit" and "manage" in self.scopes):
            raise Forbidden(f"this {self.kind} key may not {_VERBS.get(scope, scope)}")
        if project_id is not None and (self.project is None or self.project.id != project_id):
            raise Forbidden(f"this key belongs to another project than {project_id!r}")

    def require_team(self, right: str, team_id: str) -> None:
        """403 unless this principal has ``right`` on the team (the admin token has all; keys
        have none)."""
        if self.is_admin:
            return
        if self.access is None:
            raise Forbidden("teams are managed with an account's session or the admin token")
        if right not in self.access.on_team(team_id):
            raise Forbidden(
                f"your role in team {team_id!r} does not allow this: it needs {right!r}"
            )


_VERBS = {"read": "read data", "manage": "manage projects or keys", "ingest": "send events"}
_ADMIN = Principal("admin", None, None, frozenset(("ingest", "read", "manage")))


#: A key verified valid in this process passes the failed-authentication gate of its address
#: this long after (svc.http.limits), even once out of the key cache (s).
VOUCH_SECONDS = 600.0
_MAX_ENTRIES = 100_000


class Authenticator:
    """Resolves credentials against the admin token and the metadata store.

    Verified keys are cached for ``cache_seconds``. A revocation evicts that key alone
    (:meth:`forget`), and a lookup that was under way when a key or its project was evicted
    never stores what it read: every eviction advances an epoch and records it for the key or
    project, and a lookup stores its answer only when nothing it read was evicted since the
    epoch it began at (it reads again instead, and sees the revocation).
    """

    def __init__(self, meta: MetaStore, admin_token_hash: str, cache_seconds: float) -> None:
        self.meta = meta
        self.admin_token_hash = admin_token_hash
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        self._memo: dict[str, tuple[float, Principal | None]] = {}
        self._vouched: dict[str, tuple[float, str]] = {}  # digest: (until, key id)
        self._last_used: dict[str, int] = {}
        self._lock = threading.Lock()
        self._epoch = 0
        self._evicted: dict[str, int] = {}  # key or project id: epoch of its last eviction
        self._floor = 0  # lookups begun before this epoch store nothing

    def bearer(self, header: str | None) -> str | None:
        """The token of an ``Authorization: Bearer`` header, or None when absent."""
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise InvalidApiKey("the Authorization header must be `Bearer <API key>`")
        return token.strip()

    def resolve(self, token: str | None) -> Principal:
        """The principal of a credential (blocking: may read the metadata store)."""
        if token is None:
            raise MissingApiKey("an API key is required: send `Authorization: Bearer svc_live_...`")
        if token.startswith(SESSION_PREFIX):
            return self._session(token)
        digest = self._digest(token)
        if credentials.same_secret(digest, self.admin_token_hash):
            return _ADMIN
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > time.monotonic():
            return self._used(cached[1])
        for _ in range(3):
            with self._lock:
                began = self._epoch
            principal = self._load(digest)
            with self._lock:
                if self._current(principal, began):
                    self._store(digest, principal)
                    break
            # evicted while it was read (a revocation raced this lookup): read it again
        return self._used(principal)

    def resolve_cached(self, token: str) -> Principal | None:
        """The principal of a credential when it is known without the metadata store (the
        admin token, or a key verified less than ``cache_seconds`` ago); None when the store
        must be asked (:meth:`resolve`). Raises as :meth:`resolve` does."""
        # The hot path (every POST /analytics): the same few keys again and again. A memo by
        # the key as sent skips the format check and the hash; it holds an entry no longer
        # than the digest cache does, and forget() evicts from it with the cache.
        if token.startswith(SESSION_PREFIX):
            return None  # sessions are read from the store on every request
        now = time.monotonic()
        memo = self._memo.get(token)
        if memo is not None and memo[0] > now:
            return self._used(memo[1])
        digest = self._digest(token)
        if credentials.same_secret(digest, self.admin_token_hash):
            return _ADMIN
        cached = self._cache.get(digest)
        if cached is None or cached[0] <= now:
            return None
        if cached[1] is not None:
            with self._lock:  # not after a concurrent forget(): only a current entry
                if self._cache.get(digest) is cached:
                    if len(self._memo) >= 1024:
                        self._memo.clear()
                    self._memo[token] = cached
        return self._used(cached[1])

    def vouches_for(self, token: str) -> bool:
        """Whether this well-formed key was verified valid here in the last ``VOUCH_SECONDS``
        and not evicted since: the failed-authentication gate lets it through, so that a busy
        address's bad keys never lock out its good ones (the handler still authenticates)."""
        if not credentials.is_well_formed(token):
            return False
        entry = self._vouched.get(credentials.hash_secret(token))
        return entry is not None and entry[0] > time.monotonic()

    def _session(self, token: str) -> Principal:
        found = account_access.load(self.meta, token)
        if found is None:
            raise InvalidApiKey("the session is unknown, signed out or expired: sign in again")
        return Principal("account", None, None, frozenset(), found)

    @staticmethod
    def _digest(token: str) -> str:
        if not credentials.is_well_formed(token):
            raise InvalidApiKey("the API key is malformed")
        return credentials.hash_secret(token)

    def _used(self, principal: Principal | None) -> Principal:
        if principal is None:
            raise InvalidApiKey("the API key is unknown, revoked or expired")
        if principal.key_id is not None:
            self._last_used[principal.key_id] = now_ms()
        return principal

    def cached(self, token: str) -> Principal | None:
        """A fresh cached principal of a well-formed key, without touching the store."""
        cached = self._cache.get(credentials.hash_secret(token))
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        return None

    def _load(self, digest: str) -> Principal | None:
        key: ApiKey | None = self.meta.find_key_by_hash(digest)
        if key is None or not key.active:
            return None
        project = self.meta.find_project(key.project_id)
        if project is None:
            return None
        return Principal(key.kind, project, key.id, frozenset(key.scopes))

    def _current(self, principal: Principal | None, began: int) -> bool:
        """Whether a lookup begun at epoch ``began`` may store ``principal`` (under the lock)."""
        if began < self._floor:
            return False
        if principal is None or principal.key_id is None or principal.project is None:
            return True
        evicted = max(
            self._evicted.get(principal.key_id, 0), self._evicted.get(principal.project.id, 0)
        )
        return evicted <= began

    def _store(self, digest: str, principal: Principal | None) -> None:
        """Cache a lookup's answer (under the lock)."""
        now = time.monotonic()
        if len(self._cache) >= _MAX_ENTRIES:
            self._cache = {d: e for d, e in self._cache.items() if e[0] > now and e[1] is not None}
            if len(self._cache) >= _MAX_ENTRIES:
                self._cache.clear()
        self._cache[digest] = (now + self.cache_seconds, principal)
        if principal is not None and principal.key_id is not None:
            if len(self._vouched) >= _MAX_ENTRIES:
                self._vouched = {d: e for d, e in self._vouched.items() if e[0] > now}
                if len(self._vouched) >= _MAX_ENTRIES:
                    self._vouched.clear()
            self._vouched[digest] = (now + VOUCH_SECONDS, principal.key_id)

    def forget(self, *, key_id: str | None = None, project_id: str | None = None) -> None:
        """Evict a key (after its revocation or rotation), every key of a project (after the
        project changed or was deleted), or with neither, every cached principal. A lookup
        under way when this is called does not store what it read."""
        with self._lock:
            self._epoch += 1
            if key_id is None and project_id is None:
                self._floor = self._epoch
                self._evicted.clear()
                self._cache.clear()
                self._memo.clear()
                self._vouched.clear()
                return
            if len(self._evicted) >= _MAX_ENTRIES:
                self._evicted.clear()
                self._floor = self._epoch
            for ident in (key_id, project_id):
                if ident is not None:
                    self._evicted[ident] = self._epoch

            def hit(principal: Principal | None) -> bool:
                if principal is None:
                    return False
                if key_id is not None and principal.key_id == key_id:
                    return True
                project = principal.project
                return project_id is not None and project is not None and project.id == project_id

            self._cache = {d: e for d, e in self._cache.items() if not hit(e[1])}
            self._memo = {t: e for t, e in self._memo.items() if not hit(e[1])}
            if key_id is not None:  # a project's change leaves its keys good
                self._vouched = {d: e for d, e in self._vouched.items() if e[1] != key_id}

    def take_last_used(self) -> dict[str, int]:
        with self._lock:
            used, self._last_used = self._last_used, {}
        return used

    def give_back_last_used(self, used: dict[str, int]) -> None:
        """Times of use :meth:`take_last_used` gave that could not be recorded: kept for the
        next attempt (the later of two times wins)."""
        with self._lock:
            for key_id, ts in used.items():
                if self._last_used.get(key_id, 0) < ts:
                    self._last_used[key_id] = ts


def load_admin_token_hash(data_dir: Path, configured: str) -> tuple[str, str | None]:
    """The admin token's hash, and the clear token when one was generated just now.

    With ``SVC_ADMIN_TOKEN`` set, that token is used. Otherwise the hash kept in
    ``<data dir>/admin_token.sha256`` is used, or a new token is generated, its hash kept
    (mode 0600) and the clear token returned, to be printed once.
    """
    if configured:
        if not configured.startswith(credentials.ADMIN_PREFIX) or not credentials.is_well_formed(
            configured
        ):
            raise ValueError("SVC_ADMIN_TOKEN must look like svc_admin_<24+ letters and digits>")
        return credentials.hash_secret(configured), None
    path = data_dir / "admin_token.sha256"
    if path.exists():
        return path.read_text().strip(), None
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = credentials.new_admin_token()
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never readable by others
    with os.fdopen(fd, "w") as f:
        f.write(credentials.hash_secret(token) + "\n")
    tmp.chmod(0o600)  # an older .tmp may have been looser
    tmp.rename(path)
    return credentials.hash_secret(token), token
