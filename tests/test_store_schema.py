"""A new store is given the tables the migrations make, at once (svc.storage.schema): the
file it takes is what the migrations make, every version is recorded, a start that stopped
halfway through the file makes the rest of it, and a file behind the migrations is passed
over for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from svc.storage import schema
from tests.support import run_store_script

# argv: the data directory, then "schema" (a new store as a server makes it), "files" (the
# migrations file by file), "half" (a start that stops after 12 of the schema's statements,
# then a start) or "stale" (a schema file one version behind the
# migrations, whose statements would fail). Prints the versions recorded and the dump.
SCRIPT = """
import json, sys
from pathlib import Path
from svc.settings import Settings
from svc.storage import schema
from svc.storage.events import EventStore
store = EventStore(Settings(data_dir=Path(sys.argv[1])))
mode = sys.argv[2]
if mode == "stale":
    last = schema.version(schema.text())
    schema.text = lambda: f"-- version {last - 1}\\nCREATE TABLE broken;"
if mode == "half":
    command, made = store.client.command, []
    def stopping(sql, *args, **kwargs):
        if sql.startswith("CREATE") and len(made) == 13:
            raise SystemError("the start stops here")
        made.append(sql)
        return command(sql, *args, **kwargs)
    store.client.command = stopping
    try:
        store.migrate()
    except SystemError:
        pass
    store.client.command = command
applied = store.migrate(from_schema=mode != "files")
versions = [r[0] for r in store.client.query("SELECT version FROM svc_migrations").result_rows]
print(json.dumps({
    "applied": applied,
    "versions": sorted(versions),
    "dump": schema.dump(store.client, max(versions)),
    "again": store.migrate(),
}))
"""

MIGRATIONS = Path(schema.__file__).with_name("migrations")
VERSIONS = sorted(int(f.name.split("_", 1)[0]) for f in MIGRATIONS.glob("*.sql"))


def migrated(tmp_path: Path, mode: str) -> dict[str, Any]:
    result: dict[str, Any] = run_store_script(SCRIPT, str(tmp_path / mode), mode)
    # a store made from the schema records that it began to be (schema.BEGUN)
    begun = [schema.BEGUN] if mode in ("schema", "half") else []
    assert result["versions"] == begun + VERSIONS, result["versions"]
    assert result["again"] == []  # nothing left to apply
    return result


def test_the_schema_file_is_what_the_migrations_make(tmp_path: Path) -> None:
    files = migrated(tmp_path, "files")
    assert files["applied"] == VERSIONS
    assert schema.version(schema.text()) == VERSIONS[-1], "python -m svc.storage.write_schema"
    assert files["dump"] == schema.text(), (
        "src/svc/storage/schema.sql is not what the migrations make: "
        "write it again with `python -m svc.storage.write_schema`"
    )


def test_a_new_store_takes_the_schema_and_records_every_version(tmp_path: Path) -> None:
    new = migrated(tmp_path, "schema")
    assert new["applied"] == VERSIONS
    assert new["dump"] == schema.text()


def test_a_start_that_stopped_halfway_through_the_schema_makes_the_rest(
    tmp_path: Path,
) -> None:
    half = migrated(tmp_path, "half")
    assert half["applied"] == VERSIONS
    assert half["dump"] == schema.text()


def test_a_schema_file_behind_the_migrations_is_passed_over(tmp_path: Path) -> None:
    stale = migrated(tmp_path, "stale")
    assert stale["applied"] == VERSIONS
    assert stale["dump"] == schema.text()
