"""The document's schemas: every type of it by its name, and the schemas generated from
them."""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import Struct

from svc.http.accounts_doc import ACCOUNT_TYPES
from svc.http.dropped_doc import DROPPED_TYPES
from svc.http.openapi.base import Ack, Error, Health
from svc.http.openapi.measurement_types import (
    EngagementBreakdown,
    TargetBreakdown,
    Vitals,
    VitalsBreakdown,
)
from svc.http.openapi.project_types import (
    EdgeSecret,
    EdgeSecretInput,
    EdgeSecrets,
    Key,
    KeyInput,
    Keys,
    Project,
    ProjectInput,
    Projects,
)
from svc.http.openapi.report_types import (
    Breakdown,
    Errors,
    Funnel,
    Goals,
    Journeys,
    Metrics,
    Properties,
    Realtime,
    Revenue,
    Timeseries,
    Values,
)
from svc.http.overview_doc import OVERVIEW_TYPES
from svc.http.saved_doc import SAVED_TYPES
from svc.http.sso_doc import SSO_TYPES
from svc.schema.wire import RawEvent

#: The types of the document's schemas, by their names in it.
TYPES: dict[str, type[Struct]] = {
    "Event": RawEvent,
    **{
        t.__name__: t
        for t in (
            Error,
            Ack,
            Metrics,
            Timeseries,
            Breakdown,
            EngagementBreakdown,
            TargetBreakdown,
            VitalsBreakdown,
            Vitals,
            Realtime,
            Goals,
            Values,
            Funnel,
            Journeys,
            Revenue,
            Errors,
            Properties,
            Project,
            ProjectInput,
            Projects,
            Key,
            KeyInput,
            Keys,
            EdgeSecret,
            EdgeSecretInput,
            EdgeSecrets,
            Health,
        )
    },
    **ACCOUNT_TYPES,  # svc.http.accounts_doc
    **DROPPED_TYPES,  # svc.http.dropped_doc
    **OVERVIEW_TYPES,  # svc.http.overview_doc
    **SAVED_TYPES,  # svc.http.saved_doc
    **SSO_TYPES,  # svc.http.sso_doc
}


def schemas() -> dict[str, Any]:
    """The document's schemas, generated from :data:`TYPES` (and the types they hold)."""
    out: dict[str, Any] = msgspec.json.decode(_schemas())  # a copy of its own each time
    return out


@functools.cache
def _schemas() -> bytes:
    _, components = msgspec.json.schema_components(
        list(TYPES.values()), ref_template="#/components/schemas/{name}"
    )
    event = components.pop("RawEvent")
    event["title"] = "Event"
    components["Event"] = event
    return msgspec.json.encode(components)
