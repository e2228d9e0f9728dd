"""The metadata store on real SQLite and real PostgreSQL: migrations, projects, keys, salts,
usage."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from svc import credentials
from svc.errors import Conflict, NotFound
from svc.ingestion.service import Usage
from svc.meta.migrations import MIGRATIONS, current_version
from svc.meta.store import MetaStore
from svc.meta.usage import UsageRecorder

ROOT = Path(__file__).resolve().parent.parent


def postgres_url() -> str:
    """A PostgreSQL URL for tests: ``SVC_TEST_PG_URL``, or Debian's server started here."""
    url = os.environ.get("SVC_TEST_PG_URL")
    if url:
        return url
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test-services.sh")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    url = next(
        line.split("=", 1)[1] for line in out.splitlines() if line.startswith("SVC_TEST_PG_URL=")
    )
    os.environ["SVC_TEST_PG_URL"] = url
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def meta(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetaStore]:
    if request.param == "sqlite":
        store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    else:
        store = MetaStore(postgres_url())
        with store.engine.begin() as conn:
            conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    store.migrate()
    yield store
    store.close()


def test_migrations_apply_once(meta: MetaStore) -> None:
    assert current_version(meta.engine) == MIGRATIONS[-1][0]
    assert meta.migrate() == []


def test_create_project_returns_two_clear_keys_stored_hashed(meta: MetaStore) -> None:
    project, keys = meta.create_project("acme", "Europe/Berlin", ["acme.com"])
    assert project.id == "svc_proj_acme"
    assert project.timezone == "Europe/Berlin" and project.domains == ("acme.com",)
    assert set(keys) == {"public", "secret"}
    for clear in keys.values():
        assert clear.startswith("svc_live_") and len(clear) >= len("svc_live_") + 24
        found = meta.find_key_by_hash(credentials.hash_secret(clear))
        assert found is not None and found.project_id == project.id
    with meta.engine.connect() as conn:
        stored = " ".join(str(r) for r in conn.execute(text("SELECT * FROM api_keys")))
    assert keys["public"] not in stored and keys["secret"] not in stored
    kinds = {k.kind: k.scopes for k in meta.list_keys(project.id)}
    assert kinds == {"public": ("ingest",), "secret": ("ingest", "read", "manage")}


def test_existing_name_conflicts(meta: MetaStore) -> None:
    meta.create_project("acme")
    with pytest.raises(Conflict):
        meta.create_project("acme")


def test_update_and_delete(meta: MetaStore) -> None:
    meta.create_project("acme")
    p = meta.update_project("svc_proj_acme", {"timezone": "Asia/Tokyo", "domains": ["a.io"]})
    assert p.timezone == "Asia/Tokyo" and p.domains == ("a.io",)
    meta.delete_project("svc_proj_acme")
    with pytest.raises(NotFound):
        meta.get_project("svc_proj_acme")
    assert meta.list_keys("svc_proj_acme") == []


def test_revoke_and_rotate(meta: MetaStore) -> None:
    project, keys = meta.create_project("acme")
    public = next(k for k in meta.list_keys(project.id) if k.kind == "public")
    new, clear, old = meta.rotate_key(project.id, public.id)
    assert old.revoked_at is not None and not old.active
    assert new.kind == "public" and new.active and clear != keys["public"]
    assert meta.find_key_by_hash(credentials.hash_secret(clear)) is not None
    with pytest.raises(Conflict):
        meta.rotate_key(project.id, public.id)
    revoked = meta.revoke_key(project.id, new.id)
    assert not revoked.active


def test_salts_rotate_and_old_ones_are_destroyed(meta: MetaStore) -> None:
    first = meta.salts_for(["2026-01-01", "2026-01-02"])
    again = meta.salts_for(["2026-01-01", "2026-01-02"])
    assert first == again and len(set(first.values())) == 2
    meta.salts_for(["2026-01-02", "2026-01-03"])
    assert meta.salt_days() == ["2026-01-02", "2026-01-03"]


def test_usage_records_absolute_counts(meta: MetaStore) -> None:
    meta.create_project("acme")
    meta.record_usage({("svc_proj_acme", "2026-01"): 5})
    meta.record_usage({("svc_proj_acme", "2026-01"): 5})  # the same flush again: no change
    assert meta.usage_of("svc_proj_acme", "2026-01") == 5
    meta.record_usage({("svc_proj_acme", "2026-01"): 12, ("svc_proj_acme", "2026-02"): 3})
    assert meta.usage_of("svc_proj_acme", "2026-01") == 12
    assert meta.usage_of("svc_proj_acme", "2026-02") == 3
    assert meta.usage_of("svc_proj_acme", "2026-03") == 0


def test_usage_is_never_lowered_nor_recorded_for_missing_projects(meta: MetaStore) -> None:
    meta.create_project("acme")
    meta.record_usage({("svc_proj_acme", "2026-01"): 40})
    meta.record_usage({("svc_proj_acme", "2026-01"): 30})  # an older or partial count
    assert meta.usage_of("svc_proj_acme", "2026-01") == 40
    meta.record_usage({("svc_proj_gone", "2026-01"): 7, ("svc_proj_acme", "2026-01"): 0})
    assert meta.usage_of("svc_proj_gone", "2026-01") == 0
    meta.delete_project("svc_proj_acme")
    meta.record_usage({("svc_proj_acme", "2026-01"): 41})  # a flush after the delete
    with meta.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM usage")).scalar() == 0


def test_usage_recorder_writes_what_changed(meta: MetaStore) -> None:
    meta.create_project("acme")
    meta.create_project("beta")
    counts = Usage()
    counts.add("svc_proj_acme", "2026-01", 3)
    counts.add("svc_proj_beta", "2026-01", 0)
    recorder = UsageRecorder(meta)
    snapshot = recorder.snapshot(counts.counts, counts.of)
    assert recorder.flush(snapshot) == 1
    assert recorder.flush(recorder.snapshot(counts.counts, counts.of)) == 0
    counts.add("svc_proj_acme", "2026-01", 2)
    counts.add("svc_proj_beta", "2026-01", 9)
    assert recorder.flush(recorder.snapshot(counts.counts, counts.of)) == 2
    assert meta.usage_of("svc_proj_acme", "2026-01") == 5
    assert meta.usage_of("svc_proj_beta", "2026-01") == 9
    # a new process (say after a crash) records its counts again: nothing is added twice
    assert UsageRecorder(meta).flush(recorder.snapshot(counts.counts, counts.of)) == 2
    assert meta.usage_of("svc_proj_acme", "2026-01") == 5


def test_usage_recorder_retries_after_a_failed_write(
    meta: MetaStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta.create_project("acme")
    recorder = UsageRecorder(meta)

    def broken(counts: object) -> None:
        raise OSError("metadata store away")

    with monkeypatch.context() as patched:
        patched.setattr(meta, "record_usage", broken)
        with pytest.raises(OSError):
            recorder.flush({("svc_proj_acme", "2026-01"): 4})
    assert recorder.flush({("svc_proj_acme", "2026-01"): 4}) == 1
    assert meta.usage_of("svc_proj_acme", "2026-01") == 4
