"""The edge runtimes on loopback, each from edge/node_modules (``make edge-deps``: npm ci).

- Cloudflare Workers: ``workerd`` (the runtime Cloudflare runs, as wrangler dev starts it) with
  a config that binds the worker's variables, lets it reach loopback (the ``internet`` service
  allows ``local``), and reads ``request.cf`` from a ``cf-blob`` header, as miniflare does.
- Vercel Edge: ``edge-runtime`` (Vercel's runtime for Node, @edge-runtime/vm) running the
  bundle as a script (edge/test/edge-runtime-server.mjs).
- Lambda@Edge: the Node 20 module under a stand-in for CloudFront that turns each HTTP request
  into a CloudFront request event and the generated response back (edge/test/cloudfront.mjs).
- Bun: ``bun server.js``.

Each platform's way of telling the visitor (:func:`visitor_headers`) is what the platform
itself adds in production: Cloudflare's CF-Connecting-IP and request.cf, Vercel's x-real-ip
and x-vercel-ip-*, CloudFront's clientIp and CloudFront-Viewer-*, and for Bun a trusted
proxy's X-Forwarded-For.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.support import ROOT, free_port

EDGE = ROOT / "edge"
BIN = EDGE / "node_modules" / ".bin"
BUNDLES = ROOT / "src" / "svc" / "static" / "edge"
PLATFORMS = ("cloudflare-workers", "vercel-edge", "lambda-edge", "bun")
SECRET = "svc_edge_test1_" + "x" * 40
METRICS_TOKEN = "edge-tests-metrics-" + "m" * 24  # the origin's SVC_INTERNAL_METRICS_TOKEN


def require_runtimes() -> None:
    """Skip, saying why, when the npm packages are not installed (``make edge-deps``)."""
    missing = [name for name in ("workerd", "bun", "esbuild") if not (BIN / name).exists()]
    if not (EDGE / "node_modules" / "edge-runtime").is_dir():
        missing.append("edge-runtime")
    if missing or shutil.which("node") is None:
        pytest.skip(f"edge runtimes not installed ({', '.join(missing) or 'node'}): make edge-deps")


@dataclass
class Edge:
    platform: str
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


def _wait(edge: Edge, timeout: float = 30.0) -> Edge:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if edge.proc.poll() is not None:
            raise RuntimeError(f"{edge.platform} exited: {edge.output()}")
        try:
            httpx.get(edge.url + "/ready", timeout=2)
            return edge
        except httpx.HTTPError:
            time.sleep(0.05)
    edge.stop()
    raise RuntimeError(f"{edge.platform} did not answer in {timeout}s: {edge.output()}")


def _spawn(platform: str, cmd: list[str], tmp: Path, env: dict[str, str], port: int) -> Edge:
    log = tmp / f"{platform}-{port}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd, cwd=str(tmp), env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    return _wait(Edge(platform, proc, port, log))


def workerd_config(worker: str, port: int, bindings: dict[str, str]) -> str:
    binds = ",\n    ".join(
        f"(name = {json.dumps(k)}, text = {json.dumps(v)})" for k, v in bindings.items()
    )
    return f"""using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .edge),
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:{port}", http = (cfBlobHeader = "cf-blob"),
     service = "main"),
  ],
);
const edge :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed {json.dumps(worker)})],
  compatibilityDate = "2025-01-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [
    {binds}
  ],
);
"""


def start(platform: str, bundle: Path, tmp: Path, config: dict[str, str]) -> Edge:
    """``bundle`` (as built, or as ``svcm deploy`` wrote it) running in its runtime, with
    ``config`` as its environment (baked in for Lambda@Edge, which has none)."""
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    if platform == "cloudflare-workers":
        worker = tmp / f"worker-{port}.js"
        shutil.copy(bundle, worker)
        capnp = tmp / f"edge-{port}.capnp"
        capnp.write_text(workerd_config(worker.name, port, config))
        return _spawn(platform, [str(BIN / "workerd"), "serve", str(capnp)], tmp, {}, port)
    if platform == "vercel-edge":
        return _spawn(
            platform,
            [
                "node",
                str(EDGE / "test" / "edge-runtime-server.mjs"),
                str(bundle),
                str(port),
                json.dumps(config),
            ],
            tmp,
            {},
            port,
        )
    if platform == "lambda-edge":
        event_type = config.get("EVENT_TYPE", "origin-request")
        return _spawn(
            platform,
            [
                "node",
                str(EDGE / "test" / "cloudfront.mjs"),
                str(bundle),
                str(port),
                event_type,
                config.get("SVC_ORIGIN", ""),
            ],
            tmp,
            {},
            port,
        )
    if platform == "bun":
        env = {"PORT": str(port), "HOST": "127.0.0.1", **config}
        return _spawn(platform, [str(BIN / "bun"), str(bundle)], tmp, env, port)
    raise ValueError(platform)


def built(platform: str, tmp: Path, config: dict[str, str]) -> Path:
    """The committed bundle of ``platform``; for Lambda@Edge, with ``config`` baked in."""
    from svc.cli.deploy import BUNDLES as FILES
    from svc.cli.deploy import bake, bundle_text

    if platform != "lambda-edge":
        return BUNDLES / FILES[platform]
    path = tmp / f"lambda-{time.monotonic_ns()}.mjs"
    path.write_text(bake(bundle_text(platform), config))
    return path


def visitor_headers(
    platform: str, ip: str, country: str = "", region: str = "", city: str = ""
) -> dict[str, str]:
    """What the platform itself tells the edge of the visitor."""
    if platform == "cloudflare-workers":
        cf = {k: v for k, v in (("country", country), ("regionCode", region), ("city", city)) if v}
        return {"cf-connecting-ip": ip, "cf-blob": json.dumps(cf)}
    if platform == "vercel-edge":
        out = {"x-real-ip": ip}
        if country:
            out["x-vercel-ip-country"] = country
        if region:
            out["x-vercel-ip-country-region"] = region
        if city:
            out["x-vercel-ip-city"] = quote(city)
        return out
    if platform == "lambda-edge":
        out = {"x-test-client-ip": ip}
        if country:
            out["cloudfront-viewer-country"] = country
        if region:
            out["cloudfront-viewer-country-region"] = region
        if city:
            out["cloudfront-viewer-city"] = quote(city)
        return out
    if platform == "bun":  # from a trusted proxy on loopback; Bun knows no location
        return {"x-forwarded-for": ip}
    raise ValueError(platform)


def has_location(platform: str) -> bool:
    return platform != "bun"
