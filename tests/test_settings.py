"""Settings: read once from SVC_* variables and flags; every one documented."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from svc.settings import Settings, env_name, flag_name

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_documented_and_the_page_is_current() -> None:
    doc = (ROOT / "docs" / "settings.md").read_text()
    for f in dataclasses.fields(Settings):
        assert f"`{env_name(f.name)}`" in doc, f"{env_name(f.name)} is not in docs/settings.md"
        assert f"`{flag_name(f.name)}`" in doc
        assert f.metadata["help"], f"{f.name} has no help line"
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "gen_settings_doc.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.render() == doc, "docs/settings.md is stale: run scripts/gen_settings_doc.py"


def test_environment_and_overrides() -> None:
    s = Settings.from_env(
        {"SVC_PORT": "9000", "SVC_FSYNC": "false", "SVC_DATA_DIR": "/tmp/x", "OTHER": "1"},
        port=None,
        host="0.0.0.0",
    )
    assert s.port == 9000 and s.fsync is False and s.host == "0.0.0.0"
    assert s.data_dir == Path("/tmp/x")
    assert Settings.from_env({"SVC_PORT": "9000"}, port="9001").port == 9001


def test_bad_value_names_the_variable() -> None:
    with pytest.raises(ValueError, match="SVC_PORT"):
        Settings.from_env({"SVC_PORT": "eighty"})
