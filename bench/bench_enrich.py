"""Micro-benchmark of the enrichment functions: µs per call, warm cache and cold (unique) input.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_enrich.py [-n 100000] [-r 3]``.

Times are CPU time of the process per call. "warm" repeats a small realistic set of inputs
(what a site's traffic mostly is: a few dozen user agents and referrers); "cold" feeds unique
inputs, so every call misses the caches.
"whole event" is the whole enrichment of one event: attribute + parse_user_agent +
bot_reason + geo lookup + country_from_headers; its "cold" column has every input new, while
"typical event" "cold" has a new address and referrer URL but a known user agent (most
events: user agents repeat across visitors, addresses and referrer URLs less so).

The start-up heap (rules, geo data) is frozen out of the garbage collector after loading, as
``svcm serve`` does. The cold user agents are all distinct (versions are made up), so they
miss every cache, including the one that shares equal parse results.

The last table is the "everything new" event taken apart: each step timed inside the event
(more than alone: the steps evict each other's rules, tables and caches from the CPU caches).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import time
from collections.abc import Callable, Sequence

from svc.ingestion.enrich import bots, sources, useragent
from svc.ingestion.enrich.bots import bot_reason
from svc.ingestion.enrich.geo import GeoLookup, country_from_headers
from svc.ingestion.enrich.sources import attribute
from svc.ingestion.enrich.useragent import parse_user_agent

UAS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.{v} Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.{v} Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/{v}.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/23.{v} Chrome/115.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.{v}; +http://www.google.com/bot.html)",
    "curl/8.{v}.0",
]
REFERRERS = [
    "https://www.google.com/",
    "https://www.google.co.uk/",
    "https://t.co/{v}",
    "https://l.facebook.com/l.php?u={v}",
    "https://news.ycombinator.com/item?id={v}",
    "https://www.example.com/page/{v}",
    "https://blog{v}.somewhere.org/post",
    "",
]
QUERIES: list[dict[str, str]] = [
    {},
    {"utm_source": "Newsletter", "utm_medium": "email"},
    {"gclid": "abc"},
    {},
    {"utm_source": "chatgpt.com"},
    {},
]


def timed(fn: Callable[[int], object], n: int) -> float:
    """CPU µs per call of fn(i) for i in range(n).

    CPU time of this process, not wall time, so that other processes on a busy machine do
    not count; they still slow it down through shared CPU caches.
    """
    start = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - start) / n * 1e6


def clear_caches(lookup: GeoLookup) -> None:
    useragent._parse_cached.cache_clear()
    bots._reason.cache_clear()
    for cached in (
        sources._referrer_host,
        sources.canonical_source,
        sources._category,
        sources._site_host,
        sources._channel_of,
        sources._by_host,
        sources._own_hosts,
        sources._shared,
    ):
        cached.cache_clear()
    lookup._cached.cache_clear()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=100_000, help="calls per measurement")
    parser.add_argument("-r", "--repeat", type=int, default=3, help="runs; the best is shown")
    args = parser.parse_args(argv)
    n, repeat = args.n, args.repeat

    rng = random.Random(42)
    start = time.perf_counter()
    useragent.load()
    ua_load = time.perf_counter() - start
    lookup = GeoLookup(cache_size=65_536)
    start = time.perf_counter()
    lookup.load()
    geo_load = time.perf_counter() - start
    print(f"one-off: UA parser build {ua_load * 1e3:.0f} ms, geo data load {geo_load * 1e3:.0f} ms")
    gc.collect()
    gc.freeze()  # as svcm serve does once the app is up
    load1, _, _ = os.getloadavg()
    print(f"load average at start: {load1:.1f} on {os.cpu_count()} CPUs (busy machines read high)")

    warm_uas = [u.format(v=v) for u in UAS for v in (1, 2, 3)]
    cold_uas = [UAS[i % len(UAS)].format(v=f"{i}.{i % 7}") for i in range(n)]
    warm_refs = [r.format(v=v) for r in REFERRERS for v in (1, 2)]
    cold_refs = [
        REFERRERS[i % len(REFERRERS)].format(v=i) or f"https://x{i}.net/" for i in range(n)
    ]
    warm_ips = ["8.8.8.8", "81.2.69.142", "2001:4860:4860::8888", "1.1.1.1", "10.0.0.1"]
    cold_ips = [
        f"{rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        for _ in range(n)
    ]
    headers = {"cf-ipcountry": "DE"}
    own = ("example.com",)
    nw, nr, ni, nq = len(warm_uas), len(warm_refs), len(warm_ips), len(QUERIES)

    def event(ua: str, ref: str, ip: str, query: dict[str, str]) -> None:
        attribute(query, ref, "www.example.com", own)
        parse_user_agent(ua)
        bot_reason(ua)
        lookup.lookup(ip)
        country_from_headers(headers)

    cases: list[tuple[str, Callable[[int], object], Callable[[int], object]]] = [
        (
            "attribute",
            lambda i: attribute(QUERIES[i % nq], warm_refs[i % nr], "www.example.com", own),
            lambda i: attribute(QUERIES[i % nq], cold_refs[i], "www.example.com", own),
        ),
        (
            "parse_user_agent",
            lambda i: parse_user_agent(warm_uas[i % nw]),
            lambda i: parse_user_agent(cold_uas[i]),
        ),
        ("bot_reason", lambda i: bot_reason(warm_uas[i % nw]), lambda i: bot_reason(cold_uas[i])),
        (
            "GeoLookup.lookup",
            lambda i: lookup.lookup(warm_ips[i % ni]),
            lambda i: lookup.lookup(cold_ips[i]),
        ),
        (
            "country_from_headers",
            lambda i: country_from_headers(headers),
            lambda i: country_from_headers({"cf-ipcountry": "FR" if i % 2 else "XX"}),
        ),
        (
            "device_from_screen",
            lambda i: useragent.device_from_screen(1280),
            lambda i: useragent.device_from_screen(i % 3000),
        ),
        (
            "whole event",
            lambda i: event(warm_uas[i % nw], warm_refs[i % nr], warm_ips[i % ni], QUERIES[i % nq]),
            lambda i: event(cold_uas[i], cold_refs[i], cold_ips[i], QUERIES[i % nq]),
        ),
        (
            "typical event",  # cold: known UAs, but a new address and a new referrer URL
            lambda i: event(warm_uas[i % nw], warm_refs[i % nr], warm_ips[i % ni], QUERIES[i % nq]),
            lambda i: event(warm_uas[i % nw], cold_refs[i], cold_ips[i], QUERIES[i % nq]),
        ),
    ]
    print(f"{'function':<22}{'warm µs/call':>14}{'cold µs/call':>14}   (n={n:,}, best of {repeat})")
    for name, warm, cold in cases:
        warm_us = cold_us = float("inf")
        for _ in range(repeat):
            for i in range(200):  # fill the caches for the warm run
                warm(i)
            warm_us = min(warm_us, timed(warm, n))
            clear_caches(lookup)
            if name == "typical event":
                for ua in warm_uas:
                    parse_user_agent(ua)
                    bot_reason(ua)
            cold_us = min(cold_us, timed(cold, n))
        print(f"{name:<22}{warm_us:>14.2f}{cold_us:>14.2f}")

    # The everything-new event taken apart: each step timed inside the event (wall clock;
    # ~0.4 µs of clock reads and bookkeeping per step included: country_from_headers, ~0.5 µs
    # alone, reads ~0.9 here), best of the runs per step.
    steps: list[tuple[str, Callable[[int], object]]] = [
        ("attribute", lambda i: attribute(QUERIES[i % nq], cold_refs[i], "www.example.com", own)),
        ("parse_user_agent", lambda i: parse_user_agent(cold_uas[i])),
        ("bot_reason", lambda i: bot_reason(cold_uas[i])),
        ("GeoLookup.lookup", lambda i: lookup.lookup(cold_ips[i])),
        ("country_from_headers", lambda i: country_from_headers(headers)),
    ]
    clock = time.perf_counter_ns
    best = [float("inf")] * len(steps)
    for _ in range(repeat):
        clear_caches(lookup)
        spent = [0] * len(steps)
        for i in range(n):
            for k, (_name, step) in enumerate(steps):
                start_ns = clock()
                step(i)
                spent[k] += clock() - start_ns
        best = [min(b, total / n / 1e3) for b, total in zip(best, spent, strict=True)]
    print(f"\neverything-new event, each step timed inside it (µs, best of {repeat}):")
    for (name, _step), us in zip(steps, best, strict=True):
        print(f"  {name:<22}{us:>8.2f}")
    print(f"  {'sum':<22}{sum(best):>8.2f}")


if __name__ == "__main__":
    main()
