"""Cookie-free visitor and session identity.

A visitor is ``blake2b(key=daily salt, project | client address | user agent)``, 64 bits. The
salt rotates at midnight UTC; yesterday's salt is kept so a session that runs over midnight
continues, and salts older than two days are destroyed (the metadata store deletes them), after
which no stored id can be linked back to an address. No address is stored.

A session is one visitor's run of events with no gap over the timeout (30 minutes). A client's
own ``sessionId`` names its session as it is (hashed with the project into 64 bits), whatever the
gaps between its events: its start and its visitor (the person of its first event seen) are
remembered for :data:`CLIENT_SESSION_MEMORY_MS` after its last event arrived, for at most
:data:`CLIENT_SESSIONS_MAX` sessions (the least recently active forgotten first).

The *stored* visitor id is the visitor hash mixed with the UTC day its session began
(:func:`stored_visitor_id`): a visitor is a person on one day, as the daily salt makes it anyway,
and a late event (sent days after it happened, hashed with today's salt) cannot make one id
appear on two days. So visitors add up over days exactly, and daily rollups can hold them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_HASH = hashlib.blake2b
_DAY_MS = 86_400_000
#: How long a client-named session is remembered after an event of it last arrived (ms): the
#: 7 days ingestion takes late events in, and a day.
CLIENT_SESSION_MEMORY_MS = 8 * _DAY_MS
#: At most this many client-named sessions are remembered (about 60 MB).
CLIENT_SESSIONS_MAX = 200_000


def _u64(digest: bytes) -> int:
    return int.from_bytes(digest, "little")


def client_session_id(project_id: str, session_id: str) -> int:
    """The stored id of a client-named session (remembered: a session's events repeat it)."""
    key = (project_id, session_id)
    sid = _CLIENT_SESSION_IDS.get(key)
    if sid is None:
        if len(_CLIENT_SESSION_IDS) >= _CLIENT_SESSION_IDS_MAX:
            _CLIENT_SESSION_IDS.clear()
        sid = _CLIENT_SESSION_IDS[key] = _u64(
            _HASH(
                f"{project_id}\x00{session_id}".encode(), digest_size=8, person=b"svc-sess"
            ).digest()
        )
    return sid


_CLIENT_SESSION_IDS: dict[tuple[str, str], int] = {}
_CLIENT_SESSION_IDS_MAX = 65_536


def derived_session_id(visitor_id: int, start_ms: int) -> int:
    """The stored id of a derived session: its visitor and start time."""
    data = visitor_id.to_bytes(8, "little") + start_ms.to_bytes(8, "little")
    return _u64(_HASH(data, digest_size=8, person=b"svc-dsid").digest())


def _day_key(day: int) -> int:
    return _u64(_HASH(day.to_bytes(4, "little"), digest_size=8, person=b"svc-vday").digest())


_DAY_KEYS: dict[int, int] = {}


def stored_visitor_id(visitor: int, session_start_ms: int) -> int:
    """The visitor id stored with an event: mixed with the UTC day of its session's start.
    Its own inverse: ``stored_visitor_id(stored_visitor_id(v, t), t) == v``."""
    day = session_start_ms // _DAY_MS
    key = _DAY_KEYS.get(day)
    if key is None:
        if len(_DAY_KEYS) > 64:
            _DAY_KEYS.clear()
        key = _DAY_KEYS[day] = _day_key(day)
    return visitor ^ key


def utc_day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def salt_days(now_ms: int) -> list[str]:
    """The days whose salts are live at ``now_ms``: yesterday and today (UTC)."""
    today = datetime.fromtimestamp(now_ms / 1000, UTC)
    return [(today - timedelta(days=1)).strftime("%Y-%m-%d"), today.strftime("%Y-%m-%d")]


class Salts:
    """The live salts, refreshed from the metadata store when the day changes."""

    def __init__(self, fetch: Callable[[list[str]], dict[str, bytes]]) -> None:
        self._fetch = fetch
        self._days: list[str] = []
        self._salts: dict[str, bytes] = {}
        # The UTC day number the salts below are for (a cheap check on the hot path).
        self._day = -1
        self._today = b""
        self._yesterday = b""

    def refresh(self, now_ms: int) -> None:
        day = now_ms // _DAY_MS
        if day == self._day:
            return
        days = salt_days(now_ms)
        if days != self._days:
            self._salts = self._fetch(days)
            self._days = days
        self._yesterday, self._today = self._salts[days[0]], self._salts[days[1]]
        self._day = day

    def today(self, now_ms: int) -> bytes:
        if now_ms // _DAY_MS != self._day:
            self.refresh(now_ms)
        return self._today

    def yesterday(self, now_ms: int) -> bytes:
        if now_ms // _DAY_MS != self._day:
            self.refresh(now_ms)
        return self._yesterday


def visitor_id(salt: bytes, project_id: str, address: str, user_agent: str) -> int:
    data = f"{project_id}\x00{address}\x00{user_agent}".encode()
    return _u64(_HASH(data, digest_size=8, key=salt, person=b"svc-vis").digest())


#: (salt, address, user agent, visitor id): the last visitor id a request computed.
VisitorMemo = tuple[bytes, str, str, int]


def remembered_visitor_id(
    memo: VisitorMemo | None, salt: bytes, project_id: str, address: str, user_agent: str
) -> tuple[int, VisitorMemo]:
    """:func:`visitor_id`, taken from ``memo`` when it holds the same salt (the same object),
    address and user agent (a batch's events nearly always share them), and the memo of the
    answer."""
    if memo is not None and memo[0] is salt and memo[1] == address and memo[2] == user_agent:
        return memo[3], memo
    visitor = visitor_id(salt, project_id, address, user_agent)
    return visitor, (salt, address, user_agent, visitor)


@dataclass(slots=True)
class _Session:
    session_id: int
    visitor_id: int
    start_ms: int  # the first event seen: keys the session's row, never moves
    first_ms: int
    last_ms: int
    seen_ms: int = 0  # when an event of it last arrived (the clock, not the event's time)


@dataclass(slots=True)
class _ClientSession:
    start_ms: int
    last_ms: int
    project_id: str = ""
    visitor: int = 0  # the person (the unmixed visitor hash) of its first event seen
    seen_ms: int = 0  # when an event of it last arrived (the clock, not the event's time)


class SessionTracker:
    """Assigns derived session ids (a new session after ``timeout_ms`` without events) and
    the start of every live session, derived or named by the client.

    A session's *start* is the time of the first of its events seen here; it never moves (a
    late event may be earlier), because the sessions table is keyed by its day. State is in
    memory, keyed by (project, visitor) for derived sessions and by session id for the
    client's; at start-up it is rebuilt from recent events (store and spool) with
    :meth:`seed`. A derived session is forgotten once the timeout has passed both since its
    last event and since an event of it last arrived: a session sent late (events with a past
    ``ts``, a queue flushed by an app back online) goes on across requests that arrive within
    the timeout of each other, whatever the event times. A client's
    session is one session whatever its gaps (the client owns it): it is remembered for
    :data:`CLIENT_SESSION_MEMORY_MS` after its last event arrived, at most
    :data:`CLIENT_SESSIONS_MAX` of them, in the order they were last active (so forgetting
    reads only the forgotten); one forgotten that goes on later starts again, and on another
    day its row is a second session (docs/api.md).
    """

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self._sessions: dict[tuple[str, int], _Session] = {}
        self._clients: dict[int, _ClientSession] = {}

    def __len__(self) -> int:
        return len(self._sessions) + len(self._clients)

    def has_active(self, project_id: str, visitor: int, ts_ms: int) -> bool:
        s = self._sessions.get((project_id, visitor))
        return s is not None and ts_ms - s.last_ms <= self.timeout_ms

    def assign(self, project_id: str, visitor: int, ts_ms: int, now_ms: int = 0) -> tuple[int, int]:
        """The derived session of an event that arrived at ``now_ms``: (session id, session
        start ms)."""
        key = (project_id, visitor)
        s = self._sessions.get(key)
        if s is not None:
            if s.first_ms - self.timeout_ms <= ts_ms <= s.last_ms + self.timeout_ms:
                if ts_ms > s.last_ms:
                    s.last_ms = ts_ms
                if ts_ms < s.first_ms:
                    s.first_ms = ts_ms
                if now_ms > s.seen_ms:
                    s.seen_ms = now_ms
                return s.session_id, s.start_ms
            if ts_ms < s.first_ms:
                # A late event from well before the current session: its own session.
                return derived_session_id(visitor, ts_ms), ts_ms
        sid = derived_session_id(visitor, ts_ms)
        self._sessions[key] = _Session(sid, visitor, ts_ms, ts_ms, ts_ms, now_ms)
        return sid, ts_ms

    def live(self, project_id: str, visitor: int) -> tuple[int, int] | None:
        """The visitor's session still held here, whatever its idle time: (id, start ms), or
        None. Changes nothing (a page measurement's lookup: it neither starts nor extends)."""
        s = self._sessions.get((project_id, visitor))
        return None if s is None else (s.session_id, s.start_ms)

    def client_start_of(self, session_id: int) -> int | None:
        """The start (ms) of a client-named session held here, or None; changes nothing."""
        s = self._clients.get(session_id)
        return None if s is None else s.start_ms

    def client_start(self, session_id: int, ts_ms: int, project_id: str = "") -> int:
        """The start (ms) of a client-named session, given one of its events."""
        return self.client_session(session_id, ts_ms, project_id)[0]

    def client_session(
        self, session_id: int, ts_ms: int, project_id: str = "", visitor: int = 0, now_ms: int = 0
    ) -> tuple[int, int]:
        """(start ms, visitor) of a client-named session, given one of its events, the person
        who sent it (``visitor``: the first event's stays the session's) and the time it
        arrived."""
        clients = self._clients
        s = clients.pop(session_id, None)  # back in at the end: the most recently active
        if s is None:
            s = _ClientSession(ts_ms, ts_ms, project_id, visitor, now_ms)
            if len(clients) >= CLIENT_SESSIONS_MAX:
                del clients[next(iter(clients))]
        else:
            if ts_ms > s.last_ms:
                s.last_ms = ts_ms
            if now_ms > s.seen_ms:
                s.seen_ms = now_ms
        clients[session_id] = s
        return s.start_ms, s.visitor

    def client_sessions(self) -> list[tuple[int, int, int, str, int, int]]:
        """The client-named sessions remembered, least recently active first: (session id,
        start ms, last ms, project, visitor, seen ms) (svc.ingestion.client_sessions)."""
        return [
            (sid, c.start_ms, c.last_ms, c.project_id, c.visitor, c.seen_ms)
            for sid, c in self._clients.items()
        ]

    def restore_clients(
        self, rows: Iterable[tuple[int, int, int, str, int, int]], now_ms: int
    ) -> int:
        """Take back :meth:`client_sessions` of a previous run (least recently active first),
        before the sessions seeded since, which are more recent; those forgotten by now are
        left out. Returns how many were taken."""
        forget = now_ms - CLIENT_SESSION_MEMORY_MS
        merged: dict[int, _ClientSession] = {}
        for sid, start_ms, last_ms, project_id, visitor, seen_ms in rows:
            if seen_ms >= forget:
                merged[sid] = _ClientSession(start_ms, last_ms, project_id, visitor, seen_ms)
        taken = len(merged)
        for sid, seeded in self._clients.items():
            old = merged.pop(sid, None)
            if old is not None:  # the saved one began it: its start and person
                seeded.start_ms = min(seeded.start_ms, old.start_ms)
                seeded.last_ms = max(seeded.last_ms, old.last_ms)
                seeded.visitor = old.visitor
                seeded.seen_ms = max(seeded.seen_ms, old.seen_ms)
            merged[sid] = seeded
        while len(merged) > CLIENT_SESSIONS_MAX:
            del merged[next(iter(merged))]
        self._clients = merged
        return taken

    def seed(self, rows: Iterable[tuple[str, int, int, int, int, int, int]]) -> None:
        """Rows of (project, visitor, session id, start ms, first ms, last ms, arrival ms of
        its last event received). For derived sessions the latest session of a visitor wins;
        every row also seeds the start of a client-named session (ids of derived sessions are
        never looked up there)."""
        for project_id, visitor, sid, start_ms, first_ms, last_ms, seen_ms in rows:
            key = (project_id, visitor)
            current = self._sessions.get(key)
            if current is not None and current.session_id == sid:  # more of the same session
                current.first_ms = min(current.first_ms, first_ms)
                current.last_ms = max(current.last_ms, last_ms)
                current.seen_ms = max(current.seen_ms, seen_ms)
            elif current is None or last_ms > current.last_ms:
                self._sessions[key] = _Session(sid, visitor, start_ms, first_ms, last_ms, seen_ms)
            client = self._clients.get(sid)
            if client is None:
                self._clients[sid] = _ClientSession(start_ms, last_ms, project_id, visitor, seen_ms)
            else:
                client.start_ms = min(client.start_ms, start_ms)
                client.last_ms = max(client.last_ms, last_ms)
                client.seen_ms = max(client.seen_ms, seen_ms)

    def forget_project(self, project_id: str) -> None:
        """Forget every live session of a project (it was deleted)."""
        self._sessions = {k: s for k, s in self._sessions.items() if k[0] != project_id}
        self._clients = {k: c for k, c in self._clients.items() if c.project_id != project_id}

    def expire(self, now_ms: int) -> int:
        """Forget the derived sessions idle for longer than the timeout, by their events'
        time and by the clock alike (see the class), and the client sessions not seen for
        :data:`CLIENT_SESSION_MEMORY_MS`; returns how many."""
        cutoff = now_ms - self.timeout_ms
        stale = [k for k, s in self._sessions.items() if s.last_ms < cutoff and s.seen_ms < cutoff]
        for k in stale:
            del self._sessions[k]
        # client sessions, in the order they were last active: the forgotten are at the front
        forget = now_ms - CLIENT_SESSION_MEMORY_MS
        stale_clients = []
        for sid, c in self._clients.items():
            if c.seen_ms >= forget:
                break
            stale_clients.append(sid)
        for sid in stale_clients:
            del self._clients[sid]
        return len(stale) + len(stale_clients)
