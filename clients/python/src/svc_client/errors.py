"""What the client reports to ``on_error``: failures that never raise at the call site."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RejectedEvent", "SvcError"]


@dataclass(frozen=True, slots=True)
class RejectedEvent:
    """An event the service refused inside an accepted batch (``SvcError.rejected``)."""

    event_id: str
    event: str
    code: str
    message: str
    field: str | None = None


class SvcError(Exception):
    """A delivery failure, passed to ``on_error`` (the client never raises it).

    ``code`` is the service's error code (``invalid_api_key``, ``forbidden``, ``quota_exceeded``,
    ...) or the client's own: ``network_error``, ``timeout``, ``retries_exhausted``,
    ``events_rejected``, ``queue_overflow``, ``client_closed``, ``shutdown_timeout``, or
    ``http_<status>`` for an answer without an error body.
    """

    code: str
    message: str
    status: int | None
    count: int
    rejected: tuple[RejectedEvent, ...]
    cause: BaseException | None

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        count: int = 0,
        rejected: tuple[RejectedEvent, ...] = (),
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        #: The HTTP status, when the service answered.
        self.status = status
        #: Events affected: lost, or dropped.
        self.count = count
        #: For ``events_rejected``: which events the service refused, and why.
        self.rejected = rejected
        #: The underlying error (a network error, the last failure before giving up).
        self.cause = cause
        self.__cause__ = cause

    def __repr__(self) -> str:
        return f"SvcError(code={self.code!r}, message={self.message!r}, count={self.count})"
