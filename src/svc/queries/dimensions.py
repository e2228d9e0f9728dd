"""The dimensions a query can break down or filter by: those of :mod:`svc.schema.dimensions`,
and ``prop:<key>`` for a custom property (its key a bound parameter).
"""

from __future__ import annotations

import re

from svc.errors import InvalidRequest
from svc.schema.dimensions import DIMENSIONS, Dimension, Level
from svc.schema.limits import MAX_PROPERTY_KEY

__all__ = ["DIMENSIONS", "Dimension", "Level", "dimension"]

_PROP_KEY = re.compile(rf"^[^\x00-\x1f]{{1,{MAX_PROPERTY_KEY}}}$")


def dimension(name: str, param_name: str, field: str = "by") -> tuple[Dimension, dict[str, str]]:
    """The dimension called ``name`` (``prop:<key>`` for a custom property), with the bound
    parameters its expression needs (named from ``param_name``)."""
    if name.startswith("prop:"):
        key = name[5:]
        if not _PROP_KEY.match(key):
            raise InvalidRequest(f"`{field}`: {name!r} needs a property name", field=field)
        return (
            Dimension(
                name,
                "event",
                f"properties[{{{param_name}:String}}]",
                rows=f"mapContains(properties, {{{param_name}:String}})",
            ),
            {param_name: key},
        )
    try:
        return DIMENSIONS[name], {}
    except KeyError:
        raise InvalidRequest(
            f"`{field}`: unknown dimension {name!r}; use one of "
            f"{', '.join(sorted(DIMENSIONS))} or prop:<key>",
            field=field,
        ) from None
