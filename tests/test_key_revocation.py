"""Key revocation under concurrency (issue 16, item 9): a lookup under way when a key is revoked
cannot put it back in the cache, a revocation evicts that key alone, and the failed-
authentication gate does not lock a busy address's good keys out."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from svc import credentials
from svc.auth import Authenticator
from svc.errors import InvalidApiKey
from svc.meta.store import MetaStore, Project
from tests.conftest import BROWSER_UA
from tests.support import Server, admin_token


class PausingStore(MetaStore):
    """The real store, whose project read waits while ``hold`` is set: a lookup caught between
    reading its key and storing its answer, as a busy worker thread may be."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.hold = threading.Event()
        self.held = threading.Event()
        self.release = threading.Event()

    def find_project(self, project_id: str) -> Project | None:
        if self.hold.is_set():
            self.held.set()
            self.release.wait(10)
        return super().find_project(project_id)


def test_a_lookup_under_way_cannot_bring_back_a_revoked_key(tmp_path: Path) -> None:
    store = PausingStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.migrate()
    project, keys = store.create_project("race")
    auth = Authenticator(store, credentials.hash_secret(admin_token()), cache_seconds=60)
    public = next(k for k in store.list_keys(project.id) if k.kind == "public")
    outcome: list[object] = []

    def lookup() -> None:
        try:
            outcome.append(auth.resolve(keys["public"]))
        except InvalidApiKey as exc:
            outcome.append(exc)

    store.hold.set()
    thread = threading.Thread(target=lookup)
    thread.start()
    try:
        assert store.held.wait(10)  # the lookup read the key, still active
        store.revoke_key(project.id, public.id)  # what ProjectService.revoke_key does
        auth.forget(key_id=public.id)
        store.hold.clear()
    finally:
        store.release.set()
        thread.join(10)
    assert len(outcome) == 1
    with pytest.raises(InvalidApiKey):  # nothing stale in the cache
        auth.resolve_cached(keys["public"])
    with pytest.raises(InvalidApiKey):
        auth.resolve(keys["public"])
    assert not auth.vouches_for(keys["public"])
    store.close()


def test_revoking_a_key_evicts_that_key_only(tmp_path: Path) -> None:
    store = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    store.migrate()
    project, keys = store.create_project("evict")
    auth = Authenticator(store, credentials.hash_secret(admin_token()), cache_seconds=60)
    for clear in keys.values():
        auth.resolve(clear)
    public = next(k for k in store.list_keys(project.id) if k.kind == "public")
    store.revoke_key(project.id, public.id)
    auth.forget(key_id=public.id)
    assert auth.resolve_cached(keys["public"]) is None  # asked again: revoked
    secret = auth.resolve_cached(keys["secret"])  # still cached: no lookup
    assert secret is not None and secret.kind == "secret"
    assert auth.vouches_for(keys["secret"]) and not auth.vouches_for(keys["public"])
    store.close()


def _send(srv: Server, key: str, address: str) -> int:
    r = httpx.post(
        srv.url + "/analytics",
        json={"event": "page_view", "url": "/office"},
        headers={
            "Authorization": f"Bearer {key}",
            "User-Agent": BROWSER_UA,
            "X-Forwarded-For": address,
        },
        timeout=30,
    )
    return r.status_code


def test_a_revocation_does_not_lock_good_keys_out_of_a_busy_address(tmp_path: Path) -> None:
    srv = Server(
        tmp_path / "data",
        env={
            "SVC_RATE_LIMIT_AUTH_FAILURES_PER_IP": "0.01:2",
            "SVC_TRUSTED_PROXIES": "127.0.0.1/32",
            "SVC_KEY_CACHE_SECONDS": "1",
        },
    ).start()
    office = "198.51.100.20"  # one address, many people: good keys and a bad one
    try:
        p = srv.create_project("office")
        good = p["keys"]["public"]
        r = httpx.post(
            f"{srv.url}/projects/{p['id']}/keys", json={"kind": "public"}, headers=srv.admin()
        )
        assert r.status_code == 201, r.text
        other, other_id = r.json()["key"], r.json()["id"]
        assert _send(srv, good, office) == 200 and _send(srv, other, office) == 200
        bad = "svc_live_" + "x" * 32
        assert [_send(srv, bad, office) for _ in range(3)] == [401, 401, 429]
        r = httpx.delete(f"{srv.url}/projects/{p['id']}/keys/{other_id}", headers=srv.admin())
        assert r.status_code == 200, r.text
        assert _send(srv, good, office) == 200  # the revocation evicted the other key only
        assert _send(srv, other, office) in (401, 429)
        time.sleep(1.5)  # out of the key cache: still known good, so not locked out
        assert _send(srv, good, office) == 200
        assert _send(srv, bad, office) == 429
    finally:
        srv.stop()
