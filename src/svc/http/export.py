"""GET /export: a project's raw events for a range as NDJSON, CSV or Parquet.

The answer is streamed: its headers (200) leave before the first piece is read. Two things
can happen after them, and neither may look like a complete file:

- the client goes away: the piece the store is making is stopped (its query killed, see
  :meth:`svc.storage.events.EventStore.stop_read`), no further piece is read, and the
  pieces' generator is closed once the worker thread has left it (closing it while the
  thread runs it was ``ValueError: generator already executing``);
- the store fails: the exception ends the response without its last chunk, so the client
  sees a broken transfer (an incomplete chunked body), never a short file that ends cleanly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Generator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from svc.errors import Forbidden
from svc.http.common import principal_of, runtime_of
from svc.http.metrics import project_for_read, range_of
from svc.queries.export import export_chunks, export_format
from svc.storage.events import Read, ReadCancelled

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

    async def body() -> AsyncIterator[bytes]:
        # No time limit (SVC_QUERY_TIMEOUT_SECONDS bounds reports): an export of any size is
        # read in bounded pieces, and stopped when its client goes away.
        read = Read()
        chunks = export_chunks(store, project.id, rng, fmt, runtime.settings.export_piece_events)
        loop = asyncio.get_running_loop()
        piece: asyncio.Future[bytes | None] | None = None
        sent = 0
        close_now = True
        try:
            while True:
                piece = loop.run_in_executor(None, read.run, next, chunks, None)
                # shielded: a cancellation (the client went away) leaves `piece` to finish
                chunk = await asyncio.shield(piece)
                piece = None
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
            if piece is not None and not piece.done():  # the store is making a piece
                # close the generator once the thread has left it; stop its query meanwhile
                piece.add_done_callback(lambda done: _close(read, chunks, done))
                store.stop_read_soon(read)
                close_now = False
            raise
        finally:
            if close_now:
                chunks.close()  # also: a Parquet export's file is deleted

    filename = f"{project.name}-{rng.first}-{rng.last}.{fmt}"
    return _ExportResponse(
        body(),
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


class _ExportResponse(StreamingResponse):
    """A StreamingResponse that closes its body generator as soon as it ends, however it
    ends (Starlette leaves a generator that a disconnect interrupted between pieces to the
    garbage collector)."""

    body_iterator: AsyncIterator[bytes]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()


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
