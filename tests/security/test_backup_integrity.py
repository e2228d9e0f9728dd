"""Security issue 38: backups are trusted only as far as they are checked.

- Retention deletes only the backup folders it found complete, each under the name its own
  manifest gives it: a planted manifest naming ``../precious`` (or another folder) is
  ignored, listed as incomplete and never deleted, in a directory and in a bucket.
- ``svcm restore`` checks everything it restores before it says so (the manifest's sizes
  and sha256 digests, SQLite's integrity check, ClickHouse's part checksums): a damaged
  backup exits non-zero with one plain sentence naming the damaged file, leaves the target
  empty, and prints no traceback; a healthy one still restores and serves.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.s3_server import S3Server
from tests.support import Server
from tests.test_backup import FROM, ok_json, svcm
from tests.test_backup_s3 import BUCKET, s3  # noqa: F401 (the module's S3 server fixture)
from tests.test_backup_s3 import svcm as svcm_env

PLANTED = "svc-20200101T000000.000Z-dead"  # older than any real backup: retention's first pick
EVENTS = 128


def _plant(folder: Path, name: str) -> None:
    folder.mkdir(parents=True)
    manifest = {"format": 1, "name": name, "kind": "full", "base": None}
    manifest["takenAt"] = "2020-01-01T00:00:00.000Z"
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _backup(srv: Server, to: str, **body: Any) -> dict[str, Any]:
    r = httpx.post(
        srv.url + "/internal/backup", json={"to": to, **body}, headers=srv.admin(), timeout=120
    )
    assert r.status_code == 201, r.text
    doc: dict[str, Any] = r.json()
    return doc


def test_keep_never_deletes_what_a_planted_manifest_names(
    fresh_server: Server, tmp_path: Path
) -> None:
    srv = fresh_server.start()
    backups = tmp_path / "backups"
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("not a backup")
    _plant(backups / PLANTED, "../precious")
    # a folder whose manifest names another one (a copied manifest): not that one's either
    first = _backup(srv, str(backups), full=True)
    copied = backups / "svc-20200101T000001.000Z-beef"
    copied.mkdir()
    shutil.copy(backups / first["name"] / "manifest.json", copied / "manifest.json")

    second = _backup(srv, str(backups), full=True, keep=1)

    assert (precious / "keep.txt").read_text() == "not a backup"
    assert second["removed"] == [first["name"]]  # retention still works on real backups
    assert sorted(os.listdir(backups)) == sorted([PLANTED, copied.name, second["name"]])
    r = httpx.get(srv.url + "/internal/backup", params={"to": str(backups)}, headers=srv.admin())
    assert [b["name"] for b in r.json()["backups"]] == [second["name"]]
    assert r.json()["incomplete"] == [PLANTED, copied.name]


def test_keep_in_a_bucket_never_deletes_what_a_planted_manifest_names(
    s3: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    prefix = "planted"
    outside = {"precious/keep.txt", f"{prefix}/precious/keep.txt"}
    for key in outside:
        s3.client.put_object(Bucket=BUCKET, Key=key, Body=b"not a backup")
    for folder, name in [(PLANTED, "../precious"), ("svc-20200101T000001.000Z-beef", "precious")]:
        manifest = {"format": 1, "name": name, "kind": "full", "base": None}
        manifest["takenAt"] = "2020-01-01T00:00:00.000Z"
        key = f"{prefix}/{folder}/manifest.json"
        s3.client.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(manifest).encode())
    srv = Server(tmp_path / "data", env=s3.env("BACKUP")).start()
    try:
        doc = _backup(srv, f"s3://{BUCKET}/{prefix}", full=True, keep=1)
    finally:
        srv.stop()
    assert doc["removed"] == []
    for key in outside:
        assert s3.get(BUCKET, key) == b"not a backup", key
    for folder in (PLANTED, "svc-20200101T000001.000Z-beef"):
        assert s3.get(BUCKET, f"{prefix}/{folder}/manifest.json") is not None


@dataclass
class Taken:
    """A healthy backup of a stopped service, to copy and damage."""

    path: Path
    admin_token: str
    project_id: str
    secret: str
    metrics: dict[str, Any]


@pytest.fixture(scope="module")
def taken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Taken]:
    root = tmp_path_factory.mktemp("integrity")
    srv = Server(root / "data").start()
    try:
        project = srv.create_project("integrity")
        secret = project["keys"]["secret"]
        for i in range(EVENTS // 8):
            batch = [
                {"event": "page_view", "url": f"/p{j}", "sessionId": f"s{(i + j) % 9}"}
                for j in range(8)
            ]
            assert srv.send(secret, batch, headers={"User-Agent": BROWSER_UA}).status_code == 200
        srv.wait_loaded()
        doc = _backup(srv, str(root / "backups"))
        metrics = srv.metrics(secret, **FROM)
    finally:
        srv.stop()
    assert doc["events"]["events"] == EVENTS
    yield Taken(Path(doc["path"]), srv.admin_token, project["id"], secret, metrics)


def _data_part(backup: Path) -> Path:
    """The largest data file of the events table's parts in ``backup``."""
    files = list((backup / "events" / "data" / "default" / "events").glob("*/data.bin"))
    return max(files, key=lambda p: p.stat().st_size)


def _random_meta(backup: Path) -> Path:
    meta = backup / "meta.db"
    meta.write_bytes(os.urandom(meta.stat().st_size))
    return meta


def _flip(backup: Path) -> Path:
    part = _data_part(backup)
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the same size, one byte changed
    part.write_bytes(bytes(data))
    return part


def _truncate(backup: Path) -> Path:
    part = _data_part(backup)
    os.truncate(part, part.stat().st_size // 2)
    return part


def _legacy(damage: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """``damage`` done to a backup whose manifest predates the digests (no ``files``): the
    other checks must find it."""

    def damaged(backup: Path) -> Path:
        manifest = json.loads((backup / "manifest.json").read_text())
        del manifest["files"]
        (backup / "manifest.json").write_text(json.dumps(manifest))
        return damage(backup)

    return damaged


#: Each damage into a new target directory; two of them (one found by the digests, one by
#: the store's own checks) into an empty existing one too, which must be left empty.
DAMAGES = [
    ("random-meta", _random_meta, "path", False),
    ("flipped-part", _flip, "path", False),
    ("flipped-part-empty-dir", _flip, "path", True),
    ("truncated-part", _truncate, "path", False),
    ("old-random-meta", _legacy(_random_meta), "meta.db", False),
    ("old-random-meta-empty-dir", _legacy(_random_meta), "meta.db", True),
    ("old-flipped-part", _legacy(_flip), "data.bin", False),
    ("old-truncated-part", _legacy(_truncate), "data.bin", False),
]


@pytest.mark.parametrize(
    ("damage", "named", "target_exists"),
    [case[1:] for case in DAMAGES],
    ids=[case[0] for case in DAMAGES],
)
def test_restore_refuses_a_damaged_backup_naming_the_file(
    taken: Taken,
    tmp_path: Path,
    damage: Callable[[Path], Path],
    named: str,
    target_exists: bool,
) -> None:
    copy = tmp_path / "backups" / taken.path.name
    shutil.copytree(taken.path, copy)
    damaged = damage(copy)
    target = tmp_path / "restored"
    if target_exists:
        target.mkdir()
    proc = svcm("restore", "--from", str(copy), "--data-dir", str(target), config=tmp_path / "c")
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("svcm: "), proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected error" not in proc.stderr
    assert (str(damaged) if named == "path" else named) in lines[0], lines[0]
    assert "damaged" in lines[0], lines[0]
    if target_exists:
        assert os.listdir(target) == []
    else:
        assert not target.exists()


def test_restore_refuses_a_manifest_naming_a_base_outside(taken: Taken, tmp_path: Path) -> None:
    copy = tmp_path / "backups" / taken.path.name
    shutil.copytree(taken.path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "base": "../precious"}))
    target = tmp_path / "restored"
    proc = svcm("restore", "--from", str(copy), "--data-dir", str(target), config=tmp_path / "c")
    assert proc.returncode != 0
    assert "'../precious' is not a backup's name" in proc.stderr, proc.stderr
    assert not target.exists()


def test_a_healthy_backup_restores_checked_and_serves(taken: Taken, tmp_path: Path) -> None:
    target = tmp_path / "restored"
    started = time.monotonic()
    summary = ok_json(
        svcm(
            "restore",
            "--from",
            str(taken.path),
            "--data-dir",
            str(target),
            "--json",
            config=tmp_path / "c",
        )
    )
    seconds = time.monotonic() - started
    assert summary["events"] == EVENTS and summary["filesChecked"] > 10, summary
    print(f"restore with checks: {seconds:.2f} s, {summary['filesChecked']} files")
    restored = Server(target, admin_token=taken.admin_token).start()
    try:
        assert len(restored.events(taken.project_id, taken.secret)) == EVENTS
        assert restored.metrics(taken.secret, **FROM) == taken.metrics
    finally:
        restored.stop()


def test_restore_from_a_bucket_refuses_a_damaged_object(
    s3: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    prefix = "damaged"
    srv = Server(tmp_path / "data", env=s3.env("BACKUP")).start()
    try:
        project = srv.create_project("damaged-s3")
        batch = [{"event": "page_view", "url": f"/p{i}"} for i in range(20)]
        key = project["keys"]["secret"]
        assert srv.send(key, batch, headers={"User-Agent": BROWSER_UA}).status_code == 200
        srv.wait_loaded()
        doc = _backup(srv, f"s3://{BUCKET}/{prefix}")
    finally:
        srv.stop()
    manifest = json.loads(s3.get(BUCKET, f"{prefix}/{doc['name']}/manifest.json") or b"{}")
    parts = [f for f in manifest["files"] if f.startswith("events/data/default/events/")]
    victim = f"{prefix}/{doc['name']}/{next(f for f in parts if f.endswith('/data.bin'))}"
    original = s3.get(BUCKET, victim) or b""
    flipped = bytearray(original)
    flipped[len(flipped) // 2] ^= 0xFF
    s3.client.put_object(Bucket=BUCKET, Key=victim, Body=bytes(flipped))
    env = {"SVC_CONFIG": str(tmp_path / "svcm.toml"), **s3.env("BACKUP")}
    target = tmp_path / "restored"
    proc = svcm_env("restore", "--from", doc["path"], "--data-dir", str(target), env=env)
    assert proc.returncode != 0, proc.stdout
    assert f"s3://{BUCKET}/{victim}" in proc.stderr and "damaged" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".svc-restore-")] == []

    s3.client.put_object(Bucket=BUCKET, Key=victim, Body=original)
    proc = svcm_env("restore", "--from", doc["path"], "--data-dir", str(target), env=env)
    assert proc.returncode == 0, proc.stderr
    restored = Server(target, admin_token=srv.admin_token).start()
    try:
        assert restored.metrics(key, **FROM)["pageviews"] == 20
    finally:
        restored.stop()
