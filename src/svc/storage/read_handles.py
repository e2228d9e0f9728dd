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
the read's own handle). Handles are opened when first needed. With a ClickHouse server,
every handle is the main client, whose HTTP pool already serves calls side by side.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from clickhouse_connect.driver.client import Client


class NoReadHandle(RuntimeError):
    """More reads asked for a handle than were admitted (a bug of the caller)."""


class ReadHandles:
    def __init__(self, size: int, open_handle: Callable[[], Client]) -> None:
        """``size`` handles for reads and as many spares, each opened by ``open_handle`` when
        first lent."""
        if size < 1:
            raise ValueError("a read pool needs at least one handle")
        self.size = size
        self._open = open_handle
        self._lock = threading.Lock()
        self._free: list[Client] = []
        self._spares: list[Client] = []
        self._opened = 0
        self._spares_opened = 0
        self._all: list[Client] = []
        #: handles lent now (reads and spares), for /internal/metrics and the tests
        self.lent = 0

    def lend(self) -> Client:
        """A handle for one read, until :meth:`give_back`; NoReadHandle when all ``size`` are
        lent (the scheduler admits no more reads than that)."""
        with self._lock:
            if self._free:
                client = self._free.pop()
            elif self._opened < self.size:
                self._opened += 1
                client = None
            else:
                raise NoReadHandle(f"all {self.size} read handles are lent")
            self.lent += 1
        if client is not None:
            return client
        try:
            return self._opened_handle()
        except BaseException:
            with self._lock:
                self._opened -= 1
                self.lent -= 1
            raise

    def try_spare(self) -> Client | None:
        """A spare handle for a moment (give it back with :meth:`give_back_spare`), or None
        when every spare is lent. Never waits."""
        with self._lock:
            if self._spares:
                client = self._spares.pop()
            elif self._spares_opened < self.size:
                self._spares_opened += 1
                client = None
            else:
                return None
            self.lent += 1
        if client is not None:
            return client
        try:
            return self._opened_handle()
        except BaseException:
            with self._lock:
                self._spares_opened -= 1
                self.lent -= 1
            raise

    def give_back(self, client: Client) -> None:
        with self._lock:
            self._free.append(client)
            self.lent -= 1

    def give_back_spare(self, client: Client) -> None:
        with self._lock:
            self._spares.append(client)
            self.lent -= 1

    def _opened_handle(self) -> Client:
        client = self._open()
        with self._lock:
            if client not in self._all:
                self._all.append(client)
        return client

    def handles(self) -> list[Client]:
        """Every handle opened so far (to close them)."""
        with self._lock:
            return list(self._all)
