"""The two ways svcm reaches the service, behind one interface.

- :class:`HttpApi`: a running service over HTTP (``--url``), with a Bearer credential.
- :class:`DirectApi`: a data directory (``--data-dir``) while no service runs on it. It starts
  the service's :class:`~svc.runtime.Runtime` in this process and sends the very same requests
  to the service's own ASGI application in memory (``httpx.ASGITransport``) with a one-off
  admin token that exists only in this process. Every command therefore runs the same
  validation, the same domain functions and gives the same JSON and errors either way.
  ``svcm import`` also writes historical rows straight into the store (see
  :mod:`svc.imports.store`), which the HTTP API does not allow.

chDB locks its directory while a process has it open: a data directory that a running service
holds is refused with a clear message instead of being opened twice.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from svc import __version__
from svc.cli.errors import EXIT_FAILED, EXIT_UNREACHABLE, CliError

if TYPE_CHECKING:
    import asyncio

    import httpx

    from svc.runtime import Runtime

Params = list[tuple[str, str]] | dict[str, str] | None
USER_AGENT = f"svcm/{__version__}"
CHUNK = 1 << 16


@dataclass
class Reply:
    """A response of the service, read whole: status, headers (lower-case names) and body."""

    status_code: int
    content: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    reason_phrase: str = ""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class Api(abc.ABC):
    """A service to send requests to."""

    mode: str = ""
    where: str = ""
    token: str = ""

    @property
    def is_admin(self) -> bool:
        return self.token.startswith("svc_admin_")

    @abc.abstractmethod
    def send(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = 30.0,
    ) -> Reply:
        """The response, whatever its status; :class:`CliError` when there is none."""

    @abc.abstractmethod
    def download(
        self, path: str, params: Params, sink: Callable[[bytes], None]
    ) -> Mapping[str, str]:
        """GET ``path`` and hand the body to ``sink`` chunk by chunk; the response headers."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    def request(self, method: str, path: str, *, params: Params = None, body: Any = None) -> Any:
        """The decoded JSON of a successful answer; :class:`CliError` for an error answer."""
        resp = self.send(method, path, params=params, body=body)
        if resp.status_code >= 400:
            raise error_of(resp)
        try:
            return resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CliError(
                f"the service answered {method} {path} with something that is not JSON "
                f"(HTTP {resp.status_code})"
            ) from exc

    def get(self, path: str, params: Params = None) -> Any:
        return self.request("GET", path, params=params)


def query_string(params: Params) -> str:
    if not params:
        return ""
    items = list(params.items()) if isinstance(params, dict) else list(params)
    return urllib.parse.urlencode(items)


def error_of(resp: Reply) -> CliError:
    """The service's error body as one line: its message, then status and code."""
    status = resp.status_code
    code, message, retry = "", "", resp.headers.get("retry-after")
    try:
        doc = resp.json()
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict):
            code, message = str(err.get("code", "")), str(err.get("message", ""))
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    if not message:
        snippet = " ".join(resp.text.split())[:200]
        message = f"the service answered HTTP {status} {resp.reason_phrase}".rstrip() + (
            f": {snippet}" if snippet else ""
        )
    hint = ""
    if status == 401:
        hint = " (give a credential with --token, SVC_TOKEN or `svcm login`)"
    elif status == 404 and message.startswith("no route for"):
        hint = " (this service does not offer it: is it an older version?)"
    elif status == 429 and retry:
        hint = f" (retry after {retry} s)"
    suffix = f" [HTTP {status}{' ' + code if code else ''}]"
    exit_status = EXIT_UNREACHABLE if status == 401 else EXIT_FAILED
    return CliError(message + hint + suffix, exit_status)


class HttpApi(Api):
    """A service over HTTP(S), with the standard library's client: it starts fast and honours
    the usual proxy variables (``HTTPS_PROXY``, ``NO_PROXY``)."""

    mode = "http"

    def __init__(self, url: str, token: str, *, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CliError(
                f"not a usable service URL: {url!r} (write http://host:port or https://host)",
                EXIT_UNREACHABLE,
            )
        self.where = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=ssl.create_default_context())
        )

    def _open(
        self,
        method: str,
        path: str,
        params: Params,
        body: Any,
        headers: dict[str, str] | None,
        timeout: float | None,
    ) -> Any:
        qs = query_string(params)
        url = self.where + path + (f"?{qs}" if qs else "")
        data = None
        all_headers = dict(self.headers)
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        req = urllib.request.Request(url, data=data, headers=all_headers, method=method)
        try:
            return self.opener.open(req, timeout=timeout)
        except urllib.error.HTTPError as exc:
            return exc  # an answer with an error status: read like any other
        except (urllib.error.URLError, OSError) as exc:
            raise self._unreachable(exc) from exc

    def send(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = 30.0,
    ) -> Reply:
        resp = self._open(method, path, params, body, headers, timeout)
        try:
            with resp:
                content = resp.read()
        except (OSError, urllib.error.URLError) as exc:
            raise self._unreachable(exc) from exc
        return Reply(resp.status, content, _headers(resp), getattr(resp, "reason", "") or "")

    def download(
        self, path: str, params: Params, sink: Callable[[bytes], None]
    ) -> Mapping[str, str]:
        resp = self._open("GET", path, params, None, None, None)
        try:
            with resp:
                if resp.status >= 400:
                    raise error_of(Reply(resp.status, resp.read(), _headers(resp)))
                while chunk := resp.read(CHUNK):
                    sink(chunk)
                return _headers(resp)
        except (OSError, urllib.error.URLError) as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: BaseException) -> CliError:
        reason: Any = getattr(exc, "reason", exc)
        if isinstance(reason, socket.timeout | TimeoutError):
            return CliError(f"the service at {self.where} did not answer in time", EXIT_UNREACHABLE)
        if isinstance(reason, ssl.SSLError):
            return CliError(f"TLS with {self.where} failed: {reason}", EXIT_UNREACHABLE)
        text = getattr(reason, "strerror", None) or str(reason)
        return CliError(
            f"cannot reach the service at {self.where}: {text} "
            "(is it running? set --url, SVC_URL or `svcm login`)",
            EXIT_UNREACHABLE,
        )


def _headers(resp: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in resp.headers.items()}


# direct mode ---------------------------------------------------------------------------------

MARKERS = ("admin_token.sha256", "meta.db", "events", "spool")


def is_data_dir(path: Path) -> bool:
    return path.is_dir() and any((path / m).exists() for m in MARKERS)


def require_data_dir(path: Path) -> None:
    if not path.exists():
        raise CliError(
            f"no data directory at {path} (create one with `svcm init --data-dir {path}`)",
            EXIT_UNREACHABLE,
        )
    if not is_data_dir(path):
        raise CliError(
            f"{path} is not an svc data directory (create one with `svcm init --data-dir {path}`)",
            EXIT_UNREACHABLE,
        )


def holder_of(data_dir: Path) -> int | None:
    """The pid of the process that holds the data directory's event store, or None.

    chDB (the embedded ClickHouse) keeps an exclusive ``flock`` on ``events/status`` while it
    runs; the file names its pid.
    """
    import fcntl

    status = data_dir / "events" / "status"
    try:
        fd = os.open(status, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = 0
            with contextlib.suppress(OSError, ValueError):
                for line in status.read_text().splitlines():
                    if line.startswith("PID:"):
                        pid = int(line.split(":", 1)[1])
            return pid
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def ensure_not_in_use(data_dir: Path) -> None:
    pid = holder_of(data_dir)
    if pid is not None:
        who = f"process {pid}" if pid else "another process"
        raise CliError(
            f"the data directory {data_dir} is in use by {who} (a running service?): stop it "
            "first, or talk to the service with --url instead of --data-dir",
            EXIT_UNREACHABLE,
        )


def direct_settings(data_dir: Path, admin_token: str = "") -> Any:
    """Settings for a data directory: the ``SVC_*`` environment, this directory."""
    from svc.settings import Settings

    try:
        return Settings.from_env(data_dir=data_dir, admin_token=admin_token or None)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_FAILED) from exc


class DirectApi(Api):
    mode = "direct"

    def __init__(self, data_dir: Path) -> None:
        data_dir = data_dir.expanduser()
        self.where = str(data_dir)
        require_data_dir(data_dir)
        ensure_not_in_use(data_dir)
        import asyncio

        import httpx

        from svc import credentials  # the service itself, only once the directory is free
        from svc.app import create_app

        self.token = credentials.new_admin_token()  # lives in this process only
        self.settings = direct_settings(data_dir, self.token)
        self.app = create_app(self.settings)
        self.runtime: Runtime = self.app.state.runtime
        self.runner: asyncio.Runner = asyncio.Runner()
        self._started = False
        try:
            self.runner.run(self.runtime.start())
            self._started = True
            if self.runtime.loader.last_error:
                raise CliError(
                    f"cannot open the event store of {data_dir}: {self.runtime.loader.last_error}",
                    EXIT_UNREACHABLE,
                )
        except BaseException:
            self.close()
            raise
        transport = httpx.ASGITransport(
            app=self.app, raise_app_exceptions=False, client=("127.0.0.1", 0)
        )
        self.client = httpx.AsyncClient(
            transport=transport,
            base_url="http://svcm.direct",
            headers={"Authorization": f"Bearer {self.token}", "User-Agent": USER_AGENT},
        )

    def send(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = 30.0,
    ) -> Reply:
        qs = query_string(params)
        target = path + (f"?{qs}" if qs else "")
        resp: httpx.Response = self.runner.run(
            self.client.request(method, target, json=body, headers=headers)
        )
        headers_ = {k.lower(): v for k, v in resp.headers.items()}
        return Reply(resp.status_code, resp.content, headers_, resp.reason_phrase)

    def download(
        self, path: str, params: Params, sink: Callable[[bytes], None]
    ) -> Mapping[str, str]:
        # The in-memory transport hands over the whole body at once (as chDB answers anyway).
        resp = self.send("GET", path, params=params)
        if resp.status_code >= 400:
            raise error_of(resp)
        sink(resp.content)
        return resp.headers

    def run(self, coro: Any) -> Any:
        """Run a coroutine on the runtime's event loop."""
        return self.runner.run(coro)

    def close(self) -> None:
        """Stop the runtime cleanly: commit the spool, load it into the store, close."""
        try:
            client = getattr(self, "client", None)
            if client is not None:
                self.runner.run(client.aclose())
            if self._started:
                self._started = False
                self.runner.run(self.runtime.stop())
        finally:
            self.runner.close()
