"""The values the service names itself (a session's device, channel, browser and operating
system), as they are stored, from what a person types: in any case, and for a channel in the
words the dashboard shows (``Organic search`` for ``organic_search``).

A filter ``device:is:Mobile`` must count what the dashboard shows as "Mobile" (stored
``mobile``): the filter's value is put in the stored spelling before the query is planned
(:func:`canonical`), so every path of a report (the events, the session rows, the daily
rollups' value rows) compares the same text. A value the service does not name (a browser
family missing from the list) is left as it was typed.

The browser and OS families are those of the user-agent rules ua-parser ships (the literal
family names, and the names a rule's ``$1`` takes from a group of literal alternatives).
"""

from __future__ import annotations

import re._parser as sre_parse  # the stdlib's regex parser, to read the rules' groups
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any, Final

#: Every channel a session can be given (svc.ingestion.enrich.sources.attribute).
CHANNELS: Final = (
    "direct",
    "cross_network",
    "paid_shopping",
    "paid_search",
    "paid_social",
    "paid_video",
    "display",
    "paid_other",
    "ai_assistants",
    "organic_shopping",
    "organic_social",
    "organic_video",
    "organic_search",
    "referral",
    "email",
    "affiliates",
    "audio",
    "sms",
    "mobile_push_notifications",
)

#: Every device class (svc.ingestion.enrich.useragent); "" when unknown.
DEVICES: Final = ("desktop", "mobile", "tablet")

#: The browser families stored under another name (svc.ingestion.enrich.useragent): the
#: form factor is the device's, so the rules' mobile variants are their family ("Other": "").
BROWSER_NAMES: Final = {
    "Mobile Safari": "Safari",
    "Chrome Mobile": "Chrome",
    "Chrome Mobile iOS": "Chrome",
    "Firefox Mobile": "Firefox",
    "Firefox iOS": "Firefox",
    "Edge Mobile": "Edge",
    "Opera Mobile": "Opera",
    "Chrome Mobile WebView": "Chrome WebView",
    "Mobile Safari UI/WKWebView": "Safari WebView",
    "Other": "",
}
#: The OS families stored under another name.
OS_NAMES: Final = {"Mac OS X": "macOS", "Other": ""}

#: The dimensions :func:`canonical` puts in the stored spelling.
NAMED: Final = frozenset({"device", "channel", "browser", "os"})


def canonical(dimension: str, value: str) -> str:
    """``value`` in the spelling the service stores for ``dimension`` (one of :data:`NAMED`),
    when it names one in any case (a channel also with spaces or dashes for underscores);
    else ``value`` as it was."""
    key = value.strip().lower()
    if dimension == "device":
        return key if key in DEVICES else value
    if dimension == "channel":
        key = key.replace(" ", "_").replace("-", "_")
        return key if key in CHANNELS else value
    if dimension in ("browser", "os"):
        return _families(dimension).get(key, value)
    return value


@cache
def _families(dimension: str) -> dict[str, str]:
    """The browser (``browser``) or OS (``os``) families of ua-parser's rules as stored (the
    mobile variants under their family's name), by their lower-case spelling, and the
    rules' own names for them too (loaded once, when a filter first names one: ~0.3 s)."""
    from ua_parser import loaders

    agents, systems, _devices = loaders.load_builtins()
    rules = agents if dimension == "browser" else systems
    stored = BROWSER_NAMES if dimension == "browser" else OS_NAMES
    names: dict[str, str] = {}
    for rule in rules:
        for name in _names(getattr(rule, "family", None) or "$1", rule.regex):
            kept = stored.get(name, name)
            if kept:
                names.setdefault(kept.lower(), kept)
                names.setdefault(name.lower(), kept)
    return names


def _names(template: str, pattern: str) -> Iterator[str]:
    """The family names a rule can give: its template, with ``$1`` each literal its first
    group can match (nothing when that group is not a choice of literals)."""
    if "$" not in template:
        yield template
        return
    if template.count("$") != 1 or "$1" not in template:
        return
    for literal in _group_literals(pattern, 1):
        yield template.replace("$1", literal)


def _group_literals(pattern: str, group: int) -> list[str]:
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # a rule Python's parser does not read (RE2 syntax): no names from it
        return []
    found = _find_group(parsed, group)
    return [] if found is None else list(_literals(found))


def _find_group(items: Iterable[Any], group: int) -> Any:
    for op, arg in items:
        if op is sre_parse.SUBPATTERN:
            if arg[0] == group:
                return arg[3]
            inner = _find_group(arg[3], group)
            if inner is not None:
                return inner
        elif op is sre_parse.BRANCH:
            for branch in arg[1]:
                inner = _find_group(branch, group)
                if inner is not None:
                    return inner
    return None


def _literals(items: Any, limit: int = 64) -> Iterator[str]:
    """The strings a sequence of literals and of branches of literals matches (none when it
    holds anything else: a class, a repeat)."""
    choices = [""]
    for op, arg in items:
        if op is sre_parse.LITERAL:
            choices = [c + chr(arg) for c in choices]
        elif op is sre_parse.BRANCH:
            options = [s for branch in arg[1] for s in _literals(branch, limit)]
            if not options:
                return
            choices = [c + o for c in choices for o in options]
        elif op is sre_parse.SUBPATTERN:
            options = list(_literals(arg[3], limit))
            if not options:
                return
            choices = [c + o for c in choices for o in options]
        else:
            return
        if len(choices) > limit:
            return
    yield from choices
