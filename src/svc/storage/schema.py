"""The store's tables as the migrations leave them, for a new store to create at once.

``storage/migrations`` takes a store from any version to the last, one file at a time: 95
statements to a new store, with rebuilds of derived tables that are empty there, about 1.1 s
of a server's start (2-2.5 s with two test processes on two cores). A new store, one whose
database holds no table and no recorded version, is instead given ``schema.sql``: the
``CREATE`` statement of every table and view as the migrations up to the version the file
names (``-- version N``) leave them (ClickHouse's own text of each, from ``system.tables``),
27 statements; :data:`BEGUN` is recorded before them and every migration's version after. A
store that holds anything, or migrations past the file's version, takes the migrations.

``schema.sql`` is written by ``python -m svc.storage.write_schema`` from a store migrated
file by file, and tests/test_store_schema.py checks that it is what the migrations make.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from clickhouse_connect.driver.client import Client

#: The file of statements, beside this module.
FILE = "schema.sql"
#: The version recorded before a new store's tables are made from :data:`FILE`: a start that
#: stops before the others are recorded leaves it alone, and the next one makes them again
#: (every statement has ``IF NOT EXISTS``) rather than run the migrations over them.
BEGUN = 0

_VERSION_LINE = re.compile(r"^-- version (\d+)$", re.MULTILINE)
_CREATE = re.compile(r"^CREATE (TABLE|MATERIALIZED VIEW) ")


def file() -> Traversable:
    """:data:`FILE`, in the installed package."""
    return resources.files("svc.storage").joinpath(FILE)


def text() -> str:
    return file().read_text()


def version(schema: str) -> int:
    """The last migration ``schema`` (the text of :data:`FILE`) stands for."""
    found = _VERSION_LINE.search(schema)
    if found is None:
        raise ValueError(f"{FILE} names no version")
    return int(found.group(1))


def is_empty(client: Client) -> bool:
    """Whether the store's database holds no table but the migrations' own."""
    rows = client.query(
        "SELECT count() FROM system.tables "
        "WHERE database = currentDatabase() AND name != 'svc_migrations'"
    ).result_rows
    return int(rows[0][0]) == 0


def dump(client: Client, last_version: int) -> str:
    """The text of :data:`FILE` for the store behind ``client``, migrated to
    ``last_version``: each table's ``CREATE``, then each view's (their tables exist before
    them), by name, without the database's name and with ``IF NOT EXISTS``."""
    database = client.query("SELECT currentDatabase()").result_rows[0][0]
    rows = client.query(
        "SELECT name, create_table_query FROM system.tables "
        "WHERE database = currentDatabase() AND name != 'svc_migrations' "
        "ORDER BY engine = 'MaterializedView', name"
    ).result_rows
    names = [name for name, _ in rows]
    qualified = re.compile(
        rf"\b{re.escape(database)}\.(`?)({'|'.join(map(re.escape, names))})\b(`?)"
    )
    lines = [
        f"-- The tables and views as storage/migrations/ up to {last_version:03d} leave them, for",
        "-- a new store (svc.storage.schema). Written by `python -m svc.storage.write_schema`:",
        "-- do not edit, add a migration and write this file again.",
        f"-- version {last_version}",
        "",
    ]
    for _, query in rows:
        statement = qualified.sub(r"\1\2\3", query)
        statement = _CREATE.sub(lambda m: f"CREATE {m.group(1)} IF NOT EXISTS ", statement)
        lines += [f"{statement};", ""]
    return "\n".join(lines)
