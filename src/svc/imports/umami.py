"""Umami's CSV export of ``website_event`` rows (``event_type`` 1 a page view, 2 an event).

A row's ``eventId`` is a hash of Umami's ``event_id`` (or of the row's content); its visitor
is Umami's ``session_id`` and its session Umami's ``visit_id``. Umami's browser, system and
device names become svc's.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from urllib.parse import urlencode

from svc.imports.rows import (
    Item,
    Occurrences,
    Refusal,
    Row,
    Source,
    as_int,
    event_id_of,
    parse_time,
    reason_of,
    text_lines,
)

#: The columns that tell an Umami export apart.
UMAMI_COLUMNS = frozenset(("url_path", "created_at"))

UMAMI_BROWSERS = {
    "chrome": "Chrome",
    "crios": "Chrome",
    "chromium-webview": "Chrome WebView",
    "firefox": "Firefox",
    "fxios": "Firefox",
    "safari": "Safari",
    "ios": "Safari",
    "ios-webview": "Safari WebView",
    "edge-chromium": "Edge",
    "edge": "Edge",
    "edge-ios": "Edge",
    "opera": "Opera",
    "opera-mini": "Opera Mini",
    "samsung": "Samsung Internet",
    "yandexbrowser": "Yandex Browser",
    "facebook": "Facebook",
    "instagram": "Instagram",
    "android": "Android",
    "silk": "Amazon Silk",
    "brave": "Brave",
    "ie": "IE",
}
UMAMI_OS = {
    "mac os": "macOS",
    "os x": "macOS",
    "ios": "iOS",
    "android os": "Android",
    "linux": "Linux",
    "chrome os": "Chrome OS",
    "windows mobile": "Windows Phone",
}


def _umami_os(value: str) -> tuple[str, str]:
    low = value.strip().lower()
    if low.startswith("windows") and low not in UMAMI_OS:
        version = value.strip()[len("windows") :].strip()
        return "Windows", version
    return UMAMI_OS.get(low, value.strip()), ""


def _device(value: str) -> str:
    low = value.strip().lower()
    return {"laptop": "desktop", "desktop": "desktop", "mobile": "mobile", "tablet": "tablet"}.get(
        low, low
    )


def umami_rows(source: Source) -> Iterator[Item]:
    occ = Occurrences("umami")
    with source.open() as raw:
        reader = csv.DictReader(text_lines(raw))
        for number, rec in enumerate(reader, 2):
            where = f"{source.label}:{number}"
            try:
                yield _umami_row(where, rec, occ)
            except (ValueError, TypeError) as exc:
                yield Refusal(where, reason_of(exc))


def _umami_row(where: str, rec: dict[str, str], occ: Occurrences) -> Item:
    def get(key: str) -> str:
        return (rec.get(key) or "").strip()

    kind = get("event_type") or "1"
    if kind == "1":
        name = "page_view"
    elif kind == "2":
        name = get("event_name")
        if not name:
            return Refusal(where, "an Umami event (event_type 2) without event_name")
    else:
        return Refusal(where, f"Umami event_type {kind} is not imported (only 1 and 2)")
    ts = parse_time(get("created_at"))
    host = get("hostname")
    path = get("url_path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    query = get("url_query")
    utm = [
        (k, get(k)) for k in ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term")
    ]
    if not query and any(v for _, v in utm):
        query = urlencode([(k, v) for k, v in utm if v])
    url = (f"https://{host}{path}" if host else path) + (f"?{query.lstrip('?')}" if query else "")
    referrer = ""
    if get("referrer_domain"):
        referrer = f"https://{get('referrer_domain')}{get('referrer_path') or '/'}"
        if get("referrer_query"):
            referrer += "?" + get("referrer_query").lstrip("?")
    os_name, os_version = _umami_os(get("os"))
    screen = get("screen")
    width = as_int(screen.lower().split("x", 1)[0]) if screen else 0
    umami_id = get("event_id")
    identity = (
        event_id_of("umami", umami_id)
        if umami_id
        else occ.identity(ts, "\x1f".join(rec.values() if rec else []))
    )
    visitor = get("session_id") or get("distinct_id")
    return Row(
        where=where,
        name=name,
        url=url,
        ts_ms=ts,
        event_id=identity,
        referrer=referrer,
        session=get("visit_id") or visitor,
        visitor=visitor,
        screen=width,
        fields={
            "browser": UMAMI_BROWSERS.get(get("browser").lower(), get("browser")),
            "browser_version": "",
            "os": os_name,
            "os_version": os_version,
            "device": _device(get("device")),
            "country": get("country").upper(),
            "region": get("region") or get("subdivision1"),
            "city": get("city"),
        },
    )
