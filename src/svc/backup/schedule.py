"""Scheduled backups (``SVC_BACKUP_TO``, ``SVC_BACKUP_SCHEDULE``, ``SVC_BACKUP_KEEP``,
``SVC_BACKUP_FULL_EVERY``), taken by the running service in the background.

``SVC_BACKUP_SCHEDULE`` is ``daily@HH:MM`` (UTC) or an interval (``6h``, ``30m``, ``90s``,
``1d``). A scheduled backup is full when there is no full backup in ``SVC_BACKUP_TO`` yet or
the newest has ``SVC_BACKUP_FULL_EVERY`` differential backups on it; else differential. A
backup that fails is logged, counted, and tried again at the next time (not at once: a full
disk or a refused bucket would not be better a second later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from svc.backup import catalog
from svc.errors import Conflict
from svc.lake.places import is_s3
from svc.runtime import Runtime
from svc.settings import Settings

log = logging.getLogger(__name__)

_INTERVAL = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_DAILY = re.compile(r"^daily@([01]\d|2[0-3]):([0-5]\d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Schedule:
    """Either every ``interval_s`` seconds, or daily at ``at`` (hour, minute) UTC."""

    interval_s: float | None = None
    at: tuple[int, int] | None = None

    def next_after(self, now: datetime) -> datetime:
        if self.interval_s is not None:
            return now + timedelta(seconds=self.interval_s)
        assert self.at is not None
        hour, minute = self.at
        when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return when if when > now else when + timedelta(days=1)


def parse_schedule(text: str) -> Schedule:
    """``daily@HH:MM`` or ``<number><s|m|h|d>``; ValueError naming the setting otherwise."""
    value = text.strip().lower()
    daily = _DAILY.match(value)
    if daily:
        return Schedule(at=(int(daily.group(1)), int(daily.group(2))))
    interval = _INTERVAL.match(value)
    if interval and float(interval.group(1)) > 0:
        return Schedule(interval_s=float(interval.group(1)) * _UNIT_S[interval.group(2)])
    raise ValueError(
        f"setting SVC_BACKUP_SCHEDULE: {text!r} is neither daily@HH:MM (UTC) nor an interval "
        "such as 6h, 30m or 90s"
    )


def check_settings(settings: Settings) -> Schedule | None:
    """The schedule when scheduled backups are on; ValueError naming a bad setting (at
    start-up: :func:`svc.app.create_app`)."""
    if not settings.backup_to:
        return None
    schedule = parse_schedule(settings.backup_schedule)
    to = settings.backup_to
    if not is_s3(to) and not Path(to).is_absolute():
        raise ValueError(
            f"setting SVC_BACKUP_TO: {to!r} is neither an absolute directory nor s3://bucket/..."
        )
    if settings.backup_keep < 0 or settings.backup_full_every < 0:
        raise ValueError("settings SVC_BACKUP_KEEP and SVC_BACKUP_FULL_EVERY: 0 or more")
    return schedule


class BackupSchedule:
    """The background task of scheduled backups, and its state for /health."""

    def __init__(self, runtime: Runtime, schedule: Schedule) -> None:
        self.runtime = runtime
        self.schedule = schedule
        self.to = runtime.settings.backup_to
        self.taken = 0
        self.failures = 0
        self.last_name: str | None = None
        self.last_success_at: float | None = None
        self.last_seconds: float | None = None
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.next_at: datetime | None = None
        self._current: asyncio.Future[dict[str, Any] | None] | None = None

    def _complete(self) -> list[dict[str, Any]]:
        if is_s3(self.to):
            from svc.backup import remote

            return remote.scan(remote.place_of(self.to, self.runtime.settings))[0]
        return catalog.scan(Path(self.to))[0]

    def wants_full(self) -> bool:
        """Whether the next backup is a full one (blocking: reads the backups' place)."""
        complete = self._complete()
        fulls = [m for m in complete if m.get("kind") == "full"]
        if not fulls:
            return True
        on_it = [m for m in complete if m.get("base") == fulls[-1]["name"]]
        return len(on_it) >= self.runtime.settings.backup_full_every

    async def take_one(self) -> dict[str, Any]:
        """Take a scheduled backup now; its manifest."""
        from svc.backup.service import backup

        settings = self.runtime.settings
        full = await asyncio.to_thread(self.wants_full)
        keep = settings.backup_keep or None
        to: str | Path = self.to if is_s3(self.to) else Path(self.to)
        manifest: dict[str, Any] = await backup(self.runtime, to, keep=keep, full=full)
        return manifest

    def _find_last(self) -> None:
        """The newest complete backup already in the place (so that /health and the
        metrics know it after a restart)."""
        complete = self._complete()
        if complete:
            newest = complete[-1]
            self.last_name = str(newest["name"])
            taken = datetime.fromisoformat(str(newest["takenAt"]).replace("Z", "+00:00"))
            self.last_success_at = taken.timestamp()

    async def run(self) -> None:
        """Take a backup at each time of the schedule, until cancelled."""
        try:
            await asyncio.to_thread(self._find_last)
        except Exception as exc:  # the place may be unreachable now: the backups will say
            log.warning("scheduled backups: cannot list %s: %s", self.to, exc)
        while True:
            now = datetime.now(UTC)
            self.next_at = self.schedule.next_after(now)
            await asyncio.sleep(max(0.0, (self.next_at - now).total_seconds()))
            started = time.monotonic()
            leases = self.runtime.leases
            if not await leases.held("backups"):  # another node takes this one
                continue
            # shielded: a stop waits for a backup under way (finish) instead of cutting it
            # off while the store's BACKUP runs in a thread
            self._current = asyncio.ensure_future(leases.run_held("backups", self.take_one))
            try:
                taken = await asyncio.shield(self._current)
                if taken is None:  # the lease went to another node meanwhile
                    continue
                manifest = taken
            except asyncio.CancelledError:
                raise
            except Conflict:  # an svcm backup is under way: that one counts
                log.info("scheduled backup skipped: another backup is under way")
                continue
            except Exception as exc:
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"[:500]
                self.last_error_at = time.time()
                log.error("scheduled backup into %s failed: %s", self.to, self.last_error)
                continue
            self.taken += 1
            self.last_name = str(manifest["name"])
            self.last_success_at = time.time()
            self.last_seconds = round(time.monotonic() - started, 3)

    async def finish(self) -> None:
        """Wait for the scheduled backup under way, if any (at the service's stop)."""
        if self._current is not None and not self._current.done():
            with contextlib.suppress(Exception):
                await self._current

    def status(self) -> dict[str, Any]:
        """For /health."""
        return {
            "to": self.to,
            "schedule": self.runtime.settings.backup_schedule,
            "keep": self.runtime.settings.backup_keep,
            "taken": self.taken,
            "lastBackup": self.last_name,
            "lastSuccessAt": _iso(self.last_success_at),
            "lastSeconds": self.last_seconds,
            "failures": self.failures,
            "lastError": self.last_error,
            "lastErrorAt": _iso(self.last_error_at),
            "nextAt": self.next_at.isoformat(timespec="seconds").replace("+00:00", "Z")
            if self.next_at
            else None,
        }


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
