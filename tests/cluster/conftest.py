"""Fixtures of the several-nodes tests: a real redis-server (tests/limits' fixture) and a
fresh PostgreSQL metadata store shared by the "nodes" of a test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from svc.meta.store import MetaStore
from tests.limits.conftest import redis_url as redis_url
from tests.test_meta_store import postgres_url


@pytest.fixture
def pg_meta() -> Iterator[MetaStore]:
    """An empty, migrated PostgreSQL metadata store."""
    store = MetaStore(postgres_url())
    with store.engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    store.migrate()
    yield store
    store.close()
