"""The svcm configuration file and how a command finds its service.

``svcm login`` writes ``$SVC_CONFIG``, else ``$XDG_CONFIG_HOME/svcm/config.toml``, else
``~/.config/svcm/config.toml``, with mode 0600 (its directory 0700)::

    url = "https://analytics.example.com"
    token = "svc_admin_..."
    project = "svc_proj_acme"   # only when the token is a project's secret key

Where things come from, first found wins:

- direct mode: ``--data-dir`` (and nothing else: a data directory is only used when named);
- the service: ``--url``, ``SVC_URL``, the file's ``url``;
- the credential: ``--token``, ``SVC_TOKEN``, the file's ``token``;
- the project: ``--project``, ``SVC_PROJECT``, the file's ``project``.

The file's token and project are used only with the file's own url, so a token never leaves
for another host named with ``--url``.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

from svc.cli.errors import CliError

KEYS = ("url", "token", "project")


def config_path() -> Path:
    explicit = os.environ.get("SVC_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "svcm" / "config.toml"


@dataclass(frozen=True)
class FileConfig:
    path: Path
    url: str = ""
    token: str = ""
    project: str = ""
    insecure_mode: bool = False  # readable by group or others


def load(path: Path | None = None) -> FileConfig:
    path = path or config_path()
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode
    except FileNotFoundError:
        return FileConfig(path)
    except OSError as exc:
        raise CliError(f"cannot read the config file {path}: {exc.strerror}") from exc
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"the config file {path} is not valid TOML: {exc}") from exc
    values = {k: doc.get(k, "") for k in KEYS}
    for key, value in values.items():
        if not isinstance(value, str):
            raise CliError(f"the config file {path}: `{key}` must be a string")
    return FileConfig(
        path,
        url=str(values["url"]),
        token=str(values["token"]),
        project=str(values["project"]),
        insecure_mode=bool(mode & (stat.S_IRWXG | stat.S_IRWXO)),
    )


def save(values: dict[str, str], path: Path | None = None) -> Path:
    """Write the file atomically with mode 0600 (its directory 0700 when created)."""
    path = path or config_path()
    lines = ["# svcm configuration, written by `svcm login`. Keep it private (mode 0600)."]
    for key in KEYS:
        if values.get(key):
            lines.append(f"{key} = {toml_string(values[key])}")
    text = "\n".join(lines) + "\n"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        raise CliError(f"cannot write the config file {path}: {exc.strerror}") from exc
    return path


def remove(path: Path | None = None) -> bool:
    path = path or config_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise CliError(f"cannot remove the config file {path}: {exc.strerror}") from exc
    return True


def toml_string(value: str) -> str:
    """A TOML basic string."""
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def same_url(a: str, b: str) -> bool:
    return normalize_url(a) == normalize_url(b)


def normalize_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if url and "://" not in url:
        url = "http://" + url
    return url
