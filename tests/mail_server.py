"""A real SMTP server for tests: aiosmtpd on a loopback port, keeping what it receives.

Use the ``mail_server`` fixture (import it into a test module or a conftest:
``from tests.mail_server import mail_server``), or :class:`MailServer` directly. Point svc at
it with :meth:`MailServer.svc` (a started ``Server`` on a port of its own with
:meth:`MailServer.svc_env`: mail needs ``SVC_BASE_URL``, every link in mail starts with it;
here the server's own address); read
what arrived with :meth:`MailServer.wait_for` (parsed :class:`email.message.EmailMessage`).
:meth:`MailServer.stop` then :meth:`MailServer.start` simulate an outage on the same port.
"""

from __future__ import annotations

import email
import email.policy
import threading
import time
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.support import Server, free_port


class _Handler:
    def __init__(self, server: MailServer) -> None:
        self.server = server

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        with self.server.lock:
            self.server.messages.append(msg)
            self.server.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 OK"


class MailServer:
    """An SMTP server on 127.0.0.1 that accepts every mail and keeps it in :attr:`messages`."""

    def __init__(self, port: int = 0) -> None:
        self.port = port or free_port()
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.lock = threading.Lock()
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        """``SVC_SMTP_URL`` for this server."""
        return f"smtp://127.0.0.1:{self.port}?timeout=5"

    def svc_env(self, port: int) -> dict[str, str]:
        """The settings of a svc on ``port`` that mails through this server: ``SVC_SMTP_URL``,
        quick retries, and ``SVC_BASE_URL`` (which mail needs) the svc's own address."""
        return {
            "SVC_SMTP_URL": self.url,
            "SVC_MAIL_RETRY_SECONDS": "0.2",
            "SVC_BASE_URL": f"http://127.0.0.1:{port}",
        }

    def svc(self, data_dir: Path, **env: str) -> Server:
        """A started svc on ``data_dir`` and a free port that mails through this server
        (:meth:`svc_env`), with ``env`` besides; the caller stops it."""
        port = free_port()
        return Server(data_dir, port=port, env={**self.svc_env(port), **env}).start()

    def start(self) -> MailServer:
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def clear(self) -> None:
        with self.lock:
            self.messages.clear()
            self.envelopes.clear()

    def to(self, address: str) -> list[EmailMessage]:
        """The messages received for ``address``."""
        with self.lock:
            return [m for m in self.messages if address in str(m["To"])]

    def wait_for(
        self,
        count: int = 1,
        timeout: float = 20.0,
        match: Callable[[EmailMessage], bool] = lambda _m: True,
    ) -> list[EmailMessage]:
        """Block until at least ``count`` received messages satisfy ``match``; return them."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [m for m in self.messages if match(m)]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(found)} of {count} mail(s) after {timeout}s")
            time.sleep(0.05)


@pytest.fixture(scope="module")
def mail_server() -> Iterator[MailServer]:
    """One SMTP server per test module (clear it, or match on the recipient, per test)."""
    server = MailServer().start()
    yield server
    server.stop()
