"""Google Analytics 4's BigQuery export (the ``events_YYYYMMDD`` tables), as NDJSON (BigQuery's
JSON export) or Parquet files, rebuilt as svc events.

GA4 exports events, one row each, in its documented schema: ``event_date``,
``event_timestamp`` (microseconds), ``event_name``, ``event_params`` (a list of ``key`` and
``value`` {``string_value``, ``int_value``, ``float_value``, ``double_value``}),
``user_pseudo_id``, ``user_id``, ``device`` {``category``, ``operating_system``,
``operating_system_version``, ``web_info`` {``browser``, ``browser_version``, ``hostname``}},
``geo`` {``country``, ``region``, ``city``}, ``traffic_source``, ``collected_traffic_source``,
``ecommerce`` and ``items``. What becomes of them (docs/cli.md, Import, says the same):

- ``page_view`` is a page view; ``purchase`` a purchase (``value`` and ``currency`` from its
  parameters, else ``ecommerce.purchase_revenue``; ``transaction_id``; ``items`` as svc's
  item list: ``item_id``, ``item_name``, ``price``, ``quantity``), so it counts as revenue;
  any other event a custom event of that name with its parameters as properties (svc's
  limits: 50, values cut to the longest svc takes).
  GA4's bookkeeping events ``session_start``, ``first_visit``, ``first_open`` and
  ``user_engagement`` are not events of the visit: left out.
- The page is the ``page_location`` parameter (else the ``device.web_info.hostname``'s root),
  the referrer ``page_referrer``; the event's own ``collected_traffic_source`` (``manual_source``,
  ``manual_medium``, ``manual_campaign_name``, ``manual_content``, ``manual_term``, ``gclid``)
  is added to the page's URL where its UTM parameters are missing, so the session's source is
  attributed as ingestion attributes a live one.
- The session is the visitor's ``ga_session_id`` (a client-named session: svc supports
  those), the visitor ``user_pseudo_id``; an event without ``ga_session_id`` is a session of
  its own.
- The device (``device.category``), browser and its version, system and its version, country
  (GA4's English name as its ISO code: :mod:`svc.imports.countries`) and city are kept.

Not kept: ``user_id`` and ``user_properties`` (a person across devices: svc counts browsers),
``traffic_source`` (the user's first acquisition, not the session's), ``geo.region`` (a name;
svc's region is an ISO 3166-2 code), ``engagement_time_msec`` and the other bookkeeping
parameters (``ga_session_number``, ``session_engaged``, ``entrances``, ``batch_*``...): svc
measures a visit's time from its events. A file's events are sorted by time before they are
imported (a session's start is its first event). Each event's ``eventId`` is a hash of its
user, time, name, bundle and index in the batch, so importing the same export again skips it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

from svc.imports.countries import country_code
from svc.imports.rows import Item, Refusal, Row, Source, as_int, event_id_of, reason_of
from svc.schema.limits import MAX_PROPERTIES, MAX_PROPERTY_KEY, MAX_PROPERTY_VALUE

#: The columns that tell a GA4 export apart.
GA4_COLUMNS = frozenset(("event_date", "event_timestamp", "event_name", "user_pseudo_id"))
#: GA4's bookkeeping events, not imported.
SKIPPED_EVENTS = frozenset(("session_start", "first_visit", "first_open", "user_engagement"))
#: Parameters that are GA4's bookkeeping (or made into something else), not properties.
BOOKKEEPING = frozenset(
    (
        "page_location",
        "page_referrer",
        "ga_session_id",
        "ga_session_number",
        "engagement_time_msec",
        "session_engaged",
        "entrances",
        "engaged_session_event",
        "ignore_referrer",
        "batch_page_id",
        "batch_ordering_id",
        "debug_mode",
        "synthetic_bundle",
    )
)
OSES = {"Macintosh": "macOS", "Mac OS X": "macOS", "macOS": "macOS", "Chrome OS": "Chrome OS"}
BROWSERS = {"Safari (in-app)": "Safari WebView", "Android Webview": "Chrome WebView"}
UTM = (
    ("utm_source", "manual_source"),
    ("utm_medium", "manual_medium"),
    ("utm_campaign", "manual_campaign_name"),
    ("utm_content", "manual_content"),
    ("utm_term", "manual_term"),
)


def is_ga4(columns: set[str]) -> bool:
    return columns >= GA4_COLUMNS


def ga4_rows(source: Source, parquet: bool) -> Iterator[Item]:
    """The events of one file of the export, oldest first."""
    records = _parquet(source) if parquet else _ndjson(source)
    rows: list[Row] = []
    for where, rec in records:
        if isinstance(rec, str):
            yield Refusal(where, rec)
            continue
        try:
            row = ga4_row(where, rec)
        except (ValueError, TypeError, KeyError) as exc:
            yield Refusal(where, reason_of(exc))
            continue
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda r: r.ts_ms)
    yield from rows


def _ndjson(source: Source) -> Iterator[tuple[str, dict[str, Any] | str]]:
    with source.open() as f:
        for number, line in enumerate(f, 1):
            where = f"{source.label}:{number}"
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield where, f"not valid JSON: {exc}"
                continue
            yield where, obj if isinstance(obj, dict) else "not a JSON object"


def _parquet(source: Source) -> Iterator[tuple[str, dict[str, Any] | str]]:
    from svc.imports.svc_export import parquet_records

    for number, rec in enumerate(parquet_records(source), 1):
        yield f"{source.label}:{number}", rec


def ga4_row(where: str, rec: dict[str, Any]) -> Row | None:
    """One GA4 event as a row (None for a bookkeeping event)."""
    name = str(rec.get("event_name") or "")
    if name in SKIPPED_EVENTS:
        return None
    micros = as_int(rec.get("event_timestamp"))
    if not micros:
        raise ValueError("no event_timestamp")
    params = _params(rec.get("event_params"))
    device = rec.get("device") or {}
    web = device.get("web_info") or {}
    geo = rec.get("geo") or {}
    user = str(rec.get("user_pseudo_id") or "")
    url = _url(params, web, rec.get("collected_traffic_source") or {})
    session_number = params.get("ga_session_id")
    identity = event_id_of(
        "ga4", user, str(micros), name, str(rec.get("event_bundle_sequence_id") or ""),
        str(rec.get("batch_event_index") or ""), str(params.get("batch_ordering_id") or ""),
    )  # fmt: skip
    if name == "purchase":
        properties = _purchase(params, rec)
    else:
        properties = {} if name == "page_view" else _properties(params)
    return Row(
        where=where,
        name=name,
        url=url,
        ts_ms=micros // 1000,
        event_id=identity,
        referrer=str(params.get("page_referrer") or ""),
        session=f"ga4:{user}:{session_number}" if session_number else "",
        visitor=f"ga4:{user}" if user else "",
        properties=properties,
        fields={
            "device": str(device.get("category") or "").lower(),
            "browser": _named(BROWSERS, web.get("browser")),
            "browser_version": _clean(web.get("browser_version")),
            "os": _named(OSES, device.get("operating_system")),
            "os_version": _os_version(device),
            "country": country_code(str(geo.get("country") or "")),
            "region": "",
            "city": _clean(geo.get("city")),
        },
    )


def _params(raw: Any) -> dict[str, Any]:
    """``event_params`` as a dict of each key's one value (the first non-null of its
    ``string_value``, ``int_value``, ``float_value`` and ``double_value``)."""
    out: dict[str, Any] = {}
    for p in raw or ():
        key = p.get("key")
        value = p.get("value") or {}
        for kind in ("string_value", "int_value", "double_value", "float_value"):
            v = value.get(kind)
            if v is not None:
                out[str(key)] = int(v) if kind == "int_value" else v
                break
    return out


def _clean(value: Any) -> str:
    text = str(value or "").strip()
    return "" if text.startswith("(") else text


def _named(names: dict[str, str], value: Any) -> str:
    text = _clean(value)
    return names.get(text, text)


def _os_version(device: dict[str, Any]) -> str:
    """GA4 writes the system's version with its name ("Windows 10", "iOS 17.4.1")."""
    version = _clean(device.get("operating_system_version"))
    system = _clean(device.get("operating_system"))
    if system and version.startswith(system):
        version = version[len(system) :].strip()
    return version


def _url(params: dict[str, Any], web: dict[str, Any], collected: dict[str, Any]) -> str:
    url = str(params.get("page_location") or "")
    if not url:
        host = _clean(web.get("hostname"))
        url = f"https://{host}/" if host else "/"
    query = urlsplit(url).query
    extra = [
        (utm, str(collected[key]))
        for utm, key in UTM
        if collected.get(key) and not str(collected[key]).startswith("(")
        and utm + "=" not in query
    ]  # fmt: skip
    if collected.get("gclid") and "gclid=" not in query:
        extra.append(("gclid", str(collected["gclid"])))
    if extra:
        url += ("&" if "?" in url else "?") + urlencode(extra)
    return url


def _properties(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in BOOKKEEPING or len(out) >= MAX_PROPERTIES:
            continue
        out[key[:MAX_PROPERTY_KEY]] = (
            value[:MAX_PROPERTY_VALUE] if isinstance(value, str) else value
        )
    return out


def _purchase(params: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any]:
    """A purchase as svc's client libraries send one: ``value``, ``currency``,
    ``transaction_id`` and ``items``."""
    commerce = rec.get("ecommerce") or {}
    out = _properties(params)
    value, currency = params.get("value"), params.get("currency")
    if value is None:
        value = commerce.get("purchase_revenue")
    if value is None and commerce.get("purchase_revenue_in_usd") is not None:
        value, currency = commerce["purchase_revenue_in_usd"], currency or "USD"
    if value is not None:
        out["value"] = float(value)
    if currency:
        out["currency"] = str(currency)
    transaction = params.get("transaction_id") or commerce.get("transaction_id")
    if transaction:
        out["transaction_id"] = str(transaction)
    items = []
    for item in rec.get("items") or ():
        entry: dict[str, Any] = {"item_id": str(item.get("item_id") or "")}
        if item.get("item_name"):
            entry["item_name"] = str(item["item_name"])
        if item.get("price") is not None:
            entry["price"] = float(item["price"])
        if item.get("quantity") is not None:
            entry["quantity"] = as_int(item["quantity"])
        items.append(entry)
    if items:
        out["items"] = items
    return out
