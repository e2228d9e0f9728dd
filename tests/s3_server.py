"""A real S3-compatible server for tests: moto in server mode (``moto[server]``, PyPI) on a
loopback port, in a thread of the test process, with a boto3 client to look into it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

KEY_ID, SECRET, REGION = "svc-test-key", "svc-test-secret", "us-east-1"


@dataclass
class S3Server:
    endpoint: str
    client: Any

    def env(self, prefix: str) -> dict[str, str]:
        """The ``SVC_<prefix>_S3_*`` settings that reach this server."""
        return {
            f"SVC_{prefix}_S3_ENDPOINT": self.endpoint,
            f"SVC_{prefix}_S3_KEY_ID": KEY_ID,
            f"SVC_{prefix}_S3_SECRET": SECRET,
            f"SVC_{prefix}_S3_REGION": REGION,
        }

    def bucket(self, name: str) -> str:
        self.client.create_bucket(Bucket=name)
        return name

    def get(self, bucket: str, key: str) -> bytes | None:
        try:
            data: bytes = self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None
        return data

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@contextmanager
def s3_server() -> Iterator[S3Server]:
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )
        yield S3Server(endpoint, client)
    finally:
        server.stop()
