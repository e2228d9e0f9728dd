"""What the fault tests share: a small real filesystem, clients that count what was
acknowledged, and the exact comparison of acknowledged against stored."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.support import Server

#: Keep the open segment open: the records of a test stay in one ``.log`` file.
HOLD_SPOOL = {"SVC_SPOOL_FLUSH_INTERVAL_MS": "600000", "SVC_SPOOL_SEGMENT_BYTES": "67108864"}

_SEQ = re.compile(rb'"seq":"(\d+)"')


@contextmanager
def small_filesystem(where: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``where`` (needs root, as CI runs). Outside CI a
    machine that cannot mount skips the test and says why; in CI it fails."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        message = f"cannot mount a tmpfs for a full-disk test: {done.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(directory: Path, leave_bytes: int) -> Path:
    """Fill the filesystem of ``directory`` but ``leave_bytes``; returns the filler file."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    filler = directory / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave_bytes))
    return filler


def batch(first: int, n: int) -> list[dict[str, Any]]:
    """``n`` page views numbered from ``first``, each with an eventId of its own."""
    return [
        {
            "event": "page_view",
            "url": f"/e/{first + i}",
            "eventId": f"ev-{first + i}",
            "properties": {"seq": str(first + i), "pad": "x" * 200},
        }
        for i in range(n)
    ]


def seqs_of(events: list[dict[str, Any]]) -> list[int]:
    return [int(e["properties"]["seq"]) for e in events]


def seqs_in(payload: bytes) -> list[int]:
    """The ``seq`` of each spooled row in a record's payload."""
    return [int(m) for m in _SEQ.findall(payload)]


class Acknowledged:
    """What the service answered 200 for, and what it refused, across client threads."""

    def __init__(self) -> None:
        self.ok: list[int] = []
        self.refused: list[list[int]] = []
        self.unanswered: list[list[int]] = []  # the connection broke: stored whole or not
        self.lock = threading.Lock()

    def send(self, http: httpx.Client, url: str, events: list[dict[str, Any]]) -> int | None:
        try:
            r = http.post(url + "/analytics", json=events if len(events) > 1 else events[0])
        except httpx.HTTPError:
            with self.lock:  # no answer: neither acknowledged nor known refused
                self.unanswered.append(seqs_of(events))
            return None
        with self.lock:
            if r.status_code == 200:
                assert r.json().get("accepted", 1) == len(events), r.text
                self.ok.extend(seqs_of(events))
            elif r.status_code >= 500:
                self.refused.append(seqs_of(events))
        return r.status_code


def client(key: str) -> httpx.Client:
    return httpx.Client(
        headers={"Authorization": f"Bearer {key}", "User-Agent": BROWSER_UA}, timeout=10
    )


def stored_seqs(srv: Server, project: dict[str, Any]) -> Counter[int]:
    rows = srv.events(project["id"], project["keys"]["secret"])
    return Counter(int(r["properties"]["seq"]) for r in rows)


def assert_exactly(
    stored: Counter[int], expected: set[int], unanswered: list[list[int]] | None = None
) -> None:
    """Every expected event stored once, nothing else stored but whole batches whose answer
    never arrived (the service may have made them durable just before it died)."""
    doubled = sorted(s for s, n in stored.items() if n > 1)
    missing = sorted(expected - set(stored))
    maybe: set[int] = set()
    for seqs in unanswered or []:
        kept = set(seqs) & set(stored)
        assert not kept or kept == set(seqs), f"part of an unanswered batch stored: {seqs[:5]}"
        maybe |= kept
    extra = sorted(set(stored) - expected - maybe)
    assert not doubled, f"{len(doubled)} events stored twice: {doubled[:10]}"
    assert not missing, f"{len(missing)} acknowledged events lost: {missing[:10]}"
    assert not extra, f"{len(extra)} events stored that were not acknowledged: {extra[:10]}"


def quarantine_index(data_dir: Path) -> list[dict[str, Any]]:
    index = data_dir / "spool" / "quarantine" / "index.jsonl"
    if not index.exists():
        return []
    return [json.loads(line) for line in index.read_text().splitlines()]
