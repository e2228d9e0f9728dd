"""Errors that map to the JSON error shape of the API.

Every error leaves the service as
``{"ok": false, "error": {"code": "<snake_case>", "message": "<for a person>"}}``, with
``"requestId"`` beside them when it answers a request (:data:`request_id`, set by
:mod:`svc.http.observe` for each request). Domain code raises :class:`ApiError`; the HTTP
layer renders it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

#: The id of the request being answered (``X-Request-Id``): in error bodies and log lines.
request_id: ContextVar[str | None] = ContextVar("svc_request_id", default=None)


class ApiError(Exception):
    """An error with an HTTP status, a stable snake_case code and a message for a person."""

    status: int = 400
    code: str = "invalid_request"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.headers = headers or {}
        self.field = field

    def body(self) -> dict[str, Any]:
        """The answer's body: :meth:`detail` with the id of the request it answers."""
        error = self.detail()
        rid = request_id.get()
        if rid is not None:
            error["requestId"] = rid
        return {"ok": False, "error": error}

    def detail(self) -> dict[str, Any]:
        """``{"code", "message", "field"?}``: the error of one event in a batch's
        ``rejected`` too (where the request's id would only repeat the header's)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return error


class InvalidRequest(ApiError):
    status, code = 400, "invalid_request"


class MissingApiKey(ApiError):
    status, code = 401, "missing_api_key"


class InvalidApiKey(ApiError):
    status, code = 401, "invalid_api_key"


class Forbidden(ApiError):
    status, code = 403, "forbidden"


class NotFound(ApiError):
    status, code = 404, "not_found"


class MethodNotAllowed(ApiError):
    status, code = 405, "method_not_allowed"


class Conflict(ApiError):
    status, code = 409, "conflict"


class PayloadTooLarge(ApiError):
    status, code = 413, "payload_too_large"


class UnsupportedMediaType(ApiError):
    status, code = 415, "unsupported_media_type"


class RateLimited(ApiError):
    status, code = 429, "rate_limited"


class QuotaExceeded(ApiError):
    status, code = 429, "quota_exceeded"


class Unavailable(ApiError):
    status, code = 503, "unavailable"


class Busy(ApiError):
    """503 ``busy``: a read could not start within its wait, or needed more memory than its
    share; ``Retry-After`` says when to try again."""

    status, code = 503, "busy"
