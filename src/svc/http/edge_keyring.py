"""The secrets edges may sign with, each with its scope (the projects it may sign for):
the setting's, the data directory's ``edge-secrets`` file's and the metadata store's (see
svc.http.edge_auth's docstring)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from svc.credentials import edge_key_id
from svc.meta import edge_secrets as stored_secrets

__all__ = ["SECRETS_FILE", "STORED_SECONDS", "EdgeSecrets", "Keyed", "key_id", "parse_secrets_file"]

#: Its warnings are the edge middleware's, under the name of svc.http.edge_auth's log.
log = logging.getLogger("svc.http.edge_auth")

SECRETS_FILE: Final = "edge-secrets"
_RELOAD_SECONDS: Final = 1.0
#: How old the metadata store's secrets may be before they are read again (s).
STORED_SECONDS: Final = 5.0
#: A secret and its scope: the projects it may sign for (None: every project).
Keyed = tuple[bytes, frozenset[str] | None]

#: ``svc_edge_<id>_<random>`` names its key id; any other secret has the id ``''``.
key_id = edge_key_id


class EdgeSecrets:
    """The secrets edges may sign with, each with its scope (see svc.http.edge_auth's
    docstring): the setting's, those of the data directory's ``edge-secrets`` file, read again
    when it changes (looked at once a second, and at once for a key id it does not know), and
    those of the metadata store (``stored``: a function that reads them, called in a worker
    thread by :meth:`refresh`)."""

    def __init__(
        self,
        setting: str,
        path: Path | None = None,
        stored: Callable[[], list[stored_secrets.EdgeSecret]] | None = None,
    ) -> None:
        self._fixed: dict[str, list[Keyed]] = {}
        for raw in setting.split(","):
            secret = raw.strip()
            if secret:
                self._fixed.setdefault(key_id(secret), []).append((secret.encode(), None))
        self.path = path
        self._filed: dict[str, list[Keyed]] = {}
        self._stamp: tuple[int, int] | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()
        self.stored = stored
        self._stored: dict[str, list[Keyed]] = {}
        self._stored_at = float("-inf")  # when the store was last read (monotonic)
        self._loading: asyncio.Future[None] | None = None

    def candidates(self, kid: str) -> list[Keyed]:
        # a key id not known yet may have just been registered: look at the file at once
        known = kid in self._fixed or kid in self._stored
        self._reload(force=not known and kid not in self._filed)
        return self._fixed.get(kid, []) + self._filed.get(kid, []) + self._stored.get(kid, [])

    def configured(self) -> bool:
        self._reload()
        return bool(self._fixed or self._filed or self._stored)

    async def refresh(self, kid: str) -> None:
        """Read the metadata store's secrets again, in a worker thread: waited for when
        ``kid`` is unknown and they are older than a second (a secret just registered); in the
        background, the request going on with the secrets known, when they are older than
        :data:`STORED_SECONDS`. One read at a time; a failed read keeps what was known."""
        if self.stored is None:
            return
        age = time.monotonic() - self._stored_at
        unknown = kid not in self._fixed and kid not in self._filed and kid not in self._stored
        wait = unknown and age >= _RELOAD_SECONDS
        if not wait and age < STORED_SECONDS:
            return
        if self._loading is None or self._loading.done():
            self._loading = asyncio.ensure_future(asyncio.to_thread(self.load_stored))
        if wait:
            await asyncio.shield(self._loading)

    def load_stored(self) -> None:
        """Read the metadata store's secrets now (blocking: a worker thread, or after a
        registration or revocation through this node, so that it takes effect at once)."""
        if self.stored is None:
            return
        started = time.monotonic()
        try:
            records = self.stored()
        except Exception as exc:  # the store is down, or not migrated yet: keep what is known
            log.warning("cannot read the edge secrets of the metadata store: %s", exc)
            self._stored_at = started
            return
        stored: dict[str, list[Keyed]] = {}
        for r in records:
            stored.setdefault(r.id, []).append((r.secret.encode(), frozenset((r.project_id,))))
        self._stored, self._stored_at = stored, started

    def _reload(self, force: bool = False) -> None:
        if self.path is None:
            return
        now = time.monotonic()
        if now - self._checked < _RELOAD_SECONDS and not force:
            return
        with self._lock:
            self._checked = now
            try:
                st = os.stat(self.path)
            except OSError:
                self._filed, self._stamp = {}, None
                return
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                return
            try:
                text = self.path.read_text(encoding="utf-8")
            except (OSError, UnicodeError) as exc:
                log.warning("cannot read the edge secrets in %s: %s", self.path, exc)
                return
            self._filed, self._stamp = parse_secrets_file(text), stamp


def parse_secrets_file(text: str) -> dict[str, list[Keyed]]:
    """The secrets of an ``edge-secrets`` file by key id: ``<key id> <secret>
    <project,project,...|*> [provider] [created]`` (the secret's own key id first, then its
    scope), or the older ``<secret> [project] [provider] [created]``, which signs for any
    project. Blank lines and lines starting with ``#`` are skipped."""
    filed: dict[str, list[Keyed]] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) >= 3 and fields[0] and key_id(fields[1]) == fields[0]:
            scope = None if fields[2] == "*" else frozenset(p for p in fields[2].split(",") if p)
            filed.setdefault(fields[0], []).append((fields[1].encode(), scope))
        else:
            filed.setdefault(key_id(fields[0]), []).append((fields[0].encode(), None))
    return filed
