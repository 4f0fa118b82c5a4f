"""Project-wide rules: import hygiene and documentation of every CLI command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.parametrize(
    "line", ["import shared", "from client import Client", "import aggregator.app"]
)
def test_ruff_bans_bare_folder_imports(line):
    result = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--stdin-filename", "client/example.py", "-"],
        input=line + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 1
    assert "TID251" in result.stdout and "never the bare folder name" in result.stdout


def test_the_base_install_pulls_no_server_dependencies():
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    base = [Requirement(r) for r in requires("deniable") or []]
    base_names = {r.name.lower() for r in base if r.marker is None}
    # urllib3 comes with requests anyway; it is named for the version read1 needs.
    assert base_names == {"requests", "urllib3", "cryptography", "click", "platformdirs"}
    server = {
        r.name.lower() for r in base if r.marker and r.marker.evaluate({"extra": "aggregator"})
    }
    assert {"flask", "numpy", "sqlite-utils"} <= server


def _commands(group) -> list[str]:
    return sorted(group.commands)  # the commands the program registers itself


@pytest.mark.parametrize("program", ["deniable", "deniable-aggregator"])
def test_every_cli_command_is_documented_in_the_readme(program):
    if program == "deniable":
        from deniable.client.cli import cli as group
    else:
        from deniable.aggregator.cli.core import cli as group
    readme = (ROOT / "README.md").read_text("utf-8")
    commands = _commands(group)
    assert len(commands) >= 4
    missing = [c for c in commands if f"{program} {c}" not in readme]
    assert not missing, f"README.md does not show: {', '.join(f'{program} {c}' for c in missing)}"
