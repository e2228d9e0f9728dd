"""Arguments: what each method sends, and the TypeError/ValueError raised at the call for what
the service would refuse (mirrors clients/js/test/validation.test.mjs and ga4.test.mjs)."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from enum import IntEnum
from typing import Any

import pytest

from scripted import ENDPOINT, UUID_V4, Errors, Script
from svc_client import GA4_HELPERS, Client, create_async_client, create_client
from svc_client._ga4 import GA4_EVENTS, GA4_KINDS


@pytest.fixture
def sent() -> Iterator[tuple[Client, Callable[[], list[dict[str, Any]]]]]:
    """A client on a mock transport, and a function that flushes and returns the sent events."""
    script = Script()
    c = create_client(
        api_key="svc_live_testkey",
        project_id="svc_proj_test",
        endpoint=ENDPOINT,
        flush_interval=0,
        transport=script.transport(),
        on_error=Errors(),
    )

    def events() -> list[dict[str, Any]]:
        assert c.flush(5)
        out = script.events
        script.calls.clear()
        return out

    yield c, events
    c.close()


def one(sent: Any, call: Callable[[Client], None]) -> dict[str, Any]:
    c, events = sent
    call(c)
    (ev,) = events()
    return ev


# ----- create_client ----------------------------------------------------------------------------

BASE = {"api_key": "svc_live_k", "project_id": "svc_proj_test", "endpoint": ENDPOINT}


@pytest.mark.parametrize(
    "options,error,pattern",
    [
        ({"api_key": ""}, ValueError, "api_key must be a non-empty string"),
        ({"api_key": None}, TypeError, "api_key must be a non-empty string, got None"),
        ({"api_key": "svc_live_abc\n"}, ValueError, "api_key must be printable ASCII"),
        ({"project_id": "p" * 65}, ValueError, "project_id must be at most 64"),
        ({"endpoint": "analytics.example.com"}, ValueError, "endpoint must be a URL"),
        ({"endpoint": "ftp://x/analytics"}, ValueError, "endpoint must be a URL"),
        ({"max_batch_size": 1001}, ValueError, "max_batch_size must be between 1 and 1000"),
        ({"max_batch_size": 0}, ValueError, "max_batch_size must be between 1 and 1000"),
        ({"max_batch_size": 2.5}, ValueError, "max_batch_size must be a whole number"),
        ({"max_queue_size": 0}, ValueError, "max_queue_size must be at least 1"),
        ({"flush_interval": -1}, ValueError, "flush_interval must be at least 0"),
        ({"timeout": 0}, ValueError, "timeout must be at least"),
        ({"timeout": float("nan")}, ValueError, "timeout must be a finite number"),
        ({"max_retries": "3"}, TypeError, "max_retries must be a finite number"),
        ({"on_error": "log"}, TypeError, "on_error must be callable"),
        ({"session_id": "s" * 129}, ValueError, "session_id must be at most 128"),
    ],
)
def test_create_client_refuses_bad_options(options: dict[str, Any], error: type, pattern: str):
    with pytest.raises(error, match=f"^svc: create_client: {pattern}"):
        create_client(**{**BASE, **options})


def test_transport_and_http_client_are_exclusive() -> None:
    import httpx

    with pytest.raises(TypeError, match="not both"):
        create_client(**BASE, transport=httpx.MockTransport(Script()), http_client=httpx.Client())
    with pytest.raises(TypeError, match=r"http_client must be an httpx\.Client"):
        create_client(**BASE, http_client=httpx.AsyncClient())  # type: ignore[arg-type]


def test_both_clients_take_the_same_options_with_the_same_defaults() -> None:
    from svc_client import AsyncClient, BaseClient, ClientOptions

    options: ClientOptions = {"api_key": "svc_live_k", "project_id": "svc_proj_test"}
    options["endpoint"] = ENDPOINT
    sync, async_ = create_client(**options), create_async_client(**options)
    try:
        assert isinstance(async_, AsyncClient)
        for name in ClientOptions.__annotations__:
            if name not in ("api_key", "project_id", "endpoint"):
                assert getattr(sync, f"_{name}") == getattr(async_, f"_{name}"), name
        assert (sync._flush_interval, sync._max_batch_size, sync._max_queue_size) == (
            2.0,
            100,
            10_000,
        )
        assert (sync._timeout, sync._max_retries) == (10.0, 5)
        assert (sync._retry_base_delay, sync._retry_max_delay) == (0.5, 30.0)
        # every option of ClientOptions is a parameter of BaseClient, and no other but the lock
        params = set(inspect.signature(BaseClient.__init__).parameters) - {"self", "lock"}
        assert params == set(ClientOptions.__annotations__)
    finally:
        sync.close()
    with pytest.raises(TypeError, match="unexpected keyword argument 'tenant'"):
        create_client(**BASE, tenant="acme")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="api_key"):
        create_async_client(project_id="svc_proj_test", endpoint=ENDPOINT)  # type: ignore[call-arg]


# ----- track ------------------------------------------------------------------------------------

TRACK_ERRORS: list[tuple[str, Callable[[Client], None], type, str]] = [
    ("an empty name", lambda c: c.track(""), ValueError, "event name must be a non-empty string"),
    ("a blank name", lambda c: c.track("   "), ValueError, "event name must not be blank"),
    (
        "a name over 200",
        lambda c: c.track("x" * 201),
        ValueError,
        "at most 200 characters, got 201",
    ),
    ("a name that is not a string", lambda c: c.track(42), TypeError, "got 42"),  # type: ignore[arg-type]
    (
        "properties as a list",
        lambda c: c.track("e", [1]),
        TypeError,
        "properties must be a mapping",
    ),  # type: ignore[arg-type]
    ("properties as a string", lambda c: c.track("e", "plan=pro"), TypeError, "must be a mapping"),  # type: ignore[arg-type]
    (
        "51 properties",
        lambda c: c.track("e", {f"k{i}": i for i in range(51)}),
        ValueError,
        "at most 50 keys",
    ),
    (
        "a nested dict",
        lambda c: c.track("e", {"user": {"id": 1}}),  # type: ignore[dict-item]
        TypeError,
        "properties.user must be a string, number, boolean or None, got a dict",
    ),
    (
        "a list that is not items",
        lambda c: c.track("e", {"tags": ["a"]}),
        TypeError,
        "properties.tags",
    ),  # type: ignore[dict-item]
    (
        "NaN",
        lambda c: c.track("e", {"v": float("nan")}),
        ValueError,
        "properties.v must be a finite",
    ),
    ("infinity", lambda c: c.track("e", {"v": float("inf")}), ValueError, "finite number"),
    ("a datetime", lambda c: c.track("e", {"at": datetime.now()}), TypeError, "got a datetime"),  # type: ignore[dict-item]
    ("a set", lambda c: c.track("e", {"s": {1}}), TypeError, "properties.s must be"),  # type: ignore[dict-item]
    ("bytes", lambda c: c.track("e", {"b": b"x"}), TypeError, "properties.b must be"),  # type: ignore[dict-item]
    ("a value over 2048", lambda c: c.track("e", {"s": "x" * 2049}), ValueError, "at most 2048"),
    (
        "a key over 200",
        lambda c: c.track("e", {"k" * 201: 1}),
        ValueError,
        "property names must be 1-200",
    ),
    ("an empty key", lambda c: c.track("e", {"": 1}), ValueError, "property names must be 1-200"),
    (
        "a key that is not a string",
        lambda c: c.track("e", {1: 1}),
        TypeError,
        "property names must be strings",
    ),  # type: ignore[dict-item]
    (
        "nested items",
        lambda c: c.track("e", {"items": [{"item_id": "a", "tags": ["x"]}]}),  # type: ignore[list-item]
        TypeError,
        r"items\[0\]\.tags must be",
    ),
    (
        "items that are not dicts",
        lambda c: c.track("e", {"items": ["sku"]}),
        TypeError,
        r"items\[0\] must be a mapping",
    ),  # type: ignore[list-item]
    (
        "201 items",
        lambda c: c.track("e", {"items": [{"item_id": "a"}] * 201}),
        ValueError,
        "at most 200 items",
    ),
    (
        "a negative price",
        lambda c: c.track("e", {"items": [{"price": -1}]}),
        ValueError,
        r"price must not be negative",
    ),
    (
        "a url neither URL nor path",
        lambda c: c.track("e", url="pricing"),
        ValueError,
        "url must be a full URL",
    ),
    (
        "a url over 2048",
        lambda c: c.track("e", url="/" + "x" * 2048),
        ValueError,
        "url must be at most 2048",
    ),
    (
        "a timestamp in seconds",
        lambda c: c.track("e", timestamp=1_700_000_000),
        ValueError,
        "looks like seconds",
    ),
    (
        "a timestamp of a wrong type",
        lambda c: c.track("e", timestamp="now"),
        TypeError,
        "timestamp must be a datetime",
    ),  # type: ignore[arg-type]
    (
        "a session_id over 128",
        lambda c: c.track("e", session_id="s" * 129),
        ValueError,
        "session_id must be at most 128",
    ),
    (
        "an empty event_id",
        lambda c: c.track("e", event_id=""),
        ValueError,
        "event_id must be a non-empty string",
    ),
    (
        "an ip that is not an address",
        lambda c: c.track("e", ip="localhost"),
        ValueError,
        "ip must be an IPv4 or IPv6",
    ),
]


@pytest.mark.parametrize("what,call,error,pattern", TRACK_ERRORS, ids=[t[0] for t in TRACK_ERRORS])
def test_track_raises_at_the_call(sent: Any, what: str, call: Any, error: type, pattern: str):
    c, events = sent
    with pytest.raises(error, match=f"^svc: track: .*{pattern}"):
        call(c)
    assert c.stats().queued == 0
    assert events() == []


def test_track_accepts_flat_values_items_and_decimal(sent: Any) -> None:
    c, events = sent

    class Level(IntEnum):
        GOLD = 3

    c.track("e", {f"k{i}": i for i in range(50)})
    c.track(
        "e",
        {
            "s": "x",
            "n": 1.5,
            "b": False,
            "z": None,
            "d": Decimal("9.99"),
            "lvl": Level.GOLD,
            "items": [{"item_id": "a", "price": 1}],
        },
    )
    c.track("e", {})
    c.track("e", None)
    a, b, empty, none = events()
    assert len(a["properties"]) == 50
    assert b["properties"] == {
        "s": "x",
        "n": 1.5,
        "b": False,
        "z": None,
        "d": 9.99,
        "lvl": 3,
        "items": [{"item_id": "a", "price": 1}],
    }
    assert "properties" not in empty and "properties" not in none


def test_later_changes_to_the_properties_do_not_change_the_event(sent: Any) -> None:
    c, events = sent
    props = {"plan": "pro"}
    c.track("e", props)
    props["plan"] = "free"
    assert events()[0]["properties"] == {"plan": "pro"}


def test_context_keywords(sent: Any) -> None:
    c, events = sent
    at = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    c.track("a")
    c.track(
        "b",
        {"x": 1},
        url="https://shop.example/cart",
        referrer="https://google.com/",
        session_id="s-42",
        user_agent="Mozilla/5.0 (X11; Linux x86_64)",
        ip="203.0.113.9",
        timestamp=at,
        event_id="order-1001",
    )
    c.track("c", user_agent="u" * 2000, referrer="https://r.example/" + "r" * 3000)
    c.track("d", user_agent=None, referrer="", ip="", session_id="")
    a, b, cc, d = events()
    assert list(a) == ["event", "url", "projectId", "ts", "eventId"]
    assert a["url"] == "/" and re.match(UUID_V4, a["eventId"]) and isinstance(a["ts"], int)
    assert b == {
        "event": "b",
        "url": "https://shop.example/cart",
        "sessionId": "s-42",
        "projectId": "svc_proj_test",
        "properties": {"x": 1},
        "referrer": "https://google.com/",
        "ts": int(at.timestamp() * 1000),
        "eventId": "order-1001",
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64)",
        "ip": "203.0.113.9",
    }
    assert len(cc["userAgent"]) == 1024 and len(cc["referrer"]) == 2048
    assert list(d) == ["event", "url", "projectId", "ts", "eventId"], "None and '' are left out"


def test_the_client_session_id_is_the_default() -> None:
    script = Script()
    c = create_client(**BASE, session_id="cs", flush_interval=0, transport=script.transport())
    c.track("a")
    c.track("b", session_id="own")
    c.track("c", session_id=None)
    c.close()
    assert [e["sessionId"] for e in script.events] == ["cs", "own", "cs"]


def test_items_the_service_would_refuse_as_too_large_raise(sent: Any) -> None:
    c, _ = sent
    items = [{"item_id": f"sku{i}", "name": "x" * 200} for i in range(150)]
    with pytest.raises(ValueError, match="items must be at most 32768 characters once encoded"):
        c.track("e", {"items": items})
    with pytest.raises(ValueError, match="at most 32768"):
        c.purchase("T", 1, "EUR", items)
    c.track("e", {"items": items[:100]})  # 21,000 characters: fine


# ----- page_view, purchase, capture_exception -------------------------------------------------


def test_page_view(sent: Any) -> None:
    c, events = sent
    with pytest.raises(TypeError, match="url is required"):
        c.page_view(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most 2048"):
        c.page_view("/" + "p" * 2048)
    with pytest.raises(TypeError, match="multiple values for argument 'url'"):
        c.page_view("/a", url="/b")  # type: ignore[call-arg]
    c.page_view("/pricing")
    c.page_view("https://acme.test/", referrer="https://news.example/")
    a, b = events()
    assert a["event"] == "page_view" and a["url"] == "/pricing" and "referrer" not in a
    assert "properties" not in a
    assert b["referrer"] == "https://news.example/"


PURCHASE_ERRORS: list[tuple[str, Callable[[Client], None], type, str]] = [
    (
        "an empty transaction id",
        lambda c: c.purchase("", 1, "EUR", []),
        ValueError,
        "transaction_id",
    ),
    (
        "a negative value",
        lambda c: c.purchase("T", -1, "EUR", []),
        ValueError,
        "value must not be negative",
    ),
    (
        "a NaN value",
        lambda c: c.purchase("T", float("nan"), "EUR", []),
        ValueError,
        "value must be a finite",
    ),
    ("an infinite value", lambda c: c.purchase("T", float("inf"), "EUR", []), ValueError, "finite"),
    (
        "a bool value",
        lambda c: c.purchase("T", True, "EUR", []),
        TypeError,
        "value must be a finite",
    ),
    ("a bad currency", lambda c: c.purchase("T", 1, "euro", []), ValueError, "ISO 4217"),
    (
        "items not a list",
        lambda c: c.purchase("T", 1, "EUR", {}),
        TypeError,
        "items must be a list",
    ),  # type: ignore[arg-type]
    (
        "an item without id or name",
        lambda c: c.purchase("T", 1, "EUR", [{"price": 1}]),
        ValueError,
        "needs an item_id or an item_name",
    ),
    (
        "a negative price",
        lambda c: c.purchase("T", 1, "EUR", [{"item_id": "a", "price": -0.01}]),
        ValueError,
        r"items\[0\]\.price must not be negative",
    ),
    (
        "a negative quantity",
        lambda c: c.purchase("T", 1, "EUR", [{"item_id": "a", "quantity": -1}]),
        ValueError,
        r"items\[0\]\.quantity must not be negative",
    ),
    (
        "a fractional quantity",
        lambda c: c.purchase("T", 1, "EUR", [{"item_id": "a", "quantity": 0.5}]),
        ValueError,
        "quantity must be a whole number",
    ),
    ("a negative tax", lambda c: c.purchase("T", 1, "EUR", [], tax=-1), ValueError, "tax must not"),
]


@pytest.mark.parametrize(
    "what,call,error,pattern", PURCHASE_ERRORS, ids=[t[0] for t in PURCHASE_ERRORS]
)
def test_purchase_raises_at_the_call(sent: Any, what: str, call: Any, error: type, pattern: str):
    c, _ = sent
    with pytest.raises(error, match=f"^svc: purchase: .*{pattern}"):
        call(c)
    assert c.stats().queued == 0


def test_purchase_sends_ga4_purchase(sent: Any) -> None:
    ev = one(
        sent,
        lambda c: c.purchase(
            "T-42",
            Decimal("59.90"),
            "eur",
            [{"item_id": "sku1", "item_name": "Shirt", "price": 19.95, "quantity": 3}],
            coupon="SPRING",
            shipping=4.9,
            tax=9.56,
            affiliation="Web",
        ),
    )
    assert ev["event"] == "purchase"
    assert ev["properties"] == {
        "transaction_id": "T-42",
        "value": 59.9,
        "currency": "EUR",
        "coupon": "SPRING",
        "shipping": 4.9,
        "tax": 9.56,
        "affiliation": "Web",
        "items": [{"item_id": "sku1", "item_name": "Shirt", "price": 19.95, "quantity": 3}],
    }
    assert list(ev["properties"])[-1] == "items"


def test_capture_exception_sends_description_fatal_and_the_traceback(sent: Any) -> None:
    c, events = sent

    def fail() -> None:
        raise KeyError("user_id")

    try:
        fail()
    except KeyError as exc:
        c.capture_exception(exc)
        c.capture_exception(fatal=True)  # the exception being handled
    c.capture_exception(RuntimeError())  # never raised: no traceback frames
    c.capture_exception("plain message")
    a, b, bare, text = events()
    assert a["event"] == "exception"
    props = a["properties"]
    assert list(props) == ["description", "fatal", "stack"]
    assert props["description"] == "KeyError: 'user_id'" and props["fatal"] is False
    assert props["stack"].startswith("Traceback (most recent call last):")
    assert "in fail" in props["stack"] and props["stack"].endswith("KeyError: 'user_id'")
    assert b["properties"]["fatal"] is True and b["properties"]["stack"] == props["stack"]
    assert bare["properties"] == {
        "description": "RuntimeError",
        "fatal": False,
        "stack": "RuntimeError",
    }
    assert text["properties"] == {"description": "plain message", "fatal": False}


def test_capture_exception_keeps_the_end_of_a_long_traceback(sent: Any) -> None:
    c, events = sent

    def deep(n: int) -> None:
        if n == 0:
            raise ValueError("x" * 1500)
        deep(n - 1)

    try:
        deep(60)
    except ValueError as exc:
        c.capture_exception(exc)
    (ev,) = events()
    props = ev["properties"]
    assert len(props["description"]) == 1000
    assert len(props["stack"]) == 2048
    assert props["stack"].endswith("ValueError: " + "x" * 1500)


def test_capture_exception_argument_errors(sent: Any) -> None:
    c, _ = sent
    with pytest.raises(TypeError, match="fatal must be a bool"):
        c.capture_exception(ValueError("x"), fatal="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no exception given and none is being handled"):
        c.capture_exception()


# ----- GA4 helpers ------------------------------------------------------------------------------

ITEMS = [
    {
        "item_id": "SKU_1",
        "item_name": "Shirt",
        "price": 10,
        "quantity": 2,
        "item_category": "Apparel",
    }
]

# [helper, args, kwargs, GA4 event name, properties sent] (as clients/js/test/ga4.test.mjs)
GA4_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], str, dict[str, Any] | None]] = [
    ("login", ("google",), {}, "login", {"method": "google"}),
    ("login", (), {}, "login", None),
    ("sign_up", (), {"method": "email"}, "sign_up", {"method": "email"}),
    ("search", ("t-shirts",), {}, "search", {"search_term": "t-shirts"}),
    (
        "view_item",
        (ITEMS,),
        {"currency": "EUR", "value": 20},
        "view_item",
        {"currency": "EUR", "value": 20, "items": ITEMS},
    ),
    (
        "view_item_list",
        (ITEMS,),
        {"item_list_id": "related", "item_list_name": "Related"},
        "view_item_list",
        {"item_list_id": "related", "item_list_name": "Related", "items": ITEMS},
    ),
    (
        "select_item",
        (ITEMS,),
        {"item_list_id": "related"},
        "select_item",
        {"item_list_id": "related", "items": ITEMS},
    ),
    (
        "add_to_cart",
        (ITEMS,),
        {"currency": "EUR", "value": 20},
        "add_to_cart",
        {"currency": "EUR", "value": 20, "items": ITEMS},
    ),
    (
        "remove_from_cart",
        (ITEMS,),
        {"currency": "EUR", "value": 10},
        "remove_from_cart",
        {"currency": "EUR", "value": 10, "items": ITEMS},
    ),
    ("add_to_wishlist", (ITEMS,), {}, "add_to_wishlist", {"items": ITEMS}),
    (
        "begin_checkout",
        (ITEMS,),
        {"currency": "EUR", "value": 20, "coupon": "X"},
        "begin_checkout",
        {"currency": "EUR", "value": 20, "coupon": "X", "items": ITEMS},
    ),
    (
        "add_shipping_info",
        (ITEMS,),
        {"currency": "EUR", "value": 20, "shipping_tier": "Ground"},
        "add_shipping_info",
        {"currency": "EUR", "value": 20, "shipping_tier": "Ground", "items": ITEMS},
    ),
    (
        "add_payment_info",
        (ITEMS,),
        {"currency": "EUR", "value": 20, "payment_type": "Credit Card"},
        "add_payment_info",
        {"currency": "EUR", "value": 20, "payment_type": "Credit Card", "items": ITEMS},
    ),
    (
        "refund",
        ("T1",),
        {"currency": "EUR", "value": 20},
        "refund",
        {"transaction_id": "T1", "currency": "EUR", "value": 20},
    ),
    (
        "share",
        (),
        {"method": "Twitter", "content_type": "image", "item_id": "C_12345"},
        "share",
        {"method": "Twitter", "content_type": "image", "item_id": "C_12345"},
    ),
    (
        "generate_lead",
        (),
        {"currency": "USD", "value": 99, "lead_source": "Trade show"},
        "generate_lead",
        {"currency": "USD", "value": 99, "lead_source": "Trade show"},
    ),
    (
        "select_content",
        (),
        {"content_type": "product", "content_id": "C_12345"},
        "select_content",
        {"content_type": "product", "content_id": "C_12345"},
    ),
    (
        "view_promotion",
        (),
        {
            "creative_name": "Summer Banner",
            "creative_slot": "featured_app_1",
            "promotion_id": "P_12345",
            "promotion_name": "Summer Sale",
            "items": ITEMS,
        },
        "view_promotion",
        {
            "creative_name": "Summer Banner",
            "creative_slot": "featured_app_1",
            "promotion_id": "P_12345",
            "promotion_name": "Summer Sale",
            "items": ITEMS,
        },
    ),
    ("tutorial_begin", (), {}, "tutorial_begin", None),
    ("tutorial_complete", (), {}, "tutorial_complete", None),
    (
        "level_up",
        (),
        {"level": 5, "character": "Player 1"},
        "level_up",
        {"level": 5, "character": "Player 1"},
    ),
    (
        "post_score",
        (10000,),
        {"level": 5, "character": "Player 1"},
        "post_score",
        {"score": 10000, "level": 5, "character": "Player 1"},
    ),
    (
        "earn_virtual_currency",
        (),
        {"virtual_currency_name": "Gems", "value": 5},
        "earn_virtual_currency",
        {"virtual_currency_name": "Gems", "value": 5},
    ),
    (
        "spend_virtual_currency",
        (5, "Gems"),
        {"item_name": "Starter Boost"},
        "spend_virtual_currency",
        {"value": 5, "virtual_currency_name": "Gems", "item_name": "Starter Boost"},
    ),
    ("unlock_achievement", ("A_12345",), {}, "unlock_achievement", {"achievement_id": "A_12345"}),
    ("join_group", ("G_12345",), {}, "join_group", {"group_id": "G_12345"}),
]


@pytest.mark.parametrize(
    "helper,args,kwargs,event,properties",
    GA4_CALLS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(GA4_CALLS)],
)
def test_ga4_helpers_send_ga4_events(sent: Any, helper, args, kwargs, event, properties) -> None:
    ev = one(sent, lambda c: getattr(c, helper)(*args, **kwargs))
    assert ev["event"] == event
    assert ev.get("properties") == properties


def test_the_calls_above_cover_every_helper() -> None:
    assert {name for _, _, _, name, _ in GA4_CALLS} == set(GA4_HELPERS.values())
    for name in GA4_HELPERS:
        assert callable(getattr(Client, name))


def test_each_helper_agrees_with_the_tables() -> None:
    # A helper is its signature (the public API) and one line; the tables decide the rest.
    assert set(GA4_EVENTS) == set(GA4_HELPERS)
    for name, spec in GA4_EVENTS.items():
        params = inspect.signature(getattr(Client, name)).parameters
        ga4 = [p for p in params.values() if p.name not in ("self", "extra", "context")]
        names = {p.name for p in ga4}
        assert names <= set(GA4_KINDS), name
        required = tuple(p.name for p in ga4 if p.default is inspect.Parameter.empty)
        assert required == spec.required, name
        assert spec.money == ({"currency", "value"} <= names), name
        assert params["extra"].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params["extra"].default is None, name
        assert params["context"].kind is inspect.Parameter.VAR_KEYWORD, name


def test_parameters_go_in_signature_order_items_last_then_extra(sent: Any) -> None:
    c, events = sent
    c.add_to_cart(ITEMS, value=1, currency="EUR", extra={"tenant": "acme"})
    c.refund("T1", items=ITEMS, tax=1, extra={"reason": "late"})
    cart, refund = events()
    assert list(cart["properties"]) == ["currency", "value", "items", "tenant"]
    assert list(refund["properties"]) == ["transaction_id", "tax", "items", "reason"]


def test_helpers_take_context_and_extra_parameters(sent: Any) -> None:
    c, events = sent
    c.login(
        "sso", extra={"tenant": "acme"}, session_id="s1", url="/login", user_agent="UA", ip="::1"
    )
    c.tutorial_begin(url="/onboarding")
    c.add_to_cart(ITEMS, currency="eur", value=1)
    a, b, cart = events()
    assert a["properties"] == {"method": "sso", "tenant": "acme"}
    assert (a["sessionId"], a["url"], a["userAgent"], a["ip"]) == ("s1", "/login", "UA", "::1")
    assert b["url"] == "/onboarding"
    assert cart["properties"]["currency"] == "EUR"


GA4_ERRORS: list[tuple[str, Callable[[Client], None], type, str]] = [
    (
        "search without search_term",
        lambda c: c.search(None),
        TypeError,
        "search: search_term is required",
    ),  # type: ignore[arg-type]
    (
        "search with an empty term",
        lambda c: c.search(""),
        ValueError,
        "search_term must be a non-empty string",
    ),
    (
        "view_item without items",
        lambda c: c.view_item(None, currency="EUR", value=1),
        TypeError,
        "items is required",
    ),  # type: ignore[arg-type]
    (
        "add_to_cart with items not a list",
        lambda c: c.add_to_cart({}),
        TypeError,
        "items must be a list",
    ),  # type: ignore[arg-type]
    (
        "add_to_cart with value but no currency",
        lambda c: c.add_to_cart(ITEMS, value=5),
        ValueError,
        "currency is required when value is set",
    ),
    (
        "add_to_cart with a negative price",
        lambda c: c.add_to_cart([{"item_id": "a", "price": -1}]),
        ValueError,
        r"items\[0\]\.price must not be negative",
    ),
    (
        "add_to_cart with a fractional quantity",
        lambda c: c.add_to_cart([{"item_id": "a", "quantity": 0.5}]),
        ValueError,
        "quantity must be a whole number",
    ),
    (
        "add_to_cart with an item without id or name",
        lambda c: c.add_to_cart([{"price": 1}]),
        ValueError,
        "needs an item_id or an item_name",
    ),
    (
        "begin_checkout with a NaN value",
        lambda c: c.begin_checkout(ITEMS, currency="EUR", value=float("nan")),
        ValueError,
        "value must be a finite number",
    ),
    (
        "generate_lead with a bad currency",
        lambda c: c.generate_lead(currency="euro", value=1),
        ValueError,
        "three-letter ISO 4217",
    ),
    (
        "refund without transaction_id",
        lambda c: c.refund(None, currency="EUR", value=1),
        TypeError,
        "transaction_id is required",
    ),  # type: ignore[arg-type]
    (
        "post_score with an infinite score",
        lambda c: c.post_score(float("inf")),
        ValueError,
        "score must be a finite number",
    ),
    (
        "spend_virtual_currency without a name",
        lambda c: c.spend_virtual_currency(1, None),
        TypeError,
        "virtual_currency_name is required",
    ),  # type: ignore[arg-type]
    (
        "unlock_achievement with an empty id",
        lambda c: c.unlock_achievement(""),
        ValueError,
        "achievement_id must be a non-empty string",
    ),
    (
        "login with a method that is not a string",
        lambda c: c.login(1),
        TypeError,
        "method must be a non-empty string",
    ),  # type: ignore[arg-type]
    (
        "level_up with a level that is a string",
        lambda c: c.level_up(level="5"),
        TypeError,
        "level must be a finite number",
    ),  # type: ignore[arg-type]
    (
        "extra that is not a mapping",
        lambda c: c.login(extra=["x"]),
        TypeError,
        "extra must be a mapping",
    ),  # type: ignore[arg-type]
    (
        "a parameter given twice",
        lambda c: c.login("a", extra={"method": "b"}),
        TypeError,
        "method is given twice",
    ),
    (
        "an unknown keyword",
        lambda c: c.login("a", tenant="acme"),
        TypeError,
        "unexpected keyword argument 'tenant'",
    ),  # type: ignore[call-arg]
    (
        "a nested extra value",
        lambda c: c.share(extra={"tags": ["a"]}),
        TypeError,
        "properties.tags must be",
    ),  # type: ignore[dict-item]
]


@pytest.mark.parametrize("what,call,error,pattern", GA4_ERRORS, ids=[t[0] for t in GA4_ERRORS])
def test_ga4_helpers_raise_at_the_call(sent: Any, what: str, call: Any, error: type, pattern: str):
    c, _ = sent
    with pytest.raises(error, match=pattern):
        call(c)
    assert c.stats().queued == 0


def test_the_async_client_has_the_same_methods_and_checks() -> None:
    async def main() -> list[dict[str, Any]]:
        script = Script()
        c = create_async_client(**BASE, flush_interval=0, transport=script.transport())
        with pytest.raises(ValueError, match=r"^svc: track: event name must not be blank"):
            c.track(" ")
        c.track("signup", {"plan": "pro"})
        c.page_view("/pricing")
        c.purchase("T1", 30, "EUR", [{"item_id": "sku1", "price": 10, "quantity": 3}])
        c.capture_exception(ValueError("boom"), fatal=True)
        c.sign_up("email")
        await c.aclose()
        return script.events

    events = asyncio.run(main())
    assert [e["event"] for e in events] == [
        "signup",
        "page_view",
        "purchase",
        "exception",
        "sign_up",
    ]
