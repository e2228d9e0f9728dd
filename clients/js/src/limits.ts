// The limits of POST /analytics' wire format: the numbers of edge/src/wire-format.json, at the same
// paths. Generated from src/svc/schema by `python -m svc.schema`: do not edit. tests/test_schema.py
// checks that this file is the generated one and that the client's LIMITS (validate.ts) are these.

/** @internal The limits of the service's wire format. */
export const WIRE_LIMITS = {
  "version": 1,
  "body": {
    "maxBytes": 1048576,
    "maxBatchEvents": 1000,
    "maxNestingDepth": 500
  },
  "event": {
    "event": {
      "minLength": 1,
      "maxLength": 200
    },
    "url": {
      "minLength": 1,
      "maxLength": 2048
    },
    "sessionId": {
      "maxLength": 128
    },
    "projectId": {
      "maxLength": 64
    },
    "properties": {
      "maxKeys": 50,
      "maxKeyLength": 200,
      "maxValueLength": 2048,
      "items": {
        "maxItems": 200,
        "maxJsonLength": 32768
      }
    },
    "referrer": {
      "maxLength": 2048
    },
    "ts": {
      "pastWindowMs": 604800000,
      "futureWindowMs": 300000
    },
    "eventId": {
      "maxLength": 128
    },
    "userAgent": {
      "maxLength": 1024
    },
    "ip": {
      "maxLength": 45
    },
    "screen": {
      "minimum": 0,
      "maximum": 65535
    }
  },
  "kinds": {
    "engagement": {
      "properties": {
        "engaged_ms": {
          "minimum": 0,
          "maximum": 86400000
        },
        "scroll_pct": {
          "minimum": 0,
          "maximum": 100
        }
      }
    },
    "web_vitals": {
      "properties": {
        "ttfb": {
          "minimum": 0,
          "maximum": 600000
        },
        "fcp": {
          "minimum": 0,
          "maximum": 600000
        },
        "lcp": {
          "minimum": 0,
          "maximum": 600000
        },
        "inp": {
          "minimum": 0,
          "maximum": 600000
        },
        "cls": {
          "minimum": 0,
          "maximum": 100
        }
      }
    },
    "outbound": {
      "properties": {
        "url": {
          "maxLength": 2048
        }
      }
    },
    "download": {
      "properties": {
        "url": {
          "maxLength": 2048
        }
      }
    }
  }
} as const;
