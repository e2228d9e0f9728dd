"""The event kinds of the browser script's extensions (tracker/, docs/api.md): their names,
their properties' types and bounds, and which of them are *page measurements*.

Standard library only. From :data:`KINDS` come the origin's checks
(``svc.ingestion.wire.check_kind``), the wire-format description's ``kinds``
(``python -m svc.schema``: what the edge and the clients read) and the docs' table.

A *page measurement* (``engagement``, ``web_vitals``) describes a page view; it is not
something the visitor did. It never starts, extends or ends a session, and is left out of
every count of sessions, page views, events, bounces and visit duration (docs/api.md,
"Page measurements"). ``outbound``, ``download`` and ``404`` are ordinary events: a click
on a link is an interaction (as in Plausible, whose custom events are interactive unless
sent with ``interactive: false``), and so is a page the site marks as not found.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A day in milliseconds: the most engaged time one ``engagement`` event may report.
MAX_ENGAGED_MS = 86_400_000
#: The most a timing of Web Vitals may be (ms): 10 minutes (a page that takes longer to
#: paint was not measured, or not by a browser).
MAX_VITAL_MS = 600_000
#: The largest cumulative layout shift taken (a unitless score; 0.25 is already "poor").
MAX_CLS = 100


@dataclass(frozen=True, slots=True)
class Prop:
    """One property of a kind: its JSON type (``integer``, ``number`` or ``url``: a string,
    an http(s) URL of at most :data:`MAX_URL` characters), bounds, and whether it is
    required."""

    type: str
    minimum: int = 0
    maximum: int = 0
    required: bool = False

    def describe(self) -> dict[str, object]:
        if self.type == "url":
            out: dict[str, object] = {"type": "string", "format": "url", "maxLength": MAX_URL}
        else:
            out = {"type": self.type, "minimum": self.minimum, "maximum": self.maximum}
        if self.required:
            out["required"] = True
        return out


@dataclass(frozen=True, slots=True)
class Kind:
    """An event kind: its properties; ``closed``: no other property is taken; ``measurement``:
    a page measurement (not an interaction)."""

    properties: dict[str, Prop]
    closed: bool
    measurement: bool

    def describe(self) -> dict[str, object]:
        return {
            "interactive": not self.measurement,
            "properties": {k: p.describe() for k, p in self.properties.items()},
            "otherProperties": not self.closed,
        }


MAX_URL = 2048

_MS = Prop("integer", 0, MAX_VITAL_MS)

#: The event kinds, by event name.
KINDS: dict[str, Kind] = {
    "engagement": Kind(
        {
            "engaged_ms": Prop("integer", 0, MAX_ENGAGED_MS, required=True),
            "scroll_pct": Prop("integer", 0, 100, required=True),
        },
        closed=True,
        measurement=True,
    ),
    "web_vitals": Kind(
        {
            "ttfb": _MS,
            "fcp": _MS,
            "lcp": _MS,
            "inp": _MS,
            "cls": Prop("number", 0, MAX_CLS),
        },
        closed=True,
        measurement=True,
    ),
    "outbound": Kind({"url": Prop("url")}, closed=False, measurement=False),
    "download": Kind({"url": Prop("url")}, closed=False, measurement=False),
    "404": Kind({}, closed=False, measurement=False),
}

#: The page measurements' event names, as an SQL list (``name NOT IN MEASUREMENT_SQL``).
MEASUREMENTS: tuple[str, ...] = tuple(n for n, k in KINDS.items() if k.measurement)
MEASUREMENT_SQL = "(" + ", ".join(f"'{n}'" for n in MEASUREMENTS) + ")"
#: The condition on an event row that it counts (is not a page measurement).
COUNTED_SQL = f"name NOT IN {MEASUREMENT_SQL}"


#: The reports of these kinds that GET /metrics/breakdown gives (``by=``, beside the
#: dimensions; svc.queries.measurements).
BREAKDOWN_KINDS: tuple[str, ...] = (
    "engagement",
    "outbound",
    "download",
    "404",
    "vitals:page",
    "vitals:device",
    "vitals:country",
)


@dataclass(frozen=True, slots=True)
class Vital:
    """A Web Vital and Google's thresholds: good up to ``good``, poor above ``poor``."""

    name: str
    good: float
    poor: float


#: Google's thresholds (web.dev/articles/vitals, /defining-core-web-vitals-thresholds).
VITALS: tuple[Vital, ...] = (
    Vital("lcp", 2500, 4000),
    Vital("inp", 200, 500),
    Vital("cls", 0.1, 0.25),
    Vital("fcp", 1800, 3000),
    Vital("ttfb", 800, 1800),
)


def describe() -> dict[str, object]:
    """The kinds as the wire-format description states them."""
    return {name: kind.describe() for name, kind in KINDS.items()}
