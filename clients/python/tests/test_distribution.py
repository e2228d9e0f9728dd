"""The distribution: an app that installs the client gets httpx and nothing of the service."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import svc_client
from scripted import CLIENT

#: Top-level modules of the service and of its heavy dependencies.
SERVICE = {"svc", "chdb", "clickhouse_connect", "pyarrow", "pandas", "starlette", "msgspec"}


def test_importing_the_client_loads_nothing_of_the_service() -> None:
    code = (
        "import sys, svc_client, svc_client.web\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(SERVICE)!r}))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def build_wheel(out: Path) -> Path:
    """Builds the wheel from a copy of the client's folder (the source tree stays clean)."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("building needs setuptools>=77 (the client's [test] extra)")
    src = out / "src"
    shutil.copytree(CLIENT, src, ignore=shutil.ignore_patterns("tests", "*.egg-info", ".*cache"))
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = out.glob("svc_analytics_client-*.whl")
    return wheel


def test_the_wheel_holds_the_client_alone_and_requires_only_httpx(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (metadata,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(metadata))
    assert meta["Name"] == "svc-analytics-client"
    assert meta["Version"] == svc_client.VERSION
    runtime = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert runtime == ["httpx>=0.27"]
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "svc_client"
    }
    assert "svc_client/py.typed" in names
