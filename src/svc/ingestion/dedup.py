"""Remembers recent ``eventId`` values so an event sent twice is stored once.

Keys are ``hash((project, eventId))`` held for a window (default 48 h) after they were first
seen; at start-up the set is rebuilt from the store and the spool, so the guarantee survives
restarts. A key is reserved when an event passes and released again if the spool append fails.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class EventIdFilter:
    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self._seen: set[int] = set()
        self._order: deque[tuple[int, int, str]] = deque()

    def __len__(self) -> int:
        return len(self._seen)

    @staticmethod
    def key(project_id: str, event_id: str) -> int:
        return hash((project_id, event_id))

    def reserve(self, project_id: str, event_id: str, now_ms: int) -> bool:
        """True, and remember it, if the id is new; False for a duplicate."""
        k = hash((project_id, event_id))
        if k in self._seen:
            return False
        self._seen.add(k)
        self._order.append((now_ms, k, project_id))
        return True

    def release(self, keys: Iterable[int]) -> None:
        for k in keys:
            self._seen.discard(k)

    def seed(self, rows: Iterable[tuple[str, str, int]]) -> None:
        """Rows of (project, eventId, first seen ms) in any order."""
        items = sorted((ms, hash((p, e)), p) for p, e, ms in rows if e)
        for ms, k, p in items:
            if k not in self._seen:
                self._seen.add(k)
                self._order.append((ms, k, p))

    def forget_project(self, project_id: str) -> None:
        """Forget every id of a project (it was deleted: a new project of that id starts
        empty)."""
        kept = deque(item for item in self._order if item[2] != project_id)
        for _, k, p in self._order:
            if p == project_id:
                self._seen.discard(k)
        self._order = kept

    def expire(self, now_ms: int) -> int:
        cutoff = now_ms - self.window_ms
        n = 0
        while self._order and self._order[0][0] < cutoff:
            _, k, _ = self._order.popleft()
            self._seen.discard(k)
            n += 1
        return n
