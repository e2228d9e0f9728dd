"""GET /export: a project's raw events for a range as NDJSON, CSV or Parquet.

The answer is streamed: its headers (200) leave before the first piece is read. Two things
can happen after them, and neither may look like a complete file:

- the client goes away: the piece the store is making is stopped (its query killed, see
  :meth:`svc.storage.events.EventStore.stop_read`), no further piece is read, and the
  pieces' generator is closed once the worker thread has left it (closing it while the
  thread runs it was ``ValueError: generator already executing``);
- the store fails: the exception ends the response without its last chunk, so the client
  sees a broken transfer (an incomplete chunked body), never a short file that ends cleanly.

An export is admitted like a read of GET /metrics* (:mod:`svc.reads.scheduler`): it takes a
slot of its project's share and one of the store's read handles before its headers leave,
waiting its turn, or is answered 503 ``busy`` when it cannot start in time. It has no time
limit (it streams), and holds its slot until its stream is over: its last piece sent, the
store failed, or its client gone and the piece being read then stopped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass
from typing import Any

from clickhouse_connect.driver.client import Client
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from svc.errors import Forbidden
from svc.http.common import principal_of, runtime_of
from svc.http.metrics import admit_with_handle, lane_of, project_for_read, range_of
from svc.queries.export import export_chunks, export_format
from svc.reads.scheduler import Ticket, tenant_of
from svc.storage.events import Read, ReadCancelled
from svc.storage.read_handles import ReadHandles

log = logging.getLogger(__name__)


async def get_export(request: Request) -> Response:
    runtime = runtime_of(request)
    principal = await principal_of(request)
    if principal.kind == "share":
        raise Forbidden("a share token reads metrics only; raw events need a secret key")
    project = await project_for_read(request, principal)
    params = request.query_params
    fmt = params.get("format", "ndjson")
    media_type = export_format(fmt)[1]
    rng = range_of(request, project)

    store = runtime.store
    # the export's turn among its project's reads (Busy when it cannot start in time)
    slot = await _Slot.take(request, tenant_of(project.id, principal.kind, principal.key_id))
    threads = runtime.read_threads

    async def body() -> AsyncIterator[bytes]:
        # No time limit (SVC_QUERY_TIMEOUT_SECONDS bounds reports): an export of any size is
        # read in bounded pieces, and stopped when its client goes away.
        priority, nice = lane_of(request, light=False)
        read = Read(handle=slot.handle, priority=priority, nice=nice)
        chunks = export_chunks(store, project.id, rng, fmt, runtime.settings.export_piece_events)
        loop = asyncio.get_running_loop()
        sent = 0
        close_now = True
        try:
            while True:
                piece = slot.piece = loop.run_in_executor(threads, read.run, next, chunks, None)
                # shielded: a cancellation (the client went away) leaves `piece` to finish
                chunk = await asyncio.shield(piece)
                slot.piece = None
                if chunk is None:
                    return
                yield chunk
                sent += len(chunk)
        except (asyncio.CancelledError, GeneratorExit):
            log.info(
                "export %s of %s stopped after %d bytes: the client went away",
                read.id,
                project.id,
                sent,
            )
            pending = slot.piece
            if pending is not None and not pending.done():  # the store is making a piece
                # close the generator once the thread has left it; stop its query meanwhile
                pending.add_done_callback(lambda done: _close(read, chunks, done))
                store.stop_read_soon(read)
                slot.failed = True  # its handle may hold the rest of the stopped query
                close_now = False
            raise
        except BaseException:
            slot.failed = True  # the store failed: what the handle holds is not to be trusted
            raise
        finally:
            if close_now:
                chunks.close()  # also: a Parquet export's file is deleted
            slot.end()

    filename = f"{project.name}-{rng.first}-{rng.last}.{fmt}"
    return _ExportResponse(
        body(),
        slot,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@dataclass(eq=False)
class _Slot:
    """An export's admission: its slot (:class:`Ticket`) and the read handle lent to it,
    given back by :meth:`end` once no piece of it is being read."""

    ticket: Ticket
    handles: ReadHandles
    handle: Client
    #: the piece being read now, in a worker thread
    piece: asyncio.Future[bytes | None] | None = None
    #: a piece failed or was stopped: the handle is closed, not given back
    failed: bool = False
    ended: bool = False

    @classmethod
    async def take(cls, request: Request, tenant: str) -> _Slot:
        """A slot of ``tenant``'s share and a read handle (:class:`svc.errors.Busy` when the
        scheduler cannot admit it in time)."""
        return cls(*await admit_with_handle(request, tenant))

    def end(self) -> None:
        """Give the handle and the slot back: at once, or once the piece being read has ended
        (a stopped query holds its handle until the store has stopped it). Idempotent."""
        if self.ended:
            return
        self.ended = True
        piece = self.piece
        if piece is not None and not piece.done():
            piece.add_done_callback(lambda _: self._give_back())
        else:
            self._give_back()

    def _give_back(self) -> None:
        if self.failed:
            self.handles.discard(self.handle)
        else:
            self.handles.give_back(self.handle)
        self.ticket.release()


class _ExportResponse(StreamingResponse):
    """A StreamingResponse that closes its body generator as soon as it ends, however it
    ends (Starlette leaves a generator that a disconnect interrupted between pieces to the
    garbage collector), and gives its export's slot back."""

    body_iterator: AsyncIterator[bytes]

    def __init__(self, content: AsyncIterator[bytes], slot: _Slot, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                aclose = getattr(self.body_iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
            finally:
                self.slot.end()  # a body never started gives its slot back here


def _close(
    read: Read, chunks: Generator[bytes, None, None], done: asyncio.Future[bytes | None]
) -> None:
    error = None if done.cancelled() else done.exception()
    stopped = isinstance(error, ReadCancelled)
    log.info("export %s: its last piece %s", read.id, "was stopped" if stopped else "ran")
    try:
        chunks.close()
    except Exception:  # closing an export nobody reads: log, never raise on the loop
        log.exception("closing a stopped export failed")
