"""The OpenAPI 3.1 document served at /openapi.json.

Its schemas are generated from types (``msgspec.json.schema_components``): the event from
:class:`svc.schema.wire.RawEvent`, whose limits are the validator's, and every answer from the
types of this package (:mod:`.base`, :mod:`.report_types`, :mod:`.measurement_types`,
:mod:`.project_types`, gathered in :mod:`.schemas`), which tests check real answers against
(tests/test_openapi.py). The paths are written in this package's ``*_paths`` modules and
:mod:`.document`, with what each operation does; their limits come from the settings and from
the modules that enforce them, their dimensions and operators from the query side. A test
checks that every route of the app is documented and nothing else is.
"""

from __future__ import annotations

from svc.http.openapi.document import openapi_document

__all__ = ["openapi_document"]
