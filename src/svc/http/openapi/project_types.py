"""The types of projects, their keys and their edge secrets (the answers and bodies of
/projects and its sub-paths)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, Meta, UnsetType

from svc.http.openapi.base import Doc, Timestamp
from svc.http.projects import NAME as PROJECT_NAME


class ProjectOptions(Doc):
    exclude_addresses: list[str] | UnsetType = UNSET
    exclude_paths: list[str] | UnsetType = UNSET
    only_own_domains: bool | UnsetType = UNSET
    keep_data_centres: (
        Annotated[
            bool,
            Meta(
                description="Store the events from data-centre addresses, which are dropped "
                "(reason `data_centre`) when the operator set SVC_DATACENTRE_RANGES. "
                "Default false."
            ),
        ]
        | UnsetType
    ) = UNSET
    monthly_quota: (
        Annotated[
            int | None,
            Meta(
                description="Admin token only: the project's own events a month "
                "(0: unlimited; null: its plan's). See docs/limits.md."
            ),
        ]
        | UnsetType
    ) = UNSET
    retention_months: (
        Annotated[
            int | None,
            Meta(
                description="Admin token only: months of raw events kept, 0-1200 (0: forever; "
                "null: SVC_RETENTION_MONTHS). See docs/api.md, Retention.",
            ),
        ]
        | UnsetType
    ) = UNSET
    rollup_retention_months: (
        Annotated[
            int | None,
            Meta(
                description="Admin token only: months of daily rollups kept, 0-1200 (0: "
                "forever; null: SVC_ROLLUP_RETENTION_MONTHS); never less than the raw events.",
            ),
        ]
        | UnsetType
    ) = UNSET


class Project(Doc):
    """A project. Those who may manage it (admin token, its secret key, an owner or admin of
    its team) see every field; the others (viewer, editor, guest) only ``id``, ``name``,
    ``timezone`` and ``role``."""

    id: Annotated[str, Meta(examples=["svc_proj_acme"])] | UnsetType = UNSET
    name: str | UnsetType = UNSET
    timezone: str | UnsetType = UNSET
    domains: list[str] | UnsetType = UNSET
    plan: str | UnsetType = UNSET
    options: dict[str, Any] | UnsetType = UNSET
    created_at: Timestamp | UnsetType = UNSET
    updated_at: Timestamp | UnsetType = UNSET
    role: (
        Annotated[str, Meta(description="GET /projects with a session: the account's role.")]
        | UnsetType
    ) = UNSET


class ProjectInput(Doc):
    name: Annotated[str, Meta(pattern=PROJECT_NAME.pattern)] | UnsetType = UNSET
    timezone: Annotated[str, Meta(description="An IANA time zone.")] = "UTC"
    domains: list[str] | UnsetType = UNSET
    options: ProjectOptions | UnsetType = UNSET
    plan: (
        Annotated[
            str,
            Meta(
                description="Admin token only: a plan of SVC_PLANS (free, pro, business, "
                "unlimited by default)."
            ),
        ]
        | UnsetType
    ) = UNSET


class Projects(Doc):
    projects: list[Project]


KeyKind = Literal["public", "secret", "share"]


class Key(Doc):
    id: str | UnsetType = UNSET
    kind: KeyKind | UnsetType = UNSET
    scopes: list[Literal["ingest", "read", "manage"]] | UnsetType = UNSET
    hint: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    created_at: Timestamp | UnsetType = UNSET
    last_used_at: Timestamp | UnsetType | None = UNSET
    revoked_at: Timestamp | UnsetType | None = UNSET
    expires_at: Timestamp | UnsetType | None = UNSET
    key: Annotated[str, Meta(description="The clear key: only when it is made.")] | UnsetType = (
        UNSET
    )


class KeyInput(Doc):
    kind: KeyKind | UnsetType = UNSET


class Keys(Doc):
    keys: list[Key]


EdgeProvider = Literal["", "cloudflare-workers", "vercel-edge", "lambda-edge", "bun", "other"]


class EdgeSecret(Doc):
    """A secret an edge signs the visitor's headers with, for its project alone
    (docs/edge.md)."""

    id: Annotated[str, Meta(description="The key id: `<id>` of `svc_edge_<id>_<random>`.")]
    project_id: str
    provider: EdgeProvider
    created_at: Timestamp
    secret: (
        Annotated[str, Meta(description="The secret in clear: only when it is made.")] | UnsetType
    ) = UNSET


class EdgeSecretInput(Doc):
    provider: EdgeProvider | UnsetType = UNSET


class EdgeSecrets(Doc):
    edge_secrets: list[EdgeSecret]
