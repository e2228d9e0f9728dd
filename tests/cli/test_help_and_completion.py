"""Every command has --help with an example; docs/cli.md is the help, up to date; shell
completion works (bash for real; zsh and fish checked when installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from svc.cli.completion import script, tree
from svc.cli.docgen import render
from svc.cli.main import build_parser
from tests.cli.conftest import Svcm
from tests.cli.support import ROOT

COMMANDS = [
    "serve", "init", "migrate", "login", "logout", "projects", "keys", "metrics", "export",
    "import", "send", "health", "tail", "deploy", "completion",
]  # fmt: skip


def test_every_command_has_help_with_an_example() -> None:
    root = tree(build_parser())
    paths = [" ".join(n.path) for n in root.walk() if n.path]
    for name in COMMANDS:
        assert name in paths
    for expected in ("projects create", "projects update", "keys rotate", "keys revoke"):
        assert expected in paths
    for node in root.walk():
        text = node.parser.format_help()
        assert "examples:" in text, f"svcm {' '.join(node.path)} --help has no example"


def test_help_runs_as_a_command(bare: Svcm) -> None:
    shown = bare("import", "--help").ok().stdout
    assert shown.startswith("usage: svcm import") and "examples:" in shown
    assert "--data-dir" in shown and "Plausible" in shown


def test_docs_are_the_current_help() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text()
    assert doc == render(), "docs/cli.md is stale: run python scripts/gen_cli_doc.py"


def complete_bash(script_text: str, words: list[str], tmp_path: Path) -> list[str]:
    """What the bash completion offers after ``words`` (the last one being completed)."""
    path = tmp_path / "svcm.bash"
    path.write_text(script_text)
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {path}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
        'COMP_LINE="${COMP_WORDS[*]}"; _svcm; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return [w for w in out.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion(bare: Svcm, tmp_path: Path) -> None:
    text = bare("completion", "bash").ok().stdout
    assert complete_bash(text, ["svcm", "pro"], tmp_path) == ["projects"]
    assert complete_bash(text, ["svcm", "projects", "cr"], tmp_path) == ["create"]
    assert complete_bash(text, ["svcm", "keys", "create", "--kind", ""], tmp_path) == [
        "public",
        "secret",
        "share",
    ]
    interval = complete_bash(text, ["svcm", "metrics", "--interval", ""], tmp_path)
    assert interval == ["hour", "day", "week", "month"]
    assert "page" in complete_bash(text, ["svcm", "metrics", "--by", "p"], tmp_path)
    options = complete_bash(text, ["svcm", "metrics", "--f"], tmp_path)
    assert {"--from", "--filter"} <= set(options)
    assert complete_bash(text, ["svcm", "completion", ""], tmp_path) == ["bash", "zsh", "fish"]
    (tmp_path / "events.csv").write_text("")
    files = complete_bash(text, ["svcm", "import", "-p", "x", str(tmp_path / "ev")], tmp_path)
    assert files == [str(tmp_path / "events.csv")]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts(shell: str, tmp_path: Path) -> None:
    text = script(shell, build_parser())
    for name in COMMANDS:
        assert name in text
    assert "hour" in text and "cloudflare-workers" in text
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} is not installed: only the script's content is checked")
    path = tmp_path / f"svcm.{shell}"
    path.write_text(text)
    check = [binary, "-n", str(path)] if shell == "zsh" else [binary, "--no-execute", str(path)]
    result = subprocess.run(check, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
