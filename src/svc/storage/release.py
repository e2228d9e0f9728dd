"""Handing the memory the embedded engine freed back to the system: at once
(:meth:`MemoryRelease.release_memory`, after the loader's inserts) or after a pause that
follows heavy reads (:meth:`MemoryRelease.release_memory_after_read`). A no-op with a
ClickHouse server, which manages its own memory."""

from __future__ import annotations

import logging
import threading
import time

from svc.storage.handles import Handles

log = logging.getLogger(__name__)

#: A read that takes this long or longer is followed by a release of memory (embedded), once
#: no read has ended for READS_IDLE_S (MemoryRelease.release_memory_after_read).
HEAVY_READ_S = 0.2
READS_IDLE_S = 1.0


class MemoryRelease:
    """When the engine's allocator gives back what it freed; at most one release waits at a
    time."""

    def __init__(self, handles: Handles) -> None:
        self.handles = handles
        self._last_read_end = 0.0  # see release_memory_after_read
        self._release_pending = False
        self._release_lock = threading.Lock()

    def release_memory(self) -> None:
        """Hand the memory the embedded engine freed back to the system (its allocator keeps
        freed pages for reuse: ~150 MB after a few inserts of 8 MiB segments). A no-op with
        a ClickHouse server, which manages its own memory."""
        if not self.handles.settings.clickhouse_url:
            self.handles.client.command("SYSTEM JEMALLOC PURGE")

    def release_memory_after_read(self, elapsed_s: float) -> None:
        """After a read that took ``elapsed_s``: when it was a heavy one (HEAVY_READ_S or
        more), hand the memory the engine freed back to the system once no read has ended for
        READS_IDLE_S, in the background (embedded; not when ``store_memory_release_seconds``
        is 0). A report over 10M events leaves the engine's allocator holding ~550 MB (a
        breakdown by event name: RSS 847 -> 289 MB after the purge, which takes ~23 ms); a
        report right after a purge takes ~4 % longer, so reads in a burst (a dashboard's)
        are left to reuse it and the purge waits for the pause after them."""
        now = time.monotonic()
        self._last_read_end = now
        settings = self.handles.settings
        if settings.clickhouse_url or not settings.store_memory_release_seconds:
            return
        if elapsed_s < HEAVY_READ_S:
            return
        with self._release_lock:
            if self._release_pending:
                return
            self._release_pending = True
        threading.Thread(target=self._release_when_idle, name="svc-release", daemon=True).start()

    def _release_when_idle(self) -> None:
        try:
            while (wait := self._last_read_end + READS_IDLE_S - time.monotonic()) > 0:
                time.sleep(wait)
            self._release_quietly()
        finally:
            self._release_pending = False

    def _release_quietly(self) -> None:
        try:
            self.release_memory()
        except Exception as exc:  # only memory: never fail for it
            log.debug("could not release the store's memory: %s", exc)
