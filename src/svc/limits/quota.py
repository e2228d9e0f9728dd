"""Monthly quotas: exact per project and calendar month (UTC).

Ingestion *reserves* room for a request's events before it writes them (``reserve``: at most
what is left of the quota), and gives back what it did not store (``release``: invalid or
dropped events, or a failed write). Between the reservation and the durable write other
requests see the room as taken, so concurrent senders never store more than the quota, and a
batch that straddles the quota stores exactly up to it.

The counts are the runtime's ``Usage`` (rebuilt at start from the event store and the spool,
so durable across restarts). :class:`svc.limits.redis.RedisQuotas` shares them between
processes.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Protocol

from svc.errors import QuotaExceeded
from svc.limits.plans import Plans
from svc.meta.store import Project
from svc.timeutil import iso_ms


class Counts(Protocol):
    """Events stored per (project, month): ``svc.ingestion.service.Usage``."""

    def of(self, project_id: str, month: str) -> int: ...

    def add(self, project_id: str, month: str, n: int) -> None: ...


class _MonthClock:
    """The current UTC month as ``YYYY-MM``, recomputed only when it changes."""

    __slots__ = ("_end", "_month", "_start")

    def __init__(self) -> None:
        self._start = self._end = 0
        self._month = ""

    def month(self, ms: int | None = None) -> str:
        if ms is None:
            ms = time.time_ns() // 1_000_000
        if self._start <= ms < self._end:
            return self._month
        start, end = month_bounds(ms)
        month = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m")
        if start <= time.time_ns() // 1_000_000 < end:
            self._start, self._end, self._month = start, end, month
        return month


def month_bounds(ms: int) -> tuple[int, int]:
    """First ms of the UTC month of ``ms`` and of the month after."""
    now = datetime.fromtimestamp(ms / 1000, UTC)
    first = datetime(now.year, now.month, 1, tzinfo=UTC)
    nxt = datetime(now.year + (now.month == 12), now.month % 12 + 1, 1, tzinfo=UTC)
    return int(first.timestamp() * 1000), int(nxt.timestamp() * 1000)


MONTHS = _MonthClock()


def current_month(ms: int | None = None) -> str:
    return MONTHS.month(ms)


def seconds_to_next_month(ms: int) -> int:
    return max(1, -(-(month_bounds(ms)[1] - ms) // 1000))


class Quotas:
    """The quota ledger of this process (the embedded mode)."""

    backend = "memory"

    def __init__(
        self, plans: Plans, usage: Counts, warning_percent: int = 80, margin: int = 1000
    ) -> None:
        self.plans = plans
        self.usage = usage
        self.warning_percent = warning_percent
        self.margin = margin  # the largest batch: how far one request can move the count
        self.quota_seen: dict[str, int] = {}
        # project id -> month, for projects whose count is near or at their quota: only those
        # need a closer look before ingestion (a dict lookup for every other project)
        self.attention: dict[str, str] = {}
        self.refused_requests = 0

    def note(self, project_id: str, month: str, used: int, quota: int) -> None:
        """Mark a project whose next request may reach the warning share or the quota."""
        share = self.warning_percent if self.warning_percent > 0 else 100
        if quota > 0 and (used + self.margin) * 100 >= quota * share:
            self.attention[project_id] = month

    def quota_of(self, project: Project) -> int:
        return self.plans.quota_of(project)

    async def reserve(self, project: Project, month: str, n: int) -> int:
        """Room for up to ``n`` events of ``project`` in ``month``: how many may be stored.

        Counted at once; give back what is not stored with :meth:`release`. In this process
        the reservation is atomic (no await in between)."""
        quota = self.plans.quota_of(project)
        self.quota_seen[project.id] = quota
        if n <= 0:
            return 0
        if quota > 0:
            used = self.usage.of(project.id, month)
            n = min(n, quota - used)
            self.note(project.id, month, used + max(n, 0), quota)
            if n <= 0:
                return 0
        self.usage.add(project.id, month, n)
        return n

    async def release(self, project_id: str, month: str, n: int) -> None:
        """Give back ``n`` reserved events that were not stored."""
        if n > 0:
            self.usage.add(project_id, month, -n)

    def peek(self, project_id: str, month: str) -> int:
        """Events counted for the project this month, as this process last saw it (cheap)."""
        return self.usage.of(project_id, month)

    def used(self, project_id: str, month: str) -> int:
        """Events counted this month, as exact as the backend can say (may block)."""
        return self.usage.of(project_id, month)

    def exhausted(self, project: Project, month: str) -> bool:
        """True when the project's quota is known to be used up (a cheap early refusal)."""
        quota = self.plans.quota_of(project)
        return quota > 0 and self.peek(project.id, month) >= quota

    def exceeded(self, project: Project, received_ms: int) -> QuotaExceeded:
        """The 429 ``quota_exceeded`` error, with Retry-After to the next month."""
        quota = self.plans.quota_of(project)
        resets = month_bounds(received_ms)[1]
        return QuotaExceeded(
            f"project {project.id} has used its {quota} events for this month "
            f"({self.plans.source_of(project)} quota, plan {project.plan}); events are "
            f"accepted again from {iso_ms(resets)} or on a larger plan",
            headers={
                "Retry-After": str(seconds_to_next_month(received_ms)),
                "Svc-Quota-Warning": f"100% of {quota} events used this month",
            },
        )

    def warning(self, project: Project, month: str) -> str | None:
        """The ``Svc-Quota-Warning`` value from ``warning_percent`` of the quota, else None."""
        quota = self.plans.quota_of(project)
        if quota <= 0 or self.warning_percent <= 0:
            return None
        used = self.peek(project.id, month)
        if used * 100 < quota * self.warning_percent:
            return None
        return f"{min(100, used * 100 // quota)}% of {quota} events used this month"

    def report(self, project: Project, ms: int) -> dict[str, Any]:
        """The ``usage`` of GET /projects/{id} (may block)."""
        month = current_month(ms)
        quota = self.plans.quota_of(project)
        used = self.used(project.id, month)
        return {
            "month": month,
            "events": used,
            "quota": quota or None,
            "unlimited": quota == 0,
            "remaining": max(0, quota - used) if quota else None,
            "percent": round(used * 100 / quota, 1) if quota else None,
            "plan": project.plan,
            "quotaSource": self.plans.source_of(project),
            "resetsAt": iso_ms(month_bounds(ms)[1]),
            "exceeded": bool(quota) and used >= quota,
        }

    def summary(self) -> dict[str, Any]:
        """Figures for /health: totals only (per-project usage needs a credential)."""
        month = current_month()
        counts: dict[tuple[str, str], int] = dict(getattr(self.usage, "counts", {}))
        used_by = {p: n for (p, m), n in counts.items() if m == month and n > 0}
        near = full = 0
        for project_id, quota in list(self.quota_seen.items()):
            used = self.peek(project_id, month)
            if quota > 0 and used >= quota:
                full += 1
            elif quota > 0 and self.warning_percent and used * 100 >= quota * self.warning_percent:
                near += 1
        total, projects = sum(used_by.values()), len(used_by)
        return {
            "month": month,
            "eventsCounted": total,
            "activeProjects": projects,
            "projectsNearQuota": near,
            "projectsAtQuota": full,
            "requestsRefused": self.refused_requests,
        }
