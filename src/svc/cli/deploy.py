"""``svcm deploy``: not available yet, and saying so plainly.

The specification names edge deployment for the ingestion runtime (Bun, Cloudflare Workers,
Vercel Edge, Lambda@Edge) and marks private-network (VPC) deployment as roadmap only. Neither
ships in this release: ``--edge`` names the providers that will be supported, ``--vpc`` says it
is not available, and both exit with status 1 without touching anything.
"""

from __future__ import annotations

import argparse

from svc.cli.common import Context, command, output_options
from svc.cli.errors import CliError, UsageError

EDGE_PROVIDERS = {
    "bun": "Bun",
    "cloudflare-workers": "Cloudflare Workers",
    "vercel-edge": "Vercel Edge",
    "lambda-edge": "AWS Lambda@Edge",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "deploy",
        summary="deploy ingestion to an edge runtime (not available yet)",
        description="Deploy a project's ingestion to an edge runtime, or a private-network "
        "(VPC) instance.\nNot available in this release: --edge will support "
        + ", ".join(EDGE_PROVIDERS)
        + "\nin a later one; --vpc is roadmap only (the specification marks it as not "
        "available).\nBoth exit with status 1 and change nothing.",
        examples=[
            "svcm deploy --edge cloudflare-workers --project svc_proj_acme",
            "svcm deploy --vpc aws --project svc_proj_acme",
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


def run_deploy(ctx: Context) -> int:
    if ctx.opt("vpc") is not None:
        raise CliError(
            "private-network (VPC) deployment is not available: the specification lists it as "
            "roadmap only, and this release does not ship it"
        )
    provider = ctx.opt("edge")
    if provider:
        others = ", ".join(p for p in EDGE_PROVIDERS if p != provider)
        raise CliError(
            f"edge deployment to {EDGE_PROVIDERS[provider]} is not available yet; a later "
            f"release will support {provider} (and {others}). Until then, run the service "
            "with `svcm serve`"
        )
    raise UsageError("give --edge PROVIDER or --vpc")
