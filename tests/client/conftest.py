"""Fixtures of the Python client's tests: a fresh project on the real server per test."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.support import Server


@pytest.fixture
def project(server: Server) -> dict[str, Any]:
    """A new project (``id``, ``keys`` {public, secret}) on the session's real server."""
    return server.create_project("pyclient-" + uuid.uuid4().hex[:10])


@pytest.fixture
def endpoint(server: Server) -> str:
    return server.url + "/analytics"
