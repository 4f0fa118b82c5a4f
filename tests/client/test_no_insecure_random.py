"""Sampling must come from `secrets`: neither `random` nor numpy is imported under client/ or shared/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"random", "numpy"}
SOURCES = sorted((ROOT / "client").rglob("*.py")) + sorted((ROOT / "shared").rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every module a source file imports (anywhere in it)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and getattr(node.func, "id", getattr(node.func, "attr", ""))
            in ("__import__", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def test_sources_found() -> None:
    assert any(p.parent.name == "client" for p in SOURCES)
    assert any(p.parent.name == "shared" for p in SOURCES)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_random_or_numpy(path: Path) -> None:
    assert imported_modules(path) & FORBIDDEN == set()


def test_scanner_catches_the_forbidden_forms(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import random\nfrom numpy import array\nimport importlib\nimportlib.import_module('random')\n"
    )
    assert imported_modules(bad) >= {"random", "numpy"}
