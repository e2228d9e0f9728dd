"""Bot detection on real-world User-Agent strings."""

from __future__ import annotations

import random

import pytest
import re2
from crawleruseragents import CRAWLER_USER_AGENTS_DATA

from svc.ingestion.enrich import bots
from svc.ingestion.enrich.bots import REASONS, bot_reason

BROWSERS: list[str] = [
    # desktop
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/122.0.0.0 Safari/537.36",
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/119.0.0.0 Safari/537.36 OPR/105.0.0.0 (Edition std-1)",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36 Vivaldi/6.5.3206.48",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/118.0.0.0 YaBrowser/23.11.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko",
    # phones and tablets
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) GSA/300.0.605587153 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.2 Mobile/15E148 DuckDuckGo/7 Safari/605.1.15",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.6099.144 Mobile Safari/537.36",
    "Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; HD1913) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.6099.144 Mobile Safari/537.36 EdgA/120.0.2210.157",
    "Mozilla/5.0 (Linux; U; Android 13; zh-cn; 2211133C Build/TKQ1.220905.001) "
    "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/100.0.4896.127 Mobile "
    "Safari/537.36 XiaoMi/MiuiBrowser/17.6.110616",
    "Mozilla/5.0 (Linux; U; Android 10; en-US; RMX1911 Build/QKQ1.200209.002) "
    "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/78.0.3904.108 "
    "UCBrowser/13.4.0.1306 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; HarmonyOS; ELS-NX9; HMSCore 6.12.0.302) "
    "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.0.4844.88 HuaweiBrowser/14.0.2.311 "
    "Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; CUBOT X30) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Silk/120.3.1 like Chrome/120.0.6099.230 Safari/537.36",
    # in-app browsers
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 Instagram 309.0.2.27.106 (iPhone15,2; iOS 17_1_2; "
    "en_US; en; scale=3.00; 1179x2556; 537288532)",
    "Mozilla/5.0 (Linux; Android 13; SM-G991B Build/TP1A.220624.014; wv) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36 "
    "[FB_IAB/FB4A;FBAV/444.0.0.34.118;]",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 [LinkedInApp]/9.29.6563",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 Twitter for iPhone/10.19",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 Snapchat/12.60.0.38 (like Safari/8617.2.4.10.8, panda)",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.42(0x18002a2f) NetType/WIFI "
    "Language/zh_CN",
    # TV, console
    "Mozilla/5.0 (SMART-TV; LINUX; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) "
    "76.0.3809.146/6.0 TV Safari/537.36",
    "Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/13.0 Safari/605.1.15",
]

BOTS: list[tuple[str | None, str]] = [
    (None, "missing_user_agent"),
    ("", "missing_user_agent"),
    ("  ", "missing_user_agent"),
    ("-", "missing_user_agent"),
    # crawlers: search, SEO, AI, previews, monitoring
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "crawler"),
    (
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
        "(KHTML, like Gecko) Chrome/120.0.6099.216 Mobile Safari/537.36 (compatible; "
        "Googlebot/2.1; +http://www.google.com/bot.html)",
        "crawler",
    ),
    ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "crawler"),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
        "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
        "crawler",
    ),
    ("Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", "crawler"),
    ("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "crawler"),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
        "+https://openai.com/gptbot)",
        "crawler",
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; "
        "+claudebot@anthropic.com)",
        "crawler",
    ),
    ("facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", "crawler"),
    ("Twitterbot/1.0", "crawler"),
    ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "crawler"),
    ("Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", "crawler"),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like "
        "Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
        "crawler",
    ),
    ("Scrapy/2.11.0 (+https://scrapy.org)", "crawler"),
    ("Mozilla/5.0", "crawler"),
    ("Mozilla/5.0 (compatible; NewShinyBot/0.3)", "crawler"),  # unknown: generic bot/ token
    ("Mozilla/5.0 (compatible; acme-fetch 1.0; +https://acme.example/about)", "crawler"),
    # headless browsers
    (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "HeadlessChrome/120.0.6099.28 Safari/537.36",
        "headless",
    ),
    (
        "Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) "
        "PhantomJS/2.1.1 Safari/538.1",
        "headless",
    ),
    (
        "Mozilla/5.0 (linux) AppleWebKit/537.36 (KHTML, like Gecko) jsdom/22.1.0",
        "headless",
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Cypress/13.6.1 Chrome/114.0.5735.289 Electron/25.8.4 Safari/537.36",
        "headless",
    ),
    # HTTP libraries and tools
    ("curl/8.4.0", "http_library"),
    ("Wget/1.21.4", "http_library"),
    ("python-requests/2.31.0", "http_library"),
    ("python-httpx/0.27.0", "http_library"),
    ("Python-urllib/3.11", "http_library"),
    ("Python/3.11 aiohttp/3.9.1", "http_library"),
    ("Go-http-client/1.1", "http_library"),
    ("Go-http-client/2.0", "http_library"),
    ("okhttp/4.12.0", "http_library"),
    ("axios/1.6.2", "http_library"),
    ("node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", "http_library"),
    ("node", "http_library"),
    ("undici", "http_library"),
    ("Bun/1.1.3", "http_library"),
    ("Deno/1.40.2", "http_library"),
    ("Java/17.0.9", "http_library"),
    ("Apache-HttpClient/4.5.14 (Java/17.0.9)", "http_library"),
    ("libwww-perl/6.72", "http_library"),
    ("HTTPie/3.2.2", "http_library"),
    ("PostmanRuntime/7.36.0", "http_library"),
    ("GuzzleHttp/7", "http_library"),
    ("Ruby", "http_library"),
    ("Dalvik/2.1.0 (Linux; U; Android 13; Pixel 7 Build/TQ3A.230805.001)", "http_library"),
    ("MyApp/1.0 CFNetwork/1410.0.3 Darwin/22.6.0", "http_library"),
]


@pytest.mark.parametrize("ua", BROWSERS)
def test_browsers_are_not_bots(ua: str) -> None:
    assert bot_reason(ua) is None


@pytest.mark.parametrize(("ua", "reason"), BOTS)
def test_bots(ua: str | None, reason: str) -> None:
    assert bot_reason(ua) == reason
    assert reason in REASONS


def test_tables_are_large_enough() -> None:
    assert len(BROWSERS) >= 20 and len(BOTS) >= 20


def test_every_instance_of_the_maintained_list_is_caught() -> None:
    missed = [
        instance
        for entry in CRAWLER_USER_AGENTS_DATA
        for instance in entry.get("instances", [])
        if bot_reason(instance) is None
    ]
    assert not missed


_PLAIN_ANY = re2.compile(
    "|".join((bots._HEADLESS, bots._HTTP_LIBRARY, bots._GENERIC_CRAWLER, bots._CRAWLER_LIST)),
    bots._options(),
)
_PLAIN_HEADLESS = re2.compile(bots._HEADLESS, bots._options())
_PLAIN_HTTP_LIBRARY = re2.compile(bots._HTTP_LIBRARY, bots._options())


def _reason_by_plain_regexes(ua: str) -> str | None:
    """The reason as three separate searches tell it (how bots.py did it before the set)."""
    data = ua.strip().encode("utf-8", "replace")
    if _PLAIN_ANY.search(data) is None:
        return None
    if _PLAIN_HEADLESS.search(data) is not None:
        return "headless"
    if _PLAIN_HTTP_LIBRARY.search(data) is not None:
        return "http_library"
    return "crawler"


def test_one_set_pass_agrees_with_plain_regexes() -> None:
    instances = [i for entry in CRAWLER_USER_AGENTS_DATA for i in entry.get("instances", [])]
    known = BROWSERS + [ua for ua, _ in BOTS if ua and ua.strip() not in ("", "-")] + instances
    rng = random.Random(7)
    tokens = ["HeadlessChrome/1", "curl/8", "node", "Ruby", "xbot/1", "+https://a.b", "Mozilla/5.0"]
    mixed = []
    for _ in range(3_000):
        ua = rng.choice(known)
        words = ua.split(" ")
        words.insert(rng.randrange(len(words) + 1), rng.choice(tokens + known))
        mixed.append(" ".join(words) if rng.random() < 0.8 else rng.choice(tokens))
    for ua in known + mixed:
        assert bots._reason(ua) == _reason_by_plain_regexes(ua), ua


def test_cached_and_cut() -> None:
    ua = BROWSERS[0]
    bot_reason(ua)
    hits = bots._reason.cache_info().hits
    assert bot_reason(ua) is None
    assert bots._reason.cache_info().hits == hits + 1
    assert bot_reason(ua + " x" * 100_000) is None


@pytest.mark.parametrize("junk", ["\x00", "\ud800 lone surrogate", "☃" * 50, "(" * 500])
def test_junk_never_raises(junk: str) -> None:
    assert bot_reason(junk) in (None, *REASONS)
