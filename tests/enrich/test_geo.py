"""Geo lookup with geoip2fast's shipped data, and edge country headers."""

from __future__ import annotations

import ipaddress
import random
import subprocess
import sys

import pytest

from svc.ingestion.enrich import geo as geo_module
from svc.ingestion.enrich.geo import Geo, GeoLookup, country_from_headers, geo_from_headers

EMPTY = Geo("", "", "")


@pytest.fixture(scope="module")
def geo() -> GeoLookup:
    lookup = GeoLookup()
    lookup.load()
    return lookup


@pytest.mark.parametrize(
    ("ip", "country"),
    [
        ("8.8.8.8", "US"),  # Google Public DNS
        ("8.8.4.4", "US"),
        ("2001:4860:4860::8888", "US"),  # Google Public DNS over IPv6
        ("::ffff:8.8.8.8", "US"),  # IPv4-mapped, as a dual-stack socket reports it
        (" 8.8.8.8 ", "US"),
        ("[2001:4860:4860::8888]", "US"),
        ("81.2.69.142", "GB"),
        ("2a00:1450:4001:80b::200e", "DE"),
    ],
)
def test_public_addresses(geo: GeoLookup, ip: str, country: str) -> None:
    got = geo.lookup(ip)
    assert got.country == country
    assert got.region == "" and got.city == ""  # no city data is shipped with geoip2fast 1.2


@pytest.mark.parametrize(
    "ip",
    [
        "127.0.0.1",
        "::1",
        "10.1.2.3",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.1.1",
        "100.64.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "224.0.0.1",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "::ffff:192.168.0.1",
        "",
        "not an ip",
        "8.8",
        "999.1.1.1",
        "1.2.3.4.5",
        "gggg::1",
        "\x00",
    ],
)
def test_private_loopback_invalid_are_empty(geo: GeoLookup, ip: str) -> None:
    assert geo.lookup(ip) == EMPTY


def test_cached_per_address(geo: GeoLookup) -> None:
    geo.lookup("8.8.8.8")
    hits = geo.cache_info().hits
    assert geo.lookup("8.8.8.8").country == "US"
    assert geo.cache_info().hits == hits + 1


def test_lazy_load_on_first_lookup() -> None:
    assert GeoLookup(cache_size=16).lookup("8.8.8.8").country == "US"


def test_local_addresses_are_answered_without_loading_the_data() -> None:
    """A process that only sees loopback and private addresses never loads the data (a
    fresh interpreter: the data is process-wide); the first public address loads it."""
    script = (
        "from svc.ingestion.enrich import geo\n"
        "lookup = geo.GeoLookup()\n"
        "for ip in ('127.0.0.1', '::1', '10.1.2.3', '192.168.1.1', 'fd00::1', '::ffff:10.0.0.1'):\n"
        "    assert lookup.lookup(ip) == geo.EMPTY, ip\n"
        "assert geo._database is None\n"
        "assert lookup.lookup('8.8.8.8').country == 'US'\n"
        "assert geo._database is not None\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_what_is_answered_before_loading_is_what_the_data_says(geo: GeoLookup) -> None:
    """Every address the shortcut answers (ipaddress's loopback and private networks, sampled
    at their ends and at random) has no country in the loaded data either."""
    rng = random.Random(7)
    networks = [
        *ipaddress._IPv4Constants._private_networks,  # type: ignore[attr-defined]
        *ipaddress._IPv6Constants._private_networks,  # type: ignore[attr-defined]
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    ]
    checked = 0
    for network in networks:
        offsets = {
            0,
            network.num_addresses - 1,
            *(rng.randrange(network.num_addresses) for _ in range(50)),
        }
        for offset in offsets:
            address = str(network.network_address + offset)
            if geo_module._is_local(address):
                checked += 1
                assert geo.lookup(address) == EMPTY, address
    assert checked > 500


@pytest.mark.parametrize(
    ("headers", "country"),
    [
        ({"cf-ipcountry": "DE"}, "DE"),
        ({"cf-ipcountry": "de"}, "DE"),
        ({"cf-ipcountry": " fr "}, "FR"),
        ({"x-vercel-ip-country": "BR"}, "BR"),
        ({"cloudfront-viewer-country": "JP"}, "JP"),
        ({"cf-ipcountry": "XX", "x-vercel-ip-country": "US"}, "US"),  # unknown is skipped
        ({"cf-ipcountry": "T1"}, ""),  # Tor
        ({"cf-ipcountry": "XX"}, ""),
        ({"cf-ipcountry": "USA"}, ""),
        ({"cf-ipcountry": ""}, ""),
        ({"cf-ipcountry": "GB", "cloudfront-viewer-country": "US"}, "GB"),  # order
        ({"x-forwarded-for": "8.8.8.8"}, ""),
        ({}, ""),
    ],
)
def test_country_from_headers(headers: dict[str, str], country: str) -> None:
    assert country_from_headers(headers) == country


@pytest.mark.parametrize(
    ("headers", "geo"),
    [
        (  # Cloudflare's visitor location headers
            {
                "cf-ipcountry": "US",
                "cf-region-code": "TX",
                "cf-region": "Texas",
                "cf-ipcity": "Austin",
            },
            Geo("US", "US-TX", "Austin"),
        ),
        (  # Vercel: the city percent-encoded
            {
                "x-vercel-ip-country": "DE",
                "x-vercel-ip-country-region": "BY",
                "x-vercel-ip-city": "M%C3%BCnchen",
            },
            Geo("DE", "DE-BY", "München"),
        ),
        (  # CloudFront; UTF-8 read by the server as Latin-1
            {
                "cloudfront-viewer-country": "CH",
                "cloudfront-viewer-country-region": "ZH",
                "cloudfront-viewer-city": "Zürich".encode().decode("latin-1"),
            },
            Geo("CH", "CH-ZH", "Zürich"),
        ),
        ({"cf-ipcountry": "FR", "cf-ipcity": "Zürich"}, Geo("FR", "", "Zürich")),  # Latin-1 itself
        ({"cf-ipcountry": "us", "cf-region-code": "us-ca"}, Geo("US", "US-CA", "")),
        ({"cf-ipcountry": "US", "cf-region-code": "DE-BY"}, Geo("US", "", "")),  # another country's
        ({"cf-ipcountry": "US", "cf-region-code": "TEXAS"}, Geo("US", "", "")),  # not a code
        ({"cf-ipcountry": "US", "cf-ipcity": "x" * 101}, Geo("US", "", "")),
        ({"cf-ipcountry": "US", "cf-ipcity": "Bad\nCity"}, Geo("US", "", "")),
        ({"cf-ipcountry": "US", "cf-ipcity": "%ZZ%"}, Geo("US", "", "%ZZ%")),  # not encoded
        # the region and city of the edge whose country counts, never another's
        (
            {"cf-ipcountry": "XX", "cf-ipcity": "Nowhere", "x-vercel-ip-country": "BR"},
            Geo("BR", "", ""),
        ),
        ({"cf-ipcity": "Austin"}, None),
        ({}, None),
    ],
)
def test_geo_from_headers(headers: dict[str, str], geo: Geo | None) -> None:
    assert geo_from_headers(headers) == geo


def test_fast_path_agrees_with_public_lookup(geo: GeoLookup) -> None:
    """The country-only fast path gives what geoip2fast's public lookup() gives."""
    import ipaddress
    import random

    from geoip2fast import GeoIP2Fast

    from svc.ingestion.enrich import geo as geo_module

    geo.load()
    index = geo_module._fast_index
    assert index is not None
    # The index released geoip2fast's tables; a new GeoIP2Fast loads them again to compare.
    database = GeoIP2Fast(geoip2fast_data_file=geo_module._default_data_file())
    rng = random.Random(7)

    def v4() -> str:
        return ".".join(str(rng.randint(0, 255)) for _ in range(4))

    addresses = [v4() for _ in range(20_000)]
    addresses += [
        str(ipaddress.IPv6Address((1 << 125) | rng.getrandbits(125))) for _ in range(5_000)
    ]
    addresses += [str(ipaddress.IPv6Address(rng.getrandbits(128))) for _ in range(2_000)]
    addresses += ["0.0.0.0", "255.255.255.255", "::", "::1", "::8.8.8.8", "64:ff9b::808:808"]
    # Networks' first addresses and their neighbours, among them every IPv6 network whose
    # first address has low bits set (the index keeps high and low 64 bits apart).
    v6_starts = [high << 64 | low for high, low in zip(index.v6_highs, index.v6_lows, strict=True)]
    edges = rng.sample(range(len(v6_starts)), 2_000)
    edges += [i for i, start in enumerate(v6_starts) if start & ((1 << 64) - 1)]
    for i in edges:
        for n in (v6_starts[i] - 1, v6_starts[i], v6_starts[i] + 1):
            addresses.append(str(ipaddress.IPv6Address(n)))
    for start in rng.sample(list(index.v4_starts), 2_000):
        for n in (start - 1, start, start + 1):
            addresses.append(str(ipaddress.IPv4Address(n % (1 << 32))))
    for address in addresses:
        found = database.lookup(address)
        code = found.country_code
        country = not found.is_private and code.isalpha() and len(code) == 2
        public = code if country and code not in geo_module._NOT_COUNTRIES else ""
        assert index.geo(address).country == public, address
        assert geo.lookup(address) == Geo(public, "", ""), address
