"""Edge secrets registered over the API (``POST /projects/{id}/edge-secrets``), each scoped to
the one project it was registered for.

An edge signs the visitor's address and location with an HMAC (svc.http.edge_auth), so the
origin needs the secret itself, not a hash of it: it is kept in clear in the metadata store
(meta.db is 0600 in a 0700 data directory; on PostgreSQL, as private as that database). The
metadata store rather than the data directory's ``edge-secrets`` file, so that every node of a
service that shares one PostgreSQL store knows a secret registered through any of them, a
backup holds it, and deleting the project deletes its secrets (MetaStore.delete_project).

A secret is ``svc_edge_<id>_<random>``: ``<id>`` (8 base62 characters) is its key id, which
the edge sends beside its signature (``x-svc-edge-kid``) so that the origin tries that secret
alone, and which names it here; ``<random>`` is 40 base62 characters (238 bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import delete, insert, select

from svc.credentials import edge_key_id, new_edge_secret
from svc.errors import NotFound
from svc.meta import tables
from svc.meta.store import MetaStore
from svc.timeutil import iso_ms, now_ms

__all__ = [
    "PROVIDERS",
    "EdgeSecret",
    "all_secrets",
    "create",
    "list_for",
    "revoke",
]

#: What ``provider`` may say (informative only: which kind of edge holds the secret).
PROVIDERS: Final = ("", "cloudflare-workers", "vercel-edge", "lambda-edge", "bun", "other")


@dataclass(frozen=True, slots=True)
class EdgeSecret:
    """One registered secret; :meth:`to_json` never shows the secret itself."""

    id: str
    project_id: str
    secret: str
    provider: str
    created_at: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "projectId": self.project_id,
            "provider": self.provider,
            "createdAt": iso_ms(self.created_at),
        }


def _row(row: Any) -> EdgeSecret:
    m = row._mapping
    return EdgeSecret(m["id"], m["project_id"], m["secret"], m["provider"], m["created_at"])


def create(store: MetaStore, project_id: str, provider: str = "") -> EdgeSecret:
    """A new secret scoped to ``project_id`` (which must exist: else NotFound)."""
    store._writable()
    store.get_project(project_id)
    secret = new_edge_secret()
    kid = edge_key_id(secret)
    record = EdgeSecret(kid, project_id, secret, provider, now_ms())
    with store.engine.begin() as conn:
        conn.execute(
            insert(tables.edge_secrets).values(
                id=record.id,
                project_id=project_id,
                secret=secret,
                provider=provider,
                created_at=record.created_at,
            )
        )
    return record


def list_for(store: MetaStore, project_id: str) -> list[EdgeSecret]:
    """The secrets of ``project_id`` (which must exist), oldest first."""
    store.get_project(project_id)
    t = tables.edge_secrets
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(t).where(t.c.project_id == project_id).order_by(t.c.created_at, t.c.id)
        )
        return [_row(r) for r in rows]


def all_secrets(store: MetaStore) -> list[EdgeSecret]:
    """Every registered secret (what the origin verifies with: svc.http.edge_auth)."""
    with store.engine.connect() as conn:
        return [_row(r) for r in conn.execute(select(tables.edge_secrets))]


def revoke(store: MetaStore, project_id: str, kid: str) -> EdgeSecret:
    """Delete the secret ``kid`` of ``project_id``; NotFound when it has none by that id."""
    store._writable()
    t = tables.edge_secrets
    with store.engine.begin() as conn:
        row = conn.execute(select(t).where(t.c.id == kid, t.c.project_id == project_id)).first()
        if row is None:
            raise NotFound(f"no edge secret {kid!r} in project {project_id!r}")
        conn.execute(delete(t).where(t.c.id == kid))
    return _row(row)
