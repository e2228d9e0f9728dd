"""How a setting is named and read from text: ``SVC_<NAME>`` in the environment,
``--<name>`` on the command line, and a value's text read as the setting's type
(:mod:`svc.settings` declares the settings)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_type_hints

__all__ = ["convert", "env_name", "flag_name", "values_from"]


def env_name(field_name: str) -> str:
    return "SVC_" + field_name.upper()


def flag_name(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def convert(name: str, typ: Any, raw: str) -> Any:
    """``raw`` read as ``typ`` (bool, int, float, Path or text); ValueError naming the
    setting's variable when it cannot be."""
    try:
        if typ is bool:
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
        if typ is int:
            return int(raw.replace("_", ""))
        if typ is float:
            return float(raw)
        if typ is Path:
            return Path(raw)
        return raw
    except ValueError as exc:
        raise ValueError(f"setting {env_name(name)}: cannot read {raw!r} as {typ}") from exc


def values_from(
    cls: type, environ: Mapping[str, str] | None, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The values of the settings dataclass ``cls`` named by ``SVC_<NAME>`` variables of
    ``environ`` (the process's by default), then by the non-None ``overrides`` (a flag's
    text read as its setting's type), each read as its field's type."""
    env = os.environ if environ is None else environ
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        raw = env.get(env_name(f.name))
        if raw is not None:
            values[f.name] = convert(f.name, hints[f.name], raw)
    for name, value in overrides.items():
        if value is not None:
            values[name] = convert(name, hints[name], value) if isinstance(value, str) else value
    if "data_dir" in values:
        values["data_dir"] = Path(values["data_dir"])
    return values
