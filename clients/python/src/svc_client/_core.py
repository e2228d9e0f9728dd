"""What the sync and async clients share: options, events, the queue, and the delivery rules.

Delivery is written once, as a generator (:meth:`BaseClient._delivery`) that yields what it wants
done (``_Post`` a body, ``_Sleep`` a backoff) and is driven by a blocking runner (the sync
client's thread) or by an asyncio runner. Its rules are the TypeScript client's:

- a batch is retried with the same body (so the same ``eventId``\\ s: never counted twice) after
  a network error, a timeout, 429 or 5xx, at most ``max_retries`` times, waiting ``Retry-After``
  when the service sends one, else a random time in
  ``[0, min(retry_max_delay, retry_base_delay * 2**n)]`` (exponential backoff, full jitter);
- a ``Retry-After`` longer than ``retry_max_delay`` (a quota spent until next month) gives the
  batch up at once;
- 413 splits the batch in halves; any other 4xx gives it up; events refused inside an accepted
  batch are reported, never retried;
- every failure goes to ``on_error`` as an :class:`SvcError`; nothing raises after the call.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import random
import re
import sys
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, TypeAlias

import httpx

from svc_client import _validate as v
from svc_client._ga4 import Ga4Helpers
from svc_client._json import JsonObject, dumps, truncate, truncate_start
from svc_client._types import Item, OnError, Properties, Timestamp
from svc_client.errors import RejectedEvent, SvcError

VERSION: Final = "0.1.0"

#: A request body stays under this, below the service's 1 MiB limit.
MAX_BODY_BYTES: Final = 1_000_000
#: The service takes at most 1,000 events a batch.
MAX_BATCH_SIZE: Final = 1000

logger = logging.getLogger("svc_client")


@dataclass(frozen=True, slots=True)
class ClientStats:
    """Counters of a client."""

    #: Events waiting in the queue.
    queued: int
    #: Events in the request under way.
    in_flight: int
    #: Events the service accepted.
    sent: int
    #: Events given up: refused by the service, retries exhausted, or sent after close.
    failed: int
    #: Oldest events dropped because the queue was full.
    dropped: int
    #: Requests retried.
    retries: int


@dataclass(slots=True)
class _Queued:
    seq: int
    id: str
    name: str
    json: str
    bytes: int


@dataclass(frozen=True, slots=True)
class _Post:
    body: bytes
    #: Seconds before the request is abandoned.
    limit: float


@dataclass(frozen=True, slots=True)
class _Sleep:
    delay: float


@dataclass(slots=True)
class _Outcome:
    #: 0 when no HTTP answer came (network error, timeout, abort).
    status: int
    body: Any = None
    #: Seconds, from the Retry-After header.
    retry_after: float | None = None
    error: SvcError | None = None


_Delivery: TypeAlias = Generator[_Post | _Sleep, _Outcome | None, None]


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait, from a Retry-After header (delta-seconds or an HTTP date)."""
    if value is None:
        return None
    s = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return math.ceil(float(s) * 1000) / 1000
    try:
        when = email.utils.parsedate_to_datetime(s)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_info(body: object) -> tuple[str | None, str | None, str | None]:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        e = body["error"]
        code, message, field = e.get("code"), e.get("message"), e.get("field")
        return (
            code if isinstance(code, str) else None,
            message if isinstance(message, str) else None,
            field if isinstance(field, str) else None,
        )
    return None, None, None


def _given(x: object) -> bool:
    """Context often comes from request headers: ``None`` and ``""`` mean "not known"."""
    return x is not None and x != ""


def _option(
    name: str,
    value: object,
    minimum: float,
    maximum: float | None = None,
    integer: bool = False,
) -> float:
    where = "create_client"
    n = v.check_number(where, name, value, integer=integer)
    if n < minimum or (maximum is not None and n > maximum):
        rule = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        v.value_error(where, f"{name} must be {rule}, got {n!r}")
    return n


def _check_http(where: str, transport: object, http_client: object, kind: type) -> None:
    """The ``transport``/``http_client`` options: at most one, the client of the right kind."""
    if transport is not None and http_client is not None:
        v.type_error(where, "pass transport or http_client, not both")
    if http_client is not None and not isinstance(http_client, kind):
        v.type_error(
            where, f"http_client must be an httpx.{kind.__name__}, got {v.describe(http_client)}"
        )


def _post_blocking(
    http: httpx.Client, endpoint: str, headers: Mapping[str, str], post: _Post
) -> _Outcome:
    """One request with a blocking httpx client; never raises."""
    try:
        r = http.post(endpoint, content=post.body, headers=headers, timeout=post.limit)
        content = r.content
    except httpx.TimeoutException as exc:
        return _Outcome(0, error=_timeout_error(post.limit, exc))
    except Exception as exc:
        return _Outcome(0, error=_network_error(exc))
    return _outcome(r.status_code, content, r.headers.get("retry-after"))


def _outcome(status: int, content: bytes, retry_after: str | None) -> _Outcome:
    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = None
    return _Outcome(status, body, parse_retry_after(retry_after))


def _timeout_error(limit: float, exc: BaseException | None = None) -> SvcError:
    return SvcError("timeout", f"svc: request timed out after {limit:g} s", cause=exc)


def _network_error(exc: BaseException) -> SvcError:
    return SvcError("network_error", f"svc: request failed: {exc!r}", cause=exc)


class BaseClient(Ga4Helpers):
    """Options, event building, the queue and the delivery rules. Subclasses schedule."""

    _lock: AbstractContextManager[Any]

    def __init__(
        self,
        *,
        lock: AbstractContextManager[Any],
        api_key: str,
        project_id: str,
        endpoint: str,
        flush_interval: float = 2.0,
        max_batch_size: int = 100,
        max_queue_size: int = 10_000,
        timeout: float = 10.0,
        max_retries: int = 5,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
        on_error: OnError | None = None,
        session_id: str | None = None,
    ) -> None:
        where = "create_client"
        self._api_key = v.check_string(where, "api_key", api_key)
        if not re.fullmatch(r"[\x21-\x7e]+", self._api_key):
            v.value_error(
                where,
                "api_key must be printable ASCII without spaces "
                "(a stray newline from an env file?)",
            )
        self._project_id = v.check_string(where, "project_id", project_id, v.PROJECT_ID_LENGTH)
        self._endpoint = v.check_string(where, "endpoint", endpoint)
        try:
            url = httpx.URL(self._endpoint)
        except (httpx.InvalidURL, TypeError, ValueError):
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            v.value_error(
                where,
                'endpoint must be a URL such as "https://analytics.example.com/analytics", '
                f"got {v.describe(endpoint)}",
            )
        self._flush_interval = _option("flush_interval", flush_interval, 0)
        self._max_batch_size = int(
            _option("max_batch_size", max_batch_size, 1, MAX_BATCH_SIZE, integer=True)
        )
        self._max_queue_size = int(_option("max_queue_size", max_queue_size, 1, integer=True))
        self._timeout = _option("timeout", timeout, 0.001)
        self._max_retries = int(_option("max_retries", max_retries, 0, integer=True))
        self._retry_base_delay = _option("retry_base_delay", retry_base_delay, 0)
        self._retry_max_delay = _option("retry_max_delay", retry_max_delay, 0)
        if on_error is not None and not callable(on_error):
            v.type_error(where, f"on_error must be callable, got {v.describe(on_error)}")
        self._on_error = on_error
        self._session_id = (
            None
            if session_id is None
            else v.check_string(where, "session_id", session_id, v.SESSION_ID_LENGTH)
        )
        self._headers: dict[str, str] = {
            "Authorization": f"Bearer {self._api_key}",
            "Content-Type": "application/json",
            "User-Agent": f"svc-python/{VERSION} python-httpx/{httpx.__version__}",
        }
        self._lock = lock
        self._queue: deque[_Queued] = deque()
        self._inflight: list[_Queued] = []
        self._seq = 0
        self._force_through = 0
        self._closed = False
        self._aborted = False
        #: time.monotonic() by which close() must be done.
        self._deadline: float | None = None
        self._drop_pending = 0
        self._sent = 0
        self._failed = 0
        self._dropped = 0
        self._retries = 0

    # ----- reporting ------------------------------------------------------------------------

    def _report(self, error: SvcError) -> None:
        """Hands a failure to on_error (default: a warning on the ``svc_client`` logger)."""
        try:
            if self._on_error is None:
                logger.warning("%s", error.message)
            else:
                self._on_error(error)
        except Exception:
            # A failing on_error must not break the sender.
            logger.exception("svc: on_error raised")

    def _give_up(self, n: int, error: SvcError) -> None:
        with self._lock:
            self._failed += n
        self._report(error)

    def _take_drop_report(self) -> SvcError | None:
        with self._lock:
            k, self._drop_pending = self._drop_pending, 0
            total = self._dropped
        if not k:
            return None
        return SvcError(
            "queue_overflow",
            f"svc: queue full (max_queue_size {self._max_queue_size}): dropped the {k} oldest "
            f"event(s), {total} in all",
            count=k,
        )

    def stats(self) -> ClientStats:
        """Counters of this client."""
        with self._lock:
            return ClientStats(
                queued=len(self._queue),
                in_flight=len(self._inflight),
                sent=self._sent,
                failed=self._failed,
                dropped=self._dropped,
                retries=self._retries,
            )

    # ----- the queue (callers hold the lock) ------------------------------------------------

    def _oldest_pending(self) -> int:
        oldest = self._seq + 1
        if self._inflight:
            oldest = min(oldest, self._inflight[0].seq)
        if self._queue:
            oldest = min(oldest, self._queue[0].seq)
        return oldest

    def _due(self) -> bool:
        return (
            not self._aborted
            and bool(self._queue)
            and (
                len(self._queue) >= self._max_batch_size
                or self._force_through >= self._queue[0].seq
            )
        )

    def _take(self) -> list[_Queued]:
        """The oldest queued events that fit in one request."""
        size, batch = 12, list[_Queued]()
        while self._queue and len(batch) < self._max_batch_size:
            b = self._queue[0].bytes + 1
            if batch and size + b > MAX_BODY_BYTES:
                break
            size += b
            batch.append(self._queue.popleft())
        return batch

    def _push(self, q: _Queued) -> int:
        """Queues an event; returns how many of the oldest were dropped to make room."""
        self._seq += 1
        q.seq = self._seq
        self._queue.append(q)
        over = len(self._queue) - self._max_queue_size
        if over <= 0:
            return 0
        for _ in range(over):
            self._queue.popleft()
        self._dropped += over
        self._drop_pending += over
        return over

    # ----- delivery ---------------------------------------------------------------------------

    @staticmethod
    def _rejected_of(batch: list[_Queued], body: object) -> tuple[RejectedEvent, ...]:
        """The ``rejected`` list of an answer, by event."""
        rejected: list[RejectedEvent] = []
        entries = body.get("rejected") if isinstance(body, dict) else None
        for r in entries if isinstance(entries, list) else ():
            if not isinstance(r, dict):
                continue
            index = r.get("index")
            if isinstance(index, bool) or not isinstance(index, int):
                continue
            if not 0 <= index < len(batch):
                continue
            q = batch[index]
            code, message, field = _error_info(r)
            rejected.append(
                RejectedEvent(q.id, q.name, code or "invalid_request", message or "", field)
            )
        return tuple(rejected)

    def _accepted(self, batch: list[_Queued], body: object) -> None:
        rejected = self._rejected_of(batch, body)
        with self._lock:
            self._sent += len(batch) - len(rejected)
        if rejected:
            first = rejected[0]
            self._give_up(
                len(rejected),
                SvcError(
                    "events_rejected",
                    f"svc: the service refused {len(rejected)} of {len(batch)} event(s); first: "
                    f'"{first.event}" ({first.code}: {first.message})',
                    status=200,
                    count=len(rejected),
                    rejected=rejected,
                ),
            )

    def _limit(self) -> float:
        if self._deadline is None:
            return self._timeout
        return max(0.001, min(self._timeout, self._deadline - time.monotonic()))

    def _shutdown_error(self, n: int, cause: SvcError | None = None) -> SvcError:
        detail = f": {cause.message}" if cause is not None else ""
        return SvcError(
            "shutdown_timeout",
            f"svc: {n} event(s) not sent before close() timed out{detail}",
            count=n,
            cause=cause,
        )

    def _delivery(self, batch: list[_Queued]) -> _Delivery:
        """Sends one batch until it is accepted or given up."""
        n = len(batch)
        body = ('{"events":[' + ",".join(q.json for q in batch) + "]}").encode()
        tries = 0
        while True:
            if self._aborted:
                self._give_up(n, self._shutdown_error(n))
                return
            r = yield _Post(body, self._limit())
            assert r is not None
            if 200 <= r.status < 300:
                self._accepted(batch, r.body)
                return
            if r.status == 413 and n > 1:
                half = n // 2
                yield from self._delivery(batch[:half])
                yield from self._delivery(batch[half:])
                return
            err = r.error
            if err is None:
                code, message, _ = _error_info(r.body)
                code = code or f"http_{r.status}"
                # A batch none of whose events was valid is answered with the first one's
                # error, and lists every event's error in `rejected`.
                err = SvcError(
                    code,
                    f"svc: {n} event(s) not sent: HTTP {r.status} {code}"
                    + (f": {message}" if message else ""),
                    status=r.status,
                    count=n,
                    rejected=self._rejected_of(batch, r.body),
                )
            retryable = r.status == 0 or r.status == 429 or r.status >= 500
            if self._aborted:
                self._give_up(
                    n, err if err.code == "shutdown_timeout" else self._shutdown_error(n, err)
                )
                return
            if not retryable:
                if err.count != n:
                    err = SvcError(
                        err.code,
                        err.message,
                        status=err.status,
                        count=n,
                        rejected=err.rejected,
                        cause=err.cause,
                    )
                self._give_up(n, err)
                return
            if tries >= self._max_retries:
                self._give_up(
                    n,
                    SvcError(
                        "retries_exhausted",
                        f"svc: gave up on {n} event(s) after {tries + 1} attempts: {err.message}",
                        status=r.status or None,
                        count=n,
                        cause=err,
                    ),
                )
                return
            if r.retry_after is not None:
                if r.retry_after > self._retry_max_delay:
                    self._give_up(
                        n,
                        SvcError(
                            err.code,
                            f"{err.message} (Retry-After {math.ceil(r.retry_after)} s is longer "
                            "than retry_max_delay; not retried)",
                            status=r.status,
                            count=n,
                        ),
                    )
                    return
                delay = r.retry_after
            else:
                delay = random.uniform(
                    0, min(self._retry_max_delay, self._retry_base_delay * 2**tries)
                )
            if self._deadline is not None and time.monotonic() + delay >= self._deadline:
                self._give_up(n, self._shutdown_error(n, err))
                return
            with self._lock:
                self._retries += 1
            yield _Sleep(delay)
            tries += 1

    def _deliver_blocking(
        self,
        batch: list[_Queued],
        post: Callable[[_Post], _Outcome],
        sleep: Callable[[float], None],
    ) -> None:
        gen = self._delivery(batch)
        try:
            action = next(gen)
            while True:
                if isinstance(action, _Post):
                    action = gen.send(post(action))
                else:
                    sleep(action.delay)
                    action = gen.send(None)
        except StopIteration:
            pass

    # ----- events -----------------------------------------------------------------------------

    def _submit(self, q: _Queued) -> None:
        raise NotImplementedError

    def _refuse_closed(self, name: str) -> None:
        self._give_up(
            1,
            SvcError("client_closed", f'svc: "{name}" not sent: the client was closed', count=1),
        )

    def _enqueue(
        self,
        where: str,
        name: str,
        properties: JsonObject | None,
        *,
        url: str | None = None,
        referrer: str | None = None,
        session_id: str | None = None,
        user_agent: str | None = None,
        ip: str | None = None,
        timestamp: Timestamp | None = None,
        event_id: str | None = None,
        page_url: str | None = None,
    ) -> None:
        if page_url is not None:
            page = page_url
        elif url is not None:
            page = v.check_url(where, url)
        else:
            page = "/"
        ref = (
            truncate(v.check_string(where, "referrer", referrer), v.URL_LENGTH)
            if _given(referrer)
            else None
        )
        sid = (
            v.check_string(where, "session_id", session_id, v.SESSION_ID_LENGTH)
            if _given(session_id)
            else self._session_id
        )
        ua = (
            truncate(v.check_string(where, "user_agent", user_agent), v.USER_AGENT_LENGTH)
            if _given(user_agent)
            else None
        )
        addr = v.check_ip(where, ip) if _given(ip) else None
        ts = (
            v.check_timestamp(where, timestamp)
            if timestamp is not None
            else time.time_ns() // 1_000_000
        )
        eid = (
            v.check_string(where, "event_id", event_id, v.EVENT_ID_LENGTH)
            if event_id is not None
            else str(uuid.uuid4())
        )
        # Field order is part of the wire format shared with the TypeScript client.
        ev: JsonObject = {"event": name, "url": page}
        if sid is not None:
            ev["sessionId"] = sid
        ev["projectId"] = self._project_id
        if properties is not None:
            ev["properties"] = properties
        if ref:
            ev["referrer"] = ref
        ev["ts"] = ts
        ev["eventId"] = eid
        if ua is not None:
            ev["userAgent"] = ua
        if addr is not None:
            ev["ip"] = addr
        text = dumps(ev)
        size = len(text.encode())
        if size > MAX_BODY_BYTES - 12:
            v.value_error(
                where, f"the event is {size} bytes once encoded; the limit is {MAX_BODY_BYTES - 12}"
            )
        self._submit(_Queued(0, eid, name, text, size))

    # ----- the public API -----------------------------------------------------------------------

    def track(
        self,
        name: str,
        properties: Properties | None = None,
        *,
        url: str | None = None,
        referrer: str | None = None,
        session_id: str | None = None,
        user_agent: str | None = None,
        ip: str | None = None,
        timestamp: Timestamp | None = None,
        event_id: str | None = None,
    ) -> None:
        """Sends a custom event.

        ``properties``: at most 50 flat values (str, int, float, bool, None); ``items`` may be a
        list of flat dicts. The keywords give the event's context: ``url`` (a full URL or a
        path; default ``"/"``), ``referrer``, ``session_id`` (overrides the client's),
        ``user_agent`` and ``ip`` (the end user's, honoured with a secret key only; ``None`` or
        ``""`` mean "not known"), ``timestamp`` (a ``datetime`` or ms since the epoch; default
        now) and ``event_id`` (an idempotency key; default a random UUID).

        Raises ``TypeError``/``ValueError`` for invalid arguments; never for delivery.
        """
        where = "track"
        n = v.check_name(where, name)
        props = v.check_properties(where, properties)
        self._enqueue(
            where,
            n,
            props,
            url=url,
            referrer=referrer,
            session_id=session_id,
            user_agent=user_agent,
            ip=ip,
            timestamp=timestamp,
            event_id=event_id,
        )

    def page_view(
        self,
        url: str,
        *,
        referrer: str | None = None,
        session_id: str | None = None,
        user_agent: str | None = None,
        ip: str | None = None,
        timestamp: Timestamp | None = None,
        event_id: str | None = None,
    ) -> None:
        """Sends a ``page_view`` of ``url`` (a full URL or a path)."""
        where = "page_view"
        if url is None:
            v.type_error(where, 'url is required, e.g. page_view("/pricing")')
        page = v.check_url(where, url)
        self._enqueue(
            where,
            "page_view",
            None,
            page_url=page,
            referrer=referrer,
            session_id=session_id,
            user_agent=user_agent,
            ip=ip,
            timestamp=timestamp,
            event_id=event_id,
        )

    def purchase(
        self,
        transaction_id: str,
        value: float | Decimal,
        currency: str,
        items: Sequence[Item],
        *,
        coupon: str | None = None,
        shipping: float | Decimal | None = None,
        tax: float | Decimal | None = None,
        affiliation: str | None = None,
        url: str | None = None,
        referrer: str | None = None,
        session_id: str | None = None,
        user_agent: str | None = None,
        ip: str | None = None,
        timestamp: Timestamp | None = None,
        event_id: str | None = None,
    ) -> None:
        """Sends the GA4 ``purchase`` event: ``transaction_id``, ``value`` (>= 0), ``currency``
        (ISO 4217, sent upper-cased), ``items`` (each with an ``item_id`` or ``item_name``;
        ``price`` >= 0, ``quantity`` a whole number >= 0), and the optional GA4 ``coupon``,
        ``shipping``, ``tax`` and ``affiliation``."""
        where = "purchase"
        props: JsonObject = {
            "transaction_id": v.check_string(where, "transaction_id", transaction_id),
            "value": v.check_number(where, "value", value, min0=True),
            "currency": v.check_currency(where, currency),
        }
        checked_items = v.check_items(where, items, True)
        if coupon is not None:
            props["coupon"] = v.check_string(where, "coupon", coupon)
        if shipping is not None:
            props["shipping"] = v.check_number(where, "shipping", shipping, min0=True)
        if tax is not None:
            props["tax"] = v.check_number(where, "tax", tax, min0=True)
        if affiliation is not None:
            props["affiliation"] = v.check_string(where, "affiliation", affiliation)
        props["items"] = checked_items
        self._enqueue(
            where,
            "purchase",
            props,
            url=url,
            referrer=referrer,
            session_id=session_id,
            user_agent=user_agent,
            ip=ip,
            timestamp=timestamp,
            event_id=event_id,
        )

    def capture_exception(
        self,
        exc: BaseException | str | None = None,
        *,
        fatal: bool = False,
        url: str | None = None,
        referrer: str | None = None,
        session_id: str | None = None,
        user_agent: str | None = None,
        ip: str | None = None,
        timestamp: Timestamp | None = None,
        event_id: str | None = None,
    ) -> None:
        """Sends the GA4 ``exception`` event: ``description`` ("TypeName: message", at most
        1,000 characters), ``fatal`` and ``stack``, the formatted traceback (its last 2,048
        characters: a Python traceback ends with the error and the innermost frames).

        Without ``exc``, reports the exception being handled (inside an ``except`` block).
        """
        where = "capture_exception"
        if exc is None:
            exc = sys.exc_info()[1]
            if exc is None:
                v.type_error(where, "no exception given and none is being handled")
        if not isinstance(fatal, bool):
            v.type_error(where, f"fatal must be a bool, got {v.describe(fatal)}")
        stack: str | None = None
        if isinstance(exc, BaseException):
            kind, message = type(exc).__name__, str(exc)
            description = f"{kind}: {message}" if message else kind
            stack = "".join(traceback.format_exception(exc)).rstrip("\n") or None
        elif isinstance(exc, str):
            description = exc or "Error"
        else:
            try:
                description = json.dumps(exc)
            except (TypeError, ValueError):
                description = repr(exc)
        props: JsonObject = {
            "description": truncate(description, v.DESCRIPTION_LENGTH),
            "fatal": fatal,
        }
        if stack is not None:
            props["stack"] = truncate_start(stack, v.STACK_LENGTH)
        self._enqueue(
            where,
            "exception",
            props,
            url=url,
            referrer=referrer,
            session_id=session_id,
            user_agent=user_agent,
            ip=ip,
            timestamp=timestamp,
            event_id=event_id,
        )


__all__ = ["MAX_BATCH_SIZE", "MAX_BODY_BYTES", "VERSION", "BaseClient", "ClientStats"]
