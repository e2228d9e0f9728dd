"""svcm on a data directory (no service running on it): init, migrate, the same commands as
over HTTP, and the server-side import of history from Plausible and Umami exports."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

from tests.cli.conftest import Svcm
from tests.cli.samples import PLAUSIBLE, UMAMI
from tests.cli.support import Result, clean_env, svcm
from tests.support import Server


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("direct") / "data"


@pytest.fixture
def direct(data_dir: Path, tmp_path: Path) -> Svcm:
    env = clean_env(tmp_path / "config.toml")

    def run(*args: str, stdin: str | None = None) -> Result:
        return svcm(*args, "--data-dir", str(data_dir), env=env, stdin=stdin)

    return run


def test_init_prints_the_admin_token_once_and_migrate_is_a_no_op_after(direct: Svcm) -> None:
    first = direct("init").ok()
    token = first.stdout.strip()
    assert token.startswith("svc_admin_") and len(token) >= 34
    data_dir = Path(first.stderr.split("data directory ", 1)[1].split()[0])
    kept = data_dir / "admin_token.sha256"
    assert kept.read_text().strip() == hashlib.sha256(token.encode()).hexdigest()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600

    again = direct("init").ok()
    assert again.stdout == "" and "shown when it was made" in again.stderr
    assert direct("migrate", "--json").ok().json()["applied"] == {"metadata": [], "events": []}


def test_import_history_from_plausible_and_umami(direct: Svcm, tmp_path: Path) -> None:
    pid = direct("projects", "create", "shop", "--timezone", "Europe/Berlin", "--json")
    pid = pid.ok().json()["id"]
    export = tmp_path / "plausible"
    export.mkdir()
    for name, text in PLAUSIBLE.items():
        (export / name).write_text(text)
    umami = tmp_path / "umami.csv"
    umami.write_text(UMAMI)

    first = direct("import", "-p", "shop", str(export), str(umami), "--json")
    assert first.status == 4, first.stderr  # one Umami row is refused
    summary = first.json()
    assert summary["imported"] == 29 + 3 + 3 and summary["refused"] == 1
    assert summary["reasons"][0]["reason"] == "Umami event_type 3 is not imported (only 1 and 2)"
    assert summary["reasons"][0]["examples"] == ["umami.csv:5"]
    kinds = {f["file"]: f["format"] for f in summary["files"]}
    assert kinds["umami.csv"] == "umami"
    assert kinds["imported_pages_20240301_20240302.csv"] == "plausible:pages"

    # An event sent in direct mode is in the store once svcm has stopped (see the export).
    direct("send", "-p", "shop", "page_view", "https://shop.example/live").ok()

    again = direct("import", "-p", "shop", str(export), str(umami), "--json").json()
    assert (again["imported"], again["skipped"]) == (0, 35)  # the re-run stores nothing twice

    # Plausible's numbers come back: both days, in the project's time zone.
    march = direct("metrics", "-p", pid, "--from", "2024-03-01", "--to", "2024-03-02", "--json")
    m = march.ok().json()
    assert (m["visitors"], m["sessions"], m["pageviews"], m["events"]) == (10, 12, 28, 32)
    assert m["bounceRate"] == "41.7%"  # 5 bounces of 12 sessions
    assert m["avgSessionDuration"] == 52.5  # 630 s over 12 sessions
    assert m["trafficSources"] == {"google": 5, "direct": 5, "newsletter": 2}

    april = direct("export", "-p", pid, "--from", "2024-04-01", "--to", "today").ok()
    rows = [json.loads(line) for line in april.stdout.splitlines()]
    assert [r["event"] for r in rows] == ["page_view", "page_view", "signup", "page_view"]
    live = rows.pop()
    assert live["url"] == "https://shop.example/live" and live["event_id"] == ""
    first_row = rows[0]
    assert first_row["url"] == "https://shop.example/" and first_row["source"] == "google"
    assert (first_row["browser"], first_row["os"], first_row["device"]) == (
        "Chrome",
        "macOS",
        "desktop",
    )
    assert (first_row["country"], first_row["city"], first_row["screen_width"]) == (
        "DE",
        "Berlin",
        1920,
    )
    assert len({r["session_id"] for r in rows}) == 1
    assert rows[0]["received_ms"] == rows[0]["ts_ms"]  # history does not count as this month


def test_a_directory_in_use_by_a_server_is_refused(server: Server, bare: Svcm) -> None:
    held = bare("projects", "list", "--data-dir", str(server.data_dir))
    held.fails(3, "in use by process", "stop it first", "--url")
    bare("migrate", "--data-dir", str(server.data_dir)).fails(3, "in use by process")


def test_a_missing_directory_is_refused(bare: Svcm, tmp_path: Path) -> None:
    bare("projects", "list", "--data-dir", str(tmp_path / "nope")).fails(
        3, "no data directory", "svcm init --data-dir"
    )
    bare("tail", "-p", "x", "--data-dir", str(tmp_path)).fails(2, "tail follows a running service")


def test_relative_days_are_days_of_the_projects_zone(direct: Svcm) -> None:
    """``--from today`` means today where the project is, as the service reads the range: an
    event sent now is in today's export of a project whose date is not UTC's date now."""
    from datetime import UTC, datetime

    zone = "Pacific/Kiritimati" if datetime.now(UTC).hour >= 10 else "Pacific/Pago_Pago"
    direct("projects", "create", "far", "--timezone", zone, "--json").ok()
    direct("send", "-p", "far", "page_view", "https://far.example/now").ok()
    rows = direct("export", "-p", "far", "--from", "today", "--to", "today").ok()
    rows = rows.stdout.splitlines()
    assert [json.loads(r)["url"] for r in rows] == ["https://far.example/now"]
    yesterday = direct("export", "-p", "far", "--from", "yesterday", "--to", "yesterday").ok()
    assert yesterday.stdout.strip() == ""
