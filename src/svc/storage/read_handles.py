"""The store's handles for reads: a fixed number, each lent to one read at a time.

A clickhouse-connect client runs one call at a time; embedded, every read of every project
once went through one chDB handle, so a light read waited behind any other tenant's heavy
one. chDB runs calls on different handles of one engine side by side, so the reads of
``GET /metrics*`` each get a handle of their own for as long as they run
(:meth:`ReadHandles.lend`), and the other handles (the main one of the loader's rollups and
/health's probe, the insert, export and control handles) never wait behind a read.

Two sets: ``size`` handles for admitted reads (the read scheduler,
:mod:`svc.reads.scheduler`, admits at most ``size`` reads at once, so :meth:`lend` always
finds one), and as many spares that a read lends for a moment to run its independent
statements side by side (:meth:`try_spare`; without one free, they run one after another on
the read's own handle). Handles are opened when first needed. A handle whose read failed
(stopped, timed out, refused) is closed, not given back (:meth:`discard`): a query cut off
mid-answer can leave its rest on the handle, and the next read would read it as its own.
With a ClickHouse server, every handle is the main client, whose HTTP pool already serves
calls side by side.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from clickhouse_connect.driver.client import Client


class NoReadHandle(RuntimeError):
    """More reads asked for a handle than were admitted (a bug of the caller)."""


@dataclass
class _Set:
    """Handles of one kind: those free now, and how many were opened."""

    free: list[Client] = field(default_factory=list)
    opened: int = 0


class ReadHandles:
    def __init__(
        self, size: int, open_handle: Callable[[], Client], own_handles: bool = True
    ) -> None:
        """``size`` handles for reads and as many spares, each opened by ``open_handle`` when
        first lent; ``own_handles``: each is a handle of its own, closed when discarded
        (False: the handles are one shared client, never closed here)."""
        if size < 1:
            raise ValueError("a read pool needs at least one handle")
        self.size = size
        self.own_handles = own_handles
        self._open = open_handle
        self._lock = threading.Lock()
        self._reads = _Set()
        self._spares = _Set()
        self._all: list[Client] = []
        #: handles lent now (reads and spares), for /internal/metrics and the tests
        self.lent = 0

    def lend(self) -> Client:
        """A handle for one read, until :meth:`give_back`; NoReadHandle when all ``size`` are
        lent (the scheduler admits no more reads than that)."""
        client = self._take(self._reads)
        if client is None:
            raise NoReadHandle(f"all {self.size} read handles are lent")
        return client

    def try_spare(self) -> Client | None:
        """A spare handle for a moment (give it back with :meth:`give_back_spare`), or None
        when every spare is lent. Never waits."""
        return self._take(self._spares)

    def give_back(self, client: Client) -> None:
        self._put(self._reads, client)

    def give_back_spare(self, client: Client) -> None:
        self._put(self._spares, client)

    def _take(self, kind: _Set) -> Client | None:
        """A free handle of ``kind``, a new one while fewer than ``size`` were opened, else
        None."""
        with self._lock:
            if kind.free:
                self.lent += 1
                return kind.free.pop()
            if kind.opened >= self.size:
                return None
            kind.opened += 1
            self.lent += 1
        try:
            client = self._open()
        except BaseException:
            with self._lock:
                kind.opened -= 1
                self.lent -= 1
            raise
        with self._lock:
            if client not in self._all:
                self._all.append(client)
        return client

    def discard(self, client: Client, spare: bool = False) -> None:
        """Close a lent handle instead of giving it back (a read on it failed, was stopped or
        timed out: what its query left unread must not reach the next read); a new one is
        opened in its place when needed."""
        kind = self._spares if spare else self._reads
        with self._lock:
            kind.opened -= 1
            self.lent -= 1
            if client in self._all:
                self._all.remove(client)
        if self.own_handles:  # (a ClickHouse server's handles are its main client)
            with contextlib.suppress(Exception):  # a broken handle: nothing more to do
                client.close()

    def _put(self, kind: _Set, client: Client) -> None:
        with self._lock:
            kind.free.append(client)
            self.lent -= 1

    def handles(self) -> list[Client]:
        """Every handle opened so far (to close them)."""
        with self._lock:
            return list(self._all)
