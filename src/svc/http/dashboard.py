"""The dashboard: the HTML shell at ``/`` and ``/dashboard``, read-only share pages at
``/share/{token}``, and the built assets at ``/dashboard/assets/{path}``.

The dashboard is built from ``dashboard/`` (``make dashboard``: Preact + esbuild) into the
package as ``svc/static/dashboard/``: content-hashed files and ``manifest.json``, which names
the entry script, its stylesheet and the chunks to preload. A plain ``pip install`` serves it
without Node. The files are read once per process, on first use, and compressed then (brotli
and gzip); only the names listed in the manifest are served, so no request path can reach
another file.

Caching: asset names carry their content hash, so they are ``immutable`` for a year. The shell
is small and names the current assets, so it is revalidated on every load (``no-cache``); a
share page is ``no-store``, since its URL is a credential.

No cookie is read or set: the page keeps the key in its memory or the tab's sessionStorage and
sends it as ``Authorization: Bearer``. The share page reads its token from its own URL; its
``Referrer-Policy: no-referrer`` keeps that URL from leaking to other sites. A Content Security
Policy allows the page's own scripts, styles and API calls only.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import importlib.resources
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources.abc import Traversable
from typing import Any

import brotli
from starlette.requests import Request
from starlette.responses import Response

from svc import credentials
from svc.errors import ApiError, NotFound
from svc.http.common import error_response
from svc.http.script import choose_encoding

__all__ = ["ASSET_CACHE_CONTROL", "dashboard_asset", "dashboard_page", "share_page"]

ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable"
ASSET_PREFIX = "/dashboard/assets/"

MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
_COMPRESSIBLE = {".js", ".mjs", ".css", ".json", ".svg", ".txt"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,100}(\.[A-Za-z0-9]{1,8}){1,2}$")

CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
_SHELL_HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


@dataclass(frozen=True, slots=True)
class _Asset:
    media_type: str
    etag: str
    bodies: dict[str, bytes]  # by coding: "identity", and "br" and "gzip" when compressible


@dataclass(frozen=True, slots=True)
class _Bundle:
    entry: str
    css: tuple[str, ...]
    preload: tuple[str, ...]
    assets: dict[str, _Asset]


class DashboardNotBuilt(ApiError):
    status, code = 503, "dashboard_not_built"


def _suffix(name: str) -> str:
    return name[name.rfind(".") :].lower() if "." in name else ""


def _folder() -> Traversable:
    return importlib.resources.files("svc").joinpath("static/dashboard")


def _manifest_text() -> str | None:
    item = _folder().joinpath("manifest.json")
    return item.read_text("utf-8") if item.is_file() else None


@lru_cache(maxsize=2)
def _load(manifest_text: str) -> _Bundle | None:
    """The built dashboard that a manifest describes (None when it is incomplete)."""
    folder = _folder()
    manifest: dict[str, Any] = json.loads(manifest_text)
    assets: dict[str, _Asset] = {}
    for name in manifest.get("files", {}):
        suffix = _suffix(name)
        if not _NAME.match(name) or suffix not in MEDIA_TYPES:
            continue
        item = folder.joinpath(name)
        if not item.is_file():
            continue
        body = item.read_bytes()
        bodies = {"identity": body}
        if suffix in _COMPRESSIBLE:
            bodies["br"] = brotli.compress(body, mode=brotli.MODE_TEXT, quality=11)
            bodies["gzip"] = gzip.compress(body, compresslevel=9, mtime=0)
        tag = hashlib.sha256(body).hexdigest()[:20]
        assets[name] = _Asset(MEDIA_TYPES[suffix], tag, bodies)
    entry = str(manifest.get("entry", ""))
    if entry not in assets:
        return None
    return _Bundle(
        entry=entry,
        css=tuple(c for c in manifest.get("css", []) if c in assets),
        preload=tuple(p for p in manifest.get("preload", []) if p in assets),
        assets=assets,
    )


def _bundle() -> _Bundle | None:
    """The dashboard as built now: the manifest is read on each call (a few hundred bytes), the
    files only when it changed, so a rebuild is served without a restart."""
    text = _manifest_text()
    return _load(text) if text is not None else None


def _coding(asset: _Asset, accept_encoding: str | None) -> str:
    coding = choose_encoding(accept_encoding)
    return coding if coding in asset.bodies else "identity"


def _etag_matches(if_none_match: str, etag: str) -> bool:
    if if_none_match.strip() == "*":
        return True
    return any(c.strip().removeprefix("W/") == etag for c in if_none_match.split(","))


def _base_path(request: Request) -> str:
    root: str = request.scope.get("root_path", "") or ""
    return root.rstrip("/")


def _shell(request: Request, bundle: _Bundle, mode: str) -> str:
    base = _base_path(request)

    def url(name: str) -> str:
        return html.escape(base + ASSET_PREFIX + name, quote=True)

    head = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        '<meta name="robots" content="noindex, nofollow">',
        '<meta name="referrer" content="no-referrer">',
        "<title>svc</title>",
        '<link rel="icon" href="data:,">',
        *(f'<link rel="stylesheet" href="{url(c)}">' for c in bundle.css),
        *(f'<link rel="modulepreload" href="{url(p)}">' for p in bundle.preload),
        f'<script type="module" src="{url(bundle.entry)}"></script>',
    ]
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n'
        + "\n".join(head)
        + "\n</head>\n<body>\n"
        + f'<div id="app" data-mode="{mode}" data-base="{html.escape(base, quote=True)}">'
        + "<noscript>The svc dashboard needs JavaScript.</noscript></div>\n</body>\n</html>\n"
    )


def _page(request: Request, mode: str, cache_control: str) -> Response:
    bundle = _bundle()
    if bundle is None:
        return error_response(
            DashboardNotBuilt("the dashboard is not built: run `make dashboard`"), cors=False
        )
    headers = {**_SHELL_HEADERS, "Cache-Control": cache_control}
    if mode == "share":
        headers["X-Robots-Tag"] = "noindex, nofollow"
    return Response(
        _shell(request, bundle, mode),
        media_type="text/html; charset=utf-8",
        headers=headers,
    )


async def dashboard_page(request: Request) -> Response:
    """GET / and /dashboard: the dashboard's HTML shell (sign-in with a key happens in it)."""
    return _page(request, "dashboard", "no-cache")


async def share_page(request: Request) -> Response:
    """GET /share/{token}: the shell, read-only, with the share token taken from the URL.

    The token is only checked for its form here; the page's API calls check it for real, so a
    revoked link shows the page's own "link not valid" message."""
    token: str = request.path_params.get("token", "")
    if not token.startswith(credentials.SHARE_PREFIX) or not credentials.is_well_formed(token):
        return error_response(NotFound("no such share link"), cors=False)
    return _page(request, "share", "no-store")


async def dashboard_asset(request: Request) -> Response:
    """GET /dashboard/assets/{path}: one built file, by its exact hashed name."""
    name: str = request.path_params.get("path", "")
    bundle = _bundle() if _NAME.match(name) else None
    asset = bundle.assets.get(name) if bundle is not None else None
    if asset is None:
        return error_response(NotFound(f"no dashboard asset {name!r}"), cors=False)
    coding = _coding(asset, request.headers.get("accept-encoding"))
    etag = f'"{asset.etag}"' if coding == "identity" else f'"{asset.etag}-{coding}"'
    headers = {
        "Cache-Control": ASSET_CACHE_CONTROL,
        "ETag": etag,
        "Vary": "Accept-Encoding",
        "X-Content-Type-Options": "nosniff",
    }
    if coding != "identity":
        headers["Content-Encoding"] = coding
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None and _etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)
    body = asset.bodies[coding]
    headers["Content-Length"] = str(len(body))
    return Response(
        b"" if request.method == "HEAD" else body, media_type=asset.media_type, headers=headers
    )
