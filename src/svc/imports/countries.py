"""Country names as GA4 writes them (``geo.country``: "Germany", "United States") as the ISO
3166-1 alpha-2 codes the events table holds.

The names come from the geo data svc already ships (geoip2fast's list of English country
names, loaded only when a name is first asked for), matched loosely (case, accents, ``&`` and
``and``, ``St.`` and ``Saint``), with the few names where GA4 differs from that list. A code
given as a code (``DE``) is itself; an unknown name, ``(not set)`` or nothing is ``""``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

#: GA4's names where the geo data's list says otherwise.
GA4_NAMES = {
    "Myanmar (Burma)": "MM",
    "Côte d’Ivoire": "CI",
    "Côte d'Ivoire": "CI",
    "Congo - Kinshasa": "CD",
    "Congo - Brazzaville": "CG",
    "Micronesia": "FM",
    "Bosnia & Herzegovina": "BA",
    "Trinidad & Tobago": "TT",
    "Antigua & Barbuda": "AG",
    "St. Kitts & Nevis": "KN",
    "St. Vincent & Grenadines": "VC",
    "São Tomé & Príncipe": "ST",
    "Turks & Caicos Islands": "TC",
    "U.S. Virgin Islands": "VI",
    "British Virgin Islands": "VG",
    "Svalbard & Jan Mayen": "SJ",
    "Wallis & Futuna": "WF",
    "St. Pierre & Miquelon": "PM",
    "Heard & McDonald Islands": "HM",
    "South Georgia & South Sandwich Islands": "GS",
    "Turkey": "TR",
    "Czech Republic": "CZ",
    "Cape Verde": "CV",
    "Swaziland": "SZ",
    "Macedonia": "MK",
    "Hong Kong SAR China": "HK",
    "Macao SAR China": "MO",
    "Palestinian Territories": "PS",
    "Vatican City": "VA",
}


def _key(name: str) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    text = text.replace("&", " and ").replace("saint ", "st ").replace("st. ", "st ")
    return re.sub(r"[^a-z0-9]+", " ", text).strip()


@lru_cache(maxsize=1)
def _names() -> dict[str, str]:
    """Every known name (loosely keyed) to its code."""
    from geoip2fast import GeoIP2Fast  # its data: the shipped file, never downloaded
    from geoip2fast import geoip2fast as data

    GeoIP2Fast()  # loads the names with the data
    out = {
        _key(str(name)): code
        for code, name in data.geoipCountryNamesDict.items()
        if len(code) == 2 and code.isalpha() and code.isupper()
    }
    out.update({_key(name): code for name, code in GA4_NAMES.items()})
    return out


def country_code(name: str) -> str:
    """The ISO code of a country named ``name`` (or given by its code), or ``""``."""
    name = (name or "").strip()
    if not name or name.startswith("("):
        return ""
    if len(name) == 2 and name.isalpha():
        return name.upper()
    return _names().get(_key(name), "")
