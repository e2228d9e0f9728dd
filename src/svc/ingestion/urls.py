"""Splitting a page URL into what is stored: hostname, path, UTM fields and click ids.

Query strings are dropped except the UTM parameters, ``source``/``ref`` and click ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

UTM_FIELDS = ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term")
CLICK_IDS = (
    "gclid",
    "msclkid",
    "fbclid",
    "ttclid",
    "twclid",
    "li_fat_id",
    "wbraid",
    "gbraid",
    "dclid",
)
KEPT_PARAMS = frozenset((*UTM_FIELDS, *CLICK_IDS, "source", "ref"))


@dataclass(slots=True)
class PageUrl:
    hostname: str
    path: str
    query: dict[str, str] = field(default_factory=dict)

    @property
    def click_id(self) -> str:
        """``name:value`` of the first click id present, or ''."""
        for name in CLICK_IDS:
            if name in self.query:
                return f"{name}:{self.query[name]}"[:256]
        return ""


@lru_cache(maxsize=4096)
def parse_page_url(url: str) -> PageUrl:
    """Hostname (lower case, no ``www.``, no port), path (``/`` at least, with the fragment
    when the URL has one: hash-routed pages) and kept parameters.

    A bare path (``/pricing?utm_source=x``) has an empty hostname. Results are cached (a
    site's page URLs repeat): the :class:`PageUrl` returned is shared, never change it.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return PageUrl("", "/")
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    path = parts.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    if parts.fragment:  # only hash-routed sites send one (the script's data-hash)
        path = f"{path}#{parts.fragment}"[:2048]
    query: dict[str, str] = {}
    if parts.query:
        for key, value in parse_qsl(parts.query, keep_blank_values=False):
            low = key.lower()
            if low in KEPT_PARAMS and low not in query:
                query[low] = value[:512]
    return PageUrl(host, path, query)
