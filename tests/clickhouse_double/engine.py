"""The double's engine: one chDB engine, a handle of its own for each request.

Every request runs on a new chDB connection to the same engine (chDB opens one in well under
a millisecond once the engine is up), so requests run side by side and settings set for one
never reach another, as each HTTP query of a ClickHouse server has a context of its own. A
session (``session_id``) keeps its handle between requests instead.

Before it runs, each statement is parsed by ClickHouse's own parser of the oldest server
version (:data:`OLDEST_SERVER`: ``formatQuery`` in ClickHouse 26.3's engine, see
tests/clickhouse_double/parser.py; where that is not installed, the engine's own parser under
``compatibility`` = that version), and recorded in ``<data dir>/statements.log`` (one JSON
line each, naming the parser); one that does not parse is refused as a server refuses it
(code 62, ``SYNTAX_ERROR``), whatever the engine would have done with it. Every statement
then runs with ``compatibility`` = that version.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chdb

from tests.clickhouse_double.parser import OldestParser

#: The oldest ClickHouse server version svc supports (docs/operations.md, "A ClickHouse
#: server"): the oldest LTS release still supported when this was written (26.3; 25.8's
#: year of support ended in August 2026). Every statement runs with ``compatibility`` set
#: to it, so the defaults of settings are that version's.
OLDEST_SERVER = "26.3"

#: Error codes the double raises itself (the names are ClickHouse's).
SYNTAX_ERROR = 62
UNKNOWN_DATABASE = 81
NOT_IMPLEMENTED = 48
SESSION_NOT_FOUND = 372
SESSION_IS_LOCKED = 373
QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING = 216
AUTHENTICATION_FAILED = 516
UNKNOWN_COMPRESSION_METHOD = 432

#: The setting that carries a request's ``query_id`` into ``system.processes`` (chDB gives
#: each query an id of its own and takes none from its caller): ``KILL QUERY WHERE query_id
#: = ...`` is rewritten to look it up there. A request that sets it itself is refused.
QUERY_ID_SETTING = "query_cache_tag"

_CODE = re.compile(r"Code: (\d+)\.")
_SETTING_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_TRAILING_FORMAT = re.compile(r"\bFORMAT\s+(\w+)\s*;?\s*$", re.IGNORECASE)
#: An INSERT whose data follows its text (``... FORMAT <name>`` then the rows).
_INSERT_WITH_DATA = re.compile(
    rb"\A\s*INSERT\s+INTO\s+.*?\bFORMAT\s+(\w+)[ \t]*(?:\r?\n|\Z)", re.IGNORECASE | re.DOTALL
)
#: Statements that answer with rows (a server then names their format in X-ClickHouse-Format).
_RESULT_SQL = re.compile(
    r"\s*\(*\s*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXPLAIN|EXISTS|CHECK|KILL)\b", re.IGNORECASE
)
_KILL_QUERY = re.compile(r"\s*KILL\s+QUERY\b", re.IGNORECASE)
_STRING_OR_QUERY_ID = re.compile(r"'(?:[^'\\]|\\.)*'|\bquery_id\b")


class EngineError(Exception):
    """A ClickHouse exception: its code and text (``Code: N. DB::Exception: ...``)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def engine_error(exc: Exception) -> EngineError:
    """chDB's exception as the :class:`EngineError` a server would have answered."""
    text = str(exc)
    found = _CODE.search(text)
    if found is None:
        return EngineError(1001, f"Code: 1001. DB::Exception: {text}. (STD_EXCEPTION)")
    return EngineError(int(found.group(1)), text[found.start() :].strip())


def refusal(code: int, name: str, message: str) -> EngineError:
    return EngineError(code, f"Code: {code}. DB::Exception: {message}. ({name})")


@dataclass
class Statement:
    """One request's statement, as the HTTP interface received it."""

    sql: str  # the text (for an INSERT with data: up to and including ``FORMAT <name>``)
    params: dict[str, str] = field(default_factory=dict)  # ``param_<name>`` without the prefix
    settings: dict[str, str] = field(default_factory=dict)
    database: str | None = None
    query_id: str = ""
    default_format: str = "TabSeparated"
    readonly: bool = False  # a GET request: readonly = 2, as a server runs one
    data: bytes | None = None  # an INSERT's rows
    data_format: str | None = None
    parses: bool | None = None  # whether ClickHouse's parser took it (None: not asked yet)


@dataclass
class Outcome:
    """What a statement answered: its rows in ``fmt`` (None: it answers no rows), and the
    figures of X-ClickHouse-Summary."""

    body: bytes
    fmt: str | None
    summary: dict[str, str]


def split_insert(text: bytes) -> tuple[str, bytes, str] | None:
    """(statement, data, format) of an INSERT followed by its data, else None."""
    found = _INSERT_WITH_DATA.match(text[:65536])
    if found is None:
        return None
    return text[: found.end()].decode().rstrip(), text[found.end() :], found.group(1).decode()


def result_format(sql: str, default: str) -> str | None:
    """The format a statement answers in, None if it answers no rows."""
    found = _TRAILING_FORMAT.search(sql)
    if found is not None and not sql.lstrip().upper().startswith("INSERT"):
        return found.group(1)
    return default if _RESULT_SQL.match(sql) else None


def rewrite_kill(sql: str) -> str:
    """``KILL QUERY WHERE ... query_id ...`` with each ``query_id`` outside string literals
    looked up in the setting that carries it (see :data:`QUERY_ID_SETTING`)."""
    if not _KILL_QUERY.match(sql):
        return sql
    return _STRING_OR_QUERY_ID.sub(
        lambda m: m.group(0) if m.group(0).startswith("'") else f"Settings['{QUERY_ID_SETTING}']",
        sql,
    )


def sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Engine:
    """The chDB engine of one data directory and the requests running on it."""

    def __init__(
        self,
        data_dir: Path,
        compatibility: str = OLDEST_SERVER,
        parser: OldestParser | None = None,
    ) -> None:
        #: ClickHouse's parser of the oldest version (tests/clickhouse_double/parser.py);
        #: None: the engine's own parser under ``compatibility``
        self.parser = parser
        self.path = str((data_dir / "engine").resolve())
        Path(self.path).mkdir(parents=True, exist_ok=True)
        self.compatibility = compatibility
        self._main = chdb.connect(self.path)  # keeps the engine open between requests
        self._log = (data_dir / "statements.log").open("a", buffering=1)
        self._log_lock = threading.Lock()
        self._parsed: set[str] = set()  # the texts that parsed (parsed once each)
        self._running: dict[str, str] = {}  # query_id -> its SQL
        self._running_lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._sessions_lock = threading.Lock()
        row = self._main.query("SELECT version(), timezone()", "TabSeparated").bytes()
        self.version, self.timezone = row.decode().rstrip("\n").split("\t")
        #: Whose parser checks the statements (in statements.log with each)
        self.parser_version = parser.version if parser else f"{self.version} as {compatibility}"

    def code_names(self) -> dict[int, str]:
        """Every error code the engine knows, by number: its name."""
        rows = self._main.query(
            "SELECT number, errorCodeToName(number) FROM numbers(2000) "
            "WHERE notEmpty(errorCodeToName(number))",
            "TabSeparated",
        ).bytes()
        pairs = (line.split("\t") for line in rows.decode().splitlines())
        return {int(code): name for code, name in pairs}

    def create_database(self, name: str) -> None:
        self._main.query(f"CREATE DATABASE IF NOT EXISTS `{name}`", "TabSeparated")

    def close(self) -> None:
        with self._sessions_lock:
            for session in self._sessions.values():
                session.conn.close()
            self._sessions.clear()
        self._main.close()
        self._log.close()
        if self.parser is not None:
            self.parser.close()

    # requests ---------------------------------------------------------------------------

    def run(self, st: Statement, session_id: str = "", session_check: bool = False) -> Outcome:
        """Run one request's statement; raises EngineError as a server would answer it."""
        if QUERY_ID_SETTING in st.settings:
            raise refusal(
                NOT_IMPLEMENTED,
                "NOT_IMPLEMENTED",
                f"the ClickHouse double keeps the setting {QUERY_ID_SETTING} for query ids",
            )
        with self._running_lock:
            if st.query_id in self._running:
                raise refusal(
                    QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING,
                    "QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING",
                    f"Query with id = {st.query_id} is already running",
                )
            self._running[st.query_id] = st.sql
        started = time.monotonic()
        try:
            if session_id:
                session = self._session(session_id, session_check)
                with session.take():
                    return self._run_on(session.conn, st, restore=True)
            conn = chdb.connect(self.path)
            try:
                return self._run_on(conn, st, restore=False)
            finally:
                conn.close()
        finally:
            with self._running_lock:
                self._running.pop(st.query_id, None)
            record = {
                "sql": st.sql,
                "parses": st.parses,
                "parser": self.parser_version,
                "ms": round((time.monotonic() - started) * 1000, 1),
            }
            with self._log_lock:
                self._log.write(json.dumps(record) + "\n")

    def _run_on(self, conn: Any, st: Statement, restore: bool) -> Outcome:
        self._check_parses(conn, st)
        for name in st.settings:
            if not _SETTING_NAME.match(name):
                raise refusal(115, "UNKNOWN_SETTING", f"Unknown setting '{name}'")
        settings = {"compatibility": self.compatibility, **st.settings}
        if st.readonly:
            settings["readonly"] = "2"
        settings[QUERY_ID_SETTING] = st.query_id
        before = self._snapshot(conn, settings) if restore else {}
        try:
            # one statement (SET a = 1, b = 2): the engine applies them in order
            self._query(
                conn, "SET " + ", ".join(f"{n} = {sql_string(v)}" for n, v in settings.items())
            )
            if st.database:
                self._query(conn, f"USE `{st.database}`")
            return self._execute(conn, st)
        finally:
            for name, (value, changed) in before.items():
                value_sql = sql_string(value) if changed else "DEFAULT"
                with contextlib.suppress(EngineError):
                    self._query(conn, f"SET {name} = {value_sql}")

    def _execute(self, conn: Any, st: Statement) -> Outcome:
        started = time.perf_counter_ns()
        if st.data is not None:
            with tempfile.NamedTemporaryFile(suffix=".rows", delete=False) as tmp:
                tmp.write(st.data)
            try:
                head = re.sub(r"\bFORMAT\s+\w+\s*$", "", st.sql, flags=re.IGNORECASE).rstrip()
                sql = f"{head} FROM INFILE {sql_string(tmp.name)} FORMAT {st.data_format}"
                result = self._query(conn, sql, params=st.params)
            finally:
                os.unlink(tmp.name)
            written = result.rows_written() or result.rows_read()
            return Outcome(b"", None, self._summary(result, started, written=written))
        fmt = result_format(st.sql, st.default_format)
        result = self._query(conn, rewrite_kill(st.sql), fmt or "TabSeparated", st.params)
        body = result.bytes() or b""
        return Outcome(body if fmt else b"", fmt, self._summary(result, started))

    @staticmethod
    def _summary(result: Any, started: int, written: int | None = None) -> dict[str, str]:
        return {
            "read_rows": str(result.rows_read()),
            "read_bytes": str(result.bytes_read()),
            "written_rows": str(result.rows_written() if written is None else written),
            "written_bytes": str(result.bytes_written()),
            "total_rows_to_read": "0",
            "result_rows": "0",
            "result_bytes": "0",
            "elapsed_ns": str(time.perf_counter_ns() - started),
        }

    @staticmethod
    def _query(conn: Any, sql: str, fmt: str = "TabSeparated", params: Any = None) -> Any:
        try:
            return conn.query(sql, fmt, params=params or None)
        except Exception as exc:
            raise engine_error(exc) from None

    def _check_parses(self, conn: Any, st: Statement) -> None:
        """Refuse the statement unless ClickHouse's parser of the oldest version takes it
        (:attr:`parser`, else the engine's under the compatibility setting)."""
        error = ""
        if st.sql in self._parsed:
            st.parses = True
            return
        if self.parser is not None:
            error = self.parser.error(st.sql)
        else:
            try:
                self._query(
                    conn,
                    f"SELECT formatQuery({sql_string(st.sql)}) "
                    f"SETTINGS compatibility = {sql_string(self.compatibility)}",
                )
            except EngineError as exc:
                error = exc.message
        st.parses = not error
        if not error:
            with self._log_lock:
                if len(self._parsed) > 10_000:
                    self._parsed.clear()
                self._parsed.add(st.sql)
        if error:
            raise refusal(
                SYNTAX_ERROR,
                "SYNTAX_ERROR",
                f"the ClickHouse double: the statement does not parse with ClickHouse's "
                f"parser ({self.parser_version}): {error}",
            )

    def _snapshot(self, conn: Any, settings: dict[str, str]) -> dict[str, tuple[str, bool]]:
        names = ", ".join(sql_string(name) for name in settings)
        rows = self._query(
            conn,
            f"SELECT name, value, changed FROM system.settings WHERE name IN ({names})",
            "JSONEachRow",
        ).bytes()
        found = {}
        for line in rows.splitlines():
            row = json.loads(line)
            found[row["name"]] = (row["value"], bool(row["changed"]))
        return {name: found.get(name, ("", False)) for name in settings}

    # sessions ---------------------------------------------------------------------------

    def _session(self, session_id: str, check: bool) -> _Session:
        with self._sessions_lock:
            session = self._sessions.get(session_id)
            if session is None:
                if check:
                    raise refusal(
                        SESSION_NOT_FOUND,
                        "SESSION_NOT_FOUND",
                        f"Session {session_id} not found",
                    )
                session = self._sessions[session_id] = _Session(chdb.connect(self.path))
            return session


class _Session:
    """A session's handle: one request at a time, as a server allows."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def take(self) -> _Held:
        if not self._lock.acquire(blocking=False):
            raise refusal(
                SESSION_IS_LOCKED,
                "SESSION_IS_LOCKED",
                "Session is locked by a concurrent client",
            )
        return _Held(self._lock)


class _Held:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
