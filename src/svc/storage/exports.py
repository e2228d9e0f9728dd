"""The store's export reads: a result in a ClickHouse output format, streamed or whole, and
statements that write a file (``INTO OUTFILE``). Under a :class:`svc.storage.reads.Read`
they are tagged and bounded in time (not in memory) like a report's queries, and run on the
read's handle when it was lent one (GET /export is admitted as a read of its project: a
slot and a read handle); otherwise (``svcm export``) on the store's export handle
(:attr:`svc.storage.handles.Handles.export_client`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from clickhouse_connect.driver.client import Client

from svc.storage.handles import Handles
from svc.storage.reads import Reads, current_read, read_errors


class Exports:
    """Export queries on the current read's handle (else the export handle), under the
    current read's bounds."""

    def __init__(self, handles: Handles, reads: Reads) -> None:
        self.handles = handles
        self.reads = reads

    @property
    def streams_results(self) -> bool:
        """Whether :meth:`stream_raw` streams (a ClickHouse server) or answers in one piece
        (chDB: a streamed result would hold its connection, and every other query and insert,
        until the reader has taken it all)."""
        return bool(self.handles.settings.clickhouse_url)

    def stream_raw(self, sql: str, parameters: dict[str, Any], fmt: str) -> Iterator[bytes]:
        """The result of an export query in a ClickHouse output format, in chunks."""
        if self.streams_results:
            sql, settings = self.reads.under_read(sql, {})
            with read_errors():
                yield from self._client().raw_stream(
                    sql, parameters=parameters, settings=settings, fmt=fmt
                )
        else:
            yield self.raw_query(sql, parameters, fmt)

    def export_command(self, sql: str, parameters: dict[str, Any]) -> None:
        """Run an export statement that returns nothing (``INTO OUTFILE``)."""
        sql, settings = self.reads.under_read(sql, {})
        with read_errors():
            self._client().command(sql, parameters=parameters, settings=settings)

    def raw_query(self, sql: str, parameters: dict[str, Any], fmt: str) -> bytes:
        """The whole result of an export query in a ClickHouse output format."""
        sql, settings = self.reads.under_read(sql, {})
        with read_errors():
            return self._client().raw_query(sql, parameters=parameters, settings=settings, fmt=fmt)

    def _client(self) -> Client:
        """The handle lent to the current read, else the store's export handle."""
        read = current_read()
        if read is not None and read.handle is not None:
            return read.handle
        return self.handles.export_client
