"""GET/HEAD /svc/js and /svc/js/{extensions}: the browser script.

The minified script is built from ``tracker/src/svc.js`` (``make tracker``) and shipped in the
package as ``svc/static/svc.js``, so a plain ``pip install`` serves it without Node. Each file is
read once, on first use, and compressed then (gzip and brotli at their best levels: it is a few
hundred bytes, compressed once per process).

Opt-in extensions (issue 20; ``tracker/README.md``): ``/svc/js/engagement,outbound`` serves the
build with those extensions compiled in, ``svc/static/svc.<names>.js`` (the names sorted, joined
by dots), one file per combination, each built and size-checked by ``tracker/build.mjs``. The
names may come in any order; an unknown name is a 404 that names it. Every variant is served as
the default script is: the same caching, ETag scheme and compression.

Why a path and not a query string (``/svc/js?x=...``): caches and CDNs key on the path, but many
leave the query string out of the cache key by default (CloudFront's managed CachingOptimized
policy, Cloudflare's "ignore query string" level), and would then serve one variant for every
query, silently; an edge that knows only ``/svc/js`` answers a 404 for the path instead.

Caching: the URL ``/svc/js`` is embedded unversioned in customers' pages, so it cannot be
``immutable``: a new script has to reach every browser in bounded time. ``max-age=3600`` bounds
that at an hour; after that the browser revalidates with ``If-None-Match`` against the strong
ETag and gets a body-less 304 while the script is unchanged. ``stale-while-revalidate=86400``
lets it keep using the cached copy during that revalidation instead of holding the page for a
round trip, for up to a day (browsers and CDNs that do not know it simply revalidate).

Each encoding is its own representation with its own strong ETag (the content hash, plus
``-gz`` or ``-br``), as RFC 9110 requires of strong validators; ``Vary: Accept-Encoding``
keeps caches from mixing them.

Cross-origin: ``Access-Control-Allow-Origin: *`` lets pages load it with ``crossorigin`` and
Subresource Integrity; ``Cross-Origin-Resource-Policy: cross-origin`` lets pages with
``Cross-Origin-Embedder-Policy: require-corp`` load it. No cookie is read or set.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
from dataclasses import dataclass
from functools import cache

import brotli
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from svc.errors import NotFound

__all__ = ["CACHE_CONTROL", "EXTENSIONS", "parse_extensions", "script_file", "serve_script"]

CACHE_CONTROL = "public, max-age=3600, stale-while-revalidate=86400"
MEDIA_TYPE = "application/javascript; charset=utf-8"

# Server preference among equally acceptable encodings: smallest first.
_PREFERENCE = ("br", "gzip", "identity")

#: The browser script's opt-in extensions, sorted as in the built files' names; the same names
#: as in ``tracker/build.mjs``.
EXTENSIONS = ("404", "downloads", "engagement", "outbound", "vitals")


@dataclass(frozen=True, slots=True)
class _Variant:
    body: bytes
    etag: str
    encoding: str | None  # the Content-Encoding, None for identity


@dataclass(frozen=True, slots=True)
class _Script:
    variants: dict[str, _Variant]  # by coding: "br", "gzip", "identity"


def parse_extensions(text: str) -> tuple[str, ...]:
    """The extensions named in ``/svc/js/{text}`` (comma-separated, any order), sorted and
    without repeats; :class:`NotFound` naming the first unknown one."""
    names = text.split(",")
    for name in names:
        if name not in EXTENSIONS:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise NotFound(
                f"`{shown}` is not an extension of the browser script: the extensions are "
                f"{', '.join(EXTENSIONS)}, comma-separated, e.g. /svc/js/engagement,outbound",
                field="extensions",
            )
    return tuple(sorted(set(names)))


def script_file(extensions: tuple[str, ...]) -> str:
    """The built file of a (sorted) combination of extensions, in the package's ``static``."""
    return f"static/svc.{'.'.join(extensions)}.js" if extensions else "static/svc.js"


@cache
def _load(extensions: tuple[str, ...] = ()) -> _Script:
    """Reads a built script from the package and compresses it, once per process."""
    source = importlib.resources.files("svc").joinpath(script_file(extensions)).read_bytes()
    tag = hashlib.sha256(source).hexdigest()[:20]
    compressed_br: bytes = brotli.compress(source, mode=brotli.MODE_TEXT, quality=11)
    compressed_gz = gzip.compress(source, compresslevel=9, mtime=0)
    return _Script(
        variants={
            "identity": _Variant(source, f'"{tag}"', None),
            "gzip": _Variant(compressed_gz, f'"{tag}-gz"', "gzip"),
            "br": _Variant(compressed_br, f'"{tag}-br"', "br"),
        }
    )


def _qvalue(params: str) -> float:
    """The q parameter of one Accept-Encoding element (1 when absent, 0 when malformed)."""
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return 0.0
            return q if 0.0 <= q <= 1.0 else 0.0
    return 1.0


def choose_encoding(accept_encoding: str | None) -> str:
    """Picks ``br``, ``gzip`` or ``identity`` for an Accept-Encoding header (RFC 9110 12.5.3).

    The highest q-value wins; ties go to the smaller encoding. ``*`` stands for every coding not
    named; ``x-gzip`` is ``gzip``. Identity is acceptable unless refused, but below any coding the
    client asked for; when everything is refused, identity is sent anyway rather than a 406.
    """
    weights: dict[str, float] = {}
    for element in (accept_encoding or "").split(","):
        name, _, params = element.partition(";")
        coding = name.strip().lower()
        if coding == "x-gzip":
            coding = "gzip"
        if coding:
            weights[coding] = max(weights.get(coding, 0.0), _qvalue(params))
    star = weights.get("*")

    def weight(coding: str) -> float:
        if coding in weights:
            return weights[coding]
        if star is not None:
            return star
        return 0.001 if coding == "identity" else 0.0

    best = max(_PREFERENCE, key=lambda c: (weight(c), -_PREFERENCE.index(c)))
    return best if weight(best) > 0.0 else "identity"


def _etag_matches(if_none_match: str, etag: str) -> bool:
    """If-None-Match uses the weak comparison: ``W/`` prefixes are ignored (RFC 9110 13.1.2)."""
    if if_none_match.strip() == "*":
        return True
    opaque = etag.removeprefix("W/")
    return any(
        candidate.strip().removeprefix("W/") == opaque for candidate in if_none_match.split(",")
    )


async def serve_script(request: Request) -> Response:
    """Serves the browser script: GET and HEAD, conditional (304) and compressed (br, gzip);
    with ``{extensions}`` in the path, the build with those extensions."""
    extensions = request.path_params.get("extensions")
    try:
        script = _load(() if extensions is None else parse_extensions(extensions))
    except NotFound as exc:
        return JSONResponse(exc.body(), status_code=404)
    except FileNotFoundError:  # a package built without `make tracker`
        return JSONResponse(
            NotFound("The browser script is not built into this installation.").body(),
            status_code=404,
        )

    variant = script.variants[choose_encoding(request.headers.get("accept-encoding"))]
    headers = {
        "ETag": variant.etag,
        "Cache-Control": CACHE_CONTROL,
        "Vary": "Accept-Encoding",
        "Access-Control-Allow-Origin": "*",
        "Cross-Origin-Resource-Policy": "cross-origin",
        "X-Content-Type-Options": "nosniff",
    }
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None and _etag_matches(if_none_match, variant.etag):
        return Response(status_code=304, headers=headers)

    if variant.encoding is not None:
        headers["Content-Encoding"] = variant.encoding
    headers["Content-Length"] = str(len(variant.body))
    body = b"" if request.method == "HEAD" else variant.body
    return Response(body, headers=headers, media_type=MEDIA_TYPE)
