"""Migration 004's side effect: the (session, page) rows written from the stored events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.storage.migrations import After

if TYPE_CHECKING:
    from svc.storage.rebuilds import Rebuilds


def _rebuild(rebuilds: Rebuilds) -> None:
    # keyed as the materialized views keyed the sessions they fed
    rebuilds.rebuild_session_pages(day="toDate(min(session_start))")


AFTER = After("session_pages", _rebuild)
