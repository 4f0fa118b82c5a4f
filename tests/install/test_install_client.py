"""`pip install deniable-*.whl`, the client alone, in a fresh venv: it imports without Flask
and numpy, its commands run, and the aggregator's command says which extras it needs."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.install.wheel_support import ROOT, Installed, build_wheel, install, metadata_warnings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def client_only(built: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(built[0], tmp_path_factory.mktemp("venv") / "client")


def test_the_build_prints_no_warning_about_our_metadata(built: tuple[Path, str]) -> None:
    assert metadata_warnings(built[1]) == []


def test_the_wheel_holds_every_package_and_file_the_code_loads(built: tuple[Path, str]) -> None:
    names = set(zipfile.ZipFile(built[0]).namelist())
    roots = {folder: f"deniable/{folder}" for folder in ("shared", "client", "aggregator", "relay")}
    tracked = [p for folder in roots for p in (ROOT / folder).rglob("*") if p.is_file()]
    wanted = {".py", ".html", ".js", ".css", ".json", ".xlsx", ".po", ".mo"}
    expected = {
        roots[p.relative_to(ROOT).parts[0]] + "/" + "/".join(p.relative_to(ROOT).parts[1:])
        for p in tracked
        if p.suffix in wanted and "__pycache__" not in p.parts
    }
    assert expected - names == set()
    assert "deniable/aggregator/exports/__init__.py" in names  # once left out by a hand list


def test_the_client_imports_without_flask_or_numpy(client_only: Installed) -> None:
    probe = (
        "import importlib.util, sys\n"
        "import deniable.client, deniable.shared\n"
        "from deniable.client import Client\n"
        "absent = [m for m in ('flask', 'numpy', 'sqlite_utils') if importlib.util.find_spec(m)]\n"
        "assert not absent, absent\n"
        "print(deniable.client.__file__)\n"
    )
    result = client_only.run("python", "-c", probe)
    assert result.returncode == 0, result.stderr
    assert str(client_only.root) in result.stdout  # the installed copy, not the checkout


def test_the_client_commands_run(client_only: Installed) -> None:
    result = client_only.run("deniable", "--help")
    assert result.returncode == 0 and "answer" in result.stdout, result.stderr
    status = client_only.run("deniable", "status", DENIABLE_HOME=str(client_only.root / "home"))
    assert status.returncode == 0, status.stderr
    relay = client_only.run("deniable-relay", "--help")  # the relay needs no extra
    assert relay.returncode == 0 and "--batch" in relay.stdout, relay.stderr


def test_the_aggregator_command_names_the_missing_extras(client_only: Installed) -> None:
    result = client_only.run("deniable-aggregator", "--help")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: the aggregator needs its extras (")
    assert "flask" in result.stderr and "numpy" in result.stderr
    assert "pip install 'deniable[aggregator]'" in result.stderr
