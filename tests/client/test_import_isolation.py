"""The client installs and imports without the aggregator's dependencies."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys

    BLOCKED = {"flask", "numpy", "sqlite_utils", "werkzeug", "scipy", "nacl"}

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked for this test")
            return None

    sys.meta_path.insert(0, Blocker())
    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED:
            del sys.modules[name]
    """
)


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_blocker_really_blocks() -> None:
    result = run("import numpy\n")
    assert result.returncode != 0
    assert "blocked for this test" in result.stderr


def test_client_imports_without_flask_numpy_sqlite_utils() -> None:
    result = run(
        """
        import deniable.client
        from deniable.client import Client, ClientError
        from deniable.client.cli import main
        from deniable.shared import Survey
        assert not {"flask", "numpy", "sqlite_utils"} & {m.split(".")[0] for m in sys.modules}
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_an_import_error_with_every_extra_installed_surfaces_as_itself() -> None:
    """Here every extra is installed (the metadata says so), so a failing import is not a
    missing extra: the command and the package show the real error, never "install the extras"
    (tests/install/test_install_client.py runs a real client-only install for that message)."""
    command = run(
        """
        from deniable.aggregator.console import main
        main(["--help"])
        """
    )
    assert command.returncode == 1
    assert "blocked for this test" in command.stderr and "needs its extras" not in command.stderr
    package = run("import deniable.aggregator\n")
    assert package.returncode == 1
    assert "blocked for this test" in package.stderr and "needs its extras" not in package.stderr


def test_the_missing_extras_are_read_from_the_installed_metadata(monkeypatch) -> None:
    from importlib import metadata

    from deniable.aggregator import console as extras

    assert extras.missing_requirements() == []  # the dev install has every extra
    real = metadata.distribution

    def without_numpy(name: str) -> metadata.Distribution:
        if name.lower() in ("numpy", "pyxform"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", without_numpy)
    assert extras.missing_requirements() == ["numpy", "pyxform"]
    assert extras.missing_requirements("deploy") == []  # gunicorn is there
    assert extras.needs_extras(["numpy"]) == (
        "the aggregator needs its extras (numpy not installed): pip install 'deniable[aggregator]'"
    )


def test_a_client_only_install_verifies_reports_with_openssl() -> None:
    """PyNaCl comes with the aggregator's extra; without it the shared code verifies the same."""
    result = run(
        """
        from deniable.shared import Survey, make_report, signing, verify_report
        from deniable.shared.errors import ReportError
        survey = Survey.from_dict({"id": "s", "title": "t", "questions": [
            {"id": "q", "text": "?", "type": "binary", "epsilon": 1.0}]})
        report = make_report(survey, {"q": "yes"}, signing.generate_key())
        verify_report(report)
        report["sent_at"] = "2020-01-01T00:00:00Z"
        try:
            verify_report(report)
        except ReportError:
            print(signing.verifier(), "nacl" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "openssl False"
