"""``purchases`` (storage migration 24): one row per purchase event, its revenue, currency and
items typed, which GET /metrics/revenue reads. Its typed columns are what the report's own
expressions over the event's properties give (items without a quantity count 1, a value that
is no number 0, a currency upper-cased, items that are no JSON array none), for every
purchase stored and no other event, a replayed block once; the migration's copy of the
purchases stored before it is the same.

The rows are written into a real store (chDB) as ingestion writes them, in a process of its
own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from tests.support import REPLAYED_BLOCKS, run_store_script, stored_row

T0 = int(datetime(2026, 11, 3, 9, tzinfo=UTC).timestamp() * 1000)

#: (name, properties): purchases of every shape the report meets, and other events.
EVENTS: list[tuple[str, dict[str, str]]] = [
    ("page_view", {}),
    (
        "purchase",
        {
            "value": "30",
            "currency": "eur",
            "items": json.dumps(
                [{"item_id": "sku1", "price": 10, "quantity": 3}, {"item_id": "sku2", "price": 2.5}]
            ),
        },
    ),
    ("purchase", {"value": "twelve", "currency": "USD", "items": "[]"}),
    ("purchase", {"value": "7.25"}),  # no currency, no items
    ("signup", {"value": "99", "currency": "EUR"}),  # not a purchase
    ("purchase", {"value": "1", "currency": "EUR", "items": "not json"}),
    ("purchase", {"value": "4", "items": json.dumps([{"price": 4, "quantity": 0.5}])}),
]

#: The report's expressions before storage migration 24, over ``report_events``.
_EXPECTED = """
SELECT session_id, upper(properties['currency']), toFloat64OrZero(properties['value']),
    arrayMap(i -> JSONExtractString(i, 'item_id'), JSONExtractArrayRaw(properties['items'])),
    arrayMap(i -> if(JSONHas(i, 'quantity'), JSONExtractFloat(i, 'quantity'), 1),
        JSONExtractArrayRaw(properties['items'])),
    arrayMap(i -> JSONExtractFloat(i, 'price'), JSONExtractArrayRaw(properties['items']))
FROM report_events WHERE name = 'purchase' ORDER BY session_id
"""

_SCRIPT = (
    REPLAYED_BLOCKS
    + f"""
stored = lambda: [list(r) for r in store.client.query(
    "SELECT session_id, currency, order_value, item_ids, item_quantities, item_prices "
    "FROM purchases ORDER BY session_id").result_rows]
out = {{"stored": stored(), "expected": [list(r) for r in store.client.query('''{_EXPECTED}''')
    .result_rows]}}
# the migration again, as after a crash before it was recorded: the same rows
store.client.command("DELETE FROM svc_migrations WHERE version = 24")
store.migrate()
out["again"] = stored()
store.close()
print(json.dumps(out))
"""
)


def ndjson(events: list[tuple[str, dict[str, str]]], first: int) -> str:
    rows = [
        stored_row(
            "shop", T0 + i, T0, name=name, session_id=first + i, visitor_id=1, path="/checkout",
            properties=properties,
        )
        for i, (name, properties) in enumerate(events)
    ]  # fmt: skip
    return (b"\n".join(msgspec.json.encode(r) for r in rows) + b"\n").decode()


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    blocks = [("shop-1", ndjson(EVENTS[:3], 0)), ("shop-2", ndjson(EVENTS[3:], 3))]
    out: dict[str, Any] = run_store_script(
        _SCRIPT, str(tmp_path_factory.mktemp("purchases") / "data"), stdin=json.dumps(blocks)
    )
    return out


def test_the_typed_columns_are_the_reports_expressions(read: dict[str, Any]) -> None:
    # every purchase once (the replayed block too), nothing else
    assert [r[0] for r in read["stored"]] == [1, 2, 3, 5, 6]
    assert read["stored"] == read["expected"]
    assert read["stored"][0][1:] == ["EUR", 30.0, ["sku1", "sku2"], [3.0, 1.0], [10.0, 2.5]]
    assert read["stored"][1][1:3] == ["USD", 0.0]  # a value that is no number
    assert read["stored"][3][3:] == [[], [], []]  # items that are no JSON array
    assert read["stored"][4][3:] == [[""], [0.5], [4.0]]


def test_the_migration_copies_the_purchases_again_the_same(read: dict[str, Any]) -> None:
    assert read["again"] == read["stored"]
