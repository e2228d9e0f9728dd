"""The combinations of the read API (issue 40), enumerated from the code's own lists and
sampled deterministically: what ``bench/combinations_bench.py`` times and
``tests/test_combinations.py`` checks against the events path.

A case is one request: a report with its variant (GET /metrics with each ``duration``; GET
/metrics/timeseries with each interval of :data:`svc.queries.timeseries.INTERVALS`; GET
/metrics/breakdown by each dimension of :data:`svc.queries.dimensions.DIMENSIONS`, each
``prop:<key>`` asked for and each kind given, ordered by each of
:data:`svc.queries.breakdown.ORDERS`, the most first), no filter, one or two filters (each
filter dimension with ``is`` and with ``contains``; two on distinct dimensions), a range
(:data:`RANGES`: some ending today, some in the past) and, for the reports that take it,
``compare``.

:func:`sample` draws ``n`` cases with a seed. Every axis is dealt from a deck of its values
shuffled by the seed and dealt again once used up, so that ``n`` cases hold every value of
an axis at least once when ``n`` is at least the number of its values (the filter pairs
excepted: there are more of them than cases), and the values of different axes meet at
random. A report's own axes (a breakdown's dimension and its order are two) are dealt in
its cases only: a sample of 300 holds every value of each. A case names its filters'
dimensions and operators only; the values come from the store (:func:`discover`), so that a
filter keeps some of the traffic it is asked about.

Standard library and svc only; no I/O but through the ``get`` given to :func:`discover`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Generic, TypeVar

from svc.queries.breakdown import ORDERS
from svc.queries.dimensions import DIMENSIONS
from svc.queries.timeseries import INTERVALS
from svc.schema.measurements import BREAKDOWN_KINDS

T = TypeVar("T")

#: The seed of the bench's sample (and of the test's, which checks its first cases).
SEED = 40
#: GET /metrics' ``duration`` values (svc.queries.measurements.parse_duration): the metric
#: sets of that report.
DURATIONS = ("events", "engaged")
#: The filter operators sampled (the issue's aim: every dimension with each).
OPERATORS = ("is", "contains")
#: The values of ``compare`` (svc.http.metrics._other_range); "" for none.
COMPARES = ("", "previous_period", "previous_year")
#: The reports, and whether each takes ``compare``.
REPORTS = {"metrics": True, "timeseries": False, "breakdown": True}
#: How many filters a case has.
FILTER_COUNTS = (0, 1, 2)
#: The extensions' breakdown kinds (``by=engagement``, ...), for a store with their events.
EXTENSION_KINDS = BREAKDOWN_KINDS


@dataclass(frozen=True, slots=True)
class Span:
    """A range of ``days`` days whose last day is ``back`` days before today."""

    name: str
    back: int
    days: int

    def bounds(self, today: date) -> tuple[date, date]:
        last = today - timedelta(days=self.back)
        return last - timedelta(days=self.days - 1), last


#: The ranges: ending today (today's events are not rolled up yet) and in the past.
RANGES = (
    Span("today", 0, 1),
    Span("7 days to today", 0, 7),
    Span("30 days to today", 0, 30),
    Span("yesterday", 1, 1),
    Span("7 days to a week ago", 7, 7),
    Span("21 days to 3 days ago", 3, 21),
)


@dataclass(frozen=True, slots=True)
class Case:
    """One request of the sample: ``report``, its own parameters (``variant``), the filters'
    (dimension, operator) pairs, a range of :data:`RANGES` by name, and ``compare``."""

    index: int
    report: str
    variant: tuple[tuple[str, str], ...]
    filters: tuple[tuple[str, str], ...]
    span: str
    compare: str = ""

    @property
    def path(self) -> str:
        return "/metrics" if self.report == "metrics" else f"/metrics/{self.report}"

    @property
    def name(self) -> str:
        """A readable name: ``breakdown by=page order=-visitors | country:is | 7 days to
        today | previous_period``."""
        parts = [" ".join([self.report, *(f"{k}={v}" for k, v in self.variant)])]
        parts.append(", ".join(f"{d}:{op}" for d, op in self.filters) or "no filter")
        parts.append(self.span)
        if self.compare:
            parts.append(self.compare)
        return " | ".join(parts)

    def params(
        self, values: Mapping[str, tuple[str, str]], today: date, extra: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """The query string's pairs, each filter's value from ``values`` (dimension: its
        ``is`` value and its ``contains`` value, :func:`discover`), the range's days counted
        back from ``today``; ``extra`` filters appended (the events path: ``event:matches:.``)."""
        first, last = span_named(self.span).bounds(today)
        out = [("from", first.isoformat()), ("to", last.isoformat()), *self.variant]
        for dim, op in self.filters:
            is_value, contains_value = values.get(dim, ("", ""))
            out.append(("filter", f"{dim}:{op}:{is_value if op == 'is' else contains_value}"))
        out.extend(("filter", f) for f in extra)
        if self.compare:
            out.append(("compare", self.compare))
        return out


def span_named(name: str) -> Span:
    return next(s for s in RANGES if s.name == name)


class _Deck(Generic[T]):
    """The values of one axis, dealt in a shuffled order, shuffled again once all are dealt."""

    def __init__(self, items: Sequence[T], rng: random.Random) -> None:
        if not items:
            raise ValueError("an axis needs at least one value")
        self._items = list(items)
        self._rng = rng
        self._dealt: Iterator[T] = iter(())

    def deal(self) -> T:
        try:
            return next(self._dealt)
        except StopIteration:
            order = self._items[:]
            self._rng.shuffle(order)
            self._dealt = iter(order)
            return next(self._dealt)


def filter_dimensions(prop_keys: Sequence[str] = ()) -> list[str]:
    """Every dimension a filter takes: the dimensions, and ``prop:<key>`` of ``prop_keys``."""
    return [*DIMENSIONS, *(f"prop:{k}" for k in prop_keys)]


def variants(
    prop_keys: Sequence[str] = (), kinds: Sequence[str] = ()
) -> dict[str, list[list[tuple[str, str]]]]:
    """Each report's own parameters, from the code's lists: per report, its axes (each a list
    of (name, value) pairs), one value of each making a variant. ``kinds``: the extensions'
    breakdown kinds (svc.queries.measurements.KINDS) when the store has their events; each
    takes its own orders, so it is asked in its default one (the order dealt is left out)."""
    return {
        "metrics": [[("duration", d) for d in DURATIONS]],
        "timeseries": [[("interval", i) for i in INTERVALS]],
        "breakdown": [
            [("by", b) for b in [*filter_dimensions(prop_keys), *kinds]],
            [("order", f"-{o}") for o in ORDERS],
        ],
    }


def sample(
    n: int, seed: int, prop_keys: Sequence[str] = (), kinds: Sequence[str] = ()
) -> list[Case]:
    """``n`` cases drawn with ``seed`` (the same cases for the same arguments and code)."""
    rng = random.Random(seed)
    atoms = [(d, op) for d in filter_dimensions(prop_keys) for op in OPERATORS]
    pairs = [(a, b) for a, b in itertools.combinations(atoms, 2) if a[0] != b[0]]
    decks: dict[str, _Deck[Any]] = {
        "report": _Deck(list(REPORTS), rng),
        "count": _Deck(FILTER_COUNTS, rng),
        "one": _Deck(atoms, rng),
        "two": _Deck(pairs, rng),
        "span": _Deck([s.name for s in RANGES], rng),
        "compare": _Deck(COMPARES, rng),
    }
    axes = {
        report: [_Deck(axis, rng) for axis in report_axes]
        for report, report_axes in variants(prop_keys, kinds).items()
    }
    cases = []
    for i in range(n):
        report = decks["report"].deal()
        count = decks["count"].deal()
        filters: tuple[tuple[str, str], ...] = ()
        if count == 1:
            filters = (decks["one"].deal(),)
        elif count == 2:
            filters = decks["two"].deal()
        variant = dict(axis.deal() for axis in axes[report])
        if variant.get("by") in kinds:
            del variant["order"]
        cases.append(
            Case(
                i,
                report,
                tuple(variant.items()),
                filters,
                decks["span"].deal(),
                decks["compare"].deal() if REPORTS[report] else "",
            )
        )
    return cases


#: GET ``path`` with ``params`` as the project's reader, its JSON answer (raising otherwise).
Get = Callable[[str, list[tuple[str, str]]], dict[str, Any]]


def contains_value(value: str) -> str:
    """What a ``contains`` filter looks for in ``value``: its first half (at least two
    characters), lower-cased (the operator ignores case)."""
    return value[: max(2, (len(value) + 1) // 2)].lower()


def discover(
    get: Get, first: date, last: date, prop_keys: Sequence[str] = ()
) -> dict[str, tuple[str, str]]:
    """Each filter dimension's values for the sample, from the store through ``get``: the
    ``is`` value is its top value by visitors over ``first`` to ``last``, the ``contains``
    value a piece of its second (of its first when it has one): "" where it has none."""
    out: dict[str, tuple[str, str]] = {}
    rng = [("from", first.isoformat()), ("to", last.isoformat())]
    for dim in filter_dimensions(prop_keys):
        body = get("/metrics/breakdown", [*rng, ("by", dim), ("limit", "2")])
        found = [str(r["value"]) for r in body.get("rows", []) if str(r["value"])]
        top = found[0] if found else ""
        out[dim] = (top, contains_value(found[-1]) if found else "")
    return out


def property_keys(get: Get, first: date, last: date, limit: int = 2) -> list[str]:
    """The custom properties' keys most used over ``first`` to ``last`` (at most ``limit``)."""
    body = get("/metrics/properties", [("from", first.isoformat()), ("to", last.isoformat())])
    return [str(r["key"]) for r in body["keys"]][:limit]
