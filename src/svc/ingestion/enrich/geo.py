"""Country (and, with city data, region and city) of a client address; edge location headers.

Contract:

- :meth:`GeoLookup.lookup` returns a :class:`Geo` for any string and never raises. ``country``
  is an ISO 3166-1 alpha-2 code in upper case; every field is ``''`` when unknown. Invalid,
  private, loopback, link-local, shared (100.64/10), reserved and unlisted addresses give
  ``Geo('', '', '')``, and so do the non-country codes the data has for a few networks
  (``EU``, ``AP``). IPv4-mapped IPv6 addresses (``::ffff:8.8.8.8``, what a dual-stack
  socket reports) are looked up as the IPv4 address; ``[...]`` brackets and ``%zone`` suffixes
  are dropped. The address is only used for the lookup: nothing is stored but the LRU cache
  in memory.
- Data: ``geoip2fast``'s own files, read from the installed package, never downloaded (its
  ``update_*`` methods are never called). geoip2fast 1.2.2 ships country data for IPv4 and
  IPv6 (``geoip2fast-ipv6.dat.gz``, used here) and country+ASN variants; its city files are
  a separate download, so ``region`` and ``city`` stay ``''``. Should a city file ever be
  installed beside the package (or given as ``data_file``), it is preferred and fills them.
  Loading happens once per process, on the first lookup or on
  :meth:`GeoLookup.load`. geoip2fast keeps its data in module globals, so one data file
  serves the whole process and every :class:`GeoLookup`. With country-only data the lookup
  does not go through ``GeoIP2Fast.lookup`` but searches compact copies of the same
  tables built at load (:class:`_CountryIndex`): a bucket per /16, a bisection among the few
  networks in it, a ready :class:`Geo` per country; several times faster per new address,
  the same answers. geoip2fast's own tables are then released, which leaves a quarter of
  the memory for geo data (the figures: docs/benchmarks.md, Figures behind the code).
- :func:`geo_from_headers` reads where a trusted edge already located the client, from the
  first edge whose country header holds a country: ``cf-ipcountry`` (Cloudflare),
  ``x-vercel-ip-country`` (Vercel), ``cloudfront-viewer-country`` (CloudFront), in that order;
  ``XX``, ``ZZ``, ``T1`` (Tor) and other non-country codes are ignored; None when none. The
  same edge's region and city headers, where it sends them, give the region as an ISO 3166-2
  code (``US-TX``: ``cf-region-code``, ``x-vercel-ip-country-region``,
  ``cloudfront-viewer-country-region``) and the city's name (``cf-ipcity``,
  ``x-vercel-ip-city``, ``cloudfront-viewer-city``; percent-encoded and UTF-8 read as Latin-1
  are decoded; at most 100 characters); a malformed one gives ``''``. Header names are lower
  case. Only call it for requests that really came through that edge: a client can send
  these headers itself. :func:`country_from_headers` is its country alone.
- The region is an ISO 3166-2 code from city data as well (``<country>-<subdivision code>``).
"""

from __future__ import annotations

import bisect
import contextlib
import ipaddress
import itertools
import operator
import re
import socket
import threading
import urllib.parse
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

__all__ = [
    "EDGE_COUNTRY_HEADERS",
    "EDGE_HEADERS",
    "Geo",
    "GeoLookup",
    "country_from_headers",
    "geo_from_headers",
]

#: Per edge, in order of preference: its country, region code and city headers.
EDGE_HEADERS: Final = (
    ("cf-ipcountry", "cf-region-code", "cf-ipcity"),
    ("x-vercel-ip-country", "x-vercel-ip-country-region", "x-vercel-ip-city"),
    ("cloudfront-viewer-country", "cloudfront-viewer-country-region", "cloudfront-viewer-city"),
)
EDGE_COUNTRY_HEADERS: Final = tuple(headers[0] for headers in EDGE_HEADERS)
_SUBDIVISION_RE: Final = re.compile(r"[A-Z0-9]{1,3}", re.ASCII)
_CITY_MAX: Final = 100
_NOT_COUNTRIES: Final = frozenset({"XX", "ZZ", "T1", "A1", "A2", "O1", "EU", "AP"})
_IPV4_RE: Final = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}", re.ASCII)
_COUNTRY_RE: Final = re.compile(r"[A-Z]{2}", re.ASCII)
_V4_LAST: Final = 0xFFFF_FFFF  # the last IPv4 address as a number
_LOW_64: Final = (1 << 64) - 1
# Richest first. The ASN variants are skipped: same countries, more memory, ASN unused.
_DATA_FILES: Final = (
    "geoip2fast-city-ipv6.dat.gz",
    "geoip2fast-city.dat.gz",
    "geoip2fast-ipv6.dat.gz",
    "geoip2fast.dat.gz",
)


@dataclass(frozen=True, slots=True)
class Geo:
    """Where an address is: ISO country code (upper case), region and city; '' when unknown."""

    country: str
    region: str
    city: str


EMPTY: Final = Geo("", "", "")

_load_lock = threading.Lock()
_database: Any = None  # the process-wide geoip2fast.GeoIP2Fast
_has_city = False  # whether its data has regions and cities
_fast_index: _CountryIndex | None = None  # with country-only data and known internals


def _default_data_file() -> str:
    import geoip2fast

    package_dir = Path(geoip2fast.__file__).parent
    for name in _DATA_FILES:
        path = package_dir / name
        if path.is_file():
            return str(path)
    raise FileNotFoundError(f"no geoip2fast data file in {package_dir}")


def _load(data_file: str | None) -> Any:
    global _database, _has_city, _fast_index
    if _database is None:
        with _load_lock:
            if _database is None:
                from geoip2fast import GeoIP2Fast

                database = GeoIP2Fast(geoip2fast_data_file=data_file or _default_data_file())
                _has_city = bool(database.city)
                if database.country and not _has_city:
                    _fast_index = _CountryIndex.of_loaded_data()
                    if _fast_index is not None:
                        _release_tables()
                _database = database
    return _database


#: geoip2fast's module globals that only its own lookup reads: ~790,000 networks as lists of
#: Python ints, far larger than the index that replaces them (docs/benchmarks.md).
_RELEASED_TABLES: Final = (
    "mainIndex",
    "mainListFirstIP",
    "mainListNetlength",
    "mainListIDCountryCodes",
)


def _release_tables() -> None:
    """Empty geoip2fast's network tables once the index answers every lookup.

    ``GeoIP2Fast.lookup`` must not be called afterwards (it would find no network); loading a
    ``GeoIP2Fast`` again fills them again. The freed pages go back to the system.
    """
    import ctypes
    import gc

    from geoip2fast import geoip2fast as tables

    for name in _RELEASED_TABLES:
        setattr(tables, name, [])
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: its allocator decides
        ctypes.CDLL(None).malloc_trim(0)  # glibc keeps freed small blocks otherwise


def _normalise(ip: str) -> str | None:
    """The address to look up, or None when it is not an IP address."""
    ip = ip.strip()
    if _IPV4_RE.fullmatch(ip):
        return ip
    if ":" not in ip:
        return None
    ip = ip.strip("[]").split("%", 1)[0]
    try:
        address = ipaddress.IPv6Address(ip)
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    return str(mapped) if mapped is not None else ip


def _is_local(address: str) -> bool:
    """Whether a normalised address is loopback or private as :mod:`ipaddress` has it (RFC 1918,
    link-local, unique local, documentation and the other special-purpose networks), which the
    data leaves without a country (tests/enrich/test_geo.py checks each network): answered
    before the data is loaded, so that a process that only ever sees such addresses (a
    test's, a service behind a proxy that does not forward the client's) never loads it."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return parsed.is_loopback or parsed.is_private


def _text(value: object) -> str:
    return value if isinstance(value, str) and not value.startswith("<") else ""


class GeoLookup:
    """Address -> :class:`Geo` with geoip2fast's shipped data, loaded lazily, LRU-cached."""

    def __init__(self, data_file: str | None = None, cache_size: int = 65_536) -> None:
        """``data_file``: a geoip2fast ``.dat.gz`` to use instead of the richest shipped one
        (only the first loaded file counts, process-wide); ``cache_size``: LRU entries."""
        self._data_file = data_file
        self._cached = lru_cache(maxsize=cache_size)(self._lookup)

    def load(self) -> None:
        """Load the data now instead of on the first lookup (idempotent, thread-safe)."""
        _load(self._data_file)

    def lookup(self, ip: str) -> Geo:
        """Geo of one client address (see the module docstring); cached per address."""
        return self._cached(ip)

    def cache_info(self) -> Any:
        """The per-address LRU cache's statistics (``functools`` ``CacheInfo``)."""
        return self._cached.cache_info()

    def _lookup(self, ip: str) -> Geo:
        address = _normalise(ip)
        if address is None or (_database is None and _is_local(address)):
            return EMPTY
        try:
            database = _load(self._data_file)
            if _fast_index is not None:
                return _fast_index.geo(address)
            found = database.lookup(address)
        except Exception:  # geoip2fast reports errors in its result, but be safe
            return EMPTY
        country = "" if found.is_private else _country_code(str(found.country_code))
        if not country or not _has_city:
            return _country_only(country)
        city = getattr(found, "city", None)  # a CityDetail
        return Geo(
            country=country,
            region=_region(country, _text(getattr(city, "subdivision_code", ""))),
            city=_text(getattr(city, "name", "")),
        )


def _bucket_ends(shift: int) -> range:
    """The last number before each of the 65,537 multiples of 2**shift from 0 to 2**(shift+16)."""
    return range(-1, (1 << (shift + 16)) + 1, 1 << shift)


class _CountryIndex:
    """geoip2fast's country search over its loaded tables, made cheaper, same answers.

    ``GeoIP2Fast.lookup`` spends most of its time on things unused here (an elapsed-time
    string, the network's CIDR text, an ASN search, a result object, method calls, the split
    of a ``"code:name"`` string), and its two bisections over lists of 5,000 Python ints
    chase pointers all over its 57 MiB. This answers what its ``_ip2int``,
    ``_main_index_lookup`` and ``_country_lookup`` answer, from compact copies of its tables:

    - the networks' first addresses in one sorted sequence (geoip2fast's chunks concatenated:
      its two-level search finds the last first address <= the address, which is the same
      entry, given the layout checked in ``__init__``); the IPv4 ones in an ``array`` of
      32-bit numbers;
    - per /16 of IPv4 (and per top 16 bits of IPv6) the range of entries it spans, so that
      the bisection only looks at a handful of neighbours;
    - network lengths and country ids as byte and short arrays, and one ready :class:`Geo`
      per country id.

    ``test_geo`` checks it against ``GeoIP2Fast.lookup`` on many addresses. A bad address
    raises, and the caller answers ``EMPTY`` for it as it does for geoip2fast's own errors.
    """

    __slots__ = (
        "geos",
        "ids",
        "net_lengths",
        "v4_bounds",
        "v4_max",
        "v4_sizes",
        "v4_starts",
        "v6_bounds",
        "v6_highs",
        "v6_lows",
        "v6_sizes",
    )

    def __init__(self, tables: Any) -> None:
        index: list[int] = tables.mainIndex
        chunks: list[list[int]] = tables.mainListFirstIP
        net_lengths: list[list[int]] = tables.mainListNetlength
        ids: list[list[int]] = tables.mainListIDCountryCodes
        # The layout the flat search relies on: the root index is each chunk's first address,
        # starting at 0 (so no search falls before the first entry), all in increasing order.
        if not index or index[0] != 0 or len(chunks) != len(index):
            raise ValueError("unexpected geoip2fast index")
        for root, chunk in enumerate(chunks):
            if not chunk or chunk[0] != index[root]:
                raise ValueError("unexpected geoip2fast index")
            if len(net_lengths[root]) != len(chunk) or len(ids[root]) != len(chunk):
                raise ValueError("unexpected geoip2fast index")
        # (C-level loops: this runs once per process, over 790,000 networks)
        starts = list(itertools.chain.from_iterable(chunks))
        if not all(map(operator.lt, starts, itertools.islice(starts, 1, None))):
            raise ValueError("unexpected geoip2fast index")
        v4_count = bisect.bisect_right(starts, _V4_LAST)
        self.v4_starts = array("I", starts[:v4_count])
        # bounds[b]: how many networks start before b * 2**16 (IPv4) or b * 2**112 (IPv6)
        self.v4_bounds = array(
            "I", map(bisect.bisect_right, itertools.repeat(starts[:v4_count]), _bucket_ends(16))
        )
        # IPv6 first addresses as their high and low 64 bits (16 bytes each instead of a
        # Python int of 44 and a pointer): (high, low) pairs sort as the numbers do.
        v6_starts = starts[v4_count:]
        self.v6_highs = array("Q", (start >> 64 for start in v6_starts))
        self.v6_lows = array("Q", (start & _LOW_64 for start in v6_starts))
        self.v6_bounds = array(
            "I", map(bisect.bisect_right, itertools.repeat(starts), _bucket_ends(112))
        )
        self.net_lengths = array("B", bytes(itertools.chain.from_iterable(net_lengths)))
        self.ids = array("H", list(itertools.chain.from_iterable(ids)))
        self.v4_sizes: list[int] = tables.numIPsv4
        self.v6_sizes: list[int] = tables.numIPsv6
        self.v4_max: int = tables.MAX_IPv4
        geos = []
        for entry in tables.mainListNamesCountry:
            parts = entry.split(":")  # "code:name", as _country_lookup reads it
            geos.append(_country_only(_country_code(parts[0])) if len(parts) == 2 else EMPTY)
        self.geos: list[Geo] = geos

    @classmethod
    def of_loaded_data(cls) -> _CountryIndex | None:
        """The index over the tables geoip2fast loaded, or None if they are not as expected."""
        from geoip2fast import geoip2fast as tables

        try:
            return cls(tables)
        except (AttributeError, TypeError, ValueError, OverflowError, IndexError):
            return None  # another geoip2fast layout: its own lookup is used

    def geo(self, address: str) -> Geo:
        """The :class:`Geo` of a normalised address (see :func:`_normalise`); raises on junk."""
        # geoip2fast._ip2int: inet_aton first, then IPv6 (inet_aton never accepts a ':').
        if ":" in address:
            iplong = int.from_bytes(socket.inet_pton(socket.AF_INET6, address), "big")
            if iplong > _V4_LAST:  # (::a.b.c.d and the like are searched as IPv4 below)
                k = self._v6_entry(iplong)
                v4_count = len(self.v4_starts)
                if k < v4_count:
                    start = self.v4_starts[k]
                else:
                    start = self.v6_highs[k - v4_count] << 64 | self.v6_lows[k - v4_count]
                sizes = self.v4_sizes if iplong <= self.v4_max else self.v6_sizes
                if iplong > start + sizes[self.net_lengths[k]] - 1:
                    return EMPTY  # in a gap between listed networks
                country_id = self.ids[k]
                return EMPTY if country_id < 16 else self.geos[country_id]
        else:
            iplong = int.from_bytes(socket.inet_aton(address), "big")
        bounds = self.v4_bounds
        top = iplong >> 16
        k = bisect.bisect_right(self.v4_starts, iplong, bounds[top], bounds[top + 1]) - 1
        if iplong > self.v4_starts[k] + self.v4_sizes[self.net_lengths[k]] - 1:
            return EMPTY  # in a gap between listed networks
        # geoip2fast._country_lookup: the first 16 country ids are the private networks
        country_id = self.ids[k]
        return EMPTY if country_id < 16 else self.geos[country_id]

    def _v6_entry(self, iplong: int) -> int:
        """The last network (index over all) whose first address is <= ``iplong`` (> 2**32)."""
        v4_count = len(self.v4_starts)
        top = iplong >> 112
        lo = max(self.v6_bounds[top], v4_count) - v4_count
        hi = max(self.v6_bounds[top + 1], v4_count) - v4_count
        high = iplong >> 64
        end = bisect.bisect_right(self.v6_highs, high, lo, hi)  # past the highs <= high
        run = bisect.bisect_left(self.v6_highs, high, lo, end)  # the run of equal highs
        # among that run the last low <= ours, else the entry before the run
        return v4_count + bisect.bisect_right(self.v6_lows, iplong & _LOW_64, run, end) - 1


@lru_cache(maxsize=512)
def _country_only(country: str) -> Geo:
    """One shared :class:`Geo` per country (frozen, so sharing is safe and saves time)."""
    return Geo(country, "", "") if country else EMPTY


@lru_cache(maxsize=1_024)
def _country_code(value: str) -> str:
    code = value.strip().upper()
    if _COUNTRY_RE.fullmatch(code) and code not in _NOT_COUNTRIES:
        return code
    return ""


def geo_from_headers(headers: Mapping[str, str]) -> Geo | None:
    """Where a trusted edge located the client (see the module docstring); None when no
    edge header names a country."""
    for country_header, region_header, city_header in EDGE_HEADERS:
        value = headers.get(country_header)
        if not value:
            continue
        country = _country_code(value)
        if not country:
            continue
        region = _region(country, headers.get(region_header) or "")
        city = _city(headers.get(city_header) or "")
        return Geo(country, region, city) if region or city else _country_only(country)
    return None


def country_from_headers(headers: Mapping[str, str]) -> str:
    """ISO country code set by a trusted edge (see the module docstring); '' when none."""
    geo = geo_from_headers(headers)
    return geo.country if geo is not None else ""


def _region(country: str, value: str) -> str:
    """``<country>-<subdivision>`` from a subdivision code given bare (``TX``) or whole
    (``US-TX``, which must be of ``country``); '' when it is not one."""
    code = value.strip().upper()
    prefix, dash, rest = code.partition("-")
    if dash:
        if prefix != country:
            return ""
        code = rest
    return f"{country}-{code}" if _SUBDIVISION_RE.fullmatch(code) else ""


def _city(value: str) -> str:
    """A city's name from an edge header: percent-encoding and UTF-8 that the server read as
    Latin-1 undone; '' for control characters or more than 100 characters."""
    text = value.strip()
    if not text:
        return ""
    with contextlib.suppress(UnicodeError):
        text = text.encode("latin-1").decode("utf-8")
    if "%" in text:
        with contextlib.suppress(UnicodeError):
            text = urllib.parse.unquote(text, errors="strict")
    text = text.strip()
    if len(text) > _CITY_MAX or not text.isprintable():
        return ""
    return text
