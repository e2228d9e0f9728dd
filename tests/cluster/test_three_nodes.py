"""Three svc nodes on one PostgreSQL, one Redis and the ClickHouse double
(tests.clickhouse_double), behind a load balancer of the test's that sends each request to a
random node: the reports equal a single node's on the same events (derived and client
sessions, a session over midnight, a long one, late events, filters, goals, funnels); and
under load, ``kill -9`` of a node at random points loses no acknowledged event and stores
none twice, with clients that send a request again until it is answered.

Salts are random per metadata store, so the cluster's ids differ from the single node's:
the reports' numbers are compared, not ids."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from svc.meta.store import MetaStore
from tests.clickhouse_double import RunningDouble, clickhouse_double  # noqa: F401
from tests.limits.conftest import running_redis
from tests.support import Server, admin_token
from tests.test_meta_store import postgres_url

DAY = (datetime.now(UTC) - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/12{}.0.0.0 Safari/537.36"


def at(hour: int, minute: int, day: int = 0) -> int:
    return int((DAY + timedelta(days=day, hours=hour, minutes=minute)).timestamp() * 1000)


def ev(visitor: int, ts: int, name: str = "page_view", path: str = "/", **extra: Any) -> dict:
    return {
        "event": name,
        "url": f"https://acme.test{path}",
        "ts": ts,
        "ip": f"10.0.0.{visitor}",
        "userAgent": UA.format(visitor),
        "eventId": uuid.uuid4().hex,
        **extra,
    }


# The golden set (tests/test_metrics_golden.py) and more: a session over midnight, a long one
# (events 20 minutes apart for 3 hours), a late event (sent after the others, 5 minutes
# before its session began: the same session), a late event from hours before (its own).
EVENTS = [
    ev(1, at(10, 0), referrer="https://www.google.com/search?q=acme"),
    ev(1, at(10, 20), path="/pricing"),
    ev(1, at(10, 51)),
    ev(2, at(11, 0), path="/?utm_source=Newsletter", referrer="https://t.co/xyz"),
    ev(2, at(11, 5), name="signup", properties={"plan": "pro", "source": "hero"}),
    ev(3, at(12, 0), referrer="https://acme.test/blog"),
    ev(4, at(13, 0), sessionId="cs-1", referrer="https://news.ycombinator.com/item?id=1"),
    ev(4, at(14, 0), sessionId="cs-1", path="/docs"),
    ev(5, at(15, 0), name="download"),
    ev(6, at(23, 50), path="/pricing"),
    ev(6, at(0, 10, day=1), path="/signup"),
    ev(6, at(0, 15, day=1), name="signup"),
    *(ev(7, at(16, 0) + i * 20 * 60_000, path=f"/p{i % 3}") for i in range(10)),
    ev(3, at(11, 55), path="/late"),
    ev(8, at(9, 0), path="/pricing"),
    ev(8, at(9, 10), path="/signup"),
    ev(8, at(9, 12), name="signup"),
    ev(1, at(6, 0), path="/early"),
]

#: The reports compared, as (path, parameters) on the range of the two days.
RANGE = {"from": DAY.date().isoformat(), "to": (DAY + timedelta(days=1)).date().isoformat()}
REPORTS: list[tuple[str, dict[str, Any]]] = [
    ("/metrics", {}),
    ("/metrics", {"filter": "page:is:/pricing"}),
    ("/metrics", {"filter": "source:is:google"}),
    ("/metrics/timeseries", {"interval": "day"}),
    ("/metrics/breakdown", {"by": "page"}),
    ("/metrics/breakdown", {"by": "source"}),
    ("/metrics/goals", {"goal": ["event:signup", "page:/pricing"]}),
    ("/metrics/funnel", {"step": ["page:/pricing", "page:/signup", "event:signup"]}),
]


METRICS_TOKEN = "cluster-metrics-token-" + "x" * 8


@dataclass
class Cluster:
    """The nodes and what they share; :meth:`pick` is the load balancer."""

    nodes: list[Server]
    rnd: random.Random
    lock: threading.Lock

    def pick(self) -> Server:
        with self.lock:
            return self.rnd.choice(self.nodes)

    def send(self, key: str, body: Any, timeout: float = 30) -> httpx.Response:
        return self.pick().send(key, body, timeout=timeout)

    def wait_loaded(self) -> None:
        for node in self.nodes:
            try:
                node.wait_loaded(180)  # the double serves the nodes one engine
            except TimeoutError:  # its threads are in the error; the others' printed
                for other in self.nodes:
                    if other is not node:
                        print("=====", other.data_dir, other.thread_stacks())
                raise


def node_env(double: RunningDouble, redis_url: str, i: int) -> dict[str, str]:
    return {
        "SVC_CLICKHOUSE_URL": double.url,
        "SVC_META_URL": postgres_url(),
        "SVC_REDIS_URL": redis_url,
        "SVC_NODE_ID": f"node-{i}",
        "SVC_JOB_LEASE_SECONDS": "3",
        "SVC_EVENT_ID_PENDING_SECONDS": "5",
        "SVC_INTERNAL_METRICS_TOKEN": METRICS_TOKEN,
        "SVC_ROLLUP_INTERVAL_SECONDS": "0.5",
        "SVC_HOUSEKEEPING_INTERVAL_SECONDS": "0.5",
        # the load comes from one address, faster than its default share on a quiet machine
        "SVC_RATE_LIMIT_INGEST_PER_IP": "0",
    }


@pytest.fixture(scope="module")
def cluster(
    clickhouse_double: RunningDouble,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    meta = MetaStore(postgres_url())
    with meta.engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    meta.migrate()  # once, before three nodes start at once
    meta.close()
    token = admin_token()
    with ExitStack() as stack:
        redis_url = stack.enter_context(running_redis(root))
        nodes = [
            Server(
                root / f"node-{i}",
                env=node_env(clickhouse_double, redis_url, i),
            )
            for i in range(3)
        ]
        for node in nodes:
            node.admin_token = token
            stack.callback(node.stop)
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda n: n.start(timeout=180), nodes))
        yield Cluster(nodes, random.Random(43), threading.Lock())


def report(srv: Server, key: str, path: str, params: dict[str, Any]) -> dict[str, Any]:
    r = httpx.get(
        srv.url + path,
        params={**RANGE, **params},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert r.status_code == 200, (path, params, r.text)
    body: dict[str, Any] = r.json()
    body.pop("meta", None)
    return body


def test_three_nodes_report_what_one_node_reports(cluster: Cluster, server: Server) -> None:
    name = "golden-" + uuid.uuid4().hex[:8]
    one = server.create_project(name, domains=["acme.test"])
    many = cluster.nodes[0].create_project(name, domains=["acme.test"])
    for event in EVENTS:  # one request each, in order, each to a random node
        assert server.send(one["keys"]["secret"], event).status_code == 200
        r = cluster.send(many["keys"]["secret"], event)
        assert r.status_code == 200, r.text
    # sent twice, to other nodes: stored once
    for event in EVENTS[:5]:
        r = cluster.send(many["keys"]["secret"], event)
        assert r.status_code == 200, r.text
    server.wait_loaded()
    cluster.wait_loaded()
    # a rollup pass after every node loaded, on the single node as on the lease holder: the
    # days are 3 days old, rolled up as their first events land; events loaded after a day's
    # rollup are counted from the next pass (a loaded run once read the single node before
    # it: 15 of the 27 events)
    time.sleep(2)
    expected = [report(server, one["keys"]["secret"], p, q) for p, q in REPORTS]
    assert expected[0]["sessions"] > 0
    for node in cluster.nodes:  # each node answers alike (its memo never stale)
        got = [report(node, many["keys"]["secret"], p, q) for p, q in REPORTS]
        for (path, params), want, have in zip(REPORTS, expected, got, strict=True):
            assert have == want, (node.data_dir.name, path, params)
    holders = Counter(
        lease["holder"]
        for node in cluster.nodes
        for lease in node.health()["node"]["leases"]["leases"]
        if lease["heldHere"]
    )
    assert holders and all(n == 1 for n in holders.values())  # each job on one node
    held: Counter[str] = Counter()  # the same in the metrics: each job on one node at most
    for node in cluster.nodes:
        r = httpx.get(
            node.url + "/internal/metrics",
            headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
            timeout=30,
        )
        assert r.status_code == 200
        for line in r.text.splitlines():
            if line.startswith("svc_job_lease_held{"):
                job = line.split('job="', 1)[1].split('"', 1)[0]
                held[job] += int(float(line.rsplit(" ", 1)[1]))
        assert "svc_shared_state_fallbacks_total" in r.text
    assert held["rollups"] == 1 and max(held.values()) == 1


def test_kill_9_under_load_loses_no_acknowledged_event(cluster: Cluster) -> None:
    project = cluster.nodes[0].create_project("load-" + uuid.uuid4().hex[:8])
    key = project["keys"]["secret"]
    acked: list[str] = []
    sent: list[str] = []
    retried: list[int] = []  # requests sent again (unanswered: their node was killed; or 503)
    stop = threading.Event()
    lock = threading.Lock()
    rnd = random.Random(7)

    def load(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            batch = [
                ev(worker * 10 + k % 5, int(time.time() * 1000), path=f"/w{worker}/{n}")
                for k in range(1 + n % 3)
            ]
            with lock:
                sent.extend(e["eventId"] for e in batch)
            # not answered (its node was killed) or 503 (an id pending elsewhere): the same
            # batch again, to a random node, as a client with eventIds does
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                try:
                    r = cluster.send(key, batch, timeout=10)
                except httpx.HTTPError:
                    retried.append(1)
                    time.sleep(0.3)
                    continue
                if r.status_code == 200:  # each event stored, here or by an earlier copy
                    with lock:
                        acked.extend(e["eventId"] for e in batch)
                    break
                assert r.status_code == 503, r.text
                retried.append(1)
                time.sleep(0.3)

    with ThreadPoolExecutor(4) as pool:
        workers = [pool.submit(load, w) for w in range(4)]
        for _ in range(2):  # kill -9 a random node at a random point, then restart it
            time.sleep(rnd.uniform(1.0, 3.0))
            victim = rnd.choice(cluster.nodes)
            victim.stop(kill=True)
            time.sleep(rnd.uniform(0.5, 1.5))
            victim.start(timeout=180)
        time.sleep(1.0)
        stop.set()
        for w in workers:
            w.result()
    cluster.wait_loaded()
    stored = Counter(e["event_id"] for e in cluster.nodes[0].events(project["id"], key))
    assert acked, "no request was acknowledged"
    assert retried, "no request met a dead node: the test proved nothing"
    missing = [e for e in acked if stored[e] != 1]
    assert not missing, f"{len(missing)} acknowledged events not stored once"
    assert max(stored.values()) == 1  # nothing doubled, acknowledged or not
    assert set(stored) <= set(sent)
