"""How long a project's data is kept: its raw events, and its daily rollups.

Raw events (and the per-session rows derived from them) are kept ``SVC_RETENTION_MONTHS``,
or the project's own ``options.retentionMonths``; the daily rollups (and the hourly event
figures) ``SVC_ROLLUP_RETENTION_MONTHS`` or ``options.rollupRetentionMonths``. 0 is forever.
A horizon is the first day of a UTC calendar month: N months keep the current month and the
N before it whole, so a month's partition goes at once when every project has left it
behind. The rollups are never kept less than the raw rows (a day whose rollups went while its
sessions stayed would be rolled up again), so with raw events kept forever they are too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from svc.errors import Forbidden, InvalidRequest
from svc.meta.store import Project
from svc.settings import Settings

RAW_OPTION = "retentionMonths"
ROLLUP_OPTION = "rollupRetentionMonths"
OPTIONS = (RAW_OPTION, ROLLUP_OPTION)
#: A hundred years: past it, keep forever (0).
MAX_MONTHS = 1200


@dataclass(frozen=True, slots=True)
class Retention:
    """A project's retention in months (0: forever); ``rollup_months`` is 0 or at least
    ``raw_months`` (see :func:`retention_of`)."""

    raw_months: int
    rollup_months: int

    def raw_from(self, today: date) -> date | None:
        """The first UTC day whose raw events are kept (None: every day)."""
        return horizon(self.raw_months, today)

    def rollups_from(self, today: date) -> date | None:
        """The first UTC day whose daily rollups are kept (None: every day)."""
        return horizon(self.rollup_months, today)

    def to_json(self) -> dict[str, int]:
        return {"rawMonths": self.raw_months, "rollupMonths": self.rollup_months}


def horizon(months: int, today: date) -> date | None:
    """The first day of the month ``months`` before ``today``'s (None for 0: forever):
    3 months on 2026-11-24 keep from 2026-08-01, between three and four months."""
    if months <= 0:
        return None
    index = today.year * 12 + today.month - 1 - months
    return date(index // 12, index % 12 + 1, 1)


def retention_of(project: Project | None, settings: Settings) -> Retention:
    """The project's retention: its own options where set, else the settings; the rollups
    kept at least as long as the raw rows (forever when these are)."""
    options = project.options if project is not None else {}
    raw = _months(options.get(RAW_OPTION), settings.retention_months)
    rollups = _months(options.get(ROLLUP_OPTION), settings.rollup_retention_months)
    if raw == 0:
        rollups = 0  # raw events kept forever: their rollups too
    elif rollups:
        rollups = max(rollups, raw)
    return Retention(raw, rollups)


def _months(own: Any, default: int) -> int:
    if isinstance(own, int) and not isinstance(own, bool) and own >= 0:
        return own
    return max(default, 0)


def check_option(name: str, value: Any) -> int | None:
    """``options.retentionMonths`` or ``options.rollupRetentionMonths``: whole months
    (0: forever), or null for the setting's default; else 400 naming it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MONTHS:
        raise InvalidRequest(
            f"`options.{name}` must be a whole number of months from 0 (forever) to "
            f"{MAX_MONTHS}, or null for the service's default",
            field=f"options.{name}",
        )
    return value


def split_options(value: Any) -> tuple[dict[str, int | None], Any]:
    """The retention options of a project's ``options`` (checked: :func:`check_option`), and
    the other options (``value`` itself when it is not an object: its parser says so)."""
    if not isinstance(value, dict):
        return {}, value
    own = {name: check_option(name, value[name]) for name in OPTIONS if name in value}
    return own, {k: v for k, v in value.items() if k not in OPTIONS}


def guard_options(is_admin: bool, project: Project | None, options: dict[str, Any]) -> None:
    """Only the admin token may change a project's retention (it deletes data, and keeps
    disk in use); a secret key may send back the values it read."""
    if is_admin:
        return
    current = project.options if project is not None else {}
    for name in OPTIONS:
        if name in options and options[name] != current.get(name):
            raise Forbidden(f"only the admin token may change a project's `options.{name}`")


def merge_options(current: Project, changes: dict[str, Any]) -> dict[str, Any]:
    """``options`` replaces a project's options, but its retention: kept unless the change
    names it; null removes it (back to the default)."""
    if "options" not in changes:
        return changes
    options = dict(changes["options"])
    for name in OPTIONS:
        if name not in options and name in current.options:
            options[name] = current.options[name]
        if name in options and options[name] is None:
            del options[name]
    return {**changes, "options": options}
