"""A GA4 BigQuery export made by hand, in GA4's documented schema (the ``events_YYYYMMDD``
tables), written as BigQuery writes it: NDJSON (its JSON export: INT64 as strings) or Parquet.

Four sessions of three users over two days (UTC):

- S1, u1, 2024-03-01 10:00: from Google, ``/`` then ``/pricing``, then ``sign_up``; desktop,
  Chrome 120 on Windows 10, Berlin, Germany. 90 s.
- S2, u2, 2024-03-01 11:00: from a newsletter (the event's ``collected_traffic_source``),
  ``/blog/a`` then ``/pricing``, then a purchase of 30 EUR (3 x sku1); mobile, Safari 17.4 on
  iOS 17.4, London, United Kingdom. 180 s.
- S3, u1 again, 2024-03-02 09:00: ``/blog/a`` alone (a bounce); as S1's device. 0 s.
- S4, u3, 2024-03-02 15:00: from Hacker News, ``/``, then a purchase of 12.5 USD (its value
  in ``ecommerce.purchase_revenue`` only); tablet, Samsung Internet on Android 14, United
  States, no city. 40 s.

Besides: GA4's bookkeeping events (``session_start``, ``first_visit``, ``user_engagement``),
which are not imported. The rows are written out of time order, as BigQuery writes them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

HOST = "shop.example"
DESKTOP = {
    "category": "desktop",
    "operating_system": "Windows",
    "operating_system_version": "Windows 10",
    "web_info": {"browser": "Chrome", "browser_version": "120.0", "hostname": HOST},
}
MOBILE = {
    "category": "mobile",
    "operating_system": "iOS",
    "operating_system_version": "iOS 17.4",
    "web_info": {"browser": "Safari", "browser_version": "17.4", "hostname": HOST},
}
TABLET = {
    "category": "tablet",
    "operating_system": "Android",
    "operating_system_version": "Android 14",
    "web_info": {"browser": "Samsung Internet", "browser_version": "23.0", "hostname": HOST},
}
BERLIN = {"country": "Germany", "region": "Berlin", "city": "Berlin"}
LONDON = {"country": "United Kingdom", "region": "England", "city": "London"}
NOWHERE = {"country": "United States", "region": "(not set)", "city": "(not set)"}


def _micros(at: str) -> int:
    return int(datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp() * 1_000_000)


def _param(key: str, value: Any) -> dict[str, Any]:
    kinds = {"string_value": None, "int_value": None, "float_value": None, "double_value": None}
    if isinstance(value, str):
        kinds["string_value"] = value
    elif isinstance(value, int):
        kinds["int_value"] = value
    else:
        kinds["double_value"] = value
    return {"key": key, "value": kinds}


def event(
    at: str,
    name: str,
    user: str,
    session: int,
    device: dict[str, Any],
    geo: dict[str, Any],
    path: str = "",
    referrer: str = "",
    params: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One row of ``events_YYYYMMDD``."""
    p: dict[str, Any] = {"ga_session_id": session, "ga_session_number": 1,
                         "engagement_time_msec": 1500}  # fmt: skip
    if path:
        p["page_location"] = f"https://{HOST}{path}"
    if referrer:
        p["page_referrer"] = referrer
    p.update(params or {})
    return {
        "event_date": at[:10].replace("-", ""),
        "event_timestamp": _micros(at),
        "event_name": name,
        "event_params": [_param(k, v) for k, v in p.items()],
        "user_pseudo_id": user,
        "user_id": None,
        "device": device,
        "geo": geo,
        "traffic_source": {"name": "(direct)", "medium": "(none)", "source": "(direct)"},
        "collected_traffic_source": extra.pop("collected", None),
        "ecommerce": extra.pop("ecommerce", None),
        "items": extra.pop("items", []),
        **extra,
    }


def ga4_events() -> list[dict[str, Any]]:
    """The sample's rows, out of time order."""
    s1 = ("u1", 1001, DESKTOP, BERLIN)
    s2 = ("u2", 2002, MOBILE, LONDON)
    s3 = ("u1", 1003, DESKTOP, BERLIN)
    s4 = ("u3", 3003, TABLET, NOWHERE)
    news = {"manual_source": "newsletter", "manual_medium": "email",
            "manual_campaign_name": "spring"}  # fmt: skip
    rows = [
        event("2024-03-01 10:00:00", "first_visit", *s1, "/"),
        event("2024-03-01 10:00:00", "session_start", *s1, "/"),
        event("2024-03-01 10:00:00", "page_view", *s1, "/", "https://www.google.com/"),
        event("2024-03-01 10:01:00", "page_view", *s1, "/pricing", f"https://{HOST}/"),
        event("2024-03-01 10:01:30", "sign_up", *s1, "/pricing", params={"method": "email"}),
        event("2024-03-01 10:02:00", "user_engagement", *s1, "/pricing"),
        event("2024-03-01 11:00:00", "page_view", *s2, "/blog/a", collected=news),
        event("2024-03-01 11:02:00", "page_view", *s2, "/pricing", f"https://{HOST}/blog/a"),
        event("2024-03-01 11:03:00", "purchase", *s2, "/pricing",
              params={"value": 30.0, "currency": "EUR", "transaction_id": "T1"},
              ecommerce={"purchase_revenue": 30.0, "transaction_id": "T1"},
              items=[{"item_id": "sku1", "item_name": "Mug", "price": 10.0, "quantity": 3}]),
        event("2024-03-02 09:00:00", "session_start", *s3, "/blog/a"),
        event("2024-03-02 09:00:00", "page_view", *s3, "/blog/a"),
        event("2024-03-02 15:00:00", "page_view", *s4, "/", "https://news.ycombinator.com/"),
        event("2024-03-02 15:00:40", "purchase", *s4, "/", params={"currency": "USD"},
              ecommerce={"purchase_revenue": 12.5, "transaction_id": "T2"},
              items=[{"item_id": "sku2", "item_name": "Cap", "price": 12.5, "quantity": 1}]),
    ]  # fmt: skip
    return rows[::-1]  # BigQuery keeps no order


def _json_form(value: Any) -> Any:
    """As BigQuery's JSON export writes a value: INT64 as a string."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_form(v) for v in value]
    return value


_VALUE = pa.struct([("string_value", pa.string()), ("int_value", pa.int64()),
                    ("float_value", pa.float64()), ("double_value", pa.float64())])  # fmt: skip
SCHEMA = pa.schema([
    ("event_date", pa.string()),
    ("event_timestamp", pa.int64()),
    ("event_name", pa.string()),
    ("event_params", pa.list_(pa.struct([("key", pa.string()), ("value", _VALUE)]))),
    ("user_pseudo_id", pa.string()),
    ("user_id", pa.string()),
    ("device", pa.struct([
        ("category", pa.string()), ("operating_system", pa.string()),
        ("operating_system_version", pa.string()),
        ("web_info", pa.struct([("browser", pa.string()), ("browser_version", pa.string()),
                                ("hostname", pa.string())])),
    ])),
    ("geo", pa.struct([("country", pa.string()), ("region", pa.string()),
                       ("city", pa.string())])),
    ("traffic_source", pa.struct([("name", pa.string()), ("medium", pa.string()),
                                  ("source", pa.string())])),
    ("collected_traffic_source", pa.struct([
        ("manual_source", pa.string()), ("manual_medium", pa.string()),
        ("manual_campaign_name", pa.string()), ("gclid", pa.string()),
    ])),
    ("ecommerce", pa.struct([("purchase_revenue", pa.float64()),
                             ("transaction_id", pa.string())])),
    ("items", pa.list_(pa.struct([("item_id", pa.string()), ("item_name", pa.string()),
                                  ("price", pa.float64()), ("quantity", pa.int64())]))),
])  # fmt: skip


def write_ga4(path: Path, form: str) -> Path:
    """The sample written to ``path`` as ``ndjson`` or ``parquet``."""
    rows = ga4_events()
    if form == "ndjson":
        path.write_text("".join(json.dumps(_json_form(r)) + "\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    return path
