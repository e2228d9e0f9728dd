"""One SMTP server (aiosmtpd) and one svc sending to it, for every test of tests/mail."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mail_server import MailServer
from tests.support import Server


@pytest.fixture(scope="package")
def mail_server() -> Iterator[MailServer]:
    server = MailServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def svc(tmp_path_factory: pytest.TempPathFactory, mail_server: MailServer) -> Iterator[Server]:
    """svc with SMTP on, retries after 0.2 s, links to https://stats.example.org."""
    srv = Server(
        tmp_path_factory.mktemp("mail") / "data",
        env={
            "SVC_SMTP_URL": mail_server.url,
            "SVC_MAIL_FROM": "svc <reports@example.org>",
            "SVC_MAIL_RETRY_SECONDS": "0.2",
            "SVC_BASE_URL": "https://stats.example.org",
        },
    ).start()
    yield srv
    srv.stop()
