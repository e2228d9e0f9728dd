"""Pseudonyms of emails and client addresses in log lines: keyed digests that let the lines of
one day be matched (the same address failing again and again) and recover nothing.

An unkeyed hash of an IPv4 address is no pseudonym: hashing all 2^32 addresses takes minutes.
These digests are keyed (BLAKE2b with a 32-byte key) by a secret drawn at random in memory,
never stored, and replaced at each UTC midnight: a log line does not hold the address, and
nobody (the operator included) can tell it from the line, or match lines of two days.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

DAY_S = 86_400


class Pseudonyms:
    """Keyed digests whose key is drawn again each UTC day (and in each process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._day = -1
        self._key = b""

    def _current_key(self) -> bytes:
        day = int(time.time()) // DAY_S
        with self._lock:
            if day != self._day:
                self._day, self._key = day, secrets.token_bytes(32)
            return self._key

    def of(self, value: str) -> str:
        """A 16-hex-character keyed digest of ``value``, the same all UTC day in this
        process."""
        return hashlib.blake2b(value.encode(), key=self._current_key(), digest_size=8).hexdigest()


_PSEUDONYMS = Pseudonyms()


def pseudonym(value: str) -> str:
    """This process's keyed digest of ``value`` for today (:class:`Pseudonyms`)."""
    return _PSEUDONYMS.of(value)
