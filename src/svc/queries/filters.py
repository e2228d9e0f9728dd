"""Filters: ``filter=<dimension>:<operator>:<value>``, repeatable, all of them must hold.

Operators: ``is``, ``is_not`` (``|`` separates alternatives: ``page:is:/a|/b``), ``contains``,
``not_contains`` (case-insensitive), ``matches``, ``not_matches`` (RE2 regular expressions).
A filter and its negation split the total in two: by events for event dimensions, by
sessions for session dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import re2

from svc.errors import InvalidRequest
from svc.queries.dimensions import Dimension, dimension
from svc.schema.named import NAMED, canonical

OPERATORS = ("is", "is_not", "contains", "not_contains", "matches", "not_matches")
MAX_FILTERS = 20
MAX_VALUE = 1000

# The cost of a pattern filter (docs/api.md, Filters). The store runs a ``matches`` pattern
# over every distinct value of the dimension in each block of rows it reads (``path`` and the
# other LowCardinality columns: their dictionary) or over every row (the session rows of
# ``entry_page``, ``exit_page``; String columns), and every such value is at most 2,048
# characters (svc.schema.limits). What one value costs grows with the pattern's RE2 program
# when RE2's automaton outgrows its memory and it falls back to its NFA: ~8.6 ns a character
# and instruction here (``a.{500}[^ab]``, 3,513 instructions: 32 ms a path of 2,048). These
# bound the program (module constants, not settings: the figures behind them are RE2's).
#: characters of a ``matches``/``not_matches`` pattern and of a ``contains`` value
MAX_PATTERN = 256
#: the largest count of a counted repetition (``{n}``, ``{n,}``, ``{n,m}``)
MAX_REPEAT = 100
#: RE2 program size (instructions) of a pattern: ``\p{L}+`` is 1,201, ``.{100}`` 704
MAX_PROGRAM = 2000
_UNBOUNDED = 1 << 30


def _re2_options() -> re2.Options:
    """RE2 as ClickHouse's ``match`` runs it: UTF-8, ``.`` matches a line break too."""
    options = re2.Options()
    options.dot_nl = True
    options.log_errors = False
    return options


_RE2_OPTIONS = _re2_options()


@dataclass(frozen=True, slots=True)
class Filter:
    dimension: Dimension
    op: str
    values: tuple[str, ...]
    params: tuple[tuple[str, str], ...]  # the dimension's own bound parameters

    @property
    def selects_reported_events(self) -> bool:
        """Whether every event this filter keeps is in ``report_events`` (every event but a
        page view without properties): it names events other than ``page_view``, or asks
        for a custom property's value to be one or contain one."""
        name = self.dimension.name
        if name == "event":
            if self.op == "is":
                return "page_view" not in self.values
            return self.op == "contains" and self.values[0].lower() not in "page_view"
        if name.startswith("prop:"):
            if self.op == "is":
                return "" not in self.values
            return self.op == "contains" and self.values[0] != ""
        return False

    def negation(self) -> Filter | None:
        """The filter that keeps the events this one drops (``is`` for ``is_not``, ``contains``
        for ``not_contains``, and back); None for the regular expressions."""
        flipped = {"is": "is_not", "is_not": "is", "contains": "not_contains"}
        flipped["not_contains"] = "contains"
        op = flipped.get(self.op)
        return None if op is None else Filter(self.dimension, op, self.values, self.params)

    def condition(self, expr: str, param: str) -> tuple[str, dict[str, object]]:
        """SQL condition on ``expr`` with the value bound as ``param``."""
        op = self.op
        if op in ("is", "is_not"):
            if len(self.values) == 1:
                sql = f"{expr} {'=' if op == 'is' else '!='} {{{param}:String}}"
                return sql, {param: self.values[0]}
            sql = f"{expr} {'IN' if op == 'is' else 'NOT IN'} {{{param}:Array(String)}}"
            return sql, {param: list(self.values)}
        value = self.values[0]
        if op in ("contains", "not_contains"):
            sql = f"positionCaseInsensitiveUTF8({expr}, {{{param}:String}}) > 0"
        else:
            sql = f"match({expr}, {{{param}:String}})"
        if op.startswith("not_"):
            sql = f"NOT ({sql})"
        return sql, {param: value}


def parse_filters(raw: list[str], field: str = "filter") -> list[Filter]:
    if len(raw) > MAX_FILTERS:
        raise InvalidRequest(f"at most {MAX_FILTERS} filters", field=field)
    return [parse_filter(text, i, field) for i, text in enumerate(raw)]


def parse_filter(text: str, index: int, field: str = "filter") -> Filter:
    name, sep1, rest = text.partition(":")
    if name == "prop":  # prop:<key>:<op>:<value>
        key, _, rest = rest.partition(":")
        name = f"prop:{key}"
    op, sep2, value = rest.partition(":")
    if not (sep1 and sep2):
        raise InvalidRequest(
            f"`{field}` must look like <dimension>:<operator>:<value>, got {text!r}", field=field
        )
    dim, dim_params = dimension(name, f"fk{index}", field)
    if op not in OPERATORS:
        raise InvalidRequest(
            f"`{field}`: unknown operator {op!r}; use one of {', '.join(OPERATORS)}", field=field
        )
    if len(value) > MAX_VALUE:
        raise InvalidRequest(f"`{field}`: the value is too long", field=field)
    if op not in ("is", "is_not"):
        why = pattern_refusal(value) if op.endswith("matches") else None
        if len(value) > MAX_PATTERN:
            kind = "pattern" if op.endswith("matches") else "value"
            why = f"the {kind} has {len(value):,} characters, more than {MAX_PATTERN}"
        if why is not None:
            raise InvalidRequest(f"`{field}` {_shown(text)}: {why}", field=field)
    values = tuple(value.split("|")) if op in ("is", "is_not") else (value,)
    if op in ("is", "is_not") and dim.name in NAMED:  # as stored, from what the dashboard shows
        values = tuple(canonical(dim.name, v) for v in values)
    return Filter(dim, op, values, tuple(dim_params.items()))


def _shown(text: str) -> str:
    """The filter as an error message names it: as sent, in double quotes, cut to 80
    characters."""
    return '"' + (text if len(text) <= 80 else text[:79] + "…") + '"'


@lru_cache(maxsize=1024)
def pattern_refusal(pattern: str) -> str | None:
    """Why ``pattern`` (a ``matches`` filter's RE2 expression) is refused, or None when it
    is taken: longer than :data:`MAX_PATTERN` characters; one RE2 itself refuses (compiled
    here with google-re2 as ClickHouse's ``match`` compiles it, before any read: Python's
    ``re`` is another dialect); a counted repetition above :data:`MAX_REPEAT`; a repeated
    group that holds a repetition (``(a+)+``, ``(.*){9}``, ``(?:a.{9}){10}``); a program of
    more than :data:`MAX_PROGRAM` RE2 instructions. The reason says which bound it broke."""
    if len(pattern) > MAX_PATTERN:
        return f"the pattern has {len(pattern):,} characters, more than {MAX_PATTERN}"
    try:
        program = re2.compile(pattern, _RE2_OPTIONS).programsize
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "refused"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"not a regular expression the store (RE2) accepts: {reason}"
    found = _repetition_refusal(pattern)
    if found is not None:
        return found
    if program > MAX_PROGRAM:
        return (
            f"RE2 compiles it into {program:,} instructions, more than {MAX_PROGRAM:,} "
            "(fewer or smaller classes and counted repetitions)"
        )
    return None


def _repetition_refusal(pattern: str) -> str | None:
    """The first counted repetition above :data:`MAX_REPEAT` or repeated group that holds a
    repetition in ``pattern``, described; None without one. ``pattern`` is one RE2 compiled:
    this reads its syntax (escapes, ``\\Q...\\E``, classes, groups, flags, quantifiers) and
    no more. A repetition is a quantifier that may repeat (``*``, ``+``, ``{n,m}`` with m > 1;
    not ``?``)."""
    # Per open group: where it opened, whether it holds a repetition; the last atom: where
    # it began and whether it holds one (a group does when something in it repeats).
    groups: list[tuple[int, bool]] = []
    atom: tuple[int, bool] | None = None
    repeats = False  # in the current group, so far
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        start = i
        if c == "\\":
            i = _escape_end(pattern, i)
            atom = (start, False)
            continue
        if c == "[":
            i = _class_end(pattern, i)
            atom = (start, False)
            continue
        if c == "(":
            i += 1
            if pattern.startswith("?", i):  # (?:, (?i:, (?P<name>, (?<name>; (?i) sets flags
                if pattern.startswith(("?P<", "?<"), i):
                    i = pattern.index(">", i) + 1
                else:
                    while pattern[i] not in ":)":
                        i += 1
                    i += 1
                    if pattern[i - 1] == ")":
                        atom = None
                        continue
            groups.append((start, repeats))
            repeats, atom = False, None
            continue
        if c == ")":
            opened, outer = groups.pop()
            atom = (opened, repeats)
            repeats = outer or repeats
            i += 1
            continue
        if c == "|":
            atom, i = None, i + 1
            continue
        bounds = _quantifier(pattern, i)
        if bounds is None:
            atom, i = (start, False), i + 1
            continue
        low, high, end = bounds
        quantifier = pattern[i:end]
        if c == "{" and max(low, high if high != _UNBOUNDED else low) > MAX_REPEAT:
            return f"the counted repetition {quantifier} repeats more than {MAX_REPEAT} times"
        if high > 1:
            if atom is not None and atom[1]:
                nested = pattern[atom[0] : end]
                nested = nested if len(nested) <= 40 else nested[:39] + "…"
                return f"nested quantifiers: the repeated group {nested} holds a repetition"
            repeats = True
        i = end + (1 if pattern.startswith("?", end) else 0)  # a lazy one: a+?
        atom = None
    return None


def _quantifier(pattern: str, i: int) -> tuple[int, int, int] | None:
    """The quantifier at ``i`` (``*``, ``+``, ``?``, ``{n}``, ``{n,}``, ``{n,m}``): its least
    and most counts and where it ends; None if there is none (a ``{`` RE2 takes literally)."""
    c = pattern[i]
    if c in "*+?":
        return (0 if c != "+" else 1), (1 if c == "?" else _UNBOUNDED), i + 1
    if c != "{":
        return None
    close = pattern.find("}", i)
    if close < 0:
        return None
    low, comma, high = pattern[i + 1 : close].partition(",")
    if not low.isdigit() or not (high.isdigit() or high == ""):
        return None
    most = int(high) if high else (_UNBOUNDED if comma else int(low))
    return int(low), most, close + 1


def _escape_end(pattern: str, i: int) -> int:
    """Where the escape at ``i`` ends: ``\\p{Greek}``, ``\\x{41}``, ``\\Q...\\E`` or two
    characters."""
    kind = pattern[i + 1 : i + 2]
    if kind in ("p", "P", "x") and pattern.startswith("{", i + 2):
        return pattern.index("}", i) + 1
    if kind == "Q":
        end = pattern.find("\\E", i + 2)
        return len(pattern) if end < 0 else end + 2
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    """Where the character class at ``i`` ends (``[]a]``, ``[^]a]``, ``[[:alpha:]]`` and
    escapes inside taken)."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        if pattern[j] == "\\":
            j = _escape_end(pattern, j)
        elif pattern.startswith("[:", j) and (close := pattern.find(":]", j + 2)) >= 0:
            j = close + 2
        else:
            j += 1
    return j + 1
