"""Taking the store to the last version of its schema: the SQL files of
``storage/migrations`` not applied yet, in order, with their side effects (see
svc.storage.migrations), each version recorded in ``svc_migrations``; or, to a new store, the
tables they make at once (svc.storage.schema)."""

from __future__ import annotations

import importlib
import importlib.util
from datetime import UTC, datetime
from importlib import resources
from importlib.resources.abc import Traversable

from svc.storage import schema
from svc.storage.handles import Handles
from svc.storage.migrations import After
from svc.storage.rebuilds import Rebuilds


class Migrations:
    """The store's schema migrations, run on the main client."""

    def __init__(self, handles: Handles, rebuilds: Rebuilds) -> None:
        self.handles = handles
        self.rebuilds = rebuilds

    def migrate(self, from_schema: bool = True) -> list[int]:
        """Apply the SQL files of ``storage/migrations`` not applied yet, in order; or, to a
        new store (no table, no version recorded), the tables they make at once
        (svc.storage.schema), unless ``from_schema`` is False. The versions applied."""
        client = self.handles.client
        client.command(
            "CREATE TABLE IF NOT EXISTS svc_migrations (version UInt32, name String, "
            "applied_at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY version"
        )
        done = {int(r[0]) for r in client.query("SELECT version FROM svc_migrations").result_rows}
        files = sorted(
            (
                f
                for f in resources.files("svc.storage.migrations").iterdir()
                if f.name.endswith(".sql")
            ),
            key=lambda f: f.name,
        )
        pending = [(int(f.name.split("_", 1)[0]), f) for f in files]
        pending = [(v, f) for v, f in pending if v not in done]
        begun = done == {schema.BEGUN}  # a start that stopped while it created them
        if from_schema and pending and (begun or (not done and schema.is_empty(client))):
            tables = schema.text()
            # a file older than the last migration is passed over (its test says so)
            if schema.version(tables) == pending[-1][0]:
                if not begun:  # recorded first: the tables made from here on are the file's
                    self._record([(schema.BEGUN, schema.file())])
                for statement in statements(tables):  # IF NOT EXISTS: again after a crash
                    client.command(statement)
                return self._record(pending)
        for _, f in pending:
            for statement in statements(f.read_text()):
                client.command(statement)  # every statement may run again after a crash
        # The side effects run once every table exists, before the versions are recorded: a
        # crash in between runs the migrations (idempotent) and the side effects again.
        for after in side_effects([f for _, f in pending]):
            after.run(self.rebuilds)
        return self._record(pending)

    def _record(self, applied: list[tuple[int, Traversable]]) -> list[int]:
        """Record the migrations ``applied`` (version, file), in one insert."""
        if applied:
            now = datetime.now(UTC)
            self.handles.client.insert(
                "svc_migrations",
                [[version, f.name, now] for version, f in applied],
                column_names=["version", "name", "applied_at"],
            )
        return [version for version, _ in applied]


def side_effects(files: list[Traversable]) -> list[After]:
    """The side effects of the migrations ``files`` (in the order of their versions) to run:
    each one's :data:`AFTER` in its ``v<name>.py``, each name once, none that another
    covers."""
    found: list[After] = []
    for f in files:
        name = f"svc.storage.migrations.v{f.name.removesuffix('.sql')}"
        if importlib.util.find_spec(name) is not None:
            after = importlib.import_module(name).AFTER
            if not isinstance(after, After):
                raise TypeError(f"{name}.AFTER is not an After")
            found.append(after)
    covered = {name for after in found for name in after.covers}
    kept: list[After] = []
    for after in found:
        if after.name not in covered and after.name not in {k.name for k in kept}:
            kept.append(after)
    return kept


def statements(sql: str) -> list[str]:
    """The statements of a file of SQL (``;`` between them), without its comment lines."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
