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
