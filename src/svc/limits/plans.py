"""Plans and each project's monthly quota.

A project's quota is its own ``options.monthlyQuota`` when the admin set one, else its plan's
(``SVC_PLANS``; the free plan's is ``SVC_MONTHLY_QUOTA`` unless ``SVC_PLANS`` names ``free``).
0 is unlimited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from svc.errors import Forbidden, InvalidRequest
from svc.meta.store import Project

MAX_QUOTA = 10**15
QUOTA_OPTION = "monthlyQuota"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


@dataclass(frozen=True)
class Plans:
    quotas: dict[str, int]
    free: int

    def quota(self, plan: str) -> int:
        """Events a month on ``plan`` (an unknown plan gets the free plan's); 0: unlimited."""
        return self.quotas.get(plan, self.free)

    def quota_of(self, project: Project) -> int:
        own = project.options.get(QUOTA_OPTION)
        if isinstance(own, int) and not isinstance(own, bool):
            return own
        return self.quota(project.plan)

    def source_of(self, project: Project) -> str:
        """Where the quota comes from: ``project`` (its own limit) or ``plan``."""
        own = project.options.get(QUOTA_OPTION)
        return "project" if isinstance(own, int) and not isinstance(own, bool) else "plan"

    def check_name(self, name: Any) -> str:
        """A known plan name, or 400 naming the plans there are."""
        if not isinstance(name, str) or name not in self.quotas:
            known = ", ".join(sorted(self.quotas))
            raise InvalidRequest(f"`plan` must be one of: {known}", field="plan")
        return name

    def to_json(self) -> dict[str, int | None]:
        return {name: (q or None) for name, q in sorted(self.quotas.items())}


def parse_plans(spec: str, free: int) -> Plans:
    """``name=events,...`` (0: unlimited); ``free`` is the free plan's unless listed."""
    quotas: dict[str, int] = {"free": free}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        try:
            events = int(value.strip().replace("_", "")) if sep else -1
        except ValueError:
            events = -1
        if not _NAME.match(name) or events < 0:
            raise ValueError(f"setting SVC_PLANS: {part!r} is not name=events (events >= 0)")
        quotas[name] = events
    if free < 0:
        raise ValueError("setting SVC_MONTHLY_QUOTA must be 0 (unlimited) or more")
    return Plans(quotas, quotas["free"])


def check_quota_option(value: Any) -> int | None:
    """``options.monthlyQuota``: a whole number of events (0: unlimited), or null to go back
    to the plan's quota."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_QUOTA:
        raise InvalidRequest(
            "`options.monthlyQuota` must be a whole number of events a month (0: unlimited) "
            "or null for the plan's quota",
            field="options.monthlyQuota",
        )
    return value


def guard_quota_option(is_admin: bool, project: Project | None, options: dict[str, Any]) -> None:
    """Only the admin token may change a project's own quota (a secret key may send back the
    value it read)."""
    if is_admin or QUOTA_OPTION not in options:
        return
    current = project.options.get(QUOTA_OPTION) if project is not None else None
    if options[QUOTA_OPTION] != current:
        raise Forbidden("only the admin token may change a project's monthly quota")


def merge_quota_option(current: Project, changes: dict[str, Any]) -> dict[str, Any]:
    """``options`` replaces a project's options, except its own quota: kept unless the change
    names it; ``null`` removes it."""
    if "options" not in changes:
        return changes
    options = dict(changes["options"])
    if QUOTA_OPTION not in options and QUOTA_OPTION in current.options:
        options[QUOTA_OPTION] = current.options[QUOTA_OPTION]
    if options.get(QUOTA_OPTION, 0) is None:
        del options[QUOTA_OPTION]
    return {**changes, "options": options}
