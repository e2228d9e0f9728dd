"""The memory of the signed edge requests served: the same signature again within the
window is a replay (see svc.http.edge_auth's docstring)."""

from __future__ import annotations

import time
from collections import deque
from typing import Final

__all__ = ["REPLAY_MEMORY", "ReplayGuard"]

#: How many signatures :class:`ReplayGuard` keeps at most (measured: 195 bytes each, 39 MB in
#: all): every signed request of the last 240 s up to about 830 a second, the oldest
#: forgotten first beyond.
REPLAY_MEMORY: Final = 200_000


class ReplayGuard:
    """The signatures of the verified requests whose time is still within the window: the
    same signature again is a replay.

    Each is kept until its signed time leaves the window (``ts`` +
    :data:`~svc.http.edge_signature.WINDOW_SECONDS`; after that
    :func:`~svc.http.edge_signature.verify` refuses it as stale anyway), in a set and a queue in
    arrival order; at most ``capacity`` are kept, the oldest forgotten first beyond (counted in
    :attr:`forgotten_early`: the only way a replay can pass). Not thread-safe: the event loop's
    alone."""

    def __init__(self, capacity: int = REPLAY_MEMORY) -> None:
        self.capacity = capacity
        self.forgotten_early = 0
        self._seen: set[bytes] = set()
        self._queue: deque[tuple[float, bytes]] = deque()

    def __len__(self) -> int:
        return len(self._seen)

    def first(self, signature: bytes, until: float, now: float | None = None) -> bool:
        """True the first time ``signature`` is offered (then kept until ``until``, Unix
        seconds), False while it is kept."""
        t = time.time() if now is None else now
        queue, seen = self._queue, self._seen
        while queue and queue[0][0] < t:
            seen.discard(queue.popleft()[1])
        if signature in seen:
            return False
        while len(queue) >= self.capacity:
            seen.discard(queue.popleft()[1])
            self.forgotten_early += 1
        seen.add(signature)
        queue.append((until, signature))
        return True
