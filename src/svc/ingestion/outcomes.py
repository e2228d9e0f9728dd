"""Why an event was not stored: one typed reason per dropped event, counted."""

from __future__ import annotations

import enum
from collections import Counter


class DropReason(enum.StrEnum):
    """Reasons for dropping an otherwise valid event on purpose (the request still gets 200)."""

    BOT = "bot"
    MISSING_USER_AGENT = "missing_user_agent"
    HEADLESS = "headless"
    HTTP_LIBRARY = "http_library"
    EXCLUDED_ADDRESS = "excluded_address"
    EXCLUDED_PATH = "excluded_path"
    FOREIGN_HOSTNAME = "foreign_hostname"
    DUPLICATE_EVENT_ID = "duplicate_event_id"
    DATA_CENTRE = "data_centre"


class Refusal(enum.StrEnum):
    """Why a whole POST /analytics request was refused with 429 (counted per request, not per
    event: a request refused before its body is read has no known number of events)."""

    RATE_LIMIT = "rate_limit"  # the ingest_ip or ingest_project bucket was empty
    QUOTA = "quota"  # the project's monthly quota: some or all of its events refused


class Outcomes:
    """Counters of accepted, rejected (invalid) and dropped events since start."""

    def __init__(self) -> None:
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()

    def to_json(self) -> dict[str, object]:
        return {
            "accepted": self.accepted,
            "rejected": dict(self.rejected),
            "dropped": dict(self.dropped),
            "droppedTotal": sum(self.dropped.values()),
        }
