"""Project provisioning: the domain functions behind /projects and ``svcm projects|keys``.

Records returned are JSON-ready dicts. Clear keys appear only in what ``create``,
``create_key`` and ``rotate_key`` return.
"""

from __future__ import annotations

import asyncio
from typing import Any

from svc.limits.plans import merge_quota_option
from svc.retention.policy import merge_options as merge_retention_options
from svc.runtime import Runtime
from svc.timeutil import now_ms

#: What a project record shows to those who may read the project but not manage it (a
#: viewer, an editor, a guest): what the dashboard needs to read it (its id, its name, the
#: time zone its days are read in). Its settings (domains, plan, ``options``: excluded
#: address ranges and paths, quota, retention, alert thresholds) and timestamps are the
#: managers' (docs/api.md, "/projects": "What each role sees of a project").
PUBLIC_FIELDS = ("id", "name", "timezone")


def project_view(record: dict[str, Any], may_manage: bool) -> dict[str, Any]:
    """A project record as its reader may see it: whole for those with the ``manage`` right
    (the admin token, the project's secret key, an owner or admin of its team), else only
    :data:`PUBLIC_FIELDS`. Every route that answers a project record shapes it here."""
    if may_manage:
        return record
    return {k: record[k] for k in PUBLIC_FIELDS if k in record}


class ProjectService:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.meta = runtime.meta

    def create(self, name: str, timezone: str, domains: list[str]) -> dict[str, Any]:
        project, keys = self.meta.create_project(name, timezone, domains)
        record = project.to_json()
        return {**record, "keys": keys, "project": record}

    def list_all(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.meta.list_projects()]

    def summary(self, project_id: str) -> dict[str, Any]:
        return self.meta.get_project(project_id).to_json()

    def detail(self, project_id: str) -> dict[str, Any]:
        project = self.meta.get_project(project_id)
        return {
            **project.to_json(),
            "keys": [k.to_json() for k in self.meta.list_keys(project_id)],
            "usage": self.runtime.ingest.quotas.report(project, now_ms()),  # svc.limits.quota
        }

    def update(self, project_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        current = self.meta.get_project(project_id)
        changes = merge_retention_options(current, merge_quota_option(current, changes))
        project = self.meta.update_project(project_id, changes)
        self.runtime.authenticator.forget(project_id=project_id)
        return project.to_json()

    async def delete(self, project_id: str) -> None:
        """Delete a project, its keys and every event of it, spooled ones included
        (:meth:`Runtime.delete_project`)."""
        project = await asyncio.to_thread(self.meta.get_project, project_id)
        await self.runtime.delete_project(project)

    def keys(self, project_id: str) -> list[dict[str, Any]]:
        self.meta.get_project(project_id)
        return [k.to_json() for k in self.meta.list_keys(project_id)]

    def create_key(self, project_id: str, kind: str) -> dict[str, Any]:
        key, clear = self.meta.create_key(project_id, kind)
        return {**key.to_json(), "key": clear}

    def revoke_key(self, project_id: str, key_id: str) -> dict[str, Any]:
        key = self.meta.revoke_key(project_id, key_id)
        self.runtime.authenticator.forget(key_id=key_id)  # that key alone
        return key.to_json()

    def rotate_key(self, project_id: str, key_id: str) -> dict[str, Any]:
        new, clear, old = self.meta.rotate_key(project_id, key_id)
        self.runtime.authenticator.forget(key_id=key_id)
        return {**new.to_json(), "key": clear, "replaces": old.id}
