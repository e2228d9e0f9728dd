"""Filters: ``filter=<dimension>:<operator>:<value>``, repeatable, all of them must hold.

Operators: ``is``, ``is_not`` (``|`` separates alternatives: ``page:is:/a|/b``), ``contains``,
``not_contains`` (case-insensitive), ``matches``, ``not_matches`` (RE2 regular expressions).
A filter and its negation split the total in two: by events for event dimensions, by
sessions for session dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.errors import InvalidRequest
from svc.queries.dimensions import Dimension, dimension

OPERATORS = ("is", "is_not", "contains", "not_contains", "matches", "not_matches")
MAX_FILTERS = 20
MAX_VALUE = 1000


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
    values = tuple(value.split("|")) if op in ("is", "is_not") else (value,)
    # A regular expression is checked by the store that runs it (RE2): a pattern it refuses
    # is a 400 naming `filter` (svc.storage.events, CANNOT_COMPILE_REGEXP). Python's `re`
    # is another dialect: it accepts what RE2 refuses (`(?=a)`, `(a)\1`, `a++`: 500s), refuses
    # what RE2 accepts (`\p{L}`, `(?<name>a)`), and overflows its stack on deep nesting.
    return Filter(dim, op, values, tuple(dim_params.items()))
