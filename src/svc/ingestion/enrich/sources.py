"""Traffic source and channel attribution of one event (pure, cached, no I/O).

Contract of :func:`attribute` (CONTRACT.md "trafficSources", FIELD.md "Sources"):

``source``
    1. The page URL's ``utm_source`` query parameter, else ``source``, else ``ref``: the first
       that is non-blank, stripped and lower-cased (cut to 128 characters), taken as it is.
    2. Else the referrer's host, mapped to a canonical lower-case name by :data:`HOSTS`, a
       table of host suffix -> name matched on the host and then on each parent domain
       (``l.facebook.com`` -> ``facebook.com`` -> ``facebook``; the most specific entry wins,
       so ``gemini.google.com`` is ``gemini`` and ``mail.google.com`` is ``gmail``). Search
       engines with a domain per country are matched by :data:`_COUNTRY_ENGINE_RE`:
       ``google.<tld>``, ``google.co.<tld>``, ``google.com.<tld>`` (with or without ``www.``,
       no other sub-domain) are ``google``; ``yandex``, ``yahoo``, ``amazon``, ``ebay``, ...
       likewise, with any sub-domain. Android app referrers (``android-app://com.slack/``)
       are looked up by package name.
    3. Else, for an unknown host, the host without a leading ``www.``
       (``news.ycombinator.com`` stays ``news.ycombinator.com``).
    4. ``direct`` when there is no referrer, the referrer cannot be parsed or has no host
       (``about:blank``), or its host (compared without ``www.``) is ``page_host`` or one of
       ``own_hosts`` or a sub-domain of one of ``own_hosts``.

``referrer_host``
    The referrer's host, lower-case, without port, trailing dot or leading ``www.``; ``''``
    when there is no usable referrer or the referrer is the site itself. It is kept even when
    a query parameter decides the source.

``channel`` (GA4 default channel grouping, plus AI assistants; first rule that applies)
    Terms: *medium* is ``utm_medium``, *campaign* is ``utm_campaign`` (both lower-cased);
    *paid medium* means medium matches ``^(.*cp.*|ppc|retargeting|paid.*)$``; a source's
    *category* (search, social, video, shopping, email, ai) comes from :data:`CATEGORIES`,
    looked up by canonical name, by alias (``fb``, ``ig``, ``yt`` ...), or, for a query
    source that looks like a host (``utm_source=chatgpt.com``), by its canonical name.

    1. ``paid_search``: a search-ad click id is present (``gclid``, ``gbraid``, ``wbraid``,
       ``dclid``, ``msclkid``, ``yclid``).
    2. ``paid_social``: a social-ad click id is present (``ttclid``, ``twclid``,
       ``li_fat_id``, ``sccid``, ``rdt_cid``). ``fbclid`` is *not* one: Facebook adds it to
       every outbound link.
    3. ``direct``: source is ``direct`` and there is no medium.
    4. ``cross_network``: campaign contains ``cross-network``.
    5. paid medium and: shopping source or shop campaign -> ``paid_shopping``; search source
       -> ``paid_search``; social source -> ``paid_social``; video source -> ``paid_video``.
    6. ``display``: medium is ``display``, ``banner``, ``expandable``, ``interstitial`` or
       ``cpm``.
    7. ``paid_other``: any other paid medium.
    8. ``ai_assistants``: an AI-assistant source (``chatgpt``, ``perplexity``, ``claude``,
       ``gemini``, ``copilot``, ``deepseek``, ...). Not a GA4 rule: added as FIELD.md asks.
    9. ``organic_shopping``: shopping source, or campaign matches
       ``^(.*(([^a-df-z]|^)shop|shopping).*)$``.
    10. ``organic_social``: social source, or medium is ``social``, ``social-network``,
        ``social-media``, ``sm``, ``social network`` or ``social media``.
    11. ``organic_video``: video source, or medium contains ``video``.
    12. ``organic_search``: search source, or medium is ``organic``.
    13. ``referral``: medium is ``referral``, ``app`` or ``link``.
    14. ``email``: source or medium contains ``email``, ``e-mail``, ``e_mail``, ``e mail``
        or ``newsletter``, or a webmail source (``gmail``, ``outlook`` ...).
    15. ``affiliates``: medium is ``affiliate`` or ``affiliates``.
    16. ``audio``: medium is ``audio``.
    17. ``sms``: source or medium is ``sms``.
    18. ``mobile_push_notifications``: medium ends with ``push`` or contains ``mobile`` or
        ``notification``, or source is ``firebase``.
    19. Else ``direct`` when the source is ``direct``, otherwise ``referral`` (GA4 would say
        "Unassigned" for unknown campaign sources; a plain referrer is a referral).

All names are in :data:`CHANNELS`. Everything here is pure; the parsing of a referrer, the
canonical name of a host, the category of a source and the channel of a (source, medium,
campaign) are cached with :func:`functools.lru_cache` (campaign and medium are cut to 128
characters for that), and so are the site's hosts as compared (per page host and tuple of own
hosts), equal :class:`Attribution` values (one shared object each) and, for a page URL without
a query (most events), the whole :class:`Attribution` per referrer host: a new referrer URL
from a known host costs the parse of its host and two lookups.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from svc.schema.named import CHANNELS as NAMED_CHANNELS

__all__ = ["CATEGORIES", "CHANNELS", "HOSTS", "Attribution", "attribute", "canonical_source"]

CHANNELS: Final = NAMED_CHANNELS
"""Every channel name :func:`attribute` can return."""

DIRECT: Final = "direct"
_MAX_SOURCE_LEN: Final = 128
_MAX_REFERRER_LEN: Final = 1_024  # the host is in the first 300 characters of any valid URL


@dataclass(frozen=True, slots=True)
class Attribution:
    """Where a visit came from: canonical ``source``, GA4 ``channel``, bare referrer host."""

    source: str
    channel: str
    referrer_host: str


# --------------------------------------------------------------------------------------------
# Data: host suffix -> canonical source name. Matched on the host (without "www.") and then on
# each parent domain, so "l.facebook.com" finds "facebook.com". Keep entries lower-case.
# Google's country search domains are NOT here: see _COUNTRY_ENGINE_RE (only google.<tld>
# itself is search; other google.com sub-domains are products listed here or plain hosts).
# --------------------------------------------------------------------------------------------
HOSTS: Final[Mapping[str, str]] = {
    # Search engines
    "news.google.com": "google",
    "bing.com": "bing",
    "duckduckgo.com": "duckduckgo",
    "duck.com": "duckduckgo",
    "search.yahoo.com": "yahoo",
    "yahoo.com": "yahoo",
    "ya.ru": "yandex",
    "baidu.com": "baidu",
    "ecosia.org": "ecosia",
    "search.brave.com": "brave",
    "qwant.com": "qwant",
    "startpage.com": "startpage",
    "naver.com": "naver",
    "seznam.cz": "seznam",
    "sogou.com": "sogou",
    "so.com": "360",
    "ask.com": "ask",
    "search.aol.com": "aol",
    "kagi.com": "kagi",
    "mojeek.com": "mojeek",
    "daum.net": "daum",
    "coccoc.com": "coccoc",
    "yep.com": "yep",
    "swisscows.com": "swisscows",
    "metager.org": "metager",
    "metager.de": "metager",
    "presearch.com": "presearch",
    "petalsearch.com": "petal",
    "dogpile.com": "dogpile",
    "com.google.android.googlequicksearchbox": "google",  # Android Google app / Discover
    "com.google.android.gm": "gmail",
    # AI assistants
    "chatgpt.com": "chatgpt",
    "chat.openai.com": "chatgpt",
    "perplexity.ai": "perplexity",
    "claude.ai": "claude",
    "gemini.google.com": "gemini",
    "bard.google.com": "gemini",
    "copilot.microsoft.com": "copilot",
    "copilot.cloud.microsoft": "copilot",
    "edgeservices.bing.com": "copilot",  # Copilot in the Edge sidebar
    "chat.deepseek.com": "deepseek",
    "deepseek.com": "deepseek",
    "chat.mistral.ai": "mistral",
    "meta.ai": "meta_ai",
    "grok.com": "grok",
    "poe.com": "poe",
    "phind.com": "phind",
    "you.com": "you",
    "kimi.com": "kimi",
    "kimi.moonshot.cn": "kimi",
    "chat.qwen.ai": "qwen",
    "notebooklm.google.com": "notebooklm",
    "com.openai.chatgpt": "chatgpt",
    # Social networks and messengers
    "facebook.com": "facebook",
    "fb.com": "facebook",
    "fb.me": "facebook",
    "com.facebook.katana": "facebook",
    "messenger.com": "messenger",
    "twitter.com": "twitter",
    "x.com": "twitter",
    "t.co": "twitter",
    "com.twitter.android": "twitter",
    "linkedin.com": "linkedin",
    "lnkd.in": "linkedin",
    "com.linkedin.android": "linkedin",
    "reddit.com": "reddit",
    "redd.it": "reddit",
    "com.reddit.frontpage": "reddit",
    "instagram.com": "instagram",
    "com.instagram.android": "instagram",
    "pinterest.com": "pinterest",
    "pin.it": "pinterest",
    "tiktok.com": "tiktok",
    "threads.net": "threads",
    "threads.com": "threads",
    "bsky.app": "bluesky",
    "snapchat.com": "snapchat",
    "tumblr.com": "tumblr",
    "t.umblr.com": "tumblr",
    "vk.com": "vk",
    "vk.ru": "vk",
    "ok.ru": "odnoklassniki",
    "weibo.com": "weibo",
    "weibo.cn": "weibo",
    "quora.com": "quora",
    "whatsapp.com": "whatsapp",
    "wa.me": "whatsapp",
    "t.me": "telegram",
    "telegram.org": "telegram",
    "org.telegram.messenger": "telegram",
    "discord.com": "discord",
    "discordapp.com": "discord",
    "discord.gg": "discord",
    "slack.com": "slack",
    "com.slack": "slack",
    "line.me": "line",
    "xing.com": "xing",
    "news.ycombinator.com": "news.ycombinator.com",  # keeps its host name, but is social
    # Video
    "youtube.com": "youtube",
    "youtu.be": "youtube",
    "youtube-nocookie.com": "youtube",
    "com.google.android.youtube": "youtube",
    "vimeo.com": "vimeo",
    "twitch.tv": "twitch",
    "dailymotion.com": "dailymotion",
    "bilibili.com": "bilibili",
    # Webmail
    "mail.google.com": "gmail",
    "outlook.live.com": "outlook",
    "outlook.office.com": "outlook",
    "outlook.office365.com": "outlook",
    "mail.yahoo.com": "yahoo_mail",
    "mail.proton.me": "proton_mail",
    "mail.yandex.ru": "yandex_mail",
    # Shopping
    "etsy.com": "etsy",
    "walmart.com": "walmart",
    "shop.app": "shop_app",
    # Developer and reference sites
    "github.com": "github",
    "gitlab.com": "gitlab",
    "stackoverflow.com": "stackoverflow",
    "wikipedia.org": "wikipedia",
    "medium.com": "medium",
    "dev.to": "dev.to",
}

# Brands with a domain per country. Group 1: Google search, only the bare domain
# (www. is stripped before matching): google.com, google.de, google.co.uk, google.com.br, ...
# Group 2: other brands, any sub-domain: yandex.ru, yandex.com.tr, search.yahoo.co.jp, ...
_COUNTRY_ENGINE_RE: Final = re.compile(
    r"^(?:(google)|(?:[a-z0-9-]+\.)*"
    r"(yandex|yahoo|amazon|ebay|aliexpress|mercadolibre|mercadolivre|rakuten|pinterest))"
    r"\.(?:(?:com?|ne|or)\.)?[a-z]{2,3}$"
)
_BRAND_NAMES: Final[Mapping[str, str]] = {"mercadolivre": "mercadolibre"}

# Source categories used by the channel rules, keyed by canonical name or common alias
# (aliases are what people put in utm_source: "fb", "ig", "yt", "li" ...).
_SEARCH: Final = (
    "google bing duckduckgo yahoo yandex baidu ecosia brave qwant startpage naver seznam sogou "
    "360 ask aol kagi mojeek daum coccoc yep swisscows metager presearch petal dogpile"
)
_SOCIAL: Final = (
    "facebook fb messenger twitter tw x linkedin li reddit instagram ig pinterest tiktok "
    "threads bluesky snapchat tumblr vk odnoklassniki weibo quora whatsapp telegram discord "
    "slack line xing news.ycombinator.com hackernews mastodon"
)
_VIDEO: Final = "youtube yt vimeo twitch dailymotion bilibili"
_SHOPPING: Final = (
    "amazon ebay aliexpress mercadolibre rakuten etsy walmart shop_app shopify google_shopping"
)
_EMAIL: Final = "gmail outlook yahoo_mail proton_mail yandex_mail"
_AI: Final = (
    "chatgpt openai perplexity claude gemini copilot deepseek mistral meta_ai grok poe phind "
    "you kimi qwen notebooklm"
)
CATEGORIES: Final[Mapping[str, str]] = {
    name: category
    for category, names in (
        ("search", _SEARCH),
        ("social", _SOCIAL),
        ("video", _VIDEO),
        ("shopping", _SHOPPING),
        ("email", _EMAIL),
        ("ai", _AI),
    )
    for name in names.split()
}
"""Canonical source name or alias -> category (search, social, video, shopping, email, ai)."""

_SEARCH_CLICK_IDS: Final = ("gclid", "gbraid", "wbraid", "dclid", "msclkid", "yclid")
_SOCIAL_CLICK_IDS: Final = ("ttclid", "twclid", "li_fat_id", "sccid", "rdt_cid")
_CLICK_IDS: Final = frozenset(_SEARCH_CLICK_IDS + _SOCIAL_CLICK_IDS)
_PAID_MEDIUM_RE: Final = re.compile(r"^(?:.*cp.*|ppc|retargeting|paid.*)$")
_SHOP_CAMPAIGN_RE: Final = re.compile(r"(?:[^a-df-z]|^)shop|shopping")
_EMAIL_RE: Final = re.compile(r"e[-_ ]?mail|newsletter")
_DISPLAY_MEDIA: Final = frozenset({"display", "banner", "expandable", "interstitial", "cpm"})
_SOCIAL_MEDIA: Final = frozenset(
    {"social", "social-network", "social-media", "sm", "social network", "social media"}
)
_REFERRAL_MEDIA: Final = frozenset({"referral", "app", "link"})
_HOST_RE: Final = re.compile(r"[\w-]+(?:\.[\w-]+)*")  # letters/digits/_/- labels, IDN allowed
# What \w, "-" and "." are in ASCII once lower-cased (no upper case left), for the same test.
_ASCII_HOST_CHARS: Final = "abcdefghijklmnopqrstuvwxyz0123456789_-."
_OPAQUE_SCHEME_RE: Final = re.compile(r"[a-z][a-z0-9+.-]*:(?!\d)", re.IGNORECASE)
# RFC 3986 authority: optional scheme, "//", optional userinfo "...@", then the host (group 1)
# up to the port, path, query or fragment. Cheaper than urllib.parse.urlsplit.
_AUTHORITY_RE: Final = re.compile(r"(?:[a-z][a-z0-9+.-]*:)?//(?:[^/?#@]*@)?([^/?#:]*)", re.I)


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


@lru_cache(maxsize=32_768)
def _referrer_host(referrer: str) -> str:
    """Lower-case host of a referrer URL without port, trailing dot and ``www.``; '' if none."""
    ref = referrer.strip()
    if not ref:
        return ""
    match = _AUTHORITY_RE.match(ref)
    if match is None:
        if _OPAQUE_SCHEME_RE.match(ref):
            return ""  # a scheme without authority: about:blank, data:, javascript:
        match = _AUTHORITY_RE.match("//" + ref)  # a bare "example.com/path"
        if match is None:
            return ""
    host = match.group(1).lower().rstrip(".")
    if host.isascii():  # _HOST_RE's test without the regex: [a-z0-9_-] labels joined by dots
        if not host or host.strip(_ASCII_HOST_CHARS) or host[0] == "." or ".." in host:
            return ""  # empty, [IPv6], or characters no host has
    elif not _HOST_RE.fullmatch(host):
        return ""
    return host[4:] if host.startswith("www.") else host


@lru_cache(maxsize=8_192)
def canonical_source(host: str) -> str:
    """Canonical lower-case source name of a bare host (lower-case, no ``www.``).

    Table entries win from the most specific domain up; then the per-country brand regex; an
    unknown host is returned as it is.
    """
    domain = host
    while True:
        name = HOSTS.get(domain)
        if name is not None:
            return name
        dot = domain.find(".")
        if dot < 0:
            break
        domain = domain[dot + 1 :]
    match = _COUNTRY_ENGINE_RE.match(host)
    if match is not None:
        brand = match.group(1) or match.group(2)
        return _BRAND_NAMES.get(brand, brand)
    return host


@lru_cache(maxsize=8_192)
def _category(source: str) -> str:
    """Category of a source name, alias or host-looking query value; '' when none."""
    category = CATEGORIES.get(source)
    if category is not None:
        return category
    if "." in source and _HOST_RE.fullmatch(source):
        return CATEGORIES.get(canonical_source(_strip_www(source)), "")
    return ""


@lru_cache(maxsize=1_024)
def _site_host(host: str) -> str:
    """A configured or page host as compared: lower-case, no port, trailing dot or ``www.``."""
    host = host.strip().lower()
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return _strip_www(host.rstrip("."))


def _is_own(host: str, page_host: str, own_hosts: Collection[str]) -> bool:
    """Whether ``host`` is the page's host, one of ``own_hosts`` or a sub-domain of one."""
    if isinstance(own_hosts, tuple):  # what the pipeline passes: the site's hosts, cached
        exact, parents = _own_hosts(page_host, own_hosts)
    else:
        exact, parents = _own_hosts.__wrapped__(page_host, own_hosts)
    return host in exact or host.endswith(parents)


@lru_cache(maxsize=1_024)
def _own_hosts(
    page_host: str, own_hosts: Collection[str]
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The site's hosts as compared (page host and own hosts), and ``"." + own host`` for each
    own host, whose sub-domains count as the site too."""
    owns = [own for own in map(_site_host, own_hosts) if own]
    return frozenset([_site_host(page_host), *owns]), tuple("." + own for own in owns)


def _query_source(query: Mapping[str, str]) -> str:
    for key in ("utm_source", "source", "ref"):
        value = query.get(key)
        if value:
            value = value.strip()
            if value:
                return value[:_MAX_SOURCE_LEN].lower()
    return ""


def _channel(query: Mapping[str, str], source: str) -> str:
    """GA4 default channel grouping (plus ai_assistants); see the module docstring."""
    if not query:
        return _channel_of(source, "", "")
    if not _CLICK_IDS.isdisjoint(query):
        for key in _SEARCH_CLICK_IDS:
            if query.get(key):
                return "paid_search"
        for key in _SOCIAL_CLICK_IDS:
            if query.get(key):
                return "paid_social"
    medium = query.get("utm_medium") or ""
    campaign = query.get("utm_campaign") or ""
    return _channel_of(
        source,
        medium.strip().lower()[:_MAX_SOURCE_LEN] if medium else "",
        campaign.strip().lower()[:_MAX_SOURCE_LEN] if campaign else "",
    )


@lru_cache(maxsize=8_192)
def _channel_of(source: str, medium: str, campaign: str) -> str:
    """Rules 3-19 of the module docstring (the click-id rules 1-2 are done by the caller)."""
    if source == DIRECT and not medium:
        return DIRECT
    if "cross-network" in campaign:
        return "cross_network"
    category = _category(source)
    shop_campaign = bool(campaign) and _SHOP_CAMPAIGN_RE.search(campaign) is not None
    paid = bool(medium) and _PAID_MEDIUM_RE.match(medium) is not None
    if paid:
        if category == "shopping" or shop_campaign:
            return "paid_shopping"
        if category == "search":
            return "paid_search"
        if category == "social":
            return "paid_social"
        if category == "video":
            return "paid_video"
    if medium in _DISPLAY_MEDIA:
        return "display"
    if paid:
        return "paid_other"
    if category == "ai":
        return "ai_assistants"
    if category == "shopping" or shop_campaign:
        return "organic_shopping"
    if category == "social" or medium in _SOCIAL_MEDIA:
        return "organic_social"
    if category == "video" or "video" in medium:
        return "organic_video"
    if category == "search" or medium == "organic":
        return "organic_search"
    if medium in _REFERRAL_MEDIA:
        return "referral"
    if category == "email" or _EMAIL_RE.search(medium) or _EMAIL_RE.search(source):
        return "email"
    if medium in ("affiliate", "affiliates"):
        return "affiliates"
    if medium == "audio":
        return "audio"
    if source == "sms" or medium == "sms":
        return "sms"
    if (
        medium.endswith("push")
        or "mobile" in medium
        or "notification" in medium
        or source == "firebase"
    ):
        return "mobile_push_notifications"
    return DIRECT if source == DIRECT else "referral"


def attribute(
    query: Mapping[str, str],
    referrer: str | None,
    page_host: str,
    own_hosts: Collection[str] = (),
) -> Attribution:
    """Attribute one event to a source, a GA4 channel and a referrer host.

    ``query`` is the page URL's parsed query (lower-case keys), ``referrer`` the document
    referrer as sent (``None`` or ``''`` when none), ``page_host`` the host of the page URL and
    ``own_hosts`` the site's other hosts (their sub-domains count as the site too). The rules
    are in the module docstring. Never raises for any string input.
    """
    host = _referrer_host(referrer[:_MAX_REFERRER_LEN]) if referrer else ""
    if host and _is_own(host, page_host, own_hosts):
        host = ""
    if not query:
        return _by_host(host)
    source = _query_source(query) or (canonical_source(host) if host else DIRECT)
    return _shared(source, _channel(query, source), host)


@lru_cache(maxsize=8_192)
def _shared(source: str, channel: str, referrer_host: str) -> Attribution:
    """One shared :class:`Attribution` per distinct value (a cache hit costs a fraction of
    building a frozen dataclass)."""
    return Attribution(source=source, channel=channel, referrer_host=referrer_host)


@lru_cache(maxsize=8_192)
def _by_host(host: str) -> Attribution:
    """The attribution of a page URL without a query string: a function of the referrer's
    host alone, so one shared :class:`Attribution` per host."""
    source = canonical_source(host) if host else DIRECT
    return Attribution(source=source, channel=_channel_of(source, "", ""), referrer_host=host)
