"""The double's HTTP interface: the part of ClickHouse's that clickhouse-connect uses.

- ``GET /ping`` and ``GET /`` without a query: ``Ok.``.
- ``GET`` or ``POST /``: the statement is the ``query`` URL parameter followed by the body
  (either may be absent; a GET runs with ``readonly = 2``, as on a server); an ``INSERT ...
  FORMAT <name>`` takes its rows from what follows that line. ``param_<name>`` values are
  bound server-side to ``{name:Type}``; ``database``, ``query_id``, ``default_format``,
  ``session_id`` (with ``session_check``) are understood; ``client_protocol_version``,
  ``wait_end_of_query``, ``buffer_size``, ``session_timeout``, ``quota_key``, ``compress``
  and ``decompress`` are taken and ignored (an answer is always whole before it is sent, and
  ``compress=1``/``decompress=1``, ClickHouse's own block compression, are refused); every
  other parameter is a setting.
- Credentials: HTTP basic, ``X-ClickHouse-User``/``X-ClickHouse-Key``, or ``user``/
  ``password`` parameters; one user, given at start. A wrong one: 403, code 516.
- Compression: a request body in ``Content-Encoding`` gzip, deflate, lz4 (frame) or zstd;
  an answer compressed with the first of those the client accepts when it sets
  ``enable_http_compression=1``, as a server does.
- Answers carry ``X-ClickHouse-Query-Id``, ``X-ClickHouse-Summary``, ``X-ClickHouse-Format``
  (when rows are answered), ``X-ClickHouse-Timezone`` and ``X-ClickHouse-Server-Display-Name``;
  an error carries ``X-ClickHouse-Exception-Code`` and the HTTP status a server gives that
  code (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp of ClickHouse).
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import re
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import lz4.frame
from backports import zstd

from tests.clickhouse_double.engine import (
    AUTHENTICATION_FAILED,
    NOT_IMPLEMENTED,
    UNKNOWN_COMPRESSION_METHOD,
    Engine,
    EngineError,
    Statement,
    refusal,
    split_insert,
)

log = logging.getLogger("clickhouse_double")

#: URL parameters that are the HTTP interface's own, not settings.
_TRANSPORT = {
    "query",
    "database",
    "default_format",
    "query_id",
    "session_id",
    "session_check",
    "session_timeout",
    "user",
    "password",
    "quota_key",
    "buffer_size",
    "wait_end_of_query",
    "client_protocol_version",
    "compress",
    "decompress",
    "role",
}

#: HTTP status of an error code (ClickHouse's exceptionCodeToHTTPStatus, by the codes' names).
_STATUS_BY_NAME: dict[int, tuple[str, ...]] = {
    401: ("REQUIRED_PASSWORD",),
    403: (
        "UNKNOWN_USER",
        "WRONG_PASSWORD",
        "AUTHENTICATION_FAILED",
        "SET_NON_GRANTED_ROLE",
        "ACCESS_DENIED",
    ),
    400: (
        "BAD_ARGUMENTS",
        "CANNOT_COMPILE_REGEXP",
        "CANNOT_PARSE_TEXT",
        "CANNOT_PARSE_ESCAPE_SEQUENCE",
        "CANNOT_PARSE_QUOTED_STRING",
        "CANNOT_PARSE_DATE",
        "CANNOT_PARSE_DATETIME",
        "CANNOT_PARSE_NUMBER",
        "CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING",
        "CANNOT_PARSE_IPV4",
        "CANNOT_PARSE_IPV6",
        "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
        "CANNOT_PARSE_UUID",
        "DUPLICATE_COLUMN",
        "ILLEGAL_COLUMN",
        "UNKNOWN_ELEMENT_IN_AST",
        "UNKNOWN_TYPE_OF_AST_NODE",
        "THERE_IS_NO_COLUMN",
        "TOO_DEEP_AST",
        "TOO_BIG_AST",
        "UNEXPECTED_AST_STRUCTURE",
        "SYNTAX_ERROR",
        "INCORRECT_DATA",
        "TYPE_MISMATCH",
        "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
    ),
    404: (
        "UNKNOWN_TABLE",
        "UNKNOWN_FUNCTION",
        "UNKNOWN_IDENTIFIER",
        "UNKNOWN_TYPE",
        "UNKNOWN_STORAGE",
        "UNKNOWN_DATABASE",
        "UNKNOWN_SETTING",
        "UNKNOWN_DIRECTION_OF_SORTING",
        "UNKNOWN_AGGREGATE_FUNCTION",
        "UNKNOWN_FORMAT",
        "UNKNOWN_DATABASE_ENGINE",
        "UNKNOWN_TYPE_OF_QUERY",
        "UNKNOWN_ROLE",
    ),
    413: ("QUERY_IS_TOO_LARGE",),
    501: ("NOT_IMPLEMENTED",),
    503: ("SOCKET_TIMEOUT", "CANNOT_OPEN_FILE", "CANNOT_SCHEDULE_TASK"),
    411: ("HTTP_LENGTH_REQUIRED",),
    408: ("TIMEOUT_EXCEEDED",),
    415: ("UNSUPPORTED_MEDIA_TYPE",),
}

_CONTENT_TYPES = {
    "TabSeparated": "text/tab-separated-values; charset=UTF-8",
    "TSV": "text/tab-separated-values; charset=UTF-8",
    "TabSeparatedWithNames": "text/tab-separated-values; charset=UTF-8",
    "CSV": "text/csv; charset=UTF-8; header=absent",
    "CSVWithNames": "text/csv; charset=UTF-8; header=present",
    "JSON": "application/json; charset=UTF-8",
    "JSONEachRow": "application/x-ndjson; charset=UTF-8",
}


def _decode_body(data: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "deflate":
        return zlib.decompress(data)
    if encoding == "lz4":
        return bytes(lz4.frame.decompress(data))
    if encoding == "zstd":
        return bytes(zstd.decompress(data))
    raise refusal(
        UNKNOWN_COMPRESSION_METHOD,
        "UNKNOWN_COMPRESSION_METHOD",
        f"the ClickHouse double does not take Content-Encoding {encoding}",
    )


def _encode_answer(data: bytes, accepted: str) -> tuple[bytes, str | None]:
    """``data`` in the first encoding of ``accepted`` (Accept-Encoding) the double writes."""
    for raw in accepted.split(","):
        encoding = raw.split(";")[0].strip().lower()
        if encoding == "gzip":
            return gzip.compress(data, 3), encoding
        if encoding == "deflate":
            return zlib.compress(data, 3), encoding
        if encoding == "lz4":
            return bytes(lz4.frame.compress(data)), encoding
        if encoding == "zstd":
            return bytes(zstd.compress(data)), encoding
    return data, None


class DoubleServer(ThreadingHTTPServer):
    """The HTTP server of one :class:`Engine` (a thread per connection)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # several nodes' pools connecting at once (the default: 5)

    def __init__(self, address: tuple[str, int], engine: Engine, user: str, password: str) -> None:
        super().__init__(address, _Handler)
        self.engine = engine
        self.user = user
        self.password = password
        names = {name: status for status, ns in _STATUS_BY_NAME.items() for name in ns}
        self.status_by_code = {
            code: names[name] for code, name in engine.code_names().items() if name in names
        }

    def status_of(self, code: int) -> int:
        """The HTTP status a server answers an error of ``code`` with."""
        return self.status_by_code.get(code, 500)


def form_fields(body: bytes, content_type: str) -> dict[str, str]:
    """The fields of a ``multipart/form-data`` body (clickhouse-connect sends a long query and
    its parameters so); a file field (external data) is refused."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if found is None:
        raise refusal(NOT_IMPLEMENTED, "NOT_IMPLEMENTED", "a form without a boundary")
    fields = {}
    for part in body.split(b"--" + found.group(1).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, value = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
        disposition = head.decode(errors="replace")
        name = re.search(r'\bname="([^"]*)"', disposition)
        if name is None:
            continue
        if "filename=" in disposition:
            raise refusal(
                NOT_IMPLEMENTED,
                "NOT_IMPLEMENTED",
                "the ClickHouse double does not take external data (files in a form)",
            )
        fields[name.group(1)] = value.removesuffix(b"\r\n").decode()
    return fields


class _BodyCut(Exception):
    """The client sent less of the body than it announced."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once
    server: DoubleServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)

    def do_GET(self) -> None:
        self._handle(readonly=True)

    def do_POST(self) -> None:
        self._handle(readonly=False)

    def _body(self) -> bytes:
        """The request's whole body; raises _BodyCut if the client sent less than it said
        (it went away: a server then runs nothing, and an insert cut short stores nothing)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline()
                if not line.endswith(b"\n"):
                    raise _BodyCut
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (line := self.rfile.readline()) not in (b"\r\n", b"\n"):
                        if not line:
                            raise _BodyCut
                    return b"".join(chunks)
                chunk = self.rfile.read(size)
                if len(chunk) < size or not self.rfile.readline().endswith(b"\n"):
                    raise _BodyCut
                chunks.append(chunk)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            raise _BodyCut
        return body

    def _handle(self, readonly: bool) -> None:
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        query_id = params.get("query_id") or str(uuid.uuid4())
        try:
            raw = self._body()
        except (_BodyCut, ValueError):
            self.close_connection = True  # nothing runs, nothing is answered
            return
        try:
            body = _decode_body(raw, self.headers.get("Content-Encoding", ""))
            content_type = self.headers.get("Content-Type", "")
            if content_type.startswith("multipart/form-data"):
                params.update(form_fields(body, content_type))
                body = b""
            if url.path.rstrip("/") == "/ping" or (
                url.path == "/" and not params.get("query") and not body
            ):
                self._send(200, b"Ok.\n", {"Content-Type": "text/html; charset=UTF-8"})
                return
            if url.path != "/":
                self._send(404, b"There is no handle " + url.path.encode() + b"\n", {})
                return
            self._authenticate(params)
            statement = self._statement(params, body, readonly, query_id)
            outcome = self.server.engine.run(
                statement,
                session_id=params.get("session_id", ""),
                session_check=params.get("session_check") == "1",
            )
        except EngineError as exc:
            self._error(exc, query_id)
            return
        headers = {
            "X-ClickHouse-Query-Id": query_id,
            "X-ClickHouse-Summary": json.dumps(outcome.summary, separators=(",", ":")),
        }
        answer = outcome.body
        if outcome.fmt is not None:
            headers["X-ClickHouse-Format"] = outcome.fmt
            headers["Content-Type"] = _CONTENT_TYPES.get(outcome.fmt, "application/octet-stream")
        else:
            headers["Content-Type"] = "text/plain; charset=UTF-8"
        if params.get("enable_http_compression") == "1" and answer:
            answer, encoding = _encode_answer(answer, self.headers.get("Accept-Encoding", ""))
            if encoding:
                headers["Content-Encoding"] = encoding
        self._send(200, answer, headers)

    def _authenticate(self, params: dict[str, str]) -> None:
        user = self.headers.get("X-ClickHouse-User") or params.get("user")
        password = self.headers.get("X-ClickHouse-Key") or params.get("password") or ""
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
        elif auth:
            user = "(a token)"
        user = user or "default"
        if user != self.server.user or password != self.server.password:
            raise refusal(
                AUTHENTICATION_FAILED,
                "AUTHENTICATION_FAILED",
                f"{user}: Authentication failed: password is incorrect, or there is no user "
                "with such name",
            )

    def _statement(
        self, params: dict[str, str], body: bytes, readonly: bool, query_id: str
    ) -> Statement:
        for flag in ("compress", "decompress"):
            if params.get(flag) == "1":
                raise refusal(
                    NOT_IMPLEMENTED,
                    "NOT_IMPLEMENTED",
                    f"the ClickHouse double does not take {flag}=1 (ClickHouse's own "
                    "block compression): use Content-Encoding",
                )
        query = params.get("query", "")
        text = (query.encode() + (b"\n" if query and body else b"")) + body
        st = Statement(
            sql="",
            params={k[6:]: v for k, v in params.items() if k.startswith("param_")},
            settings={
                k: v
                for k, v in params.items()
                if k not in _TRANSPORT and not k.startswith("param_")
            },
            database=params.get("database") or None,
            query_id=query_id,
            default_format=params.get("default_format") or "TabSeparated",
            readonly=readonly,
        )
        insert = split_insert(text)
        if insert is not None:
            st.sql, st.data, st.data_format = insert
        else:
            st.sql = text.decode()
        return st

    def _error(self, exc: EngineError, query_id: str) -> None:
        text = exc.message
        if "(version " not in text:
            text = f"{text} (version {self.server.engine.version} (the ClickHouse double))"
        self._send(
            self.server.status_of(exc.code),
            (text + "\n").encode(),
            {
                "Content-Type": "text/plain; charset=UTF-8",
                "X-ClickHouse-Exception-Code": str(exc.code),
                "X-ClickHouse-Query-Id": query_id,
            },
        )

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("X-ClickHouse-Server-Display-Name", "clickhouse-double")
        self.send_header("X-ClickHouse-Timezone", self.server.engine.timezone)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
