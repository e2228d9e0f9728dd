"""Every combination the combinations bench samples answers the same from the read models as
from the events (issue 40, Targets).

The store is made as ``bench/query_bench.py`` makes its store (its generator, written into
the store by SQL, the days that are over rolled up), a few thousand events over ten days; the
cases are the first :data:`CASES` of ``bench/combinations_bench.py``'s sample
(``bench/query_combinations.py``, the same seed). Each is asked twice: as it is, and with one
more filter, ``event:matches:.``, which keeps every event but sends the report down the events
path (the matching events in the range grouped by session, ``Counting.IN_RANGE`` of
svc.queries.plan; a regular expression: neither it nor its negation is known to keep only
reported events), as tests/test_sessions_table.py does. The two answers must be equal.

The bench's whole sample (300 cases) agreed both ways on this store and on a 20,000-event
one when this was written; the test keeps to a prefix for time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support import ROOT, Server, run_store_script

sys.path.insert(0, str(ROOT / "bench"))

import query_combinations as combos

#: The filter that sends a report over the events and keeps every event.
EVENTS_PATH = "event:matches:."
#: Cases checked: a prefix of the bench's sample (a sample is dealt in order, so the first
#: cases of a larger sample are these).
CASES = 40
#: The custom properties' keys of the generated events (bench/query_bench.py's), in the order
#: GET /metrics/properties gives them (the fixture checks it): the bench samples with them.
PROP_KEYS = ("plan", "value")
#: The store: events asked for, days, and sessions (fewer than the generator's default, so
#: that no session is cut off and every day has its share).
EVENTS, DAYS, SESSIONS = 4000, 10, 1100

GENERATE = """
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
import query_bench
info = query_bench.generate(
    Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sessions=int(sys.argv[4])
)
print(json.dumps(info))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    """A server on the generated store, and the store's marker (project, keys, end)."""
    data = tmp_path_factory.mktemp("combinations") / "data"
    info = run_store_script(GENERATE, str(data), str(EVENTS), str(DAYS), str(SESSIONS))
    srv = Server(data, admin_token=info["admin_token"]).start()
    yield srv, info
    srv.stop()


@pytest.fixture(scope="module")
def values(store: tuple[Server, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """The filters' values, found in the store as the bench finds them."""
    srv, info = store
    get = getter(srv, info["secret"])
    last = (datetime.fromisoformat(info["end"]) - timedelta(milliseconds=1)).date()
    first = last - timedelta(days=DAYS - 1)
    assert tuple(combos.property_keys(get, first, last)) == PROP_KEYS
    return combos.discover(get, first, last, PROP_KEYS)


def getter(srv: Server, key: str) -> combos.Get:
    def get(path: str, params: list[tuple[str, str]]) -> dict[str, Any]:
        r = httpx.get(
            srv.url + path, params=params, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        assert r.status_code == 200, f"{path} {params}: {r.text}"
        body: dict[str, Any] = r.json()
        return body

    return get


SAMPLED = combos.sample(CASES, combos.SEED, PROP_KEYS)


@pytest.mark.parametrize("case", SAMPLED, ids=[f"{c.index} {c.name}" for c in SAMPLED])
def test_the_events_path_gives_the_same_answer(
    store: tuple[Server, dict[str, Any]], values: dict[str, tuple[str, str]], case: combos.Case
) -> None:
    srv, info = store
    get = getter(srv, info["secret"])
    today = datetime.now(UTC).date()
    tables = get(case.path, case.params(values, today))
    events = get(case.path, case.params(values, today, extra=[EVENTS_PATH]))
    assert tables == events
