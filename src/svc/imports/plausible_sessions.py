"""The sessions of one day of a Plausible export, rebuilt from its per-dimension totals.

Plausible's session tables (``imported_sources``, ``imported_devices``, ``imported_browsers``,
``imported_operating_systems``, ``imported_locations``, ``imported_entry_pages``) each hold,
per value, the day's visits, visitors, page views, bounces and visit duration of the sessions
with that value. :func:`rebuild` makes sessions (each with a value of every dimension, a
number of page views, a duration and a visitor) whose totals per value are those:

- Every table's visits and bounces per value, exactly: bounces are one page view each, so
  their values are dealt out per dimension independently.
- Page views and visit duration per source *and* per device, exactly whenever the export
  allows it (it does when it comes from real sessions, as Plausible's does): the sessions that
  did not bounce are a table of source x device (:func:`spread`: every pair that may meet
  does), and their page views and durations are transports on that table
  (:func:`transport`, a maximum flow), each session at least two page views where the totals
  allow; a source and a device that a transport leaves with amounts it cannot place are made
  to meet (:func:`_reshape`, a few times at most). What cannot be placed stays exact per
  source.
- The other tables' page views and duration per value as close as one pass and a few swaps
  get: the longest sessions first, each to the value that still needs the most page views per
  session, then values swapped between two sessions while that brings page views closer.
- Visitors: the day's, exactly; per source and device as close as merging gets (within a
  pair first, as many as a maximum flow places; then within one source or one device).

The work grows about linearly with the day's visits (a flow over a few hundred values, a heap
per table); tests/imports/test_plausible_rebuild.py checks the promises on days of random
sessions.

Combinations of dimensions (source *and* country) are not in the export and are not real.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

INF = 1 << 62
#: The dimensions whose page views and durations are rebuilt exactly, together.
PRIMARY = ("source", "device")


@dataclass
class Stat:
    """What a table says of one value on one day (or of the whole day)."""

    visits: int = 0
    visitors: int = 0
    pageviews: int = 0
    bounces: int = 0
    duration: int = 0

    def add(self, other: Stat) -> None:
        self.visits += other.visits
        self.visitors += other.visitors
        self.pageviews += other.pageviews
        self.bounces += other.bounces
        self.duration += other.duration


@dataclass
class Session:
    values: dict[str, Any]
    pageviews: int
    duration: int
    bounce: bool
    visitor: int = 0
    custom: list[Any] = field(default_factory=list)


Table = dict[Any, Stat]


def fit(table: Table, total: Stat, blank: Hashable) -> Table:
    """``table`` with the day's visits, bounces, page views and duration: what it lacks under
    ``blank`` (sessions the table does not name, such as those without a country), what it has
    too much taken from its largest values; each value's bounces at most its visits and its page
    views at least one a visit. Visitors are the table's (they do not add up to the day's)."""
    out = {k: Stat(**vars(v)) for k, v in table.items()}
    for name in ("visits", "bounces", "pageviews", "duration"):  # visitors do not add up
        have = sum(getattr(s, name) for s in out.values())
        want = getattr(total, name)
        if have < want:
            s = out.setdefault(blank, Stat())
            setattr(s, name, getattr(s, name) + want - have)
        for key in sorted(out, key=lambda k: -getattr(out[k], name)):
            if have <= want:
                break
            cut = min(have - want, getattr(out[key], name))
            setattr(out[key], name, getattr(out[key], name) - cut)
            have -= cut
    if blank in out and blank not in table:
        out[blank].visitors = out[blank].visits  # not named: each visit its own visitor
    for s in out.values():
        s.bounces = min(s.bounces, s.visits)
        s.pageviews = max(s.pageviews, s.visits)
    return {k: s for k, s in out.items() if s.visits or s.pageviews or s.duration}


class _Flow:
    """Dinic's maximum flow on a small graph."""

    def __init__(self, n: int) -> None:
        self.g: list[list[list[int]]] = [[] for _ in range(n)]

    def edge(self, u: int, v: int, cap: int) -> tuple[int, int]:
        self.g[u].append([v, cap, len(self.g[v])])
        self.g[v].append([u, 0, len(self.g[u]) - 1])
        return u, len(self.g[u]) - 1

    def flow(self, e: tuple[int, int]) -> int:
        v, _, back = self.g[e[0]][e[1]]
        return self.g[v][back][1]

    def run(self, s: int, t: int) -> int:
        total = 0
        while True:
            level = [-1] * len(self.g)
            level[s] = 0
            queue = deque([s])
            while queue:
                u = queue.popleft()
                for v, cap, _ in self.g[u]:
                    if cap > 0 and level[v] < 0:
                        level[v] = level[u] + 1
                        queue.append(v)
            if level[t] < 0:
                return total
            it = [0] * len(self.g)
            while pushed := self._push(s, t, INF, level, it):
                total += pushed

    def _push(self, u: int, t: int, f: int, level: list[int], it: list[int]) -> int:
        if u == t:
            return f
        while it[u] < len(self.g[u]):
            e = self.g[u][it[u]]
            v, cap, back = e
            if cap > 0 and level[v] == level[u] + 1:
                pushed = self._push(v, t, min(f, cap), level, it)
                if pushed:
                    e[1] -= pushed
                    self.g[v][back][1] += pushed
                    return pushed
            it[u] += 1
        return 0


Cells = dict[tuple[Any, Any], int]


def transport(rows: dict[Any, int], cols: dict[Any, int], caps: Cells) -> Cells:
    """A table of non-negative amounts on the cells of ``caps`` (each at most its capacity; a
    cell of a row or column not named is none) whose row and column sums are at most ``rows``
    and ``cols``, as much as can be placed."""
    r, c = list(rows), list(cols)
    flow = _Flow(2 + len(r) + len(c))
    src, sink = 0, 1
    ri = {k: 2 + i for i, k in enumerate(r)}
    ci = {k: 2 + len(r) + i for i, k in enumerate(c)}
    for k in r:
        flow.edge(src, ri[k], rows[k])
    for k in c:
        flow.edge(ci[k], sink, cols[k])
    edges = {
        cell: flow.edge(ri[cell[0]], ci[cell[1]], cap)
        for cell, cap in caps.items()
        if cap and cell[0] in ri and cell[1] in ci
    }
    flow.run(src, sink)
    return {cell: f for cell, e in edges.items() if (f := flow.flow(e))}


def spread(rows: dict[Any, int], cols: dict[Any, int]) -> Cells:
    """Counts with these row and column sums (equal totals) on as many cells as can hold one."""
    every = {(a, b): 1 for a in rows for b in cols}
    first = transport(rows, cols, every)
    left_r = {k: n - sum(v for (a, _), v in first.items() if a == k) for k, n in rows.items()}
    left_c = {k: n - sum(v for (_, b), v in first.items() if b == k) for k, n in cols.items()}
    rest = transport(left_r, left_c, dict.fromkeys(every, INF))
    return {
        cell: first.get(cell, 0) + rest.get(cell, 0)
        for cell in every
        if cell in first or cell in rest
    }


def _exact(rows: dict[Any, int], cols: dict[Any, int], support: Cells) -> Cells:
    """Amounts on ``support`` with these row sums (exact) and column sums (exact when a
    transport finds them: what it cannot place goes to the row's first cell)."""
    placed = transport(rows, cols, dict.fromkeys(support, INF))
    for a, n in rows.items():
        left = n - sum(v for (r, _), v in placed.items() if r == a)
        if left > 0:
            cell = next(cell for cell in support if cell[0] == a)
            placed[cell] = placed.get(cell, 0) + left
    return placed


def _blocked(counts: Cells, rows: dict[Any, int], cols: dict[Any, int]) -> tuple[Any, Any] | None:
    """A row and a column that a transport on the cells of ``counts`` leaves with amounts it
    cannot place, or None when it places everything."""
    placed = transport(rows, cols, dict.fromkeys(counts, INF))
    by_row: dict[Any, int] = {}
    by_col: dict[Any, int] = {}
    for (r, c), v in placed.items():
        by_row[r] = by_row.get(r, 0) + v
        by_col[c] = by_col.get(c, 0) + v
    row = next((r for r, n in rows.items() if n > by_row.get(r, 0)), None)
    col = next((c for c, n in cols.items() if n > by_col.get(c, 0)), None)
    return None if row is None or col is None else (row, col)


def _reshape(counts: Cells, row: Any, col: Any) -> bool:
    """Sessions moved so that ``row`` and ``col`` meet, the sums kept: one of (row, c) and one
    of (r, col) become one of (row, col) and one of (r, c), cells left empty only if need be.
    False when no such cells exist."""
    best: tuple[int, tuple[Any, Any], tuple[Any, Any]] | None = None
    for (r, c), n in counts.items():
        if r != row or c == col or n <= 0:
            continue
        for (r2, c2), n2 in counts.items():
            if c2 != col or r2 == row or n2 <= 0:
                continue
            loss = (n == 1) + (n2 == 1)
            if best is None or loss < best[0]:
                best = (loss, (r, c), (r2, c2))
    if best is None:
        return False
    _, (r, c), (r2, _) = best
    for cell, delta in (((row, c), -1), ((r2, col), -1), ((row, col), 1), ((r2, c), 1)):
        counts[cell] = counts.get(cell, 0) + delta
        if not counts[cell]:
            del counts[cell]
    return True


def _sized(counts: dict[Any, int], n: int, blank: Hashable) -> dict[Any, int]:
    """``counts`` summing to ``n``: the lack under ``blank``, the excess off the largest."""
    out = {k: max(0, v) for k, v in counts.items()}
    have = sum(out.values())
    if have < n:
        out[blank] = out.get(blank, 0) + n - have
    for key in sorted(out, key=lambda k: -out[k]):
        if have <= n:
            break
        cut = min(have - n, out[key])
        out[key] -= cut
        have -= cut
    return {k: v for k, v in out.items() if v}


def _even(total: int, n: int) -> list[int]:
    q, r = divmod(total, n)
    return [q + (1 if i < r else 0) for i in range(n)]


def _deal(counts: dict[Any, int]) -> list[Any]:
    """The values of ``counts`` as a list, most frequent first (deterministic)."""
    out: list[Any] = []
    for value, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        out += [value] * n
    return out


def rebuild(tables: dict[str, Table], total: Stat, blanks: dict[str, Hashable]) -> list[Session]:
    """The day's sessions (see the module docstring); ``tables`` by dimension, each fitted to
    ``total`` with its ``blanks`` value for what it does not name."""
    total = Stat(**vars(total))
    total.bounces = min(total.bounces, total.visits)
    total.pageviews = max(total.pageviews, total.visits)
    fitted = {d: fit(tables.get(d, {}), total, blanks[d]) for d in blanks}
    bounces = total.bounces
    sessions: list[Session] = []
    bounce_values = {
        d: _deal(_sized({k: s.bounces for k, s in t.items()}, bounces, blanks[d]))
        for d, t in fitted.items()
    }
    for i in range(bounces):
        values = {d: bounce_values[d][i] for d in fitted}
        sessions.append(Session(values, 1, 0, True))

    # the sessions that did not bounce: source x device
    a, b = PRIMARY
    others = total.visits - bounces
    m = {
        d: _sized({k: s.visits - s.bounces for k, s in t.items()}, others, blanks[d])
        for d, t in fitted.items()
    }
    for d, t in fitted.items():
        for k in m[d]:
            t.setdefault(k, Stat())
    q = {d: {k: s.pageviews - s.bounces for k, s in t.items()} for d, t in fitted.items()}
    dur = {d: {k: s.duration for k, s in t.items()} for d, t in fitted.items()}
    counts = spread({k: n for k, n in m[a].items() if n}, {k: n for k, n in m[b].items() if n})
    two = all(q[d][k] >= 2 * n for d in PRIMARY for k, n in m[d].items())
    low = {cell: n * (2 if two else 1) for cell, n in counts.items()}

    def left(d: str, index: int) -> dict[Any, int]:
        base = dict.fromkeys(m[d], 0)
        for cell, v in low.items():
            base[cell[index]] += v
        return {k: max(0, q[d][k] - base[k]) for k in m[d] if m[d][k]}

    durs = ({k: dur[a][k] for k in m[a] if m[a][k]}, {k: dur[b][k] for k in m[b] if m[b][k]})
    for _ in range(min(len(counts), 50)):  # a pair that blocks a placement: table reshaped
        blocked = _blocked(counts, left(a, 0), left(b, 1)) or _blocked(counts, *durs)
        if blocked is None or not _reshape(counts, *blocked):
            break
    low = {cell: n * (2 if two else 1) for cell, n in counts.items()}  # the same sums
    extra = _exact(left(a, 0), left(b, 1), counts) if counts else {}
    times = _exact(*durs, counts) if counts else {}
    for cell, n in sorted(counts.items(), key=lambda kv: str(kv[0])):
        sizes = _even(low[cell] + extra.get(cell, 0), n)
        spans = _even(times.get(cell, 0), n)
        for size, span in zip(sizes, spans, strict=True):
            sessions.append(Session({a: cell[0], b: cell[1]}, size, span, False))

    # the other dimensions: counts exact, page views and durations greedily
    long = sorted((s for s in sessions if not s.bounce), key=lambda s: (-s.pageviews, -s.duration))
    for d in fitted:
        if d in PRIMARY:
            continue
        _swap(long, d, _greedy(long, d, m[d], q[d], dur[d]))
    _visitors(sessions, fitted, total.visitors)
    return sessions


def _greedy(
    sessions: list[Session],
    d: str,
    counts: dict[Any, int],
    pageviews: dict[Any, int],
    durations: dict[Any, int],
) -> dict[Any, int]:
    """Each of ``sessions`` (longest first) given the value of ``d`` that still needs the
    most page views (then seconds) per session, ``counts`` of each; what each value still
    lacks of its page views."""
    need = {k: [n, pageviews[k], durations[k]] for k, n in counts.items() if n}
    heap = [(-v[1] / v[0], -v[2] / v[0], str(k), k) for k, v in need.items()]
    heapq.heapify(heap)
    for s in sessions:
        if not heap:
            break
        *_, key = heapq.heappop(heap)
        v = need[key]
        v[0] -= 1
        v[1] -= s.pageviews
        v[2] -= s.duration
        s.values[d] = key
        if v[0] > 0:
            heapq.heappush(heap, (-v[1] / v[0], -v[2] / v[0], str(key), key))
    return {k: v[1] for k, v in need.items()}


def _ranked(missing: dict[Any, int], sign: int) -> Iterator[tuple[int, str, Any]]:
    """(what is missing, its text, value) of the values that lack (sign 1) or have too many
    (-1): ordered without comparing values of different types."""
    return ((n, str(k), k) for k, n in missing.items() if n * sign > 0)


def _swap(sessions: list[Session], d: str, missing: dict[Any, int], width: int = 8) -> None:
    """Values of ``d`` swapped between two sessions (the counts stay) while that brings the
    page views per value closer to the table's (``missing``: what each value still lacks):
    each swap the largest that fits between one of the ``width`` values that lack most and one
    of those that have most too many; at most a few per value."""
    by_size: dict[Any, dict[int, list[Session]]] = {}
    for s in sessions:
        by_size.setdefault(s.values[d], {}).setdefault(s.pageviews, []).append(s)
    for _ in range(min(4 * len(missing), 400)):
        lacking = [k for *_, k in heapq.nlargest(width, _ranked(missing, 1))]
        having = [k for *_, k in heapq.nsmallest(width, _ranked(missing, -1))]
        best: tuple[int, Any, Any, int, int] | None = None
        for u in lacking:
            for v in having:
                limit = min(missing[u], -missing[v])
                for y in by_size.get(v, {}):
                    for x in by_size.get(u, {}):
                        delta = y - x
                        if 0 < delta <= limit and (best is None or delta > best[0]):
                            best = (delta, u, v, x, y)
        if best is None:
            return
        delta, u, v, x, y = best
        small, big = by_size[u][x].pop(), by_size[v][y].pop()
        for value, size in ((u, x), (v, y)):
            if not by_size[value][size]:
                del by_size[value][size]
        small.values[d], big.values[d] = v, u
        by_size[v].setdefault(x, []).append(small)
        by_size[u].setdefault(y, []).append(big)
        missing[u] -= delta
        missing[v] += delta


def _visitors(sessions: list[Session], tables: dict[str, Table], visitors: int) -> None:
    """Visitor numbers: the day's ``visitors`` in all (each session its own when the export
    does not say), merged so that the visitors per source and per device come as close to the
    tables' as merging gets (:class:`_Merger`)."""
    target = max(1, min(visitors, len(sessions))) if visitors else len(sessions)
    _Merger(sessions, tables).run(len(sessions) - target)


class _Merger:
    """Sessions merged into visitors. A visitor counts once under each source and device it
    has a session of, so merging two visitors takes one off each value both have: the
    merges go where the tables count fewer visitors than visits (``need``), in turn:

    1. sessions of one source and device (both counts), as many as a maximum flow places;
    2. visitors of one source, not of one device (the source's count alone), then the same
       for devices;
    3. what the day's total still asks for: visitors with the fewest values in common."""

    def __init__(self, sessions: list[Session], tables: dict[str, Table]) -> None:
        self.groups: dict[int, list[Session]] = {}
        self.sets: dict[int, dict[str, set[Any]]] = {}
        for i, s in enumerate(sessions):
            s.visitor = i
            self.groups[i] = [s]
            self.sets[i] = {d: {s.values[d]} for d in PRIMARY}
        self.need = {
            d: {k: max(0, st.visits - st.visitors) for k, st in tables[d].items()} for d in PRIMARY
        }
        self.sessions = sessions

    def values(self, g: int) -> dict[str, set[Any]]:
        return self.sets[g]

    def merge(self, g: int, into: int) -> None:
        mine, theirs = self.sets.pop(g), self.sets[into]
        for d in PRIMARY:
            for k in mine[d] & theirs[d]:
                self.need[d][k] = self.need[d].get(k, 0) - 1
            theirs[d] |= mine[d]
        for s in self.groups.pop(g):
            s.visitor = into
            self.groups[into].append(s)

    def harmless(self, g: int, into: int) -> bool:
        """Whether merging takes a visitor only off values that have one too many."""
        mine, theirs = self.values(g), self.values(into)
        return all(self.need[d].get(k, 0) > 0 for d in PRIMARY for k in mine[d] & theirs[d])

    def run(self, merges: int) -> None:
        a, b = PRIMARY
        cells: dict[tuple[Any, Any], list[int]] = {}
        for i, s in enumerate(self.sessions):
            cells.setdefault((s.values[a], s.values[b]), []).append(i)
        caps = {cell: len(ids) - 1 for cell, ids in cells.items()}
        planned = transport(
            {k: n for k, n in self.need[a].items() if n},
            {k: n for k, n in self.need[b].items() if n},
            caps,
        )
        for cell, n in sorted(planned.items(), key=lambda kv: str(kv[0])):
            ids = cells[cell]
            for g in ids[1 : 1 + min(n, merges)]:
                self.merge(g, ids[0])
                merges -= 1
        for d in PRIMARY:  # one dimension's count alone
            by_value: dict[Any, list[int]] = {}
            for g in sorted(self.groups):
                for k in self.values(g)[d]:
                    by_value.setdefault(k, []).append(g)
            for k, ids in sorted(by_value.items(), key=lambda kv: str(kv[0])):
                hub = ids[0]
                for g in ids[1:]:
                    if merges <= 0 or self.need[d].get(k, 0) <= 0:
                        break
                    if g in self.groups and hub in self.groups and self.harmless(g, hub):
                        self.merge(g, hub)
                        merges -= 1
        ids = sorted(self.groups)
        while merges > 0 and len(ids) > 1:  # the day's total: a harmless merge among a few
            last = ids.pop()
            into = next((h for h in ids[:64] if self.harmless(last, h)), ids[0])
            self.merge(last, into)
            merges -= 1
        numbers = {v: n for n, v in enumerate(sorted(self.groups))}
        for s in self.sessions:
            s.visitor = numbers[s.visitor]
