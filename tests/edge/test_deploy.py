"""``svcm deploy --edge``: each generated bundle, run as its provider's files say, in its local
runtime in front of a real origin that learned the new secret from ``--data-dir``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import BROWSER_UA
from tests.edge.support import (
    BIN,
    EDGE,
    Edge,
    _spawn,
    has_location,
    require_runtimes,
    visitor_headers,
    workerd_config,
)
from tests.support import ROOT, Server, free_port

SVCM = [sys.executable, "-m", "svc"]


@pytest.fixture(scope="module")
def bare_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An origin with no edge secret of its own: it learns them from svcm deploy."""
    srv = Server(tmp_path_factory.mktemp("deploy-origin") / "data").start()
    yield srv
    srv.stop()


def svcm(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SVCM, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def run_generated(platform: str, out: Path, tmp: Path, origin: str) -> Edge:
    """The generated files run as they are, each in its runtime."""
    port = free_port()
    if platform == "cloudflare-workers":
        text = (out / "wrangler.toml").read_text()
        assert '#           { pattern = "example.com/svc/js*", zone_name' in text
        toml = tomllib.loads(text)
        bindings = dict(toml["vars"])
        for line in (out / ".dev.vars").read_text().splitlines():
            name, _, value = line.partition("=")
            bindings[name] = value
        capnp = out / "workerd.capnp"
        capnp.write_text(workerd_config(toml["main"], port, bindings))
        return _spawn(platform, [str(BIN / "workerd"), "serve", str(capnp)], out, {}, port)
    if platform == "vercel-edge":
        output = out / ".vercel" / "output"
        routes = json.loads((output / "config.json").read_text())["routes"]
        assert {r["src"] for r in routes} == {"^/analytics$", "^/svc/js(/.*)?$"}
        routed = ["/analytics", "/svc/js", "/svc/js/engagement", "/svc/js/404,outbound"]
        assert [p for p in routed if not any(re.match(r["src"], p) for r in routes)] == []
        assert not any(re.match(r["src"], "/svc/jsx") for r in routes)
        func = output / "functions" / "svc-edge.func"
        assert json.loads((func / ".vc-config.json").read_text())["runtime"] == "edge"
        cmd = ["node", str(EDGE / "test" / "edge-runtime-server.mjs"), str(func / "index.js")]
        return _spawn(platform, [*cmd, str(port)], tmp, {}, port)
    if platform == "lambda-edge":
        template = (out / "template.yaml").read_text()
        needed = (
            "PathPattern: /analytics",
            "PathPattern: /svc/js*\n",
            "EventType: origin-request",
            "IncludeBody: true",
            "Runtime: nodejs20.x",
            "Code: lambda/",
        )
        assert [n for n in needed if n not in template] == []
        cmd = ["node", str(EDGE / "test" / "cloudfront.mjs"), str(out / "lambda" / "index.mjs")]
        return _spawn(platform, [*cmd, str(port), "origin-request", origin], tmp, {}, port)
    if platform == "bun":
        unit = (out / "svc-edge.service").read_text()
        assert f"bun {(out / 'server.js').resolve()}" in unit
        # `PORT=<port> bun DIR/server.js`, here on loopback and behind the test as its proxy
        env = {"PORT": str(port), "HOST": "127.0.0.1", "SVC_EDGE_TRUSTED_PROXIES": "127.0.0.1/32"}
        return _spawn(platform, [str(BIN / "bun"), str(out / "server.js")], tmp, env, port)
    raise ValueError(platform)


# Two platforms register their secret in the origin's data directory, two over HTTP with the
# project's secret key (POST /projects/{id}/edge-secrets): either way it signs for that project
# alone.
REGISTERED_BY = {
    "cloudflare-workers": "data-dir",
    "vercel-edge": "http",
    "lambda-edge": "data-dir",
    "bun": "http",
}


@pytest.mark.parametrize("platform", ["cloudflare-workers", "vercel-edge", "lambda-edge", "bun"])
def test_a_generated_bundle_runs_in_front_of_the_origin(
    platform: str, bare_origin: Server, tmp_path: Path
) -> None:
    require_runtimes()
    created = bare_origin.create_project("dep-" + uuid.uuid4().hex[:8])
    pid, public, secret = created["id"], created["keys"]["public"], created["keys"]["secret"]
    other = bare_origin.create_project("dep-" + uuid.uuid4().hex[:8])
    out = tmp_path / "out"
    where = (
        ["--data-dir", str(bare_origin.data_dir)]
        if REGISTERED_BY[platform] == "data-dir"
        else ["--token", secret]
    )
    done = svcm(
        "deploy", "--edge", platform, "--project", pid, "--origin", bare_origin.url,
        "--out", str(out), *where,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "registered with the origin" in done.stderr
    if REGISTERED_BY[platform] == "data-dir":
        registered = (bare_origin.data_dir / "edge-secrets").read_text().splitlines()
        assert any(line.split()[2:4] == [pid, platform] for line in registered)
        assert oct((bare_origin.data_dir / "edge-secrets").stat().st_mode & 0o777) == "0o600"
    else:
        listed = httpx.get(
            f"{bare_origin.url}/projects/{pid}/edge-secrets",
            headers={"authorization": f"Bearer {secret}"},
        ).json()["edgeSecrets"]
        assert [(s["projectId"], s["provider"]) for s in listed] == [(pid, platform)]
        assert "secret" not in listed[0]

    edge = run_generated(platform, out, tmp_path, bare_origin.url)
    try:
        if has_location(platform):
            headers = visitor_headers(platform, "81.2.69.160", "JP")
            country = "JP"
        else:
            headers = visitor_headers(platform, "8.8.8.8")
            country = "US"
        r = httpx.post(
            f"{edge.url}/analytics?key={public}",
            content=json.dumps({"event": "page_view", "url": "https://acme.test/deployed"}),
            headers={"content-type": "text/plain", "user-agent": BROWSER_UA, **headers},
            timeout=30,
        )
        assert r.status_code == 200, (r.text, edge.output())
        # the same edge, with a key of another project: its secret may not sign for it
        r = httpx.post(
            f"{edge.url}/analytics?key={other['keys']['public']}",
            content=json.dumps({"event": "page_view", "url": "https://acme.test/other"}),
            headers={"content-type": "text/plain", "user-agent": BROWSER_UA, **headers},
            timeout=30,
        )
        assert r.status_code == 200, (r.text, edge.output())
        bad = httpx.post(f"{edge.url}/analytics?key={public}", content=b"{")
        assert bad.status_code == 400 and bad.headers["svc-edge"].endswith("answered")
        script = httpx.get(edge.url + "/svc/js")
        assert script.status_code == 200 and b"sendBeacon" in script.content
        build = httpx.get(edge.url + "/svc/js/engagement")
        direct = httpx.get(
            bare_origin.url + "/svc/js/engagement", headers={"accept-encoding": "identity"}
        )
        assert build.status_code == 200 and build.content == direct.content
    finally:
        edge.stop()
    bare_origin.wait_loaded()
    [event] = bare_origin.events(pid, secret)
    assert event["country"] == country  # the signature with the registered secret verified
    [foreign] = bare_origin.events(other["id"], other["keys"]["secret"])
    assert foreign["country"] == ""  # ignored: the loopback edge's own address, no country


def test_without_out_it_prints_the_providers_commands(tmp_path: Path) -> None:
    """No wrangler on PATH: the files are written in ./svc-edge-<name>-<provider> and the
    commands to run are printed, secret first."""
    done = svcm(
        "deploy", "--edge", "cloudflare-workers", "--project", "svc_proj_acme",
        "--origin", "https://svc.example.com",
        cwd=tmp_path, env={"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = tmp_path / "svc-edge-acme-cloudflare-workers"
    assert (out / "worker.js").exists() and (out / "wrangler.toml").exists()
    assert "wrangler is not installed" in done.stderr
    assert "does not know this edge's secret" in done.stderr
    lines = done.stdout.splitlines()
    secret = lines[0]
    assert secret.startswith("svc_edge_")
    assert f"export SVC_EDGE_SECRET={secret}" in lines
    # the line for the origin's edge-secrets: key id, secret, the one project it signs for
    filed = lines[1].split()
    assert filed[:4] == [secret.split("_")[2], secret, "svc_proj_acme", "cloudflare-workers"]
    assert any(line.endswith("wrangler deploy --config wrangler.toml") for line in lines)
    assert any("wrangler secret put SVC_EDGE_SECRET" in line for line in lines)
    toml = tomllib.loads((out / "wrangler.toml").read_text())
    assert toml["vars"] == {"SVC_ORIGIN": "https://svc.example.com", "SVC_PROJECT": "svc_proj_acme"}
    assert secret not in (out / "worker.js").read_text()  # a Cloudflare secret stays a secret


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--edge", "bun", "--origin", "http://x"], "give --project"),
        (["--edge", "bun", "--project", "acme", "--origin", "http://x"], "give --project"),
        (["--edge", "bun", "--project", "svc_proj_acme"], "give --origin"),
        (["--edge", "bun", "--project", "svc_proj_acme", "--origin", "ftp://x"], "give --origin"),
    ],
)
def test_bad_arguments(args: list[str], message: str, tmp_path: Path) -> None:
    done = svcm("deploy", *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr
