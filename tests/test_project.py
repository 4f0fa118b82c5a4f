"""Project-wide rules: import hygiene, and the docs (docs/) naming every command, module and setting."""

from __future__ import annotations

import ast
import re
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
    # urllib3 comes with requests anyway; it is named for the version read1 needs. pyhpke seals
    # reports for a relay (docs/anonymity.md) and needs only cryptography.
    assert base_names == {
        "requests", "urllib3", "cryptography", "click", "platformdirs", "jinja2", "pyhpke"
    }  # fmt: skip
    server = {
        r.name.lower() for r in base if r.marker and r.marker.evaluate({"extra": "aggregator"})
    }
    assert {"flask", "numpy", "sqlite-utils"} <= server


def _commands(group) -> list[str]:
    return sorted(group.commands)  # the commands the program registers itself


def _docs() -> str:
    """Every page of the docs site, as one text."""
    return "\n".join(p.read_text("utf-8") for p in sorted((ROOT / "docs").glob("*.md")))


@pytest.mark.parametrize("program", ["deniable", "deniable-aggregator"])
def test_every_cli_command_is_documented_in_the_docs(program):
    if program == "deniable":
        from deniable.client.cli import cli as group
    else:
        from deniable.aggregator.cli.core import cli as group
    docs = _docs()
    commands = _commands(group)
    assert len(commands) >= 4
    missing = [c for c in commands if f"{program} {c}" not in docs]
    assert not missing, f"docs/ does not show: {', '.join(f'{program} {c}' for c in missing)}"


SUBPACKAGES = ("cli", "stats", "store", "web")


def test_the_aggregator_is_grouped_by_concern():
    folder = ROOT / "aggregator"
    modules = sorted(p.name for p in folder.glob("*.py"))
    assert len(modules) <= 12, modules
    for name in SUBPACKAGES:
        init = folder / name / "__init__.py"
        assert init.is_file(), f"aggregator/{name}/ is not a package"
        doc = ast.get_docstring(ast.parse(init.read_text("utf-8")))
        assert doc and len(doc) > 40, f"aggregator/{name}/__init__.py says nothing of its room"


def test_the_architecture_page_names_every_aggregator_module():
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    section = page.split("\n## Architecture of the aggregator\n", 1)[1].split("\n## ", 1)[0]
    folder = ROOT / "aggregator"
    missing = [
        str(p.relative_to(folder))
        for p in sorted(folder.glob("**/*.py"))
        if p.name != "__init__.py" and p.name not in section
    ]
    assert not missing, f"docs/architecture.md does not place: {', '.join(missing)}"


def test_only_the_store_speaks_sql():
    """SQL statements live in store/ alone: the web, stats and CLI rooms go through Store."""
    statement = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "aggregator").glob("**/*.py"))
        if "store" not in p.relative_to(ROOT / "aggregator").parts[:1]
        and statement.search(p.read_text("utf-8"))
    ]
    assert not offenders, offenders


def _defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    }


def test_every_test_the_threat_model_names_exists():
    """docs/security.md backs each mitigation with a test: each one it names must exist."""
    text = (ROOT / "docs" / "security.md").read_text("utf-8")
    named = re.findall(r"(tests/[\w/]+\.py)::(\w+)", text)
    assert len(named) >= 20
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (ROOT / path).is_file() or name not in _defined_tests(ROOT / path)
    ]
    assert missing == []


def test_every_setting_is_documented():
    """Each aggregator setting has a row, a type word and a help text in docs/settings.md."""
    from deniable.aggregator.config import SETTINGS

    page = (ROOT / "docs" / "settings.md").read_text("utf-8")
    rows = set(re.findall(r"^\| `(DENIABLE_[A-Z0-9_]+)` \|", page, re.MULTILINE))
    variables = {setting.variable for setting in SETTINGS.values()}
    assert variables - rows == set()
    assert all(len(setting.help) > 20 and setting.type for setting in SETTINGS.values())


def test_every_limit_is_a_setting():
    """Each analysis or survey limit is read from the setting its messages name."""
    from dataclasses import fields

    from deniable.aggregator.config import SETTINGS
    from deniable.aggregator.stats.limits import SETTING_OF, Limits

    for field in fields(Limits):
        key = field.name.upper()
        assert key in SETTINGS, key
        setting = SETTINGS[key]
        assert setting.variable == SETTING_OF[field.name]
        assert setting.default == field.default
        assert setting.parse(str(setting.default)) == setting.default
