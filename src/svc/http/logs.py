"""The service's log lines: one JSON object a line for machines, text for a person.

:func:`configure` (called by ``svcm serve``) sends every logger's records (svc's, uvicorn's,
Python's warnings) to stderr through one handler. ``SVC_LOG_FORMAT``: ``json``, ``text``, or
``auto`` (the default): JSON when stderr is not a terminal (a service manager, a container, a
file), text when a person watches it.

A JSON line::

    {"time": "2026-11-02T10:15:03.201Z", "level": "warning", "logger": "svc.requests",
     "message": "POST /analytics 500 in 3.1 ms", "requestId": "9f1c0d2e8a7b6c5d",
     "method": "POST", "route": "/analytics", "status": 500, "durationMs": 3.1}

``requestId`` is the id of the request the line was written for (:data:`svc.errors.
request_id`, set by :mod:`svc.http.observe`; also in worker threads the request started), the
same as its ``X-Request-Id`` header and error body; fields given with ``extra=`` are kept;
``exception`` holds a traceback. Log lines never hold a client's address, a query string or a
credential: what is logged of a request is its route template (``/projects/{project_id}``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from svc.errors import request_id
from svc.settings import Settings

FORMATS = ("auto", "json", "text")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: Attributes every LogRecord has: anything else on a record came with ``extra=``.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "requestId",
    "color_message",
    "taskName",
}

_state = {"json": False}


class RequestIdFilter(logging.Filter):
    """Puts the current request's id on each record (``record.requestId``) unless it has one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "requestId", None) is None:
            record.requestId = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ms), level, logger, message, requestId, the
    fields given with ``extra=``, and the exception's traceback."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = getattr(record, "requestId", None)
        if rid is not None:
            out["requestId"] = rid
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The text format, with ``[request <id>]`` after the message of a request's lines."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        rid = getattr(record, "requestId", None)
        return f"{line} [request {rid}]" if rid is not None else line


def uses_json(setting: str, stream: TextIO) -> bool:
    """Whether ``SVC_LOG_FORMAT`` = ``setting`` means JSON lines on ``stream``."""
    value = setting.strip().lower()
    if value not in FORMATS:
        raise ValueError(
            f"setting SVC_LOG_FORMAT: cannot read {setting!r}: use one of {', '.join(FORMATS)}"
        )
    if value == "auto":
        isatty = getattr(stream, "isatty", None)
        return not (isatty is not None and isatty())
    return value == "json"


def configure(settings: Settings, stream: TextIO | None = None) -> bool:
    """Send every log record to ``stream`` (stderr) in the format of ``SVC_LOG_FORMAT`` at
    ``SVC_LOG_LEVEL``; True when the lines are JSON."""
    stream = sys.stderr if stream is None else stream
    as_json = uses_json(settings.log_format, stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    handler.addFilter(RequestIdFilter())
    logging.basicConfig(level=settings.log_level.upper(), handlers=[handler], force=True)
    logging.captureWarnings(True)
    _state["json"] = as_json
    return as_json


def show_generated_admin_token(token: str) -> None:
    """Show an admin token generated at start-up, once: two lines for a person, or one JSON
    line (``adminToken``) when the logs are JSON."""
    if _state["json"]:
        logging.getLogger("svc").warning(
            "generated the admin token (shown once, keep it safe)", extra={"adminToken": token}
        )
        return
    print(
        f"svc: generated the admin token (shown once, keep it safe):\n  {token}",
        file=sys.stderr,
        flush=True,
    )


def _utc(created: float) -> str:
    whole = int(created)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + (
        f".{int((created - whole) * 1000):03d}Z"
    )
