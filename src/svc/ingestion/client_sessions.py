"""The client-named sessions the tracker remembers, kept across a restart.

A client's ``sessionId`` is one session whatever the gaps between its events
(:class:`svc.ingestion.identity.SessionTracker`): its start and first person are remembered
for days, longer than start-up's seeding from recent events reaches (the sessions of the last
hour). :func:`save` writes them to ``<data dir>/client-sessions`` when the service stops, and
:func:`load` reads them back at start-up, so that a session a client goes on with after a
restart keeps its start and visitor. The file holds salted hashes only, like the event store
(0600 in the 0700 data directory); it is deleted once read. After a crash there is no file:
the sessions of the last hour are seeded from the store, older ones start again (docs/api.md).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

import msgspec

from svc.ingestion.identity import SessionTracker

log = logging.getLogger(__name__)

FILE: Final = "client-sessions"
# (session id, start ms, last ms, project, visitor, seen ms), least recently active first
Rows = list[tuple[int, int, int, str, int, int]]


def save(tracker: SessionTracker, data_dir: Path) -> int:
    """Write the tracker's client sessions to the data directory; how many."""
    rows = tracker.client_sessions()
    path = data_dir / FILE
    tmp = path.with_name(FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.msgpack.encode(rows))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return len(rows)


def load(tracker: SessionTracker, data_dir: Path, now_ms: int) -> int:
    """Give the tracker the client sessions a previous run saved (then delete the file); how
    many. A file that cannot be read is set aside with a warning: nothing but these sessions'
    continuity is lost."""
    path = data_dir / FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    try:
        rows = msgspec.msgpack.decode(data, type=Rows)
    except msgspec.DecodeError as exc:
        log.warning("cannot read %s (%s): client sessions start again", path, exc)
        os.replace(path, path.with_name(FILE + ".unreadable"))
        return 0
    count = tracker.restore_clients(rows, now_ms)
    path.unlink()
    return count
