"""svc's own exports (NDJSON, CSV and Parquet, the columns of GET /export), and NDJSON of
events as POST /analytics takes them (``event``, ``url``, ``ts`` in ms or ISO 8601, ...), one a
line.

A row of an svc export keeps every column as it was stored (:attr:`Row.stored`): importing it
on a data directory is lossless. Its ``eventId`` is its own, or a hash of what identifies it,
the same in the NDJSON and the CSV form. A CSV export holds ``properties`` as JSON text (or,
made before that, as ClickHouse's text of a map: ``{'k':'v'}``); both are read. Its text
cells are neutralised for spreadsheets (a single quote before a value that begins with
``=``, ``+``, ``-``, ``@``, a tab, a carriage return or a quote: :mod:`svc.csv_cells`);
:func:`unneutralised` takes that quote off again, so the CSV form imports the same values.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from svc.csv_cells import unneutralised as original_text
from svc.imports.rows import (
    ImportFailed,
    Item,
    Occurrences,
    Refusal,
    Row,
    Source,
    as_int,
    parse_time,
    reason_of,
    text_lines,
)
from svc.queries.sql import CSV_TEXT_COLUMNS
from svc.schema.measurements import KINDS

#: The columns an svc export has and a wire-format event has not.
SVC_COLUMNS = frozenset(("ts_ms", "event", "url"))


def _svc_row(where: str, obj: dict[str, Any], raw_identity: str) -> Row:
    ts = parse_time(obj.get("ts_ms"))
    props = obj.get("properties") or {}
    if isinstance(props, str):
        props = parse_properties_text(props)
    if not isinstance(props, dict):
        raise ValueError("`properties` is not an object")
    event_id = str(obj.get("event_id") or "") or raw_identity
    return Row(
        where=where,
        name=str(obj.get("event") or ""),
        url=str(obj.get("url") or ""),
        ts_ms=ts,
        event_id=event_id,
        referrer=str(obj.get("referrer") or ""),
        session=str(obj.get("session_id") or ""),
        visitor=str(obj.get("visitor_id") or ""),
        properties=typed_properties(str(obj.get("event") or ""), props),
        screen=as_int(obj.get("screen_width")),
        stored=obj,
        received_ms=as_int(obj.get("received_ms")),
    )


def typed_properties(name: str, props: dict[Any, Any]) -> dict[str, Any]:
    """An export's properties (stored as text) as the wire format takes them: for the
    extensions' event kinds (svc.schema.measurements), a number's text as the number again
    (``"5000"`` -> ``5000``), so that validation takes what was exported; anything else
    as it is."""
    out = {str(k): v for k, v in props.items()}
    kind = KINDS.get(name)
    if kind is None:
        return out
    for key, rule in kind.properties.items():
        value = out.get(key)
        if rule.type in ("integer", "number") and isinstance(value, str):
            try:
                number = json.loads(value)
            except ValueError:
                continue  # refused by validation, naming the property
            if isinstance(number, int | float) and not isinstance(number, bool):
                out[key] = number
    return out


def svc_identity(obj: dict[str, Any]) -> str:
    """What identifies a row of an svc export, the same in its NDJSON and CSV forms."""
    keys = ("ts_ms", "event", "url", "session_id", "visitor_id", "received_ms", "referrer")
    return "svc\x1f" + "\x1f".join(str(obj.get(k) or "") for k in keys)


def _wire_row(where: str, obj: dict[str, Any], raw_identity: str) -> Row:
    """An event as POST /analytics takes it."""
    ts = parse_time(obj.get("ts")) if obj.get("ts") is not None else 0
    props = obj.get("properties") or {}
    if not isinstance(props, dict):
        raise ValueError("`properties` is not an object")
    session = str(obj.get("sessionId") or "")
    return Row(
        where=where,
        name=str(obj.get("event") or ""),
        url=str(obj.get("url") or ""),
        ts_ms=ts,
        event_id=str(obj.get("eventId") or "") or raw_identity,
        referrer=str(obj.get("referrer") or ""),
        session=session,
        visitor=session,
        properties=props,
        screen=as_int(obj.get("screen")),
    )


def ndjson_rows(source: Source) -> Iterator[Item]:
    occ = Occurrences("svc")
    with source.open() as f:
        for number, line in enumerate(f, 1):
            where = f"{source.label}:{number}"
            try:
                text = line.decode("utf-8-sig" if number == 1 else "utf-8").strip()
            except UnicodeDecodeError:
                yield Refusal(where, "not UTF-8 text")
                continue
            if not text:
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                yield Refusal(where, f"not valid JSON: {exc.msg}")
                continue
            if not isinstance(obj, dict):
                yield Refusal(where, "not a JSON object")
                continue
            try:
                ts = obj.get("ts_ms", obj.get("ts"))
                identity = occ.identity(ts, svc_identity(obj) if "ts_ms" in obj else text)
                if "ts_ms" in obj:
                    yield _svc_row(where, obj, identity)
                else:
                    yield _wire_row(where, obj, identity)
            except (ValueError, TypeError) as exc:
                yield Refusal(where, reason_of(exc))


def svc_csv_rows(source: Source) -> Iterator[Item]:
    occ = Occurrences("svc")
    with source.open() as raw:
        reader = csv.DictReader(text_lines(raw))
        for number, rec in enumerate(reader, 2):
            where = f"{source.label}:{number}"
            try:
                obj = unneutralised(rec)
                identity = occ.identity(obj.get("ts_ms"), svc_identity(obj))
                yield _svc_row(where, obj, identity)
            except (ValueError, TypeError) as exc:
                yield Refusal(where, reason_of(exc))


def parquet_rows(source: Source) -> Iterator[Item]:
    """The rows of svc's Parquet export (GET /export?format=parquet, ``svcm export -o
    x.parquet``): the same columns as NDJSON, ``properties`` a map."""
    occ = Occurrences("svc")
    for number, obj in enumerate(parquet_records(source), 1):
        where = f"{source.label}:{number}"
        try:
            identity = occ.identity(obj.get("ts_ms"), svc_identity(obj))
            yield _svc_row(where, obj, identity)
        except (ValueError, TypeError) as exc:
            yield Refusal(where, reason_of(exc))


def parquet_records(source: Source) -> Iterator[dict[str, Any]]:
    """The rows of a Parquet file as JSON would have them (text as ``str``, a map as a
    ``dict``, a struct as a ``dict``, a list as a ``list``); :class:`ImportFailed` for a file
    pyarrow cannot read. pyarrow is loaded here only (it is heavy, and ``svcm`` starts
    without it)."""
    import pyarrow.parquet as pq

    with source.open() as f:
        data = f if f.seekable() else io.BytesIO(f.read())
        try:
            parquet = pq.ParquetFile(data)
        except Exception as exc:  # pyarrow's errors have no common base of their own
            raise ImportFailed(f"{source.label}: not a readable Parquet file ({exc})") from exc
        for batch in parquet.iter_batches(batch_size=10_000):
            for rec in batch.to_pylist():
                yield {k: _plain(v) for k, v in rec.items()}


def parquet_columns(source: Source) -> set[str]:
    """The column names of a Parquet source."""
    import pyarrow.parquet as pq

    with source.open() as f:
        data = f if f.seekable() else io.BytesIO(f.read())
        try:
            return set(pq.ParquetFile(data).schema_arrow.names)
        except Exception as exc:  # see parquet_records
            raise ImportFailed(f"{source.label}: not a readable Parquet file ({exc})") from exc


def parquet_count(source: Source) -> int:
    """The rows of a Parquet source, from its footer."""
    import pyarrow.parquet as pq

    with source.open() as f:
        data = f if f.seekable() else io.BytesIO(f.read())
        return int(pq.ParquetFile(data).metadata.num_rows)


def _plain(value: Any) -> Any:
    """A Parquet cell as JSON has it: text as ``str``, a map as a ``dict``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        if value and all(isinstance(kv, tuple) and len(kv) == 2 for kv in value):
            return {_plain(k): _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def unneutralised(rec: dict[str, Any]) -> dict[str, Any]:
    """A row of an svc CSV export with its text cells as stored: the single quote the export
    put before a cell that begins with one (every such cell got one) taken off. (A CSV made
    before exports neutralised cells loses the first quote of a value that began with one.)"""
    return {
        k: original_text(v) if k in CSV_TEXT_COLUMNS and isinstance(v, str) else v
        for k, v in rec.items()
    }


def parse_properties_text(text: str) -> dict[str, Any]:
    """The ``properties`` cell of an svc CSV export: a JSON object, or ClickHouse's text form
    of the map (``{'k':'v'}``), as exports before JSON had it."""
    if text.lstrip().startswith('{"'):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError("`properties` is not a JSON object") from None
        if not isinstance(value, dict):
            raise ValueError("`properties` is not a JSON object")
        return value
    return parse_ch_map(text)


def parse_ch_map(text: str) -> dict[str, str]:
    """ClickHouse's text form of a Map(String, String): ``{'k':'v','k2':'v2'}``."""
    text = text.strip()
    if not text or text == "{}":
        return {}
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError("`properties` is not a map")
    out: dict[str, str] = {}
    i, n = 1, len(text) - 1
    items: list[str] = []
    while i < n:
        ch = text[i]
        if ch in ", :":
            i += 1
            continue
        if ch != "'":
            raise ValueError("`properties` is not a map")
        value, i = _ch_string(text, i + 1)
        items.append(value)
    if len(items) % 2:
        raise ValueError("`properties` is not a map")
    for k in range(0, len(items), 2):
        out[items[k]] = items[k + 1]
    return out


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "\\": "\\", "'": "'"}


def _ch_string(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if ch == "'":
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise ValueError("`properties` is not a map")
