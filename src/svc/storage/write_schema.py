"""``python -m svc.storage.write_schema``: write ``storage/schema.sql`` (svc.storage.schema)
from a store migrated file by file in a temporary directory. Run it after adding a migration;
tests/test_store_schema.py fails until it has been."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from svc.settings import Settings
from svc.storage import schema
from svc.storage.events import EventStore


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = EventStore(Settings(data_dir=Path(tmp)))
        try:
            applied = store.migrate(from_schema=False)
            out = Path(schema.__file__).with_name(schema.FILE)
            out.write_text(schema.dump(store.client, max(applied)))
        finally:
            store.close()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
