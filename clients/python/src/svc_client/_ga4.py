"""The GA4 recommended events, driven by two tables as in the TypeScript client.

- :data:`GA4_EVENTS`: helper -> the GA4 event it sends, the parameters it requires, and whether
  ``currency`` is required when ``value`` is set (``clients/js/src/client.ts``'s
  ``GA4_HELPERS``);
- :data:`GA4_KINDS`: how each parameter GA4 defines is checked; any other parameter (in
  ``extra``) passes as a plain property.

Each helper of :class:`Ga4Helpers` is its typed signature (the public API: what ``help()``, IDEs
and type checkers read) and one line handing its arguments to :meth:`Ga4Helpers._ga4`, which
does the rest from the tables. The event's properties are the helper's parameters in the order
of its signature with ``items`` last (as GA4 lists them), then ``extra``.

A new helper is a row of ``GA4_EVENTS``, its parameters in ``GA4_KINDS`` and its signature
below; the client's tests check that the three agree, and that the TypeScript client has the
same helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, Literal, NamedTuple, TypeAlias, Unpack

from svc_client import _validate as v
from svc_client._json import Json, JsonObject
from svc_client._types import EventContext, Item, PropertyValue

__all__ = ["GA4_EVENTS", "GA4_HELPERS", "GA4_KINDS", "Ga4Event", "Ga4Helpers"]

Kind: TypeAlias = Literal["string", "number", "amount", "currency", "items"]
"""``string``: a non-empty string; ``number``: a finite number; ``amount``: a finite number
>= 0; ``currency``: ISO 4217, sent upper-cased; ``items``: a list of items."""

#: How the helpers check the parameters GA4 defines.
GA4_KINDS: Final[Mapping[str, Kind]] = {
    "method": "string",
    "search_term": "string",
    "currency": "currency",
    "value": "amount",
    "items": "items",
    "item_list_id": "string",
    "item_list_name": "string",
    "coupon": "string",
    "shipping_tier": "string",
    "payment_type": "string",
    "transaction_id": "string",
    "affiliation": "string",
    "shipping": "amount",
    "tax": "amount",
    "content_type": "string",
    "content_id": "string",
    "item_id": "string",
    "item_name": "string",
    "lead_source": "string",
    "creative_name": "string",
    "creative_slot": "string",
    "promotion_id": "string",
    "promotion_name": "string",
    "level": "number",
    "character": "string",
    "score": "number",
    "virtual_currency_name": "string",
    "achievement_id": "string",
    "group_id": "string",
}


class Ga4Event(NamedTuple):
    """A row of :data:`GA4_EVENTS`."""

    #: The GA4 event name.
    event: str
    #: Parameters without which the helper raises ``TypeError``.
    required: tuple[str, ...] = ()
    #: ``currency`` is required when ``value`` is set.
    money: bool = False


_ITEMS = ("items",)

#: Every GA4 helper (Python method name) and what it sends.
GA4_EVENTS: Final[Mapping[str, Ga4Event]] = {
    "login": Ga4Event("login"),
    "sign_up": Ga4Event("sign_up"),
    "search": Ga4Event("search", ("search_term",)),
    "view_item": Ga4Event("view_item", _ITEMS, money=True),
    "view_item_list": Ga4Event("view_item_list", _ITEMS),
    "select_item": Ga4Event("select_item", _ITEMS),
    "add_to_cart": Ga4Event("add_to_cart", _ITEMS, money=True),
    "remove_from_cart": Ga4Event("remove_from_cart", _ITEMS, money=True),
    "add_to_wishlist": Ga4Event("add_to_wishlist", _ITEMS, money=True),
    "begin_checkout": Ga4Event("begin_checkout", _ITEMS, money=True),
    "add_shipping_info": Ga4Event("add_shipping_info", _ITEMS, money=True),
    "add_payment_info": Ga4Event("add_payment_info", _ITEMS, money=True),
    "refund": Ga4Event("refund", ("transaction_id",), money=True),
    "share": Ga4Event("share"),
    "generate_lead": Ga4Event("generate_lead", money=True),
    "select_content": Ga4Event("select_content"),
    "view_promotion": Ga4Event("view_promotion"),
    "tutorial_begin": Ga4Event("tutorial_begin"),
    "tutorial_complete": Ga4Event("tutorial_complete"),
    "level_up": Ga4Event("level_up"),
    "post_score": Ga4Event("post_score", ("score",)),
    "earn_virtual_currency": Ga4Event("earn_virtual_currency"),
    "spend_virtual_currency": Ga4Event(
        "spend_virtual_currency", ("value", "virtual_currency_name")
    ),
    "unlock_achievement": Ga4Event("unlock_achievement", ("achievement_id",)),
    "join_group": Ga4Event("join_group"),
}

#: Every GA4 helper: Python method -> GA4 event name.
GA4_HELPERS: Final[Mapping[str, str]] = {m: e.event for m, e in GA4_EVENTS.items()}


def _items(where: str, key: str, val: object) -> Json:
    if not isinstance(val, list | tuple):
        v.type_error(where, f"items must be a list, got {v.describe(val)}")
    return val  # type: ignore[return-value]  # checked by check_properties(strict_items=True)


_CHECKS: Final[Mapping[Kind, Callable[[str, str, object], Json]]] = {
    "string": lambda where, key, val: v.check_string(where, key, val),
    "number": lambda where, key, val: v.check_number(where, key, val),
    "amount": lambda where, key, val: v.check_number(where, key, val, min0=True),
    "currency": lambda where, key, val: v.check_currency(where, val),
    "items": _items,
}


def ga4_params(
    where: str,
    named: Mapping[str, object],
    extra: Mapping[str, object] | None,
    spec: Ga4Event,
) -> JsonObject | None:
    """The properties of a GA4 event: the helper's parameters (``None`` means "not given"),
    ``items`` last, then ``extra``; each GA4 parameter checked by its kind."""
    params: dict[str, object] = {
        k: val for k, val in named.items() if val is not None and k != "items"
    }
    if named.get("items") is not None:
        params["items"] = named["items"]
    if extra is not None:
        if not isinstance(extra, Mapping):
            v.type_error(where, f"extra must be a mapping (a dict), got {v.describe(extra)}")
        for key, val in extra.items():
            if key in params:
                v.type_error(where, f"{key} is given twice: as an argument and in extra")
            params[key] = val
    out: dict[str, object] = {}
    for key, val in params.items():
        kind = GA4_KINDS.get(key) if isinstance(key, str) else None
        out[key] = val if kind is None else _CHECKS[kind](where, key, val)
    for key in spec.required:
        if key not in out:
            v.type_error(where, f"{key} is required")
    if spec.money and "value" in out and "currency" not in out:
        v.value_error(where, "currency is required when value is set")
    return v.check_properties(where, out, strict_items=True)


_CONTEXT_KEYS: Final = frozenset(EventContext.__annotations__)
#: What a helper's ``locals()`` hold besides its GA4 parameters.
_NOT_PARAMETERS: Final = frozenset({"self", "extra", "context"})


def _context(where: str, context: Mapping[str, Any]) -> EventContext:
    """The context keywords of a GA4 helper; an unknown keyword is a TypeError, as in Python."""
    for key in context:
        if key not in _CONTEXT_KEYS:
            v.type_error(
                where,
                f"unexpected keyword argument {key!r} (custom parameters go in extra=...; "
                f"context keywords are {', '.join(sorted(_CONTEXT_KEYS))})",
            )
    return context  # type: ignore[return-value]


Extra: TypeAlias = Mapping[str, PropertyValue] | None
"""More custom parameters of a GA4 event."""
Money: TypeAlias = float | Decimal


class Ga4Helpers:
    """The GA4 recommended events (parameter names as GA4 spells them). Every helper takes
    ``extra`` (more custom parameters) and the context keywords of ``track()``: ``url``,
    ``referrer``, ``session_id``, ``user_agent``, ``ip``, ``timestamp``, ``event_id``."""

    def _enqueue(
        self,
        where: str,
        name: str,
        properties: JsonObject | None,
        **context: Unpack[EventContext],
    ) -> None:
        raise NotImplementedError

    def _ga4(self, helper: str, args: Mapping[str, Any]) -> None:
        """Sends the event of ``helper`` (a key of :data:`GA4_EVENTS`) from its ``locals()``."""
        spec = GA4_EVENTS[helper]
        context = _context(helper, args["context"])
        named = {k: val for k, val in args.items() if k not in _NOT_PARAMETERS}
        self._enqueue(helper, spec.event, ga4_params(helper, named, args["extra"], spec), **context)

    def login(
        self, method: str | None = None, *, extra: Extra = None, **context: Unpack[EventContext]
    ) -> None:
        """GA4 ``login``."""
        self._ga4("login", locals())

    def sign_up(
        self, method: str | None = None, *, extra: Extra = None, **context: Unpack[EventContext]
    ) -> None:
        """GA4 ``sign_up``."""
        self._ga4("sign_up", locals())

    def search(
        self, search_term: str, *, extra: Extra = None, **context: Unpack[EventContext]
    ) -> None:
        """GA4 ``search``."""
        self._ga4("search", locals())

    def view_item(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``view_item`` (``currency`` is required with ``value``)."""
        self._ga4("view_item", locals())

    def view_item_list(
        self,
        items: Sequence[Item],
        *,
        item_list_id: str | None = None,
        item_list_name: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``view_item_list``."""
        self._ga4("view_item_list", locals())

    def select_item(
        self,
        items: Sequence[Item],
        *,
        item_list_id: str | None = None,
        item_list_name: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``select_item``."""
        self._ga4("select_item", locals())

    def add_to_cart(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``add_to_cart`` (``currency`` is required with ``value``)."""
        self._ga4("add_to_cart", locals())

    def remove_from_cart(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``remove_from_cart`` (``currency`` is required with ``value``)."""
        self._ga4("remove_from_cart", locals())

    def add_to_wishlist(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``add_to_wishlist`` (``currency`` is required with ``value``)."""
        self._ga4("add_to_wishlist", locals())

    def begin_checkout(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        coupon: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``begin_checkout`` (``currency`` is required with ``value``)."""
        self._ga4("begin_checkout", locals())

    def add_shipping_info(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        coupon: str | None = None,
        shipping_tier: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``add_shipping_info`` (``currency`` is required with ``value``)."""
        self._ga4("add_shipping_info", locals())

    def add_payment_info(
        self,
        items: Sequence[Item],
        *,
        currency: str | None = None,
        value: Money | None = None,
        coupon: str | None = None,
        payment_type: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``add_payment_info`` (``currency`` is required with ``value``)."""
        self._ga4("add_payment_info", locals())

    def refund(
        self,
        transaction_id: str,
        *,
        currency: str | None = None,
        value: Money | None = None,
        coupon: str | None = None,
        shipping: Money | None = None,
        tax: Money | None = None,
        affiliation: str | None = None,
        items: Sequence[Item] | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``refund`` (``currency`` is required with ``value``; ``items`` for a partial
        refund)."""
        self._ga4("refund", locals())

    def share(
        self,
        *,
        method: str | None = None,
        content_type: str | None = None,
        item_id: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``share``."""
        self._ga4("share", locals())

    def generate_lead(
        self,
        *,
        currency: str | None = None,
        value: Money | None = None,
        lead_source: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``generate_lead`` (``currency`` is required with ``value``)."""
        self._ga4("generate_lead", locals())

    def select_content(
        self,
        *,
        content_type: str | None = None,
        content_id: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``select_content``."""
        self._ga4("select_content", locals())

    def view_promotion(
        self,
        *,
        creative_name: str | None = None,
        creative_slot: str | None = None,
        promotion_id: str | None = None,
        promotion_name: str | None = None,
        items: Sequence[Item] | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``view_promotion``."""
        self._ga4("view_promotion", locals())

    def tutorial_begin(self, *, extra: Extra = None, **context: Unpack[EventContext]) -> None:
        """GA4 ``tutorial_begin``."""
        self._ga4("tutorial_begin", locals())

    def tutorial_complete(self, *, extra: Extra = None, **context: Unpack[EventContext]) -> None:
        """GA4 ``tutorial_complete``."""
        self._ga4("tutorial_complete", locals())

    def level_up(
        self,
        *,
        level: int | None = None,
        character: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``level_up``."""
        self._ga4("level_up", locals())

    def post_score(
        self,
        score: float,
        *,
        level: int | None = None,
        character: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``post_score``."""
        self._ga4("post_score", locals())

    def earn_virtual_currency(
        self,
        *,
        virtual_currency_name: str | None = None,
        value: float | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``earn_virtual_currency``."""
        self._ga4("earn_virtual_currency", locals())

    def spend_virtual_currency(
        self,
        value: float,
        virtual_currency_name: str,
        *,
        item_name: str | None = None,
        extra: Extra = None,
        **context: Unpack[EventContext],
    ) -> None:
        """GA4 ``spend_virtual_currency``."""
        self._ga4("spend_virtual_currency", locals())

    def unlock_achievement(
        self, achievement_id: str, *, extra: Extra = None, **context: Unpack[EventContext]
    ) -> None:
        """GA4 ``unlock_achievement``."""
        self._ga4("unlock_achievement", locals())

    def join_group(
        self, group_id: str | None = None, *, extra: Extra = None, **context: Unpack[EventContext]
    ) -> None:
        """GA4 ``join_group``."""
        self._ga4("join_group", locals())
