"""An imported event as POST /analytics takes it, for an import over HTTP.

The service's own pipeline then ingests it as any event, with the admin token or a secret key:
its time (``ts``, up to 7 days old), its ``eventId``, the source's identities as a
``sessionId`` and a stand-in client address (``ip``), which the service hashes with the day's
salt into the visitor id, so that each imported visitor stays one visitor, and the browser,
system, device and location the source recorded as the event's ``client``, which the service
keeps instead of deriving them (there is no user agent, and the address is a stand-in).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from svc.schema.limits import MAX_CLIENT_FIELD
from svc.schema.measurements import KINDS

if TYPE_CHECKING:
    from svc.imports.run import Checked


def synthetic_address(project: str, visitor: str) -> str:
    """A stand-in client address for an imported visitor: in 2001:db8::/32, the range kept for
    documentation, so it is never a real address and has no location. The service hashes it
    (with the day's salt) into the visitor id, so each imported visitor stays one visitor."""
    d = hashlib.blake2b(f"{project}\x00{visitor}".encode(), digest_size=12).digest()
    groups = [f"{int.from_bytes(d[i : i + 2], 'big'):x}" for i in range(0, 12, 2)]
    return "2001:db8:" + ":".join(groups)


#: The events table's columns an import carries, by their name in the event's ``client``.
CLIENT_COLUMNS = {
    "browser": "browser",
    "browser_version": "browserVersion",
    "os": "os",
    "os_version": "osVersion",
    "device": "device",
    "country": "country",
    "region": "region",
    "city": "city",
}


def client_of(c: Checked) -> dict[str, str]:
    """The event's ``client``: what the source recorded of the end user's client (an svc
    export's stored columns, another source's fields)."""
    known = c.row.stored if c.row.stored is not None else c.row.fields
    out: dict[str, str] = {}
    for column, key in CLIENT_COLUMNS.items():
        value = known.get(column)
        if value:
            out[key] = str(value)[:MAX_CLIENT_FIELD]
    return out


def wire_event(c: Checked, project: str) -> dict[str, Any]:
    """The event as POST /analytics takes it (with a secret key or the admin token)."""
    row, raw = c.row, c.raw
    url = raw.url
    if row.source_hint:
        url += ("&" if "?" in url else "?") + urlencode({"ref": row.source_hint})
    event: dict[str, Any] = {
        "event": raw.name,
        "url": url,
        "ts": raw.ts_ms,
        "eventId": raw.event_id,
        "projectId": project,
    }
    if raw.referrer:
        event["referrer"] = raw.referrer
    if raw.properties:
        # the extensions' kinds as the row has them (typed: svc.schema.measurements checks
        # numbers); the others as validation stored them
        event["properties"] = row.properties if raw.name in KINDS else raw.properties
    session = row.session or row.visitor
    if session:
        event["sessionId"] = (
            session if len(session) <= 128 else hashlib.sha256(session.encode()).hexdigest()
        )
    if row.visitor or session:
        event["ip"] = synthetic_address(project, row.visitor or session)
    if raw.screen:
        event["screen"] = raw.screen
    client = client_of(c)
    if client:
        event["client"] = client
    return event
