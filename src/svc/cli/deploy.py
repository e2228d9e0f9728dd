"""``svcm deploy --edge <provider> --project <id> --origin <url>``: ingestion at the edge.

Builds what the provider needs from the bundles in ``svc/static/edge/`` (built from ``edge/``):

- ``cloudflare-workers``: ``worker.js`` and ``wrangler.toml`` (the origin and project as
  ``[vars]``; the secret in ``.dev.vars`` for ``wrangler dev``, and ``wrangler secret put`` for
  the deployed worker);
- ``vercel-edge``: a Build Output API v3 folder, ``.vercel/output/`` (``config.json`` routing
  ``/analytics``, ``/svc/js`` and ``/svc/js/<extensions>`` to the edge function
  ``svc-edge.func``);
- ``lambda-edge``: ``lambda/index.mjs`` and ``template.yaml`` (CloudFormation: the function, a
  version, and a CloudFront distribution with behaviours for ``/analytics`` and ``/svc/js*``);
- ``bun``: ``server.js`` (``PORT=8787 bun server.js``) and ``svc-edge.service`` (systemd).

The configuration (origin URL, project, edge secret) is baked into the bundle's first lines
(Lambda@Edge has no environment variables), but for Cloudflare, whose secret stays a secret
binding. The edge's secret ``svc_edge_<id>_<random>`` signs for this project alone and is
registered with the origin: given a credential for it (``--token``, ``SVC_TOKEN`` or the one
``svcm login`` saved for that URL: the admin token or the project's secret key) the origin makes
it over HTTP (``POST /projects/{id}/edge-secrets``); with ``--data-dir`` it is made here and
written to that data directory's ``edge-secrets`` (0600; a running origin reads it within a
second); else it is made here and printed with the line to add to that file.

Then, without ``--out``, the provider's CLI runs when it is installed and logged in
(``wrangler deploy``, ``vercel deploy --prebuilt``, ``aws cloudformation package/deploy``);
otherwise the exact commands are printed. ``--out DIR`` writes the files and stops.
``--vpc`` is not available (roadmap only in the specification).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.resources
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from svc.cli.common import Context, command, output_options
from svc.cli.config import same_url
from svc.cli.connection import HttpApi, error_of
from svc.cli.errors import CliError, UsageError
from svc.credentials import edge_key_id as key_id
from svc.credentials import new_edge_secret

EDGE_PROVIDERS = {
    "bun": "Bun",
    "cloudflare-workers": "Cloudflare Workers",
    "vercel-edge": "Vercel Edge",
    "lambda-edge": "AWS Lambda@Edge",
}
BUNDLES = {
    "bun": "bun.js",
    "cloudflare-workers": "cloudflare.js",
    "vercel-edge": "vercel.js",
    "lambda-edge": "lambda.mjs",
}
PLACEHOLDER = "const SVC_EDGE_CONFIG = {};"
SECRETS_FILE = "edge-secrets"
_PROJECT_RE = re.compile(r"svc_proj_[a-z0-9][a-z0-9-]{0,39}")
# CloudFront's managed policies (the same ids in every account)
_CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
_CACHING_OPTIMIZED = "658327ea-f89d-4fab-a63d-7e88639e58f6"
_ALL_VIEWER_AND_CLOUDFRONT_HEADERS = "33f36d7e-f396-46d9-90e0-52428a34d9dc"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "deploy",
        summary="deploy ingestion to an edge runtime",
        description="Build and deploy a project's ingestion to an edge runtime:\n"
        + ", ".join(EDGE_PROVIDERS)
        + ".\nThe edge validates POST /analytics, answers bad input itself, and forwards the "
        "rest to the origin\n(--origin) with the visitor's address and location in headers "
        "signed with a new edge secret\nfor that project alone, registered with the origin "
        "(over HTTP with --token, or in --data-dir)\nor printed. With --out DIR it writes the "
        "files and stops; without, it runs the provider's CLI\nwhen installed and logged in, "
        "else prints the commands. See docs/edge.md.\n--vpc (private-network deployment) is "
        "not available: roadmap only.",
        examples=[
            "svcm deploy --edge cloudflare-workers --project svc_proj_acme "
            "--origin https://svc.example.com --token svc_live_SECRET_KEY",
            "svcm deploy --edge bun --project svc_proj_acme --origin http://10.0.0.5:8080 "
            "--out ./edge --data-dir /var/lib/svc",
        ],
        handler=run_deploy,
        parents=[output_options(json=False)],
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--edge",
        metavar="PROVIDER",
        choices=list(EDGE_PROVIDERS),
        help="edge runtime: " + ", ".join(EDGE_PROVIDERS),
    )
    where.add_argument(
        "--vpc",
        metavar="PROVIDER",
        nargs="?",
        const="",
        help="private-network deployment (not available)",
    )
    p.add_argument("-p", "--project", metavar="PROJECT", help="the project to deploy")
    p.add_argument(
        "--origin",
        metavar="URL",
        help="the origin's base URL, where the edge forwards (https://svc.example.com)",
    )
    p.add_argument("--out", metavar="DIR", help="write the files here and stop")
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the origin's data directory: register the new edge secret there",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help="the admin token or the project's secret key: register the new edge secret with "
        "the origin over HTTP (env SVC_TOKEN; default: the one `svcm login` saved for --origin)",
    )
    p.add_argument(
        "--secret",
        metavar="SECRET",
        help="use this edge secret instead of a new one (one the origin already trusts)",
    )
    p.add_argument(
        "--name", metavar="NAME", help="the deployment's name (default: svc-edge-<project>)"
    )


@dataclass
class Plan:
    """What a deployment writes and runs."""

    provider: str
    out: Path
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # path: (text, mode)
    commands: list[list[str]] = field(default_factory=list)  # run in `out`, in order
    stdin: dict[int, str] = field(default_factory=dict)  # command index: its standard input
    login_check: list[str] | None = None
    notes: list[str] = field(default_factory=list)


def new_secret() -> str:
    return new_edge_secret()


def bundle_text(provider: str) -> str:
    """The built bundle for ``provider`` (``svc/static/edge/``)."""
    try:
        return (
            importlib.resources.files("svc")
            .joinpath("static/edge/" + BUNDLES[provider])
            .read_text(encoding="utf-8")
        )
    except FileNotFoundError as exc:
        raise CliError(
            "the edge bundles are not in this installation (run `make edge` in a checkout)"
        ) from exc


def bake(text: str, config: dict[str, str]) -> str:
    """The bundle with ``config`` as its SVC_EDGE_CONFIG."""
    if PLACEHOLDER not in text:
        raise CliError("the edge bundle has no configuration line: rebuild it (`make edge`)")
    baked = "const SVC_EDGE_CONFIG = " + json.dumps(config, sort_keys=True) + ";"
    return text.replace(PLACEHOLDER, baked, 1)


def _toml(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string for these values


def plan(
    provider: str,
    *,
    project: str,
    origin: str,
    secret: str,
    out: Path,
    name: str,
) -> Plan:
    """The files and commands of a deployment (nothing is written or run here)."""
    config = {"SVC_ORIGIN": origin, "SVC_PROJECT": project}
    secret_config = {**config, "SVC_EDGE_SECRET": secret}
    p = Plan(provider, out)
    if provider == "cloudflare-workers":
        p.files["worker.js"] = (bake(bundle_text(provider), config), 0o644)
        p.files["wrangler.toml"] = (
            "# svc at the edge on Cloudflare Workers (svcm deploy; docs/edge.md)\n"
            f"name = {_toml(name)}\n"
            'main = "worker.js"\n'
            'compatibility_date = "2025-01-01"\n'
            "workers_dev = true\n"
            "# A first-party domain (the site's own): route these paths to this worker\n"
            "# (/svc/js* is the script and its builds with extensions, /svc/js/engagement,...).\n"
            '# routes = [{ pattern = "example.com/analytics", zone_name = "example.com" },\n'
            '#           { pattern = "example.com/svc/js*", zone_name = "example.com" }]\n'
            "\n[vars]\n"
            f"SVC_ORIGIN = {_toml(origin)}\n"
            f"SVC_PROJECT = {_toml(project)}\n"
            "# SVC_EDGE_SECRET is a secret: `wrangler secret put SVC_EDGE_SECRET`\n"
            "# (and .dev.vars for `wrangler dev`)\n",
            0o644,
        )
        p.files[".dev.vars"] = (f"SVC_EDGE_SECRET={secret}\n", 0o600)
        p.commands = [
            ["wrangler", "deploy", "--config", "wrangler.toml"],
            ["wrangler", "secret", "put", "SVC_EDGE_SECRET", "--config", "wrangler.toml"],
        ]
        p.stdin[1] = secret
        p.login_check = ["wrangler", "whoami"]
    elif provider == "vercel-edge":
        fn = ".vercel/output/functions/svc-edge.func/"
        p.files[fn + "index.js"] = (bake(bundle_text(provider), secret_config), 0o600)
        p.files[fn + ".vc-config.json"] = (
            json.dumps({"runtime": "edge", "entrypoint": "index.js"}, indent=2) + "\n",
            0o644,
        )
        p.files[".vercel/output/config.json"] = (
            json.dumps(
                {
                    "version": 3,
                    "routes": [
                        {"src": "^/analytics$", "dest": "/svc-edge"},
                        {"src": "^/svc/js(/.*)?$", "dest": "/svc-edge"},
                    ],
                },
                indent=2,
            )
            + "\n",
            0o644,
        )
        p.commands = [["vercel", "deploy", "--prebuilt", "--prod"]]
        p.login_check = ["vercel", "whoami"]
    elif provider == "lambda-edge":
        code = bake(bundle_text(provider), secret_config)
        p.files["lambda/index.mjs"] = (code, 0o600)
        version = hashlib.sha256(code.encode()).hexdigest()[:12]
        p.files["template.yaml"] = (_cloudformation(name, origin, version), 0o644)
        stack = name
        p.commands = [
            [
                "aws",
                "cloudformation",
                "package",
                "--region",
                "us-east-1",
                "--template-file",
                "template.yaml",
                "--s3-bucket",
                os.environ.get("SVC_DEPLOY_S3_BUCKET", "<an S3 bucket of yours in us-east-1>"),
                "--output-template-file",
                "packaged.yaml",
            ],
            [
                "aws",
                "cloudformation",
                "deploy",
                "--region",
                "us-east-1",
                "--template-file",
                "packaged.yaml",
                "--stack-name",
                stack,
                "--capabilities",
                "CAPABILITY_IAM",
            ],
        ]
        p.login_check = ["aws", "sts", "get-caller-identity"]
        if "SVC_DEPLOY_S3_BUCKET" not in os.environ:
            p.login_check = None  # the bucket must be named first
            p.notes.append(
                "set SVC_DEPLOY_S3_BUCKET to an S3 bucket in us-east-1 for the function's code "
                "(Lambda@Edge functions live in us-east-1)"
            )
    elif provider == "bun":
        p.files["server.js"] = (bake(bundle_text(provider), secret_config), 0o600)
        p.files["svc-edge.service"] = (_systemd(name, out), 0o644)
        p.notes.append(f"run it: PORT=8787 bun {shlex.quote(str(out / 'server.js'))}")
        p.notes.append(
            "as a service: sudo cp "
            + shlex.quote(str(out / "svc-edge.service"))
            + f" /etc/systemd/system/{name}.service && sudo systemctl enable --now {name}"
        )
    return p


def _cloudformation(name: str, origin: str, version: str) -> str:
    parts = urlsplit(origin)
    host = parts.hostname or ""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    policy = "https-only" if https else "http-only"
    origin_path = parts.path.rstrip("/")
    return f"""\
# svc at the edge on AWS Lambda@Edge (svcm deploy; docs/edge.md). Deploy in us-east-1:
#   aws cloudformation package --template-file template.yaml --s3-bucket BUCKET \\
#       --output-template-file packaged.yaml --region us-east-1
#   aws cloudformation deploy --template-file packaged.yaml --stack-name {name} \\
#       --capabilities CAPABILITY_IAM --region us-east-1
# The function's configuration (origin, project, edge secret) is baked into
# lambda/index.mjs: Lambda@Edge has no environment variables.
AWSTemplateFormatVersion: "2010-09-09"
Description: svc edge ingestion ({name})
Resources:
  EdgeRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Allow
            Principal:
              Service: [lambda.amazonaws.com, edgelambda.amazonaws.com]
            Action: sts:AssumeRole
      ManagedPolicyArns:
        - arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole
  EdgeFunction:
    Type: AWS::Lambda::Function
    Properties:
      FunctionName: {name}
      Runtime: nodejs20.x
      Handler: index.handler
      Code: lambda/
      MemorySize: 128
      Timeout: 30
      Role: !GetAtt EdgeRole.Arn
  # A new version whenever the code changes (its hash is in the name)
  EdgeFunctionVersion{version}:
    Type: AWS::Lambda::Version
    Properties:
      FunctionName: !Ref EdgeFunction
  Distribution:
    Type: AWS::CloudFront::Distribution
    Properties:
      DistributionConfig:
        Enabled: true
        Comment: svc edge ingestion ({name})
        # A first-party domain: add Aliases and a ViewerCertificate (ACM, us-east-1), then a
        # CNAME (or ALIAS) record for it to this distribution's domain name.
        Origins:
          - Id: svc-origin
            DomainName: {host}
            OriginPath: "{origin_path}"
            CustomOriginConfig:
              OriginProtocolPolicy: {policy}
              HTTPPort: {port if not https else 80}
              HTTPSPort: {port if https else 443}
        DefaultCacheBehavior:
          TargetOriginId: svc-origin
          ViewerProtocolPolicy: redirect-to-https
          CachePolicyId: {_CACHING_DISABLED}
        CacheBehaviors:
          # POST /analytics: the function runs at origin-request, where CloudFront has added
          # the CloudFront-Viewer-* location headers and gives bodies up to 1 MB
          - PathPattern: /analytics
            TargetOriginId: svc-origin
            ViewerProtocolPolicy: https-only
            AllowedMethods: [GET, HEAD, OPTIONS, PUT, PATCH, POST, DELETE]
            CachePolicyId: {_CACHING_DISABLED}
            OriginRequestPolicyId: {_ALL_VIEWER_AND_CLOUDFRONT_HEADERS}
            LambdaFunctionAssociations:
              - EventType: origin-request
                IncludeBody: true
                LambdaFunctionARN: !Ref EdgeFunctionVersion{version}
          # GET /svc/js and /svc/js/<extensions>: cached by CloudFront from the origin
          # (Cache-Control, ETag; the path is the cache key)
          - PathPattern: /svc/js*
            TargetOriginId: svc-origin
            ViewerProtocolPolicy: redirect-to-https
            CachePolicyId: {_CACHING_OPTIMIZED}
Outputs:
  DistributionDomainName:
    Value: !GetAtt Distribution.DomainName
  FunctionVersion:
    Value: !Ref EdgeFunctionVersion{version}
"""


def _systemd(name: str, out: Path) -> str:
    where = out.resolve()
    return f"""\
# svc at the edge on Bun (svcm deploy; docs/edge.md)
[Unit]
Description=svc edge ingestion ({name})
After=network-online.target
Wants=network-online.target

[Service]
Environment=PORT=8787
# Behind a local proxy (nginx, a load balancer): trust its X-Forwarded-For
# Environment=SVC_EDGE_TRUSTED_PROXIES=127.0.0.1/32
ExecStart=/usr/bin/env bun {where / "server.js"}
Restart=always
DynamicUser=yes
NoNewPrivileges=yes
ProtectSystem=strict

[Install]
WantedBy=multi-user.target
"""


def register_secret(data_dir: Path, secret: str, project: str, provider: str) -> Path:
    """Append ``secret``, scoped to ``project``, to the origin's ``<data dir>/edge-secrets``
    (0600): ``<key id> <secret> <project> <provider> <created>``."""
    if not data_dir.is_dir():
        raise CliError(f"{data_dir} is not a directory: give the origin's data directory")
    path = data_dir / SECRETS_FILE
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, secrets_line(secret, project, provider, created).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def secrets_line(secret: str, project: str, provider: str, created: str = "") -> str:
    """The ``edge-secrets`` line of a secret that signs for ``project`` alone."""
    created = created or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{key_id(secret)} {secret} {project} {provider} {created}\n"


def register_remote(origin: str, token: str, project: str, provider: str) -> str:
    """A new secret for ``project``, made by the origin (``POST
    /projects/{project}/edge-secrets`` with the admin token or the project's secret key)."""
    api = HttpApi(origin, token)
    try:
        reply = api.send("POST", f"/projects/{project}/edge-secrets", body={"provider": provider})
    finally:
        api.close()
    if reply.status_code != 201:
        raise error_of(reply)
    secret = reply.json().get("secret")
    if not isinstance(secret, str) or not key_id(secret):
        raise CliError(f"the origin at {origin} did not answer with an edge secret")
    return secret


def write(p: Plan) -> None:
    for rel, (text, mode) in p.files.items():
        path = p.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, path)


def _logged_in(check: list[str]) -> bool:
    if shutil.which(check[0]) is None:
        return False
    try:
        done = subprocess.run(check, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _shell(p: Plan, i: int, cmd: list[str]) -> str:
    text = "cd " + shlex.quote(str(p.out)) + " && " + shlex.join(cmd)
    if i in p.stdin:
        text = 'printf %s "$SVC_EDGE_SECRET" | ' + shlex.join(cmd)
        text = "cd " + shlex.quote(str(p.out)) + " && " + text
    return text


def run_deploy(ctx: Context) -> int:
    if ctx.opt("vpc") is not None:
        raise CliError(
            "private-network (VPC) deployment is not available: the specification lists it as "
            "roadmap only, and this release does not ship it"
        )
    provider = ctx.opt("edge")
    if not provider:
        raise UsageError("give --edge PROVIDER or --vpc")
    project = ctx.opt("project")
    if not project or not _PROJECT_RE.fullmatch(project):
        raise UsageError("give --project svc_proj_<name>: the project whose events this edge sends")
    origin = (ctx.opt("origin") or "").rstrip("/")
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise UsageError(
            "give --origin URL: the origin's base URL, such as https://svc.example.com"
        )
    data_dir = ctx.opt("data_dir")
    token = ctx.opt("token") or os.environ.get("SVC_TOKEN", "")
    if not token and not data_dir and not ctx.opt("secret"):
        saved = ctx.file
        if saved.token and same_url(origin, saved.url):
            token = saved.token
    if token and data_dir:
        raise UsageError("give either --token (register over HTTP) or --data-dir, not both")
    remote = bool(token) and not ctx.opt("secret")
    name = ctx.opt("name") or "svc-edge-" + project.removeprefix("svc_proj_")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", name):
        raise UsageError("--name: lower-case letters, digits and dashes, at most 63")
    out_opt = ctx.opt("out")
    out = Path(out_opt) if out_opt else Path.cwd() / f"{name}-{provider}"
    if remote:
        secret = register_remote(origin, token, project, provider)
        ctx.out.done(
            f"edge secret {key_id(secret)} registered with the origin at {origin} for {project}"
        )
    else:
        secret = ctx.opt("secret") or new_secret()
    p = plan(provider, project=project, origin=origin, secret=secret, out=out, name=name)
    write(p)
    out_ = ctx.out
    out_.done(f"{EDGE_PROVIDERS[provider]} files for {project} in {out}: " + ", ".join(p.files))

    if data_dir:
        path = register_secret(Path(data_dir), secret, project, provider)
        out_.done(f"edge secret registered with the origin in {path} (read within a second)")
    elif not ctx.opt("secret") and not remote:
        out_.warn(
            "the origin does not know this edge's secret yet: give --token (the admin token or "
            "the project's secret key) to register it over HTTP, or append this line to "
            "<data dir>/edge-secrets on the origin (it signs for this project alone), after "
            "the secret:"
        )
        out_.secret("edge secret", secret)
        out_.line(secrets_line(secret, project, provider).rstrip("\n"))

    for note in p.notes:
        out_.note(note)
    if out_opt or not p.commands:
        return 0
    env_line = "export SVC_EDGE_SECRET=" + shlex.quote(secret) if p.stdin else ""
    if p.login_check is None or not _logged_in(p.login_check):
        tool = p.commands[0][0]
        why = "is not installed" if shutil.which(tool) is None else "is not logged in"
        out_.note(f"{tool} {why}: deploy with")
        if env_line:
            out_.line(env_line)
        for i, cmd in enumerate(p.commands):
            out_.line(_shell(p, i, cmd))
        return 0
    for i, cmd in enumerate(p.commands):
        out_.note("running: " + shlex.join(cmd))
        done = subprocess.run(cmd, cwd=out, input=p.stdin.get(i), text=True, check=False)
        if done.returncode != 0:
            raise CliError(f"{shlex.join(cmd)} failed with status {done.returncode}")
    out_.done(f"deployed to {EDGE_PROVIDERS[provider]}")
    return 0
