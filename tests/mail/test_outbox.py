"""The outbox: delivery through a real SMTP server, an outage, a restart, deduplication, and
the same rows on PostgreSQL."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from svc.mail import Attachment, enqueue, get_mail, list_mail
from svc.mail.outbox import backoff_ms, claim_due, mark_failed, mark_sent
from svc.meta.store import MetaStore
from svc.timeutil import now_ms
from tests.mail_server import MailServer
from tests.support import Server

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000185d114090000000049454e44ae426082"
)


def meta_of(srv: Server) -> MetaStore:
    return MetaStore(f"sqlite:///{srv.data_dir / 'meta.db'}")


def wait_row(meta: MetaStore, mail_id: str, ok: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mail = get_mail(meta, mail_id)
        if mail is not None and ok(mail):  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise TimeoutError(f"{mail_id}: {get_mail(meta, mail_id)}")


def test_delivery_text_html_and_inline_image(svc: Server, mail_server: MailServer) -> None:
    meta = meta_of(svc)
    to = "ada@example.com"
    mail_id = enqueue(
        meta,
        to,
        "Your report",
        "Hello in text",
        '<p>Hello in HTML</p><img src="cid:chart@svc">',
        [Attachment("chart.png", "image/png", PNG, content_id="chart@svc")],
        kind="test",
        headers={"Reply-To": "team@example.org"},
    )
    (msg,) = mail_server.wait_for(1, match=lambda m: m["To"] == to)
    assert msg["From"] == "svc <reports@example.org>" and msg["Subject"] == "Your report"
    assert msg["Reply-To"] == "team@example.org"
    assert mail_id in msg["Message-ID"]
    body = msg.get_body(("plain",))
    html = msg.get_body(("html",))
    assert body is not None and "Hello in text" in body.get_content()
    assert html is not None and "cid:chart@svc" in html.get_content()
    (image,) = [p for p in msg.walk() if p.get_content_type() == "image/png"]
    assert image["Content-ID"] == "<chart@svc>" and image.get_content() == PNG
    wait_row(meta, mail_id, lambda m: m.status == "sent")
    row = get_mail(meta, mail_id)
    assert row is not None and row.attempts == 1 and row.sent_at is not None
    meta.close()


def test_dedupe_key_enqueues_once(svc: Server, mail_server: MailServer) -> None:
    meta = meta_of(svc)
    to = "dedupe@example.com"
    key = "report:p1:2026-11-23:" + to
    first = enqueue(meta, to, "Once", "text", kind="report", dedupe_key=key)
    with meta.engine.begin() as conn:  # in a transaction of the caller's, too
        assert enqueue(conn, to, "Twice", "text", kind="report", dedupe_key=key) == first
    assert enqueue(meta, to, "Thrice", "text", kind="report", dedupe_key=key) == first
    mail_server.wait_for(1, match=lambda m: m["To"] == to)
    wait_row(meta, first, lambda m: m.status == "sent")
    time.sleep(1.2)  # a worker's poll more: nothing else arrives
    assert [m["Subject"] for m in mail_server.to(to)] == ["Once"]
    with pytest.raises(ValueError):
        enqueue(meta, "not an address", "x", "y")
    for bad in ({"From": "x@y.z"}, {"X-A": "one\r\nBcc: x@y.z"}, {"bad name": "v"}):
        with pytest.raises(ValueError):
            enqueue(meta, to, "x", "y", headers=bad)
    meta.close()


def test_outage_then_recovery_delivers_once(svc: Server, mail_server: MailServer) -> None:
    meta = meta_of(svc)
    to = "outage@example.com"
    mail_server.stop()
    try:
        mail_id = enqueue(meta, to, "During the outage", "text", kind="test")
        wait_row(meta, mail_id, lambda m: m.attempts >= 2 and m.last_error)
        row = get_mail(meta, mail_id)
        assert row is not None and row.status == "queued"
        assert "Connection" in (row.last_error or "") or "refused" in (row.last_error or "")
    finally:
        mail_server.start()
    mail_server.wait_for(1, match=lambda m: m["To"] == to)
    wait_row(meta, mail_id, lambda m: m.status == "sent")
    time.sleep(1.2)
    assert len(mail_server.to(to)) == 1
    meta.close()


def test_unsent_mail_survives_a_restart(svc: Server, mail_server: MailServer) -> None:
    to = "restart@example.com"
    svc.stop()
    meta = meta_of(svc)
    mail_id = enqueue(meta, to, "Waited for the restart", "text", kind="test")
    time.sleep(0.3)
    assert mail_server.to(to) == []
    svc.start()
    mail_server.wait_for(1, match=lambda m: m["To"] == to)
    wait_row(meta, mail_id, lambda m: m.status == "sent")
    assert len(mail_server.to(to)) == 1
    assert [m.id for m in list_mail(meta, status="queued")] == []
    meta.close()


def test_headers_column_added_to_a_store_made_before_it(tmp_path: Path) -> None:
    meta = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    meta.migrate()
    with meta.engine.begin() as conn:  # as a store made by migration 20 of 30fa73a
        conn.execute(text("ALTER TABLE mail_outbox DROP COLUMN headers"))
        conn.execute(text("DELETE FROM schema_migrations WHERE version = 22"))
    assert meta.migrate() == [22]
    mail_id = enqueue(meta, "a@b.io", "s", "t", headers={"Auto-Submitted": "auto-generated"})
    row = get_mail(meta, mail_id)
    assert row is not None and row.headers == {"Auto-Submitted": "auto-generated"}
    meta.close()


def test_sent_mail_is_pruned_later_queued_mail_never(tmp_path: Path) -> None:
    from svc.mail.outbox import prune

    meta = MetaStore(f"sqlite:///{tmp_path / 'meta.db'}")
    meta.migrate()
    sent = enqueue(meta, "a@b.io", "sent", "t")
    waiting = enqueue(meta, "c@d.io", "waiting", "t")
    (mail, _) = claim_due(meta.engine, now_ms())
    assert mail.id in (sent, waiting)
    mark_sent(meta.engine, sent, 1_000)
    assert prune(meta.engine, 999) == 0
    assert prune(meta.engine, 1_001) == 1
    assert get_mail(meta, sent) is None and get_mail(meta, waiting) is not None
    assert prune(meta.engine, now_ms() + 10**9) == 0  # queued mail stays, however old
    meta.close()


def test_backoff_doubles_up_to_an_hour() -> None:
    assert [backoff_ms(n, 30_000) for n in (1, 2, 3)] == [30_000, 60_000, 120_000]
    assert backoff_ms(40, 30_000) == 3600_000


def test_outbox_on_postgresql(tmp_path: Path) -> None:
    from tests.test_meta_store import postgres_url

    schema = "mail_" + secrets.token_hex(4)
    admin = MetaStore(postgres_url())
    with admin.engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    sep = "&" if "?" in postgres_url() else "?"
    meta = MetaStore(f"{postgres_url()}{sep}options=-csearch_path%3D{schema}")
    try:
        meta.migrate()
        key = "k-" + schema
        first = enqueue(meta, "pg@example.com", "s", "t", kind="test", dedupe_key=key)
        with meta.engine.begin() as conn:
            assert enqueue(conn, "pg@example.com", "s", "t", dedupe_key=key) == first
        (mail,) = claim_due(meta.engine, now_ms())
        assert mail.id == first and mail.attempts == 1
        assert claim_due(meta.engine, now_ms()) == []  # leased
        mark_failed(meta.engine, mail, "down", now_ms(), 0, permanent=False)
        (again,) = claim_due(meta.engine, now_ms() + 1)
        mark_sent(meta.engine, again.id, now_ms())
        row = get_mail(meta, first)
        assert row is not None and row.status == "sent" and row.attempts == 2
    finally:
        meta.close()
        with admin.engine.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.close()
