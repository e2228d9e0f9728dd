"""User-agent parsing on real-world User-Agent strings."""

from __future__ import annotations

import pytest

from svc.ingestion.enrich import useragent
from svc.ingestion.enrich.useragent import UserAgentInfo, device_from_screen, parse_user_agent

# (user agent, browser, browser_version, os, os_version, device)
# fmt: off
CASES: list[tuple[str, str, str, str, str, str]] = [
    # Desktop
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36",
        "Chrome", "120.0", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/124.0.0.0 Safari/537.36",
        "Chrome", "124.0", "macOS", "10.15", "desktop",
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/122.0.0.0 Safari/537.36",
        "Chrome", "122.0", "Linux", "", "desktop",
    ),
    (
        "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36",
        "Chrome", "120.0", "Chrome OS", "14541.0", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
        "Firefox", "121.0", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0",
        "Firefox", "115.0", "Ubuntu", "", "desktop",
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/17.2 Safari/605.1.15",
        "Safari", "17.2", "macOS", "10.15", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
        "Edge", "120.0", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0",
        "Opera", "106.0", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/118.0.0.0 YaBrowser/23.11.0.0 Safari/537.36",
        "Yandex Browser", "23.11", "Windows", "10", "desktop",
    ),
    (
        "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
        "IE", "11.0", "Windows", "7", "desktop",
    ),
    # Phones
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
        "Safari", "17.2", "iOS", "17.2", "mobile",
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
        "Chrome", "120.0", "iOS", "17.2", "mobile",
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) FxiOS/121.0 Mobile/15E148 Safari/605.1.15",
        "Firefox", "121.0", "iOS", "17.2", "mobile",
    ),
    (
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.6099.144 Mobile Safari/537.36",
        "Chrome", "120.0", "Android", "10", "mobile",
    ),
    (
        "Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0",
        "Firefox", "121.0", "Android", "14", "mobile",
    ),
    (
        "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
        "SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
        "Samsung Internet", "23.0", "Android", "14", "mobile",
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 "
        "(KHTML, like Gecko) Mobile/15E148 Instagram 309.0.2.27.106 (iPhone15,2; iOS 17_1_2; "
        "en_US; en; scale=3.00; 1179x2556; 537288532)",
        "Instagram", "309.0", "iOS", "17.1", "mobile",
    ),
    (
        "Mozilla/5.0 (Linux; Android 13; SM-G991B Build/TP1A.220624.014; wv) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36 "
        "[FB_IAB/FB4A;FBAV/444.0.0.34.118;]",
        "Facebook", "444.0", "Android", "13", "mobile",
    ),
    (
        "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A.230805.001; wv) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Version/4.0 Chrome/116.0.0.0 Mobile Safari/537.36",
        "Chrome WebView", "116.0", "Android", "13", "mobile",
    ),
    (
        "Mozilla/5.0 (Mobile; Windows Phone 8.1; Android 4.0; ARM; Trident/7.0; Touch; rv:11.0; "
        "IEMobile/11.0; NOKIA; Lumia 635) like iPhone OS 7_0_3 Mac OS X AppleWebKit/537 "
        "(KHTML, like Gecko) Mobile Safari/537",
        "IE Mobile", "11.0", "Windows Phone", "8.1", "mobile",
    ),
    # Tablets
    (
        "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/17.2 Mobile/15E148 Safari/604.1",
        "Safari", "17.2", "iOS", "17.2", "tablet",
    ),
    (
        "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36",
        "Chrome", "120.0", "Android", "13", "tablet",
    ),
    (
        "Mozilla/5.0 (Android 13; Tablet; rv:121.0) Gecko/121.0 Firefox/121.0",
        "Firefox", "121.0", "Android", "13", "tablet",
    ),
    (
        "Mozilla/5.0 (Linux; Android 12; SM-T870) AppleWebKit/537.36 (KHTML, like Gecko) "
        "SamsungBrowser/22.0 Chrome/111.0.5563.116 Safari/537.36",
        "Samsung Internet", "22.0", "Android", "12", "tablet",
    ),
    (
        "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Silk/120.3.1 like Chrome/120.0.6099.230 Safari/537.36",
        "Amazon Silk", "120.3", "Android", "9", "tablet",
    ),
    # TVs and consoles are desktop
    (
        "Mozilla/5.0 (Linux; Android 9; SHIELD Android TV Build/PPR1.180610.011) "
        "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.230 Safari/537.36",
        "Chrome", "120.0", "Android", "9", "desktop",
    ),
    (
        "Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/13.0 Safari/605.1.15",
        "Safari", "13.0", "", "", "desktop",
    ),
    # Bots and libraries still parse; the device is unknown unless the UA names a platform
    (
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Googlebot", "2.1", "", "", "",
    ),
    (
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/120.0.6099.216 Mobile Safari/537.36 (compatible; "
        "Googlebot/2.1; +http://www.google.com/bot.html)",
        "Googlebot", "2.1", "Android", "6.0", "mobile",
    ),
    (
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        "bingbot", "2.0", "", "", "",
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "HeadlessChrome/120.0.6099.28 Safari/537.36",
        "HeadlessChrome", "120.0", "Linux", "", "desktop",
    ),
    ("curl/8.4.0", "curl", "8.4", "", "", ""),
    ("python-requests/2.31.0", "Python Requests", "2.31", "", "", ""),
    ("Mozilla/5.0", "", "", "", "", ""),
    ("", "", "", "", "", ""),
    ("   ", "", "", "", "", ""),
    ("\x00\xff garbage ☃", "", "", "", "", ""),
]
# fmt: on


@pytest.mark.parametrize(("ua", "browser", "bver", "os", "osver", "device"), CASES)
def test_parse(ua: str, browser: str, bver: str, os: str, osver: str, device: str) -> None:
    assert parse_user_agent(ua) == UserAgentInfo(browser, bver, os, osver, device)


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 20


def test_uses_the_rust_accelerator() -> None:
    from ua_parser.regex import Resolver as RustResolver

    assert isinstance(useragent.load(), RustResolver)


def test_cached() -> None:
    ua = CASES[0][0]
    first = parse_user_agent(ua)
    hits = useragent._parse_cached.cache_info().hits
    assert parse_user_agent(ua) is first
    assert useragent._parse_cached.cache_info().hits == hits + 1
    assert useragent._parse_cached.cache_info().maxsize == 20_000


def test_huge_user_agent_is_cut_not_fatal() -> None:
    info = parse_user_agent(CASES[0][0] + " x" * 100_000)
    assert info.browser == "Chrome"


@pytest.mark.parametrize("junk", ["\x00", "\ud800 lone surrogate", "☃" * 50, "(" * 500, "-"])
def test_junk_never_raises(junk: str) -> None:
    assert isinstance(parse_user_agent(junk), useragent.UserAgentInfo)


def test_equal_results_are_one_instance() -> None:
    ua = CASES[0][0]
    assert parse_user_agent(ua) is parse_user_agent(ua + " ")  # two UAs, one result


@pytest.mark.parametrize(
    ("width", "device"),
    [
        (0, ""),
        (-1, ""),
        (320, "mobile"),
        (767, "mobile"),
        (768, "tablet"),
        (1023, "tablet"),
        (1024, "desktop"),
        (2560, "desktop"),
    ],
)
def test_device_from_screen(width: int, device: str) -> None:
    assert device_from_screen(width) == device


def test_pure_python_fallback_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ua_parser_rs the same answers come from ua_parser's pure-Python resolver."""
    import sys

    from ua_parser import BasicResolver

    expected = [parse_user_agent(case[0]) for case in CASES[:8]]
    useragent.load()
    # undo() puts the Rust resolver and its extractors back
    for name in ("_resolver", "_extract_agent", "_extract_os"):
        monkeypatch.setattr(useragent, name, getattr(useragent, name))
    monkeypatch.setitem(sys.modules, "ua_parser.regex", None)  # makes the import fail
    monkeypatch.setattr(useragent, "_resolver", None)
    useragent._parse_cached.cache_clear()
    try:
        assert isinstance(useragent.load(), BasicResolver)
        assert [parse_user_agent(case[0]) for case in CASES[:8]] == expected
    finally:
        useragent._parse_cached.cache_clear()
        monkeypatch.undo()
    assert not isinstance(useragent.load(), BasicResolver)
    assert parse_user_agent(CASES[0][0]) == expected[0]
