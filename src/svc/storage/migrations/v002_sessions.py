"""Migration 002's side effect: the sessions table (and what is keyed as it is) written from
the events stored before it existed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.storage.migrations import After

if TYPE_CHECKING:
    from svc.storage.rebuilds import Rebuilds


def _rebuild(rebuilds: Rebuilds) -> None:
    rebuilds.rebuild_sessions()  # and the (session, page) rows


AFTER = After("sessions", _rebuild, covers=("session_pages",))
