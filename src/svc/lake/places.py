"""Where the lake's files and the backups go: a local directory or an S3-compatible bucket
(AWS S3, Cloudflare R2, MinIO), behind one small interface of keys (``a/b/c``) and bytes.

A place is named by a URL: an absolute directory path (``/srv/lake``, or ``file:///srv/lake``)
or ``s3://bucket/prefix``; the S3 endpoint, key id, secret and region come from settings
(:class:`S3Access`). The S3 client is boto3 (the AWS SDK for Python, maintained by AWS; R2 and
MinIO speak its protocol): ClickHouse's own ``s3`` table function could write the Parquet
files too, but listing, reading a manifest back, deleting old backups and a manifest written
last all want a client anyway, and a file is then written the same way to either place.

Writes are whole objects: on a directory, to a temporary name, fsynced, then renamed (a
reader never sees half a file); on S3, a PUT (multipart past 8 MB, boto3's transfer manager),
which is atomic by the protocol.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class PlaceError(Exception):
    """A place URL that cannot be used, or an object store that refused."""


@dataclass(frozen=True)
class S3Access:
    """How to reach an S3-compatible service: empty fields are boto3's defaults (AWS, its
    credential chain: ``AWS_*`` variables, ``~/.aws``, an instance role)."""

    endpoint: str = ""
    key_id: str = ""
    secret: str = ""
    region: str = ""


class Place(Protocol):
    """A directory or a bucket prefix, by keys relative to it."""

    url: str

    def put_file(self, key: str, path: Path) -> None:
        """Store the file at ``path`` as ``key`` (replacing it)."""

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` as ``key`` (replacing it)."""

    def get_bytes(self, key: str) -> bytes | None:
        """The bytes of ``key``; None when there is no such object."""

    def keys(self, prefix: str) -> list[str]:
        """Every key under ``prefix`` (``a/``), sorted."""

    def children(self, prefix: str) -> list[str]:
        """The names one level under ``prefix`` (``a/``): ``b`` for ``a/b/...``, sorted."""

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under ``prefix``; how many."""

    def download(self, prefix: str, dest: Path) -> int:
        """Copy every key under ``prefix`` into ``dest`` (keys as paths); how many bytes."""


def open_place(url: str, access: S3Access | None = None) -> Place:
    """The place of ``url``; PlaceError when it is neither an absolute path nor s3://."""
    if url.startswith("s3://"):
        bucket, _, prefix = url[len("s3://") :].partition("/")
        if not bucket:
            raise PlaceError(f"{url}: no bucket (s3://bucket/prefix)")
        return S3Place(bucket, prefix.strip("/"), access or S3Access())
    if url.startswith("file://"):
        url = url[len("file://") :]
    if "://" in url:
        raise PlaceError(f"{url}: a directory path or s3://bucket/prefix")
    path = Path(url)
    if not path.is_absolute():
        raise PlaceError(f"{url}: the directory must be an absolute path")
    return LocalPlace(path)


def is_s3(url: str) -> bool:
    return url.startswith("s3://")


class LocalPlace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = str(root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents and path != self.root.resolve():
            raise PlaceError(f"{key}: outside {self.root}")
        return path

    def put_file(self, key: str, path: Path) -> None:
        dest = self._path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.tmp")
        try:
            shutil.copyfile(path, tmp)
            _fsync(tmp)
            tmp.replace(dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(dest.parent)

    def put_bytes(self, key: str, data: bytes) -> None:
        dest = self._path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(dest.parent)

    def get_bytes(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def keys(self, prefix: str) -> list[str]:
        base = self._path(prefix) if prefix else self.root
        if not base.is_dir():
            return []
        return sorted(
            str(p.relative_to(self.root))
            for p in base.rglob("*")
            if p.is_file() and not p.name.endswith(".tmp")
        )

    def children(self, prefix: str) -> list[str]:
        base = self._path(prefix) if prefix else self.root
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if not p.name.startswith("."))

    def delete_prefix(self, prefix: str) -> int:
        base = self._path(prefix)
        if base.is_file():
            base.unlink()
            return 1
        if not base.exists():
            return 0
        n = sum(1 for p in base.rglob("*") if p.is_file())
        shutil.rmtree(base)
        return n

    def download(self, prefix: str, dest: Path) -> int:
        base = self._path(prefix)
        if not base.is_dir():
            return 0
        shutil.copytree(base, dest, dirs_exist_ok=True)
        return sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())


class S3Place:
    def __init__(self, bucket: str, prefix: str, access: S3Access) -> None:
        self.bucket, self.prefix, self.access = bucket, prefix, access
        self.url = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3  # only where a bucket is used
            from botocore.config import Config

            a = self.access
            self._client = boto3.client(
                "s3",
                endpoint_url=a.endpoint or None,
                aws_access_key_id=a.key_id or None,
                aws_secret_access_key=a.secret or None,
                region_name=a.region or None,
                config=Config(
                    retries={"max_attempts": 5, "mode": "standard"},
                    connect_timeout=10,
                    read_timeout=60,
                    # path-style (endpoint/bucket/key): what MinIO wants and R2 takes
                    s3={"addressing_style": "path"} if a.endpoint else None,
                ),
            )
        return self._client

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def object_url(self, key: str) -> str:
        """The HTTP URL of ``key`` (what ClickHouse's ``S3(...)`` engine is given)."""
        a = self.access
        full = self._key(key)
        if a.endpoint:
            return f"{a.endpoint.rstrip('/')}/{self.bucket}/{full}"
        region = a.region or "us-east-1"
        return f"https://{self.bucket}.s3.{region}.amazonaws.com/{full}"

    def _call(self, what: str, fn: Any, **kw: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kw)
        except ClientError as exc:
            raise PlaceError(f"{self.url}: {what}: {exc}") from exc
        except BotoCoreError as exc:
            raise PlaceError(f"{self.url}: {what}: {exc}") from exc

    def put_file(self, key: str, path: Path) -> None:
        self._call(
            f"upload {key}",
            self.client.upload_file,
            Filename=str(path),
            Bucket=self.bucket,
            Key=self._key(key),
        )

    def put_bytes(self, key: str, data: bytes) -> None:
        self._call(
            f"put {key}", self.client.put_object, Bucket=self.bucket, Key=self._key(key), Body=data
        )

    def get_bytes(self, key: str) -> bytes | None:
        from botocore.exceptions import ClientError

        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise PlaceError(f"{self.url}: get {key}: {exc}") from exc
        data: bytes = resp["Body"].read()
        return data

    def _list(self, prefix: str, delimiter: str = "") -> list[dict[str, Any]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self._key(prefix), Delimiter=delimiter
        )
        try:
            return list(pages)
        except Exception as exc:
            raise PlaceError(f"{self.url}: list {prefix}: {exc}") from exc

    def keys(self, prefix: str) -> list[str]:
        cut = len(self._key(""))
        return sorted(
            str(o["Key"])[cut:] for page in self._list(prefix) for o in page.get("Contents", [])
        )

    def children(self, prefix: str) -> list[str]:
        full = self._key(prefix)
        names: set[str] = set()
        for page in self._list(prefix, "/"):
            names |= {
                str(p["Prefix"])[len(full) :].strip("/") for p in page.get("CommonPrefixes", [])
            }
            names |= {str(o["Key"])[len(full) :] for o in page.get("Contents", [])}
        return sorted(n for n in names if n)

    def size(self, prefix: str) -> int:
        """The bytes of the objects under ``prefix``."""
        return sum(int(o["Size"]) for page in self._list(prefix) for o in page.get("Contents", []))

    def delete_prefix(self, prefix: str) -> int:
        keys = [self._key(k) for k in self.keys(prefix)]
        for i in range(0, len(keys), 1000):
            batch = [{"Key": k} for k in keys[i : i + 1000]]
            self._call(
                f"delete under {prefix}",
                self.client.delete_objects,
                Bucket=self.bucket,
                Delete={"Objects": batch, "Quiet": True},
            )
        return len(keys)

    def download(self, prefix: str, dest: Path) -> int:
        size = 0
        cut = len(self._key(prefix))
        for key in self.keys(prefix):
            full = self._key(key)
            local = dest / full[cut:].lstrip("/")
            local.parent.mkdir(parents=True, exist_ok=True)
            self._call(
                f"download {key}",
                self.client.download_file,
                Bucket=self.bucket,
                Key=full,
                Filename=str(local),
            )
            size += local.stat().st_size
        return size


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    _fsync(directory)
