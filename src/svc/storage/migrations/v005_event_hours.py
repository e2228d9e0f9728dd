"""Migration 005's side effect: the event hours written from the stored events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.storage.migrations import After

if TYPE_CHECKING:
    from svc.storage.rebuilds import Rebuilds


def _rebuild(rebuilds: Rebuilds) -> None:
    rebuilds.rebuild_event_hours()


AFTER = After("event_hours", _rebuild)
