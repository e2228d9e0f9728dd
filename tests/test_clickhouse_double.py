"""The ClickHouse double (tests/clickhouse_double) answers clickhouse-connect as a server does:
bound parameters, settings, inserts and their deduplication tokens, the formats svc reads
and writes, compression, errors with their codes and statuses, sessions, credentials, and
``KILL QUERY`` by ``query_id``; and it refuses a statement ClickHouse's parser does not take."""

from __future__ import annotations

import base64
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import clickhouse_connect
import httpx
import pytest
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import DatabaseError

from tests.clickhouse_double import RunningDouble, clickhouse_double  # noqa: F401
from tests.clickhouse_double.parser import DEFAULT_DIR
from tests.clickhouse_double.process import PASSWORD, USER


@pytest.fixture(scope="module")
def client(clickhouse_double: RunningDouble) -> Iterator[Client]:  # noqa: F811
    c = clickhouse_connect.get_client(dsn=clickhouse_double.url, autogenerate_session_id=False)
    c.command(
        "CREATE TABLE IF NOT EXISTS t (a String, b UInt32, ts DateTime64(3, 'UTC')) "
        "ENGINE = MergeTree ORDER BY a SETTINGS non_replicated_deduplication_window = 100"
    )
    yield c
    c.close()


def test_queries_bind_parameters_and_settings(client: Client) -> None:
    when = datetime(2026, 11, 2, 3, 4, 5, 678000, tzinfo=UTC)
    rows = client.query(
        "SELECT currentDatabase(), {s:String}, {d:DateTime64(3, 'UTC')}, {xs:Array(UInt8)}, "
        "getSetting('max_threads')",
        parameters={"s": "it's\ta\\test", "d": when, "xs": [1, 2]},
        settings={"max_threads": 1},
    ).result_rows
    assert rows == [("svc", "it's\ta\\test", when.replace(tzinfo=None), [1, 2], 1)]
    assert client.server_version == client.command("SELECT version()")


def test_inserts_and_their_deduplication_tokens(client: Client) -> None:
    block = b'{"a":"x","b":1,"ts":"2026-11-02 00:00:00"}\n{"a":"y","b":2,"ts":"2026-11-02"}\n'
    for _ in range(2):  # the replay is dropped
        client.raw_insert(
            "t",
            ["a", "b", "ts"],
            insert_block=block,
            fmt="JSONEachRow",
            settings={"insert_deduplication_token": "token-1", "insert_deduplicate": 1},
        )
    summary = client.insert("t", [["z", 3, datetime(2026, 11, 3, tzinfo=UTC)]], ["a", "b", "ts"])
    assert summary.written_rows == 1
    assert client.query("SELECT a, b FROM t ORDER BY a").result_rows == [
        ("x", 1),
        ("y", 2),
        ("z", 3),
    ]


def test_the_formats_svc_reads(client: Client) -> None:
    assert client.raw_query("SELECT a, b FROM t ORDER BY a", fmt="CSV") == (
        b'"x",1\n"y",2\n"z",3\n'
    )
    ndjson = client.raw_query("SELECT a FROM t ORDER BY a LIMIT 1", fmt="JSONEachRow")
    assert ndjson == b'{"a":"x"}\n'
    parquet = b"".join(client.raw_stream("SELECT * FROM t", fmt="Parquet"))
    assert parquet[:4] == b"PAR1" and parquet[-4:] == b"PAR1"


def test_an_insert_whose_body_is_cut_stores_nothing(
    clickhouse_double: RunningDouble,  # noqa: F811
    client: Client,
) -> None:
    """A client killed while it sent an insert: a server runs nothing of it, so that the
    retry under the same deduplication token is not taken for a replay."""
    rows = b'{"a":"cut-1","b":1,"ts":"2026-11-05"}\n{"a":"cut-2","b":2,"ts":"2026-11-05"}\n'
    path = "/?database=svc&insert_deduplication_token=cut&query=" + quote(
        "INSERT INTO t (a, b, ts) FORMAT JSONEachRow"
    )
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\n"
        f"Content-Length: {len(rows)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", clickhouse_double.port)) as sock:
        # the first row whole: what was sent parses, yet it is not what was announced
        sock.sendall(head.encode() + rows[: rows.index(b"\n") + 1])
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(1024) == b""  # no answer: the connection is closed
    count = "SELECT count() FROM t WHERE a LIKE 'cut-%'"
    assert client.command(count) == 0
    client.raw_insert(
        "t",
        ["a", "b", "ts"],
        insert_block=rows,
        fmt="JSONEachRow",
        settings={"insert_deduplication_token": "cut"},
    )
    assert client.command(count) == 2


def test_compressed_answers_and_bodies(clickhouse_double: RunningDouble) -> None:  # noqa: F811
    for method in ("lz4", "zstd"):
        c = clickhouse_connect.get_client(
            dsn=clickhouse_double.url, compress=method, autogenerate_session_id=False
        )
        try:
            c.insert("t", [[f"c-{method}", 9, datetime(2026, 11, 4, tzinfo=UTC)]], ["a", "b", "ts"])
            rows = c.query("SELECT b FROM t WHERE a = {a:String}", parameters={"a": f"c-{method}"})
            assert rows.result_rows == [(9,)]
        finally:
            c.close()
    r = httpx.post(
        clickhouse_double.base_url,
        params={"query": "SELECT 42", "enable_http_compression": "1"},
        headers={"Accept-Encoding": "gzip"},
        auth=(USER, PASSWORD),
    )
    assert r.headers["content-encoding"] == "gzip" and r.text == "42\n"  # httpx decodes it


def test_errors_carry_the_code_and_the_status_of_a_server(
    clickhouse_double: RunningDouble,  # noqa: F811
    client: Client,
) -> None:
    cases: list[tuple[str, dict[str, Any], int, int]] = [
        ("SELECT * FROM missing", {}, 60, 404),
        ("SELECT count() FROM numbers(1e11)", {"max_execution_time": "0.2"}, 159, 408),
        ("SELECT throwIf(1)", {}, 395, 500),
    ]
    for sql, settings, code, status in cases:
        r = httpx.post(
            clickhouse_double.base_url, params=settings, content=sql, auth=(USER, PASSWORD)
        )
        assert (r.status_code, r.headers["x-clickhouse-exception-code"]) == (status, str(code))
        assert r.text.startswith(f"Code: {code}. DB::Exception:"), r.text
        with pytest.raises(DatabaseError) as raised:
            client.query(sql, settings=settings)
        assert raised.value.code == code
    wrong = httpx.post(clickhouse_double.base_url, content="SELECT 1", auth=(USER, "wrong"))
    assert (wrong.status_code, wrong.headers["x-clickhouse-exception-code"]) == (403, "516")
    by_headers = httpx.post(
        clickhouse_double.base_url,
        content="SELECT 1",
        headers={"X-ClickHouse-User": USER, "X-ClickHouse-Key": PASSWORD},
    )
    assert by_headers.text == "1\n"
    ro = httpx.get(
        clickhouse_double.base_url,
        params={"query": "DROP TABLE t", "database": "svc"},
        auth=(USER, PASSWORD),
    )
    assert ro.headers["x-clickhouse-exception-code"] == "164"  # READONLY: a GET reads only


def test_a_statement_the_parser_refuses_is_refused_and_every_one_is_recorded(
    clickhouse_double: RunningDouble,  # noqa: F811
    client: Client,
) -> None:
    with pytest.raises(DatabaseError) as raised:
        client.command("SELEC 1")
    assert raised.value.code == 62 and "does not parse" in str(raised.value)
    seen = clickhouse_double.statements()
    assert ("SELEC 1", False) in [(s["sql"], s["parses"]) for s in seen]
    # ClickHouse 26.3's own parser where make test-deps installed it: it refuses NATURAL
    # JOIN, which the engine's parser (26.9) takes
    if (DEFAULT_DIR / "chdb").exists():
        assert {s["parser"] for s in seen} == {"26.3.9.1"}, {s["parser"] for s in seen}
        newer = "SELECT * FROM t NATURAL JOIN t AS u"
        assert client.command("SELECT formatQuery({q:String})", parameters={"q": newer})
        with pytest.raises(DatabaseError) as raised:
            client.query(newer)
        assert raised.value.code == 62 and "26.3.9.1" in str(raised.value)
    assert any(s["sql"].startswith("INSERT INTO t") and s["parses"] for s in seen)


def test_kill_query_by_query_id_stops_a_running_query(
    clickhouse_double: RunningDouble,  # noqa: F811
    client: Client,
) -> None:
    query_id = uuid.uuid4().hex
    answer: dict[str, Any] = {}

    def slow() -> None:
        answer["r"] = httpx.post(
            clickhouse_double.base_url,
            params={"query_id": query_id, "max_block_size": "1"},
            content="SELECT sleepEachRow(0.1) FROM numbers(300)",
            auth=(USER, PASSWORD),
            timeout=60,
        )

    thread = threading.Thread(target=slow)
    thread.start()
    deadline = time.monotonic() + 20
    killed: Any = ""
    while not killed and time.monotonic() < deadline:
        killed = client.command(f"KILL QUERY WHERE query_id = '{query_id}' SYNC")
        time.sleep(0.05)
    thread.join(30)
    r = answer["r"]
    assert killed and r.headers["x-clickhouse-exception-code"] == "394", r.text  # cancelled
    assert r.headers["x-clickhouse-query-id"] == query_id


def test_sessions_keep_their_state_and_run_one_request_at_a_time(
    clickhouse_double: RunningDouble,  # noqa: F811
) -> None:
    c = clickhouse_connect.get_client(dsn=clickhouse_double.url, session_id="s-1")
    try:
        c.command("CREATE TEMPORARY TABLE tmp (x UInt8)")
        c.command("INSERT INTO tmp VALUES (7)")
        assert c.query("SELECT x FROM tmp").result_rows == [(7,)]
    finally:
        c.close()
    r = httpx.post(
        clickhouse_double.base_url,
        params={"session_id": "none-such", "session_check": "1"},
        content="SELECT 1",
        auth=(USER, PASSWORD),
    )
    assert r.headers["x-clickhouse-exception-code"] == "372"
