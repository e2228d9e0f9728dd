"""Seeded, realistic traffic for the dashboard tests: visitors from several countries, browsers
and devices, arriving from search, social, a newsletter and directly, over the last 165 hours,
with custom events, properties, purchases and errors, and a few visitors on the site right now.

Deterministic for a given seed; the tests compare the page with the API, not with constants.
"""

from __future__ import annotations

import random
import time
from typing import Any

UAS = {
    "chrome-win": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
    "Gecko) Chrome/126.0.0.0 Safari/537.36",
    "edge-win": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0",
    "safari-mac": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, "
    "like Gecko) Version/17.4 Safari/605.1.15",
    "firefox-linux": "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
    "safari-iphone": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "chrome-android": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like "
    "Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
}
SCREENS = {"safari-iphone": 390, "chrome-android": 412}
# /24 prefixes that the bundled country data places in one country each.
NETWORKS = [
    ("8.8.8", 30),  # US
    ("5.9.1", 14),  # DE
    ("81.2.69", 12),  # GB
    ("80.67.169", 8),  # FR
    ("200.160.2", 6),  # BR
    ("133.242.0", 5),  # JP
    ("1.1.1", 4),  # AU
    ("82.102.0", 3),  # SE
    ("41.203.64", 2),  # NG
]
REFERRERS = [
    ("https://www.google.com/", 30),
    ("", 25),
    ("https://news.ycombinator.com/item?id=1", 10),
    ("https://t.co/abc", 8),
    ("https://duckduckgo.com/", 6),
    ("https://github.com/acme/tool", 6),
    ("utm", 10),
]
PAGES = [
    ("/", 30),
    ("/pricing", 18),
    ("/blog/launching-acme", 14),
    ("/docs", 12),
    ("/docs/install", 9),
    ("/about", 5),
    ("/changelog", 4),
]


def _pick(rng: random.Random, weighted: list[tuple[Any, int]]) -> Any:
    return rng.choices([v for v, _ in weighted], weights=[w for _, w in weighted])[0]


def traffic(
    seed: int = 7, visitors: int = 140, host: str = "acme.test", live: int = 3
) -> list[dict[str, Any]]:
    """The events of ``visitors`` visitors over the last 165 hours, and ``live`` visitors with a
    page view in the last minute, oldest first."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    events: list[dict[str, Any]] = []
    used: set[tuple[str, str]] = set()
    for v in range(visitors + live):
        while True:
            net = _pick(rng, NETWORKS)
            ua_name = rng.choice(list(UAS))
            ip = f"{net}.{rng.randint(1, 254)}"
            if (ip, ua_name) not in used:
                used.add((ip, ua_name))
                break
        ua = UAS[ua_name]
        screen = SCREENS.get(ua_name, rng.choice([1280, 1440, 1920]))
        is_live = v >= visitors
        start = now - (
            rng.randint(5, 50) * 1000 if is_live else rng.randint(600, 165 * 3600) * 1000
        )
        ref = _pick(rng, REFERRERS)
        query = ""
        if ref == "utm":
            ref = ""
            query = "?utm_source=newsletter&utm_medium=email&utm_campaign=" + rng.choice(
                ["launch", "launch", "autumn-sale"]
            )
        base = {"userAgent": ua, "ip": ip, "screen": screen}
        t = start
        n_pages = 1 if is_live else rng.choices([1, 2, 3, 4], weights=[40, 30, 20, 10])[0]
        path = _pick(rng, PAGES)
        for i in range(n_pages):
            event = {
                **base,
                "event": "page_view",
                "url": f"https://{host}{path}{query if i == 0 else ''}",
                "ts": t,
            }
            if i == 0 and ref:
                event["referrer"] = ref
            events.append(event)
            if is_live:
                break
            t += rng.randint(8, 150) * 1000
            roll = rng.random()
            if (path == "/pricing" and roll < 0.3) or (path == "/" and roll < 0.06):
                plan = rng.choice(["free", "free", "pro"])
                events.append(
                    {
                        **base,
                        "event": "signup",
                        "url": f"https://{host}/signup",
                        "properties": {"plan": plan},
                        "ts": t,
                    }
                )
                t += 5000
                if plan == "pro":
                    events.append(
                        {
                            **base,
                            "event": "purchase",
                            "url": f"https://{host}/checkout",
                            "ts": t,
                            "properties": {
                                "transaction_id": f"T{v}",
                                "value": 49.0,
                                "currency": "EUR",
                                "items": '[{"item_id": "pro-monthly", "price": 49, "quantity": 1}]',
                            },
                        }
                    )
                    t += 5000
            elif roll < 0.2 and path.startswith("/docs"):
                events.append(
                    {
                        **base,
                        "event": "download",
                        "url": f"https://{host}{path}",
                        "properties": {"os": rng.choice(["linux", "macos", "windows"])},
                        "ts": t,
                    }
                )
                t += 3000
            elif roll < 0.24:
                events.append(
                    {
                        **base,
                        "event": "exception",
                        "url": f"https://{host}{path}",
                        "properties": {
                            "description": rng.choice(
                                ["TypeError: x is undefined", "NetworkError: failed to fetch"]
                            ),
                            "fatal": rng.random() < 0.3,
                        },
                        "ts": t,
                    }
                )
                t += 2000
            path = "/pricing" if path == "/" and rng.random() < 0.45 else _pick(rng, PAGES)
    events.sort(key=lambda e: e["ts"])
    return events
