"""Single sign-on's records on SQLite and PostgreSQL (the ``meta`` fixture runs each test on
both): a sign-in under way is taken once, not after it expires, and only by its state; an
identity is linked once, to one account."""

from __future__ import annotations

from svc.accounts import sso_store, store, tokens
from svc.meta.store import MetaStore
from tests.test_meta_store import meta

__all__ = ["meta"]


def test_a_login_is_taken_once_and_not_after_it_expires(meta: MetaStore) -> None:
    sso_store.create_login(meta, "state-1", "binding-1", "nonce-1", "verifier-1", 60_000)
    assert sso_store.take_login(meta, "state-2") is None
    taken = sso_store.take_login(meta, "state-1")
    assert taken == sso_store.PendingLogin(tokens.digest("binding-1"), "nonce-1", "verifier-1")
    assert sso_store.take_login(meta, "state-1") is None  # replayed
    sso_store.create_login(meta, "state-3", "b", "n", "v", -1)
    assert sso_store.take_login(meta, "state-3") is None  # expired
    sso_store.create_login(meta, "state-4", "b", "n", "v", 60_000)  # deletes state-3's row
    with meta.engine.connect() as conn:
        rows = conn.execute(sso_store.L.select()).all()
    assert [r.state_hash for r in rows] == [tokens.digest("state-4")]


def test_an_identity_is_linked_once(meta: MetaStore) -> None:
    ada = store.create_account(meta, "ada@example.com", "")
    bob = store.create_account(meta, "bob@example.com", "")
    issuer = "https://id.example.com"
    assert sso_store.find_identity(meta, issuer, "sub-ada") is None
    assert sso_store.link_identity(meta, issuer, "sub-ada", ada.id, ada.email)
    assert not sso_store.link_identity(meta, issuer, "sub-ada", bob.id, bob.email)
    assert sso_store.find_identity(meta, issuer, "sub-ada") == ada.id
    assert sso_store.find_identity(meta, "https://other.example.com", "sub-ada") is None
    assert sso_store.identity_of(meta, issuer, ada.id) == "sub-ada"
    assert sso_store.identity_of(meta, issuer, bob.id) is None
    sso_store.touch_identity(meta, issuer, "sub-ada", "ada@new.example.com")
