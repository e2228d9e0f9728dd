"""A project's exclusions as the pipeline's ``drop_excluded`` step reads them, compiled once
per version of the project: the excluded address ranges (``options.excludeAddresses``), path
globs (``options.excludePaths``, as RE2 automata) and own domains (``options.onlyOwnDomains``);
and the bounds :mod:`svc.http.projects` sets on them."""

from __future__ import annotations

import fnmatch
import ipaddress
import itertools
import logging
import re
from collections.abc import Sequence
from typing import Any

import re2

from svc.meta.store import Project

__all__ = [
    "GLOBS_PER_AUTOMATON",
    "MAX_EXCLUDED_PATHS",
    "MAX_GLOB_WILDCARDS",
    "MAX_PATH_GLOB_LENGTH",
    "Exclusions",
    "exclusions_of",
    "glob_regex",
    "glob_wildcards",
]

log = logging.getLogger(__name__)


# the project's exclusions, compiled once per project version --------------------------------


class Exclusions:
    """A project's ``options`` as the ``drop_excluded`` step reads them: the excluded path
    globs as RE2 automata of ``GLOBS_PER_AUTOMATON`` globs each (a check is linear in the
    path's length; see there), the excluded address ranges as a set of network numbers per
    prefix length (a check costs one set lookup per distinct prefix length, whatever the
    number of ranges), the project's domains as a set (a check walks the host's suffixes)."""

    __slots__ = ("addresses", "own_domains", "paths")

    def __init__(self, options: dict[str, Any], domains: Sequence[str]) -> None:
        ranges = options.get("excludeAddresses") or ()
        tables: dict[int, dict[int, set[int]]] = {4: {}, 6: {}}
        for r in ranges:
            try:
                net = ipaddress.ip_network(str(r), strict=False)
            except ValueError:
                continue  # refused when set (svc.http.projects); never fatal here
            shift = net.max_prefixlen - net.prefixlen
            tables[net.version].setdefault(shift, set()).add(int(net.network_address) >> shift)
        # (version -> ((shift, networks), ...)), the widest ranges first
        self.addresses: dict[int, tuple[tuple[int, frozenset[int]], ...]] = {
            version: tuple((shift, frozenset(nets)) for shift, nets in sorted(table.items()))[::-1]
            for version, table in tables.items()
            if table
        }
        globs = [g for g in options.get("excludePaths") or () if isinstance(g, str)]
        # More globs than the bound (stored before it) are all kept, in at most 10 automata
        # (their cost: docs/benchmarks.md, Figures behind the code).
        size = max(GLOBS_PER_AUTOMATON, -(-len(globs) // 10))
        if len(globs) > MAX_EXCLUDED_PATHS:
            log.warning(
                "a project has %d excluded path globs, stored before at most %d were "
                "accepted: keep them few (each of its events is checked against all)",
                len(globs),
                MAX_EXCLUDED_PATHS,
            )
        self.paths: tuple[Any, ...] | None = (
            tuple(_compile_globs(globs[i : i + size]) for i in range(0, len(globs), size))
            if globs
            else None
        )
        self.own_domains: frozenset[str] | None = (
            frozenset(domains) if options.get("onlyOwnDomains") and domains else None
        )

    def excludes_address(self, address: str) -> bool:
        try:
            addr = ipaddress.ip_address(address)
        except ValueError:
            return False
        table = self.addresses.get(addr.version)
        if not table:
            return False
        n = int(addr)
        return any((n >> shift) in nets for shift, nets in table)

    def excludes_path(self, path: str) -> bool:
        for automaton in self.paths or ():
            try:
                if automaton.fullmatch(path) is not None:
                    return True
            except UnicodeEncodeError:  # a lone surrogate: read as a replacement character
                return self.excludes_path(path.encode("utf-8", "replace").decode())
        return False

    def foreign(self, host: str) -> bool:
        """Whether ``host`` is neither one of the domains nor a subdomain of one."""
        domains = self.own_domains
        if domains is None:
            return False
        while True:
            if host in domains:
                return False
            dot = host.find(".")
            if dot < 0:
                return True
            host = host[dot + 1 :]


_NEVER = r"[^\x00-\x{10FFFF}]"  # an empty class: matches nothing


def glob_wildcards(glob: str) -> int:
    """How many wildcards a glob has: each run of ``*``, each ``?`` and each ``[``."""
    runs = sum(1 for i, c in enumerate(glob) if c == "*" and (i == 0 or glob[i - 1] != "*"))
    return runs + glob.count("?") + glob.count("[")


def glob_regex(glob: str) -> str:
    """A path glob as an RE2 expression matching the whole path, with the meaning of
    :func:`fnmatch.fnmatchcase`: ``*`` any characters, ``?`` one, ``[...]`` one of a set
    (``[!...]`` none of it; ``a-z`` a range; a ``[`` without its ``]`` itself), anything
    else itself. Every other character is written as ``\\x{...}``: nothing in a glob is
    read as RE2 syntax."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        i += 1
        if c == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and glob[j] == "!":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(_literal("["))
                continue
            out.append(_char_class(glob[i - 1 : j + 1]))
            i = j + 1
        else:
            out.append(_literal(c))
    return "".join(out)


def _literal(c: str) -> str:
    return c if c.isascii() and (c.isalnum() or c == "/") else f"\\x{{{ord(c):x}}}"


def _char_class(bracket: str) -> str:
    """``[...]`` as the set of characters fnmatch reads in it (its ranges, ``!``, and its
    quirks: ``[z-a]`` matches nothing), written as RE2 ranges. Which characters a class
    holds changes only at a character it names or the one after, so fnmatch's own
    expression is asked about those alone."""
    one = re.compile(fnmatch.translate(bracket))
    points = sorted({0, 0x110000} | {o for c in bracket for o in (ord(c), ord(c) + 1)})
    ranges: list[tuple[int, int]] = []
    for low, end in itertools.pairwise(points):
        if low > 0x10FFFF or not one.match(chr(low)):
            continue
        if ranges and ranges[-1][1] == low - 1:
            ranges[-1] = (ranges[-1][0], end - 1)
        else:
            ranges.append((low, end - 1))
    if not ranges:
        return _NEVER
    return "[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges) + "]"


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a large set (stored before the bounds) runs without a DFA
    return options


_RE2_OPTIONS = _re2_options()

# The bounds of a project's excluded path globs (svc.http.projects refuses more) and how
# they are checked. RE2 builds an automaton's states as paths need them, each a set of
# positions in every glob: with many globs of several wildcards, distinct long paths keep
# needing new states and a check costs nearly what RE2's NFA does: automata of 10 globs
# bound that cost, and few globs of few wildcards keep it small (what paths made to be
# costly and real paths cost: docs/benchmarks.md, Figures behind the code).
MAX_EXCLUDED_PATHS = 50
MAX_PATH_GLOB_LENGTH = 256
MAX_GLOB_WILDCARDS = 4  # runs of *, each ? and each [
GLOBS_PER_AUTOMATON = 10


def _compile_globs(globs: list[str]) -> Any:
    """One RE2 expression for every glob (a glob RE2 refuses, which none should be, is left
    out and logged rather than failing every event of the project)."""
    parts = [glob_regex(g) for g in globs]
    try:
        return re2.compile("(?s)(?:" + "|".join(parts) + ")", _RE2_OPTIONS)
    except re2.error:
        kept = []
        for glob, part in zip(globs, parts, strict=True):
            try:
                re2.compile(part, _RE2_OPTIONS)
            except re2.error:
                log.warning("excluded path glob %r left out: RE2 cannot compile it", glob)
            else:
                kept.append(part)
        return re2.compile("(?s)(?:" + "|".join(kept or [_NEVER]) + ")", _RE2_OPTIONS)


# project id -> (options, domains, updated_at, compiled): the options dict of the project
# record the key cache hands out is the same object for every request, so a lookup is one
# identity check; a record loaded again with the same version (same updated_at and content)
# reuses the compiled form too.
_COMPILED: dict[str, tuple[dict[str, Any], tuple[str, ...], int, Exclusions]] = {}
_COMPILED_MAX = 10_000


def exclusions_of(project: Project) -> Exclusions:
    """The project's compiled exclusions: compiled once per version of the project."""
    options, domains = project.options, project.domains
    known = _COMPILED.get(project.id)
    if known is not None:
        if known[0] is options and known[1] is domains:
            return known[3]
        if known[2] == project.updated_at and known[0] == options and known[1] == domains:
            _COMPILED[project.id] = (options, domains, known[2], known[3])
            return known[3]
    compiled = Exclusions(options, domains)
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[project.id] = (options, domains, project.updated_at, compiled)
    return compiled
