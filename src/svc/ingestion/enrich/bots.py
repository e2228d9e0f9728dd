"""Bot detection from the User-Agent header alone (pure, cached).

Contract of :func:`bot_reason`: ``None`` for what looks like a real browser, else one short
reason, the first that applies:

``"missing_user_agent"``
    ``None``, blank, or the ``-`` placeholder of access logs.
``"headless"``
    Browser automation: ``HeadlessChrome``, ``PhantomJS``, ``SlimerJS``, ``Puppeteer``,
    ``Playwright``, ``Selenium``/``WebDriver``, ``HtmlUnit``, ``jsdom``, ``Nightmare``,
    ``Cypress``. (Chrome's new headless mode sends a normal Chrome UA and cannot be told
    from its UA. Electron alone is not a bot: Slack, Teams, VS Code ... are Electron apps.)
``"http_library"``
    HTTP clients and tools that are not browsers: ``curl``, ``Wget``, ``python-requests``,
    ``python-httpx``, ``Python-urllib``, ``aiohttp``, ``Go-http-client``, ``okhttp``,
    ``axios``, ``node-fetch``, ``undici``/``node`` (Node's fetch), ``Bun``, ``Deno``, ``Java/``,
    ``Apache-HttpClient``, ``libwww-perl``, ``HTTPie``, ``PostmanRuntime``, ``GuzzleHttp``,
    ``Dalvik`` and ``CFNetwork`` (native app stacks), ... see :data:`_HTTP_LIBRARY`.
    Note: server-side events sent with a client library carry such a UA unless the caller
    forwards the visitor's.
``"crawler"``
    Any pattern of the maintained list of the ``crawler-user-agents`` package (monperrus'
    crawler-user-agents, 1,500 search, SEO, AI, monitoring, link-preview and feed crawlers;
    shipped in the wheel, read once at import, never downloaded), plus three generic
    signatures: a ``+http(s)://`` contact URL, a ``...bot/``, ``...crawler/``, ``...spider/``
    or ``...scraper/`` product token, and a bare ``Mozilla/5.0`` with nothing else.

Speed: all patterns are compiled into ONE RE2 set (``google-re2``'s ``re2.Set``: a DFA, linear
in the length of the UA whatever the 1,500 patterns, with no backtracking blow-up on hostile
input) of four entries: headless, http library, the generic signatures, the crawler list. One
pass over the UA says which of them match anywhere, so the reason follows from that list
(headless, then http library, else crawler) without a second search, and a set match never
computes submatch positions (the single regex with capture groups did, through RE2's NFA,
for every bot). Results are LRU-cached per UA (20,000
entries); UAs are cut to 1,024 characters first, which keeps the cache small.

``RE2::Set::Match`` would report a DFA failure as "no match", but none can happen once the set
compiled: RE2 turns off its "DFA too slow, fall back to the NFA" bail-out for sets (they have
no NFA to fall back to: the DFA flushes its state cache and goes on), and ``Compile()`` itself
runs the DFA once and fails if the memory budget is too small for it. ``test_bots`` checks
the set against the plain per-entry regexes on thousands of UAs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

import re2
from crawleruseragents import CRAWLER_USER_AGENTS_DATA

__all__ = ["REASONS", "bot_reason"]

REASONS: Final = ("missing_user_agent", "headless", "http_library", "crawler")
"""Every reason :func:`bot_reason` can return."""

_MAX_UA_LEN: Final = 1_024

_HEADLESS: Final = (
    r"(?i:headless|phantomjs|slimerjs|puppeteer|playwright|selenium|webdriver|htmlunit"
    r"|jsdom/|nightmare|cypress/)"
)
# Anywhere in the UA (case-insensitive), or the whole UA for the bare runtime names.
_HTTP_LIBRARY: Final = (
    r"(?i:curl/|libcurl|wget/|python-requests|python-httpx|python-urllib|httpx/|aiohttp"
    r"|urllib3|go-http-client|okhttp|axios/|node-fetch|undici|got \(|java/|apache-httpclient"
    r"|jakarta commons-httpclient|libwww-perl|lwp::|httpie/|postmanruntime|insomnia/"
    r"|guzzlehttp|faraday v|rest-client/|typhoeus|http\.rb/|^ruby|reqwest/|restsharp|unirest"
    r"|dart/|deno/|bun/|powershell/|winhttp|dalvik/|cfnetwork/|http_request2"
    r"|^python/|^php/|^perl/|^go |^node(?:\.js)?(?:/|$))"
)
_GENERIC_CRAWLER: Final = (
    r"\+https?://|(?i:[a-z0-9](?:bot|crawler|spider|scraper)/)|^Mozilla/\d\.\d$"
)


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = 64 << 20  # room for the DFA of 1,500 alternatives; NFA fallback beyond
    options.log_errors = False
    return options


_CRAWLER_LIST: Final = "|".join(entry["pattern"] for entry in CRAWLER_USER_AGENTS_DATA)
# Set entries, in this order: the index of each entry that matches is what Match returns.
_HEADLESS_ID, _HTTP_LIBRARY_ID, _GENERIC_ID, _CRAWLER_ID = range(4)


def _compile_set() -> re2.Set:
    patterns = re2.Set.SearchSet(_options())
    for index, pattern in enumerate((_HEADLESS, _HTTP_LIBRARY, _GENERIC_CRAWLER, _CRAWLER_LIST)):
        if patterns.Add(pattern) != index:  # pragma: no cover - re2 numbers them in order
            raise RuntimeError("re2.Set numbered its patterns out of order")
    patterns.Compile()
    return patterns


_SET: Final = _compile_set()
_match_set: Final = _SET.Match  # bytes -> list of the matching entries' indices, or None


def bot_reason(user_agent: str | None) -> str | None:
    """Why this User-Agent is a bot (one of :data:`REASONS`), or ``None`` for a browser."""
    if user_agent is None:
        return "missing_user_agent"
    return _reason(user_agent[:_MAX_UA_LEN])


@lru_cache(maxsize=20_000)
def _reason(user_agent: str) -> str | None:
    ua = user_agent.strip()
    if not ua or ua == "-":
        return "missing_user_agent"
    found = _match_set(ua.encode("utf-8", "replace"))  # bytes skip re2's str conversion
    if not found:
        return None
    if _HEADLESS_ID in found:
        return "headless"
    if _HTTP_LIBRARY_ID in found:
        return "http_library"
    return "crawler"
