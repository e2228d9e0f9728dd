"""Browser, OS and device class of a User-Agent string (pure, cached).

Contract:

- :func:`parse_user_agent` returns a :class:`UserAgentInfo` for any string and never raises.
  ``browser``/``os`` are the family names of the uap-core rules (via ``ua_parser`` 1.x), with
  the form-factor variants folded into the family since ``device`` carries the form factor
  (``Mobile Safari`` -> ``Safari``, ``Chrome Mobile`` -> ``Chrome``, ``Mac OS X`` -> ``macOS``:
  see :data:`_BROWSER_NAMES` and :data:`_OS_NAMES`); ``''`` when unknown (uap's ``Other``).
  Versions are ``major.minor`` (``"120.0"``), just ``major`` when the UA gives no minor
  (``Windows`` ``"10"``), ``''`` when unknown. Frozen UAs give frozen versions: Windows 11
  says ``10``, macOS says ``10.15``, reduced Chrome UAs say ``120.0``.
- ``device`` is ``tablet``, ``mobile``, ``desktop``, or ``''`` when the UA names no platform
  at all (``curl/8.4.0``, a bare crawler UA); then use :func:`device_from_screen`.
  Rules, first match wins (plain substring tests on the UA, which is what the reduced UAs
  of current browsers still carry):
    1. tablet: ``iPad``, ``Tablet`` (but not ``Tablet PC``), ``Kindle``, ``Silk/``,
       ``PlayBook``, or Android without a ``Mobi`` token (Google's rule: Android phones
       send ``Mobile``, tablets do not);
    2. mobile: ``Mobi`` (``Mobile``, ``Opera Mobi``), ``iPhone``, ``iPod``, ``Windows Phone``,
       ``BlackBerry``, ``BB10``, ``Opera Mini``, ``Android ... Mobile`` (via ``Mobi``);
    3. desktop: any other UA whose OS is known, and game consoles (TVs and consoles count
       as desktop: the contract has no class for them); a known browser alone is not enough, since
       ``curl``, ``Python Requests`` and ``Googlebot`` are browser families to uap;
    4. ``''`` otherwise.
  iPadOS 13+ Safari asks for the desktop site with a ``Macintosh`` UA and so reads as
  desktop; the screen width cannot fix that either.
- :func:`device_from_screen`: ``< 768`` mobile, ``< 1024`` tablet, else desktop; ``''`` for
  a width that is not positive.

Speed: ``ua_parser`` picks the best resolver it can import (``ua_parser_rs``, the Rust
accelerator, before ``re2`` and pure Python); here the Rust resolver is built explicitly,
without ua_parser's own small S3-FIFO cache (2000 entries) since :func:`parse_user_agent` has
its own LRU cache, and only its user-agent and OS extractors are called, directly: the
device-model rules cost as much again and the form factor does not need them. A cold parse
costs far more than a cached one, most of it in the two Rust extractors (docs/benchmarks.md,
Figures behind the code); equal results share one :class:`UserAgentInfo` (up to 4,096 of
them) instead of building one per UA. The parser is built on first use or by :func:`load`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Protocol

from ua_parser import BasicResolver, Domain, Resolver, load_builtins, load_lazy_builtins

from svc.schema.named import BROWSER_NAMES, OS_NAMES

__all__ = ["UserAgentInfo", "device_from_screen", "load", "parse_user_agent"]


_MAX_UA_LEN: Final = 1_024  # longer UAs are cut before parsing (they are junk or attacks)

_BROWSER_NAMES: Final = BROWSER_NAMES  # the names stored (svc.schema.named)
_OS_NAMES: Final = OS_NAMES


@dataclass(frozen=True, slots=True)
class UserAgentInfo:
    """Browser and OS family with ``major.minor`` versions, and the device class."""

    browser: str
    browser_version: str
    os: str
    os_version: str
    device: str


class _Family(Protocol):
    """What both ua_parser's and ua_parser_rs' user-agent and OS results have."""

    @property
    def family(self) -> str: ...
    @property
    def major(self) -> str | None: ...
    @property
    def minor(self) -> str | None: ...


_Extract = Callable[[str], _Family | None]

_lock = threading.Lock()
_resolver: Resolver | None = None
_extract_agent: _Extract
_extract_os: _Extract


def load() -> Resolver:
    """Build the UA resolver now (idempotent, thread-safe) and return it.

    Uses the Rust accelerator (``ua_parser_rs``) when it is installed, which it is meant to
    be, and then calls its user-agent and OS extractors directly (ua_parser's wrapper adds
    several µs per parse); otherwise falls back to ua_parser's pure-Python resolver (much
    slower).
    """
    global _resolver, _extract_agent, _extract_os
    if _resolver is None:
        with _lock:
            if _resolver is None:
                try:
                    from ua_parser.regex import Resolver as RustResolver
                except ImportError:  # pragma: no cover - accelerator missing
                    basic = BasicResolver(load_builtins())

                    def agent(ua: str) -> _Family | None:
                        return basic(ua, Domain.USER_AGENT).user_agent

                    def system(ua: str) -> _Family | None:
                        return basic(ua, Domain.OS).os

                    _extract_agent, _extract_os = agent, system
                    _resolver = basic
                else:
                    rust = RustResolver(load_lazy_builtins())
                    _extract_agent, _extract_os = rust.ua.extract, rust.os.extract
                    _resolver = rust
    return _resolver


def _device(ua: str, known: bool) -> str:
    if "iPad" in ua or "Kindle" in ua or "Silk/" in ua or "PlayBook" in ua:
        return "tablet"
    if "Tablet" in ua and "Tablet PC" not in ua:
        return "tablet"
    mobi = "Mobi" in ua
    if "Android" in ua and not mobi and "TV" not in ua and "CrKey" not in ua:
        return "tablet"
    if (
        mobi
        or "iPhone" in ua
        or "iPod" in ua
        or "Windows Phone" in ua
        or "BlackBerry" in ua
        or "BB10" in ua
        or "Opera Mini" in ua
    ):
        return "mobile"
    if known or "PlayStation" in ua or "Nintendo" in ua:
        return "desktop"
    return ""


def parse_user_agent(ua: str) -> UserAgentInfo:
    """Parse a User-Agent header into a :class:`UserAgentInfo` (see the module docstring).

    LRU-cached (20,000 entries) on the UA cut to 1,024 characters, so that hostile huge UAs
    neither cost much to parse nor bloat the cache.
    """
    return _parse_cached(ua[:_MAX_UA_LEN])


_EMPTY: Final = UserAgentInfo("", "", "", "", "")
_MAX_SHARED: Final = 4_096
# One shared instance per distinct result: far fewer results than UAs (the UA strings vary
# in build numbers, locales, app tokens ...), and building a frozen dataclass costs time.
_shared: dict[tuple[str, str, str, str, str], UserAgentInfo] = {}


@lru_cache(maxsize=20_000)
def _parse_cached(ua: str) -> UserAgentInfo:
    if not ua.strip():
        return _EMPTY
    if _resolver is None:
        load()
    try:
        agent, system = _extract_agent(ua), _extract_os(ua)
    except UnicodeEncodeError:  # lone surrogates: the Rust extractors take UTF-8 only
        clean = ua.encode("utf-8", "replace").decode("utf-8")
        agent, system = _extract_agent(clean), _extract_os(clean)
    browser = browser_version = os_name = os_version = ""
    if agent is not None:
        family = agent.family
        browser = _BROWSER_NAMES.get(family, family)
        if browser and (major := agent.major):
            browser_version = f"{major}.{minor}" if (minor := agent.minor) else major
    if system is not None:
        family = system.family
        os_name = _OS_NAMES.get(family, family)
        if os_name and (major := system.major):
            os_version = f"{major}.{minor}" if (minor := system.minor) else major
    key = (browser, browser_version, os_name, os_version, _device(ua, bool(os_name)))
    info = _shared.get(key)
    if info is None:
        info = UserAgentInfo(*key)
        if len(_shared) < _MAX_SHARED:  # hostile UAs can make up versions without end
            _shared[key] = info
    return info


def device_from_screen(width: int) -> str:
    """Device class from the screen width in CSS pixels, for when the UA gives none.

    ``< 768`` mobile, ``< 1024`` tablet, else desktop; ``''`` for a width that is not positive.
    """
    if width <= 0:
        return ""
    if width < 768:
        return "mobile"
    if width < 1024:
        return "tablet"
    return "desktop"
