"""Headless Chromium driven over the DevTools protocol itself, without Playwright.

Playwright keeps every page it controls visible and focused (it turns Chromium's focus
emulation on, which holds the page "captured"), so a page under Playwright never becomes hidden
when another tab comes to the front. The real tab switch needs a page no Playwright session
holds: this client launches Debian's Chromium with ``--remote-debugging-port=0`` and speaks the
protocol over its WebSocket (flat sessions), for the few commands the tab tests need.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.sync.client import ClientConnection, connect

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS


class RawChromium:
    """One headless Chromium; ``with RawChromium(tmp_path) as chrome: ...``."""

    def __init__(self, profile: Path) -> None:
        self._process = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                *CHROMIUM_ARGS,
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
            if time.monotonic() > deadline or self._process.poll() is not None:
                self._process.kill()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self._stack = contextlib.ExitStack()
        self._ws: ClientConnection = self._stack.enter_context(
            connect(f"ws://127.0.0.1:{port}{path}", max_size=None)
        )
        self._ids = itertools.count(1)

    def __enter__(self) -> RawChromium:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def send(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> Any:
        """One command; its result (events that arrive meanwhile are dropped)."""
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        while True:
            answer = json.loads(self._ws.recv(timeout=30))
            if answer.get("id") == message["id"]:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def new_tab(self, url: str, *, new_window: bool) -> str:
        """Opens a tab (in a new window, or in front of the current window's tabs)."""
        target: str = self.send("Target.createTarget", {"url": url, "newWindow": new_window})[
            "targetId"
        ]
        return target

    def attach(self, target: str) -> str:
        session: str = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, session: str, expression: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(session, expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"still false after {timeout}s: {expression}")
            time.sleep(0.02)

    def activate(self, target: str) -> None:
        """Brings a tab to the front of its window (and focuses it)."""
        self.send("Target.activateTarget", {"targetId": target})

    def close_tab(self, target: str) -> None:
        self.send("Target.closeTarget", {"targetId": target})
