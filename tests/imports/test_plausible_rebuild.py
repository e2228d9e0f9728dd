"""The rebuild of a Plausible day (svc.imports.plausible_sessions), in process, on days made of
random real sessions (seeded): what it promises of every table, checked against the tables
those sessions give."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from svc.imports.plausible import BLANKS
from svc.imports.plausible_sessions import Session, Stat, rebuild

SEEDS = range(200)


def real_day(seed: int) -> tuple[dict[str, dict[Any, Stat]], Stat]:
    """The export's tables of a day of random sessions, as Plausible counts them."""
    rnd = random.Random(seed)
    n = rnd.randint(1, 60)
    people = max(1, n - rnd.randint(0, n // 2))
    choices: dict[str, list[Any]] = {
        "source": [(s, *("",) * 6) for s in ("Google", "Direct / None", "Bing", "HN", "Mail")],
        "device": ["desktop", "mobile", "tablet"],
        "browser": [("Chrome", "120"), ("Safari", "17"), ("Firefox", "126")],
        "os": [("Windows", "10"), ("iOS", "17"), ("Linux", "")],
        "location": [("DE", "DE-BE"), ("FR", ""), ("US", "US-CA")],
        "entry": ["/", "/a", "/b", "/c"],
    }
    widths = {d: rnd.randint(1, len(v)) for d, v in choices.items()}
    tables: dict[str, dict[Any, Stat]] = {d: {} for d in BLANKS}
    seen: dict[tuple[str, Any], set[int]] = defaultdict(set)
    total, everyone = Stat(), set()
    for _ in range(n):
        pageviews = 1 if rnd.random() < 0.4 else rnd.randint(2, 9)
        bounce = pageviews == 1
        duration = 0 if bounce else rnd.randint(0, 600)
        person = rnd.randrange(people)
        everyone.add(person)
        for d in BLANKS:
            value = rnd.choice(choices[d][: widths[d]])
            stat = tables[d].setdefault(value, Stat())
            stat.add(Stat(1, 0, pageviews, int(bounce), duration))
            seen[(d, value)].add(person)
        total.add(Stat(1, 0, pageviews, int(bounce), duration))
    for (d, value), who in seen.items():
        tables[d][value].visitors = len(who)
    total.visitors = len(everyone)
    return tables, total


def per_value(sessions: list[Session], d: str) -> dict[Any, tuple[int, int, int, int, int]]:
    out: dict[Any, list[Any]] = defaultdict(lambda: [0, 0, 0, 0, set()])
    for s in sessions:
        row = out[s.values[d]]
        row[0] += 1
        row[1] += s.pageviews
        row[2] += s.bounce
        row[3] += s.duration
        row[4].add(s.visitor)
    return {k: (v[0], v[1], v[2], v[3], len(v[4])) for k, v in out.items()}


def as_rows(table: dict[Any, Stat]) -> dict[Any, tuple[int, int, int, int, int]]:
    return {k: (s.visits, s.pageviews, s.bounces, s.duration, s.visitors) for k, s in table.items()}


def test_a_day_keeps_its_totals_and_every_tables_visits_and_bounces() -> None:
    for seed in SEEDS:
        tables, total = real_day(seed)
        sessions = rebuild(tables, total, BLANKS)
        assert len(sessions) == total.visits, seed
        assert sum(s.pageviews for s in sessions) == total.pageviews, seed
        assert sum(s.bounce for s in sessions) == total.bounces, seed
        assert sum(s.duration for s in sessions) == total.duration, seed
        assert len({s.visitor for s in sessions}) == total.visitors, seed
        assert all(s.pageviews == 1 for s in sessions if s.bounce), seed
        for d in BLANKS:
            got = {k: v[0:3:2] for k, v in per_value(sessions, d).items()}
            assert got == {k: v[0:3:2] for k, v in as_rows(tables[d]).items()}, (seed, d)


def test_page_views_and_time_per_source_and_device_are_the_tables() -> None:
    """Per source always; per device whenever the flow finds a placement on the pairs of the
    rebuilt table (all but a few of these days); visitors as far as merging gets."""
    exact: dict[str, int] = defaultdict(int)
    for seed in SEEDS:
        tables, total = real_day(seed)
        sessions = rebuild(tables, total, BLANKS)
        for d in ("source", "device"):
            got, want = per_value(sessions, d), as_rows(tables[d])
            figures = {k: v[:4] for k, v in got.items()} == {k: v[:4] for k, v in want.items()}
            exact[d] += figures
            exact[d + " visitors"] += got == want
    assert exact["source"] == len(SEEDS)
    assert exact["device"] >= 0.99 * len(SEEDS), exact
    assert exact["source visitors"] >= 0.9 * len(SEEDS), exact
    assert exact["device visitors"] >= 0.9 * len(SEEDS), exact
