"""Migration 006's side effect: the report events copied from the stored events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.storage.migrations import After

if TYPE_CHECKING:
    from svc.storage.rebuilds import Rebuilds


def _rebuild(rebuilds: Rebuilds) -> None:
    rebuilds.rebuild_report_events()


AFTER = After("report_events", _rebuild)
