"""The asyncio client: the same queue and rules, sent by a task of the running event loop."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import time
from collections import deque
from types import TracebackType
from typing import Any, Unpack

import httpx

from svc_client import _validate as v
from svc_client._core import (
    BaseClient,
    _check_http,
    _network_error,
    _Outcome,
    _outcome,
    _Post,
    _post_blocking,
    _Queued,
    _timeout_error,
)
from svc_client._sync import DEFAULT_CLOSE_TIMEOUT
from svc_client._types import ClientOptions
from svc_client.errors import SvcError


class AsyncClient(BaseClient):
    """A client for asyncio apps (FastAPI, Starlette, aiohttp...). See :func:`create_async_client`.

    ``track()`` and the other event methods are plain (not ``async``) and never wait: events
    are queued and sent in batches by a task of the running event loop. Call them from the
    loop's thread (from another thread they are handed to the loop). ``await client.flush()``
    sends what is queued; ``await client.aclose()`` (or ``async with``) at the end of the app.
    Events still queued when the interpreter exits without ``aclose()`` are sent then, with a
    blocking request, if the client owns its HTTP client.
    """

    def __init__(
        self,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        super().__init__(lock=contextlib.nullcontext(), **options)
        _check_http("create_async_client", transport, http_client, httpx.AsyncClient)
        self._transport = transport
        self._http: httpx.AsyncClient | None = http_client
        self._owns_http = http_client is None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._wake: asyncio.Future[None] | None = None
        self._interrupt: asyncio.Future[None] | None = None
        self._drop_scheduled = False

    # ----- the loop -----------------------------------------------------------------------------

    def _running_loop(self) -> asyncio.AbstractEventLoop | None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        if loop is not self._loop:
            self._rebind(loop)
        return loop

    def _rebind(self, loop: asyncio.AbstractEventLoop) -> None:
        """A new event loop (``asyncio.run`` called again): what belonged to the old one goes."""
        if self._loop is not None:
            if self._inflight:
                self._queue.extendleft(reversed(self._inflight))
                self._inflight = []
            self._draining = None
            self._timer = None
            self._wake = self._interrupt = None
            self._waiters = []  # futures of the old loop: nobody awaits them any more
            self._drop_scheduled = False
            if self._owns_http:
                self._http = None  # its connections belong to the old loop
        self._loop = loop

    def _http_client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(transport=self._transport, timeout=self._timeout)
        return self._http

    # ----- scheduling (mirrors the TypeScript client) -----------------------------------------

    def _kick(self, force: bool) -> None:
        if force:
            self._force_through = self._seq
        if self._draining is not None or not self._due():
            return
        loop = self._running_loop()
        if loop is None:
            return
        self._draining = loop.create_task(self._drain(), name="svc-client")

    def _arm(self) -> None:
        if self._timer is None and self._flush_interval > 0 and not self._closed and self._queue:
            loop = self._running_loop()
            if loop is not None:
                self._timer = loop.call_later(self._flush_interval, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._kick(True)

    async def _drain(self) -> None:
        cancelled = False
        try:
            while self._due():
                batch = self._take()
                self._inflight = batch
                try:
                    await self._deliver(batch)
                except asyncio.CancelledError:
                    # The loop is going away: the batch goes back, for aclose() or exit.
                    cancelled = True
                    if not self._aborted:
                        self._queue.extendleft(reversed(batch))
                    raise
                self._inflight = []
                self._settle()
        finally:
            self._inflight = []
            if self._draining is asyncio.current_task():
                self._draining = None
            self._settle()
            if not cancelled:
                if self._due():
                    self._kick(False)
                else:
                    self._arm()
            if not self._queue:
                _pending.discard(self)

    async def _deliver(self, batch: list[_Queued]) -> None:
        gen = self._delivery(batch)
        try:
            action = next(gen)
            while True:
                if isinstance(action, _Post):
                    action = gen.send(await self._post(action))
                else:
                    await self._sleep(action.delay)
                    action = gen.send(None)
        except StopIteration:
            pass

    async def _post(self, post: _Post) -> _Outcome:
        loop = asyncio.get_running_loop()
        stop: asyncio.Future[None] = loop.create_future()
        self._interrupt = stop
        request = loop.create_task(self._request(self._http_client(), post))
        try:
            waiting: set[asyncio.Future[Any]] = {request, stop}
            done, _ = await asyncio.wait(
                waiting, timeout=post.limit, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            request.cancel()
            raise
        finally:
            self._interrupt = None
        if request in done:
            return request.result()
        request.cancel()
        request.add_done_callback(_consume)
        if stop in done:
            return _Outcome(
                0, error=SvcError("shutdown_timeout", "svc: request abandoned at aclose()")
            )
        return _Outcome(0, error=_timeout_error(post.limit))

    async def _request(self, http: httpx.AsyncClient, post: _Post) -> _Outcome:
        try:
            r = await http.post(
                self._endpoint, content=post.body, headers=self._headers, timeout=post.limit
            )
            content = r.content
        except httpx.TimeoutException as exc:
            return _Outcome(0, error=_timeout_error(post.limit, exc))
        except Exception as exc:
            return _Outcome(0, error=_network_error(exc))
        return _outcome(r.status_code, content, r.headers.get("retry-after"))

    async def _sleep(self, delay: float) -> None:
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._wake = wake
        try:
            await asyncio.wait({wake}, timeout=delay)
        finally:
            self._wake = None
            if not wake.done():
                wake.cancel()

    def _settle(self) -> None:
        if not self._waiters:
            return
        oldest = self._oldest_pending()
        keep = []
        for through, fut in self._waiters:
            if through < oldest:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((through, fut))
        self._waiters = keep

    def _report_drops(self) -> None:
        self._drop_scheduled = False
        report = self._take_drop_report()
        if report is not None:
            self._report(report)

    def _submit(self, q: _Queued) -> None:
        loop = self._running_loop()
        if loop is None:
            owner = self._loop
            if owner is not None and owner.is_running() and not owner.is_closed():
                # Another thread than the loop's: the loop queues it.
                owner.call_soon_threadsafe(self._submit, q)
                return
        if self._closed:
            self._refuse_closed(q.name)
            return
        if self._push(q):
            if loop is None:
                self._report_drops()
            elif not self._drop_scheduled:
                self._drop_scheduled = True
                loop.call_soon(self._report_drops)
            self._settle()
        _pending.add(self)
        if len(self._queue) >= self._max_batch_size:
            self._kick(False)
        else:
            self._arm()

    # ----- the public API -----------------------------------------------------------------------

    async def flush(self, timeout: float | None = None) -> bool:
        """Sends everything queued so far and waits until it is sent or given up.

        Returns ``False`` if ``timeout`` seconds passed first (the rest stays queued). Never
        raises for delivery failures: they go to ``on_error``.
        """
        if timeout is not None:
            timeout = v.check_number("flush", "timeout", timeout, min0=True)
        loop = self._running_loop()
        assert loop is not None
        through = self._seq
        if self._oldest_pending() > through:
            return True
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append((through, fut))
        self._kick(True)
        done, _ = await asyncio.wait({fut}, timeout=timeout)
        if fut in done:
            return True
        self._waiters = [(t, f) for t, f in self._waiters if f is not fut]
        fut.cancel()
        return False

    async def aclose(self, timeout: float = DEFAULT_CLOSE_TIMEOUT) -> None:
        """Sends what is queued (within ``timeout`` seconds: then what is left is given up and
        reported), stops the timer and refuses new events. Safe to call more than once."""
        timeout = v.check_number("aclose", "timeout", timeout, min0=True)
        self._running_loop()
        if not self._closed:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        end = time.monotonic() + timeout
        self._deadline = end if self._deadline is None else min(self._deadline, end)
        await self.flush(timeout)
        if self._queue or self._inflight:
            self._aborted = True
            for fut in (self._interrupt, self._wake):
                if fut is not None and not fut.done():
                    fut.set_result(None)
            if self._draining is not None:
                await asyncio.wait({self._draining})
            left = len(self._queue)
            self._queue.clear()
            if left:
                self._give_up(left, self._shutdown_error(left))
        elif self._draining is not None:
            await asyncio.wait({self._draining})
        self._settle()
        self._report_drops()
        _pending.discard(self)
        if self._owns_http and self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _at_exit(self) -> None:
        """The interpreter exits without ``aclose()``: send what is left with a blocking
        request (a client on an injected transport cannot, and reports it)."""
        if self._closed:
            return
        self._closed = True
        pending = deque([*self._inflight, *self._queue])
        self._inflight = []
        self._queue = pending
        if not pending:
            return
        if not self._owns_http or self._transport is not None:
            n = len(pending)
            pending.clear()
            self._give_up(
                n,
                SvcError(
                    "shutdown_timeout",
                    f"svc: {n} event(s) not sent: the program ended without "
                    "`await client.aclose()`",
                    count=n,
                ),
            )
            return
        self._force_through = self._seq
        self._deadline = time.monotonic() + DEFAULT_CLOSE_TIMEOUT
        with httpx.Client(timeout=self._timeout) as http:
            while self._due():
                batch = self._take()
                self._deliver_blocking(
                    batch,
                    lambda p: _post_blocking(http, self._endpoint, self._headers, p),
                    time.sleep,
                )
        left = len(self._queue)
        if left:
            self._queue.clear()
            self._give_up(left, self._shutdown_error(left))

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<svc_client.AsyncClient {self._project_id} {self._endpoint} {state}>"


def _consume(task: asyncio.Task[_Outcome]) -> None:
    if not task.cancelled():
        task.exception()


# Clients with events waiting, kept alive until they are sent (or sent at exit).
_pending: set[AsyncClient] = set()


@atexit.register
def _send_pending_at_exit() -> None:
    for client in list(_pending):
        with contextlib.suppress(Exception):  # one client must not stop the others
            client._at_exit()
    _pending.clear()
