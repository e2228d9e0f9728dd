"""The blocking client: a thread-safe queue and a background daemon thread that sends it."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from types import TracebackType
from typing import Unpack

import httpx

from svc_client import _validate as v
from svc_client._core import (
    BaseClient,
    _check_http,
    _Outcome,
    _Post,
    _post_blocking,
    _Queued,
)
from svc_client._types import ClientOptions

#: How long close() waits by default, also at interpreter exit.
DEFAULT_CLOSE_TIMEOUT = 10.0
#: Seconds between two reports of events dropped from a full queue.
DROP_REPORT_INTERVAL = 1.0


class Client(BaseClient):
    """A client for threaded code (WSGI apps, scripts, workers). See :func:`create_client`.

    Calls never block on the network: events are queued and sent by a daemon thread, in
    batches. The thread runs while there is something to send and is started again on demand
    (also in a child process after ``fork``). At interpreter exit, every open client is closed:
    what is queued is sent within ``DEFAULT_CLOSE_TIMEOUT`` seconds.
    """

    def __init__(
        self,
        *,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        lock = threading.RLock()
        super().__init__(lock=lock, **options)
        _check_http("create_client", transport, http_client, httpx.Client)
        self._cond = threading.Condition(lock)
        self._transport = transport
        self._http: httpx.Client | None = http_client
        self._owns_http = http_client is None
        self._thread: threading.Thread | None = None
        #: time.monotonic() at which a partial batch is sent.
        self._timer_at: float | None = None
        #: time.monotonic() from which dropped events may be reported again.
        self._drop_report_at = 0.0
        self._pid = os.getpid()
        _register(self)

    # ----- the sender ---------------------------------------------------------------------------

    def _http_client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(transport=self._transport, timeout=self._timeout)
        return self._http

    def _post(self, post: _Post) -> _Outcome:
        return _post_blocking(self._http_client(), self._endpoint, self._headers, post)

    def _sleep(self, delay: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._aborted, delay)

    def _ensure_sender(self) -> bool:
        """Starts the sender thread unless it runs (the lock is held). False if it cannot."""
        if self._thread is not None:
            return True
        thread = threading.Thread(target=self._run, name="svc-client", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # at interpreter shutdown
            return False
        self._thread = thread
        return True

    def _run(self) -> None:
        try:
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                if not batch:
                    continue
                try:
                    self._deliver_blocking(batch, self._post, self._sleep)
                finally:
                    with self._cond:
                        self._inflight = []
                        self._cond.notify_all()
        finally:
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread = None
                self._cond.notify_all()

    def _next_batch(self) -> list[_Queued] | None:
        """Waits for a batch to send; ``[]`` after reporting drops; ``None``: the thread ends.

        Drops from a full queue are reported at once, then at most once a second (summed), so
        that a burst of events into a full queue makes one warning, not thousands."""
        with self._cond:
            while True:
                wait: float | None = None
                if self._drop_pending:
                    wait = self._drop_report_at - time.monotonic()
                    if wait <= 0:
                        break
                if self._aborted:
                    return None
                if self._due():
                    batch = self._take()
                    self._inflight = batch
                    return batch
                if not self._queue and not self._drop_pending:
                    self._timer_at = None
                    self._thread = None
                    self._cond.notify_all()
                    return None
                if not self._queue or self._flush_interval <= 0 or self._closed:
                    self._cond.wait(wait)
                    continue
                now = time.monotonic()
                if self._timer_at is None:
                    self._timer_at = now + self._flush_interval
                if now >= self._timer_at:
                    self._timer_at = None
                    self._force_through = self._seq
                    continue
                left = self._timer_at - now
                self._cond.wait(left if wait is None else min(left, wait))
        self._report_drops()
        return []

    def _report_drops(self) -> None:
        report = self._take_drop_report()
        if report is not None:
            self._drop_report_at = time.monotonic() + DROP_REPORT_INTERVAL
            self._report(report)

    def _drain_here(self) -> None:
        """Sends what is due in the calling thread (when no thread can be started)."""
        while True:
            with self._cond:
                if not self._due():
                    break
                batch = self._take()
                self._inflight = batch
            try:
                self._deliver_blocking(batch, self._post, self._sleep)
            finally:
                with self._cond:
                    self._inflight = []
                    self._cond.notify_all()
        self._report_drops()

    def _submit(self, q: _Queued) -> None:
        if self._pid != os.getpid():
            self._after_fork()
        with self._cond:
            closed = self._closed
            if not closed:
                dropped = self._push(q)
                self._ensure_sender()
                if dropped or len(self._queue) >= self._max_batch_size:
                    self._cond.notify_all()
                elif len(self._queue) == 1:
                    self._cond.notify_all()  # arms the interval timer of an idle sender
        if closed:
            self._refuse_closed(q.name)

    def _after_fork(self) -> None:
        """In a child process: a fresh lock, queue, thread and connection pool. What was queued
        before the fork is the parent's to send."""
        lock = threading.RLock()
        self._lock = lock
        self._cond = threading.Condition(lock)
        self._queue.clear()
        self._inflight = []
        self._drop_pending = 0
        self._thread = None
        self._timer_at = None
        if self._owns_http:
            self._http = None  # the parent's sockets: never used, never closed here
        self._pid = os.getpid()

    # ----- the public API -----------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Sends everything queued so far and waits until it is sent or given up.

        Returns ``False`` if ``timeout`` seconds passed first (the rest stays queued). Never
        raises for delivery failures: they go to ``on_error``.
        """
        if timeout is not None:
            timeout = v.check_number("flush", "timeout", timeout, min0=True)
        if self._pid != os.getpid():
            self._after_fork()
        if self._thread is threading.current_thread():
            return False  # from on_error, inside the sender: it cannot wait for itself
        with self._cond:
            through = self._seq
            if self._oldest_pending() > through:
                return True
            self._force_through = self._seq
            running = self._ensure_sender()
            self._cond.notify_all()
        if not running:
            self._drain_here()
        with self._cond:
            return self._cond.wait_for(lambda: self._oldest_pending() > through, timeout)

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT) -> None:
        """Sends what is queued (within ``timeout`` seconds: then what is left is given up and
        reported), stops the sender and refuses new events. Safe to call more than once."""
        timeout = v.check_number("close", "timeout", timeout, min0=True)
        with self._cond:
            self._closed = True
            self._timer_at = None
            end = time.monotonic() + timeout
            self._deadline = end if self._deadline is None else min(self._deadline, end)
            self._cond.notify_all()
        done = self.flush(timeout)
        thread = self._thread
        if not done:
            with self._cond:
                self._aborted = True
                self._cond.notify_all()
            if thread is not None and thread is not threading.current_thread():
                # A request under way ends by the deadline: its limit is capped by it.
                thread.join(min(self._timeout, 2.0))
            with self._cond:
                left = len(self._queue)
                self._queue.clear()
            if left:
                self._give_up(left, self._shutdown_error(left))
        elif thread is not None and thread is not threading.current_thread():
            thread.join(0.5)
        self._report_drops()
        if self._owns_http and self._http is not None and self._thread is None:
            self._http.close()
        _unregister(self)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<svc_client.Client {self._project_id} {self._endpoint} {state}>"


# ----- every open client is closed at exit; after fork the child starts afresh ------------------

_open: weakref.WeakSet[Client] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooked = False


def _register(client: Client) -> None:
    global _hooked
    with _hooks_lock:
        _open.add(client)
        if not _hooked:
            _hooked = True
            atexit.register(_close_all)
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=_reset_all_after_fork)


def _unregister(client: Client) -> None:
    with _hooks_lock:
        _open.discard(client)


def _close_all() -> None:
    for client in list(_open):
        with contextlib.suppress(Exception):  # one client must not stop the others
            client.close()


def _reset_all_after_fork() -> None:
    global _hooks_lock
    _hooks_lock = threading.Lock()
    for client in list(_open):
        client._after_fork()
