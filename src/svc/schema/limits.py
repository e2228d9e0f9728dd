"""The limits of POST /analytics' wire format (docs/api.md, docs/limits.md).

Standard library only: ``svcm`` loads it at every start. Lengths are in characters (Unicode
code points). The body and batch limits are the defaults of ``SVC_MAX_BODY_BYTES`` and
``SVC_MAX_BATCH_EVENTS`` (a test checks that the settings' defaults are these).
"""

from __future__ import annotations

MAX_EVENT_NAME = 200
MAX_URL = 2048
MAX_SESSION_ID = 128
MAX_PROJECT_ID = 64
MAX_EVENT_ID = 128
#: A longer referrer is cut to this length, not refused.
MAX_REFERRER = 2048
MAX_USER_AGENT = 1024
MAX_IP = 45
#: Each value of an event's ``client`` (browser, system, device, location of an import).
MAX_CLIENT_FIELD = 100
#: What an ``ip`` must look like (IPv4 or IPv6).
IP_PATTERN = r"^[0-9A-Fa-f:.]{2,45}$"
MAX_SCREEN = 65535
MAX_PROPERTIES = 50
MAX_PROPERTY_KEY = 200
MAX_PROPERTY_VALUE = 2048
#: ``properties.items`` (GA4's item list): at most this many flat objects ...
MAX_ITEMS = 200
#: ... of at most this many characters once encoded as JSON.
MAX_ITEMS_JSON = 16 * MAX_PROPERTY_VALUE
#: ``ts`` is accepted this far in the past and in the future of the server's clock (ms).
PAST_WINDOW_MS = 7 * 24 * 3600 * 1000
FUTURE_WINDOW_MS = 5 * 60 * 1000

#: The largest body (bytes) and the most events of a batch, by default.
MAX_BODY_BYTES = 1024 * 1024
MAX_BATCH_EVENTS = 1000
#: JSON nested this deep or deeper may be refused (msgspec's own bound is near 1,000 levels,
#: answered with a 400); the edge leaves such bodies to the origin.
MAX_NESTING_DEPTH = 500
