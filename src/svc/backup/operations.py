"""The service's background operations beside ingestion: the raw-event lake
(:mod:`svc.lake`) and scheduled backups (:mod:`svc.backup.schedule`). Built (and their
settings checked) with the application, started after the runtime and stopped before it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from svc.backup.schedule import BackupSchedule, check_settings
from svc.lake.schedule import Lake, lake_of
from svc.runtime import Runtime


class Operations:
    """The lake and the backup schedule of one service (each None when not configured)."""

    def __init__(self, runtime: Runtime) -> None:
        schedule = check_settings(runtime.settings)  # ValueError naming a bad setting
        self.lake: Lake | None = lake_of(runtime)
        self.backups = BackupSchedule(runtime, schedule) if schedule else None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        if self.lake is not None:
            self._tasks.append(asyncio.create_task(self.lake.run(), name="lake"))
        if self.backups is not None:
            self._tasks.append(asyncio.create_task(self.backups.run(), name="backups"))

    async def stop(self) -> None:
        """Stop the loops; a lake pass ends after its current day and a scheduled backup
        under way is waited for, so neither is cut off in a thread (before the runtime, and
        its store, stop)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self.lake is not None:
            await self.lake.finish()
        if self.backups is not None:
            await self.backups.finish()

    def status(self) -> dict[str, Any]:
        """``lake`` and ``backups`` of /health (null: not configured)."""
        return {
            "lake": self.lake.status() if self.lake else None,
            "backups": self.backups.status() if self.backups else None,
        }
