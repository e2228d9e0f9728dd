"""Country (and, with city data, region and city) of a client address; edge country headers.

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
  Loading takes ~0.2 s and ~57 MiB, once per process, on the first lookup or on
  :meth:`GeoLookup.load`. geoip2fast keeps its data in module globals, so one data file
  serves the whole process and every :class:`GeoLookup`. With country-only data the lookup
  calls geoip2fast's index search directly (:func:`_country_fast`, ~4 µs instead of ~8 µs).
- :func:`country_from_headers` reads the country that a trusted edge already resolved:
  ``cf-ipcountry`` (Cloudflare), ``x-vercel-ip-country`` (Vercel), ``cloudfront-viewer-country``
  (CloudFront), in that order; ``XX``, ``ZZ``, ``T1`` (Tor) and other non-country codes are
  ignored; ``''`` when none. Header names are lower case. Only call it for requests that
  really came through that edge: a client can send these headers itself.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

__all__ = ["EDGE_COUNTRY_HEADERS", "Geo", "GeoLookup", "country_from_headers"]

EDGE_COUNTRY_HEADERS: Final = ("cf-ipcountry", "x-vercel-ip-country", "cloudfront-viewer-country")
_NOT_COUNTRIES: Final = frozenset({"XX", "ZZ", "T1", "A1", "A2", "O1", "EU", "AP"})
_IPV4_RE: Final = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}", re.ASCII)
_COUNTRY_RE: Final = re.compile(r"[A-Z]{2}", re.ASCII)
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
_fast_country = False  # whether _country_fast can be used (country-only data, known internals)


def _default_data_file() -> str:
    import geoip2fast

    package_dir = Path(geoip2fast.__file__).parent
    for name in _DATA_FILES:
        path = package_dir / name
        if path.is_file():
            return str(path)
    raise FileNotFoundError(f"no geoip2fast data file in {package_dir}")


def _load(data_file: str | None) -> Any:
    global _database, _has_city, _fast_country
    if _database is None:
        with _load_lock:
            if _database is None:
                from geoip2fast import GeoIP2Fast

                database = GeoIP2Fast(geoip2fast_data_file=data_file or _default_data_file())
                _has_city = bool(database.city)
                _fast_country = (
                    bool(database.country)
                    and not _has_city
                    and all(
                        hasattr(database, name)
                        for name in ("_ip2int", "_main_index_lookup", "_country_lookup")
                    )
                )
                _database = database
    return _database


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
        if address is None:
            return EMPTY
        try:
            database = _load(self._data_file)
            if _fast_country:
                return _country_only(_country_fast(database, address))
            found = database.lookup(address)
        except Exception:  # geoip2fast reports errors in its result, but be safe
            return EMPTY
        country = "" if found.is_private else _country_code(str(found.country_code))
        if not country or not _has_city:
            return _country_only(country)
        city = getattr(found, "city", None)  # a CityDetail
        return Geo(
            country=country,
            region=_text(getattr(city, "subdivision_name", "")),
            city=_text(getattr(city, "name", "")),
        )


def _country_fast(database: Any, address: str) -> str:
    """Country code by geoip2fast's own index search, without building its result object.

    ``GeoIP2Fast.lookup`` spends half its time on things unused here (an elapsed-time string,
    the network's CIDR text, an ASN search), so for country-only data this calls the three
    steps it is made of; ``test_geo`` checks both agree on many addresses.
    """
    iplong = database._ip2int(address)
    root, chunk, _first, last, _netlen = database._main_index_lookup(iplong)
    if iplong > last:
        return ""  # in a gap between listed networks
    country, _name, is_private = database._country_lookup(root, chunk)
    return "" if is_private else _country_code(country)


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


def country_from_headers(headers: Mapping[str, str]) -> str:
    """ISO country code set by a trusted edge (see the module docstring); '' when none."""
    for name in EDGE_COUNTRY_HEADERS:
        value = headers.get(name)
        if value:
            code = _country_code(value)
            if code:
                return code
    return ""
