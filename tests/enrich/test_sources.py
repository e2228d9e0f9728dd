"""Source, channel and referrer-host attribution on real-world referrers and campaign URLs."""

from __future__ import annotations

import pytest

from svc.ingestion.enrich.sources import (
    CATEGORIES,
    CHANNELS,
    HOSTS,
    Attribution,
    attribute,
    canonical_source,
)

PAGE = "www.example.com"
OWN = ("example.com", "example-shop.net")

# (referrer, expected source, expected channel, expected referrer_host)
REFERRERS: list[tuple[str | None, str, str, str]] = [
    # Google: every country search domain, with or without www.
    ("https://www.google.com/", "google", "organic_search", "google.com"),
    ("https://www.google.co.uk/", "google", "organic_search", "google.co.uk"),
    ("https://www.google.com.br/", "google", "organic_search", "google.com.br"),
    ("https://google.de/search?q=analytics", "google", "organic_search", "google.de"),
    ("https://www.google.co.jp/", "google", "organic_search", "google.co.jp"),
    ("https://www.google.com.au/url?sa=t", "google", "organic_search", "google.com.au"),
    ("https://www.google.cat/", "google", "organic_search", "google.cat"),
    ("https://news.google.com/articles/CBMi", "google", "organic_search", "news.google.com"),
    (
        "android-app://com.google.android.googlequicksearchbox/",
        "google",
        "organic_search",
        "com.google.android.googlequicksearchbox",
    ),
    # Google products that are not search
    ("https://gemini.google.com/", "gemini", "ai_assistants", "gemini.google.com"),
    ("https://mail.google.com/mail/u/0/", "gmail", "email", "mail.google.com"),
    ("https://docs.google.com/document/d/1", "docs.google.com", "referral", "docs.google.com"),
    # Other search engines
    ("https://www.bing.com/", "bing", "organic_search", "bing.com"),
    ("https://cn.bing.com/search?q=x", "bing", "organic_search", "cn.bing.com"),
    ("https://duckduckgo.com/", "duckduckgo", "organic_search", "duckduckgo.com"),
    ("https://html.duckduckgo.com/html/", "duckduckgo", "organic_search", "html.duckduckgo.com"),
    ("https://search.yahoo.com/", "yahoo", "organic_search", "search.yahoo.com"),
    ("https://r.search.yahoo.com/_ylt=A/RU=x", "yahoo", "organic_search", "r.search.yahoo.com"),
    ("https://search.yahoo.co.jp/search?p=x", "yahoo", "organic_search", "search.yahoo.co.jp"),
    ("https://yandex.ru/", "yandex", "organic_search", "yandex.ru"),
    ("https://yandex.com.tr/search/", "yandex", "organic_search", "yandex.com.tr"),
    ("https://www.baidu.com/link?url=x", "baidu", "organic_search", "baidu.com"),
    ("https://www.ecosia.org/", "ecosia", "organic_search", "ecosia.org"),
    ("https://search.brave.com/", "brave", "organic_search", "search.brave.com"),
    ("https://www.qwant.com/", "qwant", "organic_search", "qwant.com"),
    ("https://www.startpage.com/", "startpage", "organic_search", "startpage.com"),
    ("https://m.search.naver.com/", "naver", "organic_search", "m.search.naver.com"),
    # Social
    ("https://www.facebook.com/", "facebook", "organic_social", "facebook.com"),
    ("https://m.facebook.com/", "facebook", "organic_social", "m.facebook.com"),
    ("https://l.facebook.com/l.php?u=https%3A", "facebook", "organic_social", "l.facebook.com"),
    ("https://lm.facebook.com/", "facebook", "organic_social", "lm.facebook.com"),
    ("https://fb.com/", "facebook", "organic_social", "fb.com"),
    ("https://t.co/Xy12AbC", "twitter", "organic_social", "t.co"),
    ("https://x.com/", "twitter", "organic_social", "x.com"),
    ("https://twitter.com/someone/status/1", "twitter", "organic_social", "twitter.com"),
    ("https://www.linkedin.com/", "linkedin", "organic_social", "linkedin.com"),
    ("https://lnkd.in/eXyZ", "linkedin", "organic_social", "lnkd.in"),
    ("https://www.reddit.com/r/python/", "reddit", "organic_social", "reddit.com"),
    ("https://old.reddit.com/", "reddit", "organic_social", "old.reddit.com"),
    ("https://out.reddit.com/t3_abc", "reddit", "organic_social", "out.reddit.com"),
    ("https://l.instagram.com/?u=x", "instagram", "organic_social", "l.instagram.com"),
    ("https://www.pinterest.com/", "pinterest", "organic_social", "pinterest.com"),
    ("https://www.pinterest.de/", "pinterest", "organic_social", "pinterest.de"),
    ("https://www.tiktok.com/", "tiktok", "organic_social", "tiktok.com"),
    ("android-app://com.slack/", "slack", "organic_social", "com.slack"),
    (
        "https://news.ycombinator.com/item?id=1",
        "news.ycombinator.com",
        "organic_social",
        "news.ycombinator.com",
    ),
    # Mastodon servers are not canonicalised
    ("https://mastodon.social/@someone", "mastodon.social", "referral", "mastodon.social"),
    ("https://fosstodon.org/", "fosstodon.org", "referral", "fosstodon.org"),
    # Video
    ("https://www.youtube.com/", "youtube", "organic_video", "youtube.com"),
    ("https://m.youtube.com/watch?v=1", "youtube", "organic_video", "m.youtube.com"),
    ("https://youtu.be/dQw4w9WgXcQ", "youtube", "organic_video", "youtu.be"),
    # AI assistants
    ("https://chatgpt.com/", "chatgpt", "ai_assistants", "chatgpt.com"),
    ("https://chat.openai.com/", "chatgpt", "ai_assistants", "chat.openai.com"),
    ("https://www.perplexity.ai/", "perplexity", "ai_assistants", "perplexity.ai"),
    ("https://claude.ai/", "claude", "ai_assistants", "claude.ai"),
    ("https://copilot.microsoft.com/", "copilot", "ai_assistants", "copilot.microsoft.com"),
    ("https://chat.deepseek.com/", "deepseek", "ai_assistants", "chat.deepseek.com"),
    # Shopping, referral
    ("https://www.amazon.co.uk/dp/B0", "amazon", "organic_shopping", "amazon.co.uk"),
    ("https://github.com/org/repo", "github", "referral", "github.com"),
    ("https://gist.github.com/x", "github", "referral", "gist.github.com"),
    ("https://someone.github.io/blog/", "someone.github.io", "referral", "someone.github.io"),
    ("https://en.wikipedia.org/wiki/Web_analytics", "wikipedia", "referral", "en.wikipedia.org"),
    ("https://www.theverge.com/2024/1/1/x", "theverge.com", "referral", "theverge.com"),
    ("http://WWW.Blog.Example.ORG:8080/x", "blog.example.org", "referral", "blog.example.org"),
    ("https://bücher.de/", "bücher.de", "referral", "bücher.de"),
    ("https://notfacebook.com/", "notfacebook.com", "referral", "notfacebook.com"),
    (
        "https://facebook.com.evil.net/",
        "facebook.com.evil.net",
        "referral",
        "facebook.com.evil.net",
    ),
    ("example.org/some/page", "example.org", "referral", "example.org"),
    ("https://user:secret@www.example.org/", "example.org", "referral", "example.org"),
    ("http://192.168.0.10:8080/admin", "192.168.0.10", "referral", "192.168.0.10"),
    # Direct: none, unparseable, self
    (None, "direct", "direct", ""),
    ("", "direct", "direct", ""),
    ("   ", "direct", "direct", ""),
    ("about:blank", "direct", "direct", ""),
    ("javascript:void(0)", "direct", "direct", ""),
    ("http://[::1", "direct", "direct", ""),
    ("http://[2001:db8::1]:8080/", "direct", "direct", ""),
    ("(direct)", "direct", "direct", ""),
    ("https://www.example.com/pricing", "direct", "direct", ""),  # self-referral
    ("https://example.com/", "direct", "direct", ""),  # self without www.
    ("https://EXAMPLE.com./docs", "direct", "direct", ""),  # trailing dot, upper case
    ("https://blog.example.com/post", "direct", "direct", ""),  # sub-domain of an own host
    ("https://checkout.example-shop.net/", "direct", "direct", ""),  # other own host
]


@pytest.mark.parametrize(("referrer", "source", "channel", "host"), REFERRERS)
def test_referrer(referrer: str | None, source: str, channel: str, host: str) -> None:
    assert attribute({}, referrer, PAGE, OWN) == Attribution(source, channel, host)


def test_table_is_large_enough() -> None:
    assert len(REFERRERS) >= 25


def test_own_host_needs_a_dot_boundary() -> None:
    got = attribute({}, "https://myexample.com/", PAGE, OWN)
    assert got.source == "myexample.com"


@pytest.mark.parametrize(("referrer", "source", "channel", "host"), REFERRERS)
def test_own_hosts_in_any_collection(
    referrer: str | None, source: str, channel: str, host: str
) -> None:
    """A list or a set of own hosts (not cached like the tuple the pipeline passes) agrees."""
    expected = Attribution(source, channel, host)
    assert attribute({}, referrer, PAGE, list(OWN)) == expected
    assert attribute({}, referrer, PAGE, set(OWN)) == expected
    assert attribute({"x": "1"}, referrer, PAGE, OWN) == expected  # not the query-less path


def test_query_less_attribution_is_shared_per_host() -> None:
    first = attribute({}, "https://t.co/abc", PAGE, OWN)
    assert attribute({}, "https://t.co/xyz", PAGE, OWN) is first


def test_page_host_with_port_and_no_own_hosts() -> None:
    assert attribute({}, "http://localhost:3000/a", "localhost:3000").source == "direct"
    assert attribute({}, "http://localhost:3000/a", "example.com").source == "localhost"


# (query, referrer, expected source, expected channel)
CAMPAIGNS: list[tuple[dict[str, str], str | None, str, str]] = [
    ({"utm_source": "Newsletter"}, None, "newsletter", "email"),
    ({"utm_source": "GOOGLE"}, None, "google", "organic_search"),
    ({"utm_source": " Twitter "}, None, "twitter", "organic_social"),
    ({"utm_source": "producthunt"}, "https://www.producthunt.com/", "producthunt", "referral"),
    ({"source": "HN"}, None, "hn", "referral"),
    ({"ref": "ProductHunt"}, None, "producthunt", "referral"),
    ({"utm_source": "", "source": "", "ref": "alternativeto"}, None, "alternativeto", "referral"),
    ({"utm_source": "google", "utm_medium": "cpc"}, None, "google", "paid_search"),
    ({"utm_source": "bing", "utm_medium": "ppc"}, None, "bing", "paid_search"),
    ({"utm_source": "facebook", "utm_medium": "paid"}, None, "facebook", "paid_social"),
    ({"utm_source": "fb", "utm_medium": "cpc"}, None, "fb", "paid_social"),
    ({"utm_source": "ig", "utm_medium": "paid_social"}, None, "ig", "paid_social"),
    ({"utm_source": "youtube", "utm_medium": "cpv"}, None, "youtube", "paid_video"),
    ({"utm_source": "amazon", "utm_medium": "cpc"}, None, "amazon", "paid_shopping"),
    ({"utm_source": "criteo", "utm_medium": "display"}, None, "criteo", "display"),
    ({"utm_source": "adnet", "utm_medium": "banner"}, None, "adnet", "display"),
    ({"utm_source": "adnet", "utm_medium": "cpc"}, None, "adnet", "paid_other"),
    ({"utm_source": "mailchimp", "utm_medium": "email"}, None, "mailchimp", "email"),
    ({"utm_source": "acme", "utm_medium": "E-Mail"}, None, "acme", "email"),
    ({"utm_source": "partner", "utm_medium": "affiliate"}, None, "partner", "affiliates"),
    ({"utm_source": "blog", "utm_medium": "social"}, None, "blog", "organic_social"),
    ({"utm_source": "spotify", "utm_medium": "audio"}, None, "spotify", "audio"),
    ({"utm_source": "sms"}, None, "sms", "sms"),
    ({"utm_source": "app", "utm_medium": "push"}, None, "app", "mobile_push_notifications"),
    ({"utm_source": "chatgpt.com"}, None, "chatgpt.com", "ai_assistants"),
    ({"utm_source": "perplexity"}, None, "perplexity", "ai_assistants"),
    ({"utm_source": "l.facebook.com"}, None, "l.facebook.com", "organic_social"),
    ({"utm_source": "x", "utm_campaign": "cross-network-q3"}, None, "x", "cross_network"),
    ({"utm_source": "acme", "utm_campaign": "summer-shopping"}, None, "acme", "organic_shopping"),
    ({"utm_source": "acme", "utm_campaign": "workshop"}, None, "acme", "referral"),
    ({"utm_source": "acme", "utm_medium": "organic"}, None, "acme", "organic_search"),
    # click ids
    ({"gclid": "EAIaIQobChMI"}, "https://www.google.com/", "google", "paid_search"),
    ({"gclid": "EAIaIQobChMI"}, None, "direct", "paid_search"),
    ({"msclkid": "a1b2"}, "https://www.bing.com/", "bing", "paid_search"),
    ({"wbraid": "x"}, None, "direct", "paid_search"),
    ({"gbraid": "x"}, None, "direct", "paid_search"),
    ({"dclid": "x"}, None, "direct", "paid_search"),
    ({"ttclid": "x"}, "https://www.tiktok.com/", "tiktok", "paid_social"),
    ({"fbclid": "IwAR0"}, "https://l.facebook.com/", "facebook", "organic_social"),
    ({"gclid": ""}, None, "direct", "direct"),
    # utm_source beats the referrer; self-referral still gives utm's source
    ({"utm_source": "newsletter"}, "https://www.google.com/", "newsletter", "email"),
    ({"utm_source": "twitter"}, "https://www.example.com/", "twitter", "organic_social"),
    ({"utm_medium": "email"}, None, "direct", "email"),
    ({"utm_medium": "weird"}, None, "direct", "direct"),
]


@pytest.mark.parametrize(("query", "referrer", "source", "channel"), CAMPAIGNS)
def test_campaign(query: dict[str, str], referrer: str | None, source: str, channel: str) -> None:
    got = attribute(query, referrer, PAGE, OWN)
    assert (got.source, got.channel) == (source, channel)


def test_referrer_host_is_kept_when_query_decides() -> None:
    got = attribute({"utm_source": "newsletter"}, "https://www.google.com/", PAGE)
    assert got.referrer_host == "google.com"


def test_long_source_is_cut() -> None:
    assert len(attribute({"utm_source": "a" * 1000}, None, PAGE).source) == 128


def test_every_channel_is_declared() -> None:
    channels = {c for _, _, c, _ in REFERRERS} | {c for _, _, _, c in CAMPAIGNS}
    assert channels <= set(CHANNELS)


def test_tables_are_lower_case_and_canonical_names_categorised() -> None:
    for host, name in HOSTS.items():
        assert host == host.lower() and name == name.lower()
    for name in CATEGORIES:
        assert name == name.lower()
    for name in ("google", "bing", "facebook", "twitter", "chatgpt", "gemini", "youtube"):
        assert name in CATEGORIES


def test_canonical_source_direct_use() -> None:
    assert canonical_source("google.com.mx") == "google"
    assert canonical_source("maps.google.com") == "maps.google.com"
    assert canonical_source("mercadolivre.com.br") == "mercadolibre"


@pytest.mark.parametrize(
    "junk",
    ["http://", "https://:80/", "//", "http://a b.com/", "https://exa mple.com", "\x00", "💥"],
)
def test_junk_never_raises(junk: str) -> None:
    got = attribute({"utm_medium": junk}, junk, junk, (junk,))
    assert got.channel in CHANNELS
