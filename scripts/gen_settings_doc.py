"""Write docs/settings.md from the Settings object (run: python scripts/gen_settings_doc.py)."""

from __future__ import annotations

from pathlib import Path

from svc.settings import describe

HEADER = """# Settings

Every setting is read once at start-up: from the environment variable, or from the flag of
`svcm serve` (the flag wins). This page is generated from `src/svc/settings/__init__.py` by
`scripts/gen_settings_doc.py`; a test fails when it is out of date.

| Environment variable | Flag | Default | What it does |
|---|---|---|---|
"""


def render() -> str:
    rows = [
        f"| `{env}` | `{flag}` | `{default or '(empty)'}` | {help_} |"
        for env, flag, default, help_ in describe()
    ]
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "docs" / "settings.md"
    out.write_text(render())
    print(f"wrote {out}")
