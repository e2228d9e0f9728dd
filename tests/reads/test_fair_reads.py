"""Many tenants at once, against a real server (issue 39): one project's slow reads (long
paths under a costly pattern) neither hold another project's reads back nor /health nor the
loader; a project past its share of reads waits its turn or gets 503 ``busy``; an export
takes a slot of its project's share until its client leaves; a read past its memory is
refused and the server stays healthy. Functional, not timed: each test checks what answered
while the slow reads were still running."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import Server, is_error
from tests.test_metrics_golden import DAY, at, ev

D = DAY.date().isoformat()
#: A pattern within the bounds of svc.queries.filters that RE2 runs slowly over long paths of
#: random a and b (a DFA too large to keep): seconds for a report over 400 such paths.
SLOW = {"from": D, "filter": "page:matches:a.{90}[^ab]"}
LIGHT = {"from": D}
#: A read that is not light (a contains filter scans the values): it waits in the others' lane.
OTHER = {"from": D, "filter": "page:contains:/"}


def bearer(project: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {project['keys']['secret']}"}


def start(tmp: Path, **env: str) -> tuple[Server, dict[str, Any], dict[str, Any]]:
    """A server with a project of 400 events on long paths (slow to filter) and a small one."""
    srv = Server(tmp / "data", env={"SVC_LOG_LEVEL": "info", **env}).start()
    big = srv.create_project("big", domains=["acme.test"])
    small = srv.create_project("small", domains=["acme.test"])
    rng = random.Random(39)
    for part in range(2):
        events = [
            ev(i % 250 + 1, at(10, i % 60), path="/" + "".join(rng.choices("ab", k=1500)))
            for i in range(part * 200, (part + 1) * 200)
        ]
        assert srv.send(big["keys"]["secret"], events).status_code == 200
    assert srv.send(small["keys"]["secret"], [ev(1, at(9, 0)), ev(2, at(9, 5))]).status_code == 200
    srv.wait_loaded()
    return srv, big, small


class Background:
    """A GET run in a thread; :attr:`response` once it is answered."""

    def __init__(self, srv: Server, project: dict[str, Any], params: dict[str, str]) -> None:
        self.response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._get, args=(srv, project, params), daemon=True)
        self._thread.start()

    def _get(self, srv: Server, project: dict[str, Any], params: dict[str, str]) -> None:
        self.response = httpx.get(
            srv.url + "/metrics", params=params, headers=bearer(project), timeout=120
        )

    @property
    def done(self) -> bool:
        return self.response is not None

    def wait(self) -> httpx.Response:
        self._thread.join(120)
        assert self.response is not None
        return self.response


def reads_of(srv: Server) -> dict[str, int]:
    figures: dict[str, int] = httpx.get(srv.url + "/health", timeout=10).json()["reads"]
    return figures


def until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Any, Any]]:
    """One read at a time per project, a short wait for a turn; an export's hours each a
    piece of their own."""
    srv, big, small = start(
        tmp_path_factory.mktemp("fair-reads"),
        SVC_READ_SLOTS="3",
        SVC_READS_PER_PROJECT="1",
        SVC_READ_QUEUE_SECONDS="1",
        SVC_EXPORT_PIECE_EVENTS="1",
    )
    yield srv, big, small
    srv.stop()


def test_another_project_reads_while_one_is_slow_and_over_its_share(
    capped: tuple[Server, dict[str, Any], dict[str, Any]],
) -> None:
    srv, big, small = capped
    slow = Background(srv, big, SLOW)
    until(lambda: reads_of(srv)["running"] == 1)
    # the big project's second read waits its turn, then is refused: busy, never a hang
    second = httpx.get(srv.url + "/metrics", params=SLOW, headers=bearer(big), timeout=30)
    error = is_error(second, 503)["error"]
    assert error["code"] == "busy" and int(second.headers["Retry-After"]) >= 1, second.text
    # the small project's read starts at once, /health answers, events are loaded
    r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(small), timeout=30)
    assert r.status_code == 200 and r.json()["pageviews"] == 2, r.text
    assert httpx.get(srv.url + "/health", timeout=10).status_code == 200
    assert srv.send(small["keys"]["secret"], [ev(3, at(9, 10))]).status_code == 200
    srv.wait_loaded()
    r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(small), timeout=30)
    assert r.json()["pageviews"] == 3
    assert not slow.done, "the slow read ended before the others were answered"
    assert slow.wait().status_code == 200
    assert reads_of(srv)["refusedTotal"] >= 1


def test_a_projects_top_figures_go_in_the_light_lane_beside_its_slow_read(
    capped: tuple[Server, dict[str, Any], dict[str, Any]],
) -> None:
    srv, big, _ = capped
    slow = Background(srv, big, SLOW)
    until(lambda: reads_of(srv)["running"] == 1)
    # the same project's top figures without a scanning filter: a light read, not behind it
    r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(big), timeout=30)
    assert r.status_code == 200 and r.json()["pageviews"] == 400, r.text
    r = httpx.get(srv.url + "/metrics/realtime", headers=bearer(big), timeout=30)
    assert r.status_code == 200, r.text
    # under a contains filter it is not light: it waits behind the slow read, then is busy
    r = httpx.get(srv.url + "/metrics", params=OTHER, headers=bearer(big), timeout=30)
    assert is_error(r, 503)["error"]["code"] == "busy", r.text
    assert not slow.done, "the slow read ended before the others were answered"
    assert slow.wait().status_code == 200
    assert reads_of(srv)["lightSlots"] == 1


def test_a_project_over_its_share_waits_its_turn(
    capped: tuple[Server, dict[str, Any], dict[str, Any]],
) -> None:
    srv, _, small = capped
    light = [Background(srv, small, LIGHT) for _ in range(4)]
    assert [b.wait().status_code for b in light] == [200] * 4  # each within the 1 s wait
    assert reads_of(srv)["running"] == 0


def held_export(srv: Server, project: dict[str, Any]) -> socket.socket:
    """A GET /export of ``project`` whose client takes the headers and then reads nothing:
    the server sends pieces until the sockets' buffers are full (a few megabytes on
    loopback), then waits with pieces left, so the export is under way until the socket
    closes."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before the window is agreed
    sock.settimeout(30)
    sock.connect(("127.0.0.1", srv.port))
    token = project["keys"]["secret"]
    sock.sendall(
        f"GET /export?from={D} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        got = sock.recv(1024)
        assert got, head
        head += got
    assert head.startswith(b"HTTP/1.1 200"), head[:300]
    return sock


def test_an_export_takes_a_slot_of_its_projects_share_until_its_client_leaves(
    capped: tuple[Server, dict[str, Any], dict[str, Any]],
) -> None:
    srv, _, small = capped
    # ~6.8 MB of export in 16 pieces (an hour each): more than loopback's buffers take
    wide = srv.create_project("wide", domains=["acme.test"])
    properties = {f"p{k}": "x" * 2000 for k in range(40)}
    events = [
        ev(1, at(hour, minute), path="/" + "x" * 2000, properties=properties)
        for hour in range(16)
        for minute in range(5)
    ]
    for first in range(0, len(events), 10):  # within the body limit (1 MB)
        assert srv.send(wide["keys"]["secret"], events[first : first + 10]).status_code == 200
    srv.wait_loaded()
    sock = held_export(srv, wide)
    try:
        assert reads_of(srv)["running"] == 1  # taken before the headers left
        # the project's one slot is the export's: its read waits its turn, then is busy
        r = httpx.get(srv.url + "/metrics", params=OTHER, headers=bearer(wide), timeout=30)
        assert is_error(r, 503)["error"]["code"] == "busy" and int(r.headers["Retry-After"]) >= 1
        # and so is its next export: the JSON error, before any byte of a file
        r = httpx.get(srv.url + "/export", params=LIGHT, headers=bearer(wide), timeout=30)
        assert is_error(r, 503)["error"]["code"] == "busy" and "Retry-After" in r.headers
        # another project's read starts at once
        r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(small), timeout=30)
        assert r.status_code == 200 and r.json()["pageviews"] >= 2, r.text
        assert reads_of(srv)["running"] == 1, "the export ended while its client read nothing"
    finally:
        sock.close()
    # the client left: the export gives its slot back, and the project reads again
    until(lambda: reads_of(srv)["running"] == 0)
    r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(wide), timeout=30)
    assert r.status_code == 200 and r.json()["pageviews"] == len(events), r.text
    log = srv.log()
    assert "the client went away" in log and "Traceback" not in log, log[-3000:]


def test_health_answers_while_every_read_handle_is_busy(tmp_path: Path) -> None:
    srv, big, small = start(
        tmp_path, SVC_READ_SLOTS="2", SVC_READS_PER_PROJECT="2", SVC_READ_QUEUE_SECONDS="1"
    )
    try:
        slow = [Background(srv, big, SLOW) for _ in range(2)]
        until(lambda: reads_of(srv)["running"] == 2)
        health = httpx.get(srv.url + "/health", timeout=10)
        assert health.status_code == 200 and health.json()["store"]["reachable"] is True
        # no slot: the small project's read waits its turn, then is busy (never a hang)
        r = httpx.get(srv.url + "/metrics", params=OTHER, headers=bearer(small), timeout=30)
        assert is_error(r, 503)["error"]["code"] == "busy"
        # but its top figures take the light reads' slot
        r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(small), timeout=30)
        assert r.status_code == 200 and r.json()["pageviews"] == 2, r.text
        assert not any(b.done for b in slow)
        assert [b.wait().status_code for b in slow] == [200, 200]
        r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(small), timeout=30)
        assert r.status_code == 200
    finally:
        srv.stop()


def test_a_read_past_its_memory_is_busy_and_the_server_stays_healthy(tmp_path: Path) -> None:
    srv, big, _ = start(tmp_path, SVC_READ_MEMORY_LIMIT_MB="1")
    try:
        r = httpx.get(srv.url + "/metrics", params=SLOW, headers=bearer(big), timeout=60)
        error = is_error(r, 503)["error"]
        assert error["code"] == "busy" and "SVC_READ_MEMORY_LIMIT_MB" in error["message"]
        assert "Retry-After" in r.headers
        assert httpx.get(srv.url + "/health", timeout=10).status_code == 200
        assert reads_of(srv)["running"] == 0
        assert "Traceback" not in srv.log()
    finally:
        srv.stop()


def test_a_stopped_read_leaves_nothing_for_the_next(tmp_path: Path) -> None:
    """One read handle: a slow read whose client goes away is stopped mid-answer, and every
    read after it (on a fresh handle) answers its own figures."""
    srv, big, small = start(tmp_path, SVC_READ_SLOTS="1", SVC_READS_PER_PROJECT="1")
    try:
        for _ in range(2):
            with pytest.raises(httpx.ReadTimeout):
                httpx.get(srv.url + "/metrics", params=SLOW, headers=bearer(big), timeout=1.0)
            until(lambda: reads_of(srv)["running"] == 0, timeout=60)
            for project, views in ((small, 2), (big, 400)):
                r = httpx.get(srv.url + "/metrics", params=LIGHT, headers=bearer(project))
                assert r.status_code == 200 and r.json()["pageviews"] == views, r.text
        assert "Traceback" not in srv.log()
    finally:
        srv.stop()
