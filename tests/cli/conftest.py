"""Fixtures of the svcm tests: svcm bound to the session's server, or to a data directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.support import Result, clean_env, svcm
from tests.support import Server

Svcm = Callable[..., Result]


@pytest.fixture
def cli(server: Server, tmp_path: Path) -> Svcm:
    """``svcm`` talking to the session's server with the admin token (from the environment)."""
    env = clean_env(tmp_path / "config.toml", SVC_URL=server.url, SVC_TOKEN=server.admin_token)

    def run(*args: str, stdin: str | None = None, **extra: str) -> Result:
        return svcm(*args, env={**env, **extra}, stdin=stdin)

    return run


@pytest.fixture
def bare(tmp_path: Path) -> Svcm:
    """``svcm`` with no service, token or config at all."""
    env = clean_env(tmp_path / "config.toml")

    def run(*args: str, stdin: str | None = None, **extra: str) -> Result:
        return svcm(*args, env={**env, **extra}, stdin=stdin)

    return run
