"""The built wheel installed, not editable, into a fresh venv: what a user gets from
`pip install deniable-*.whl` (docs/development.md, "Installs that work")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: A fresh install downloads (or takes from pip's cache) every dependency.
INSTALL_SECONDS = 900


@dataclass(frozen=True)
class Installed:
    """A fresh venv holding the wheel: its bin folder and python."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def run(
        self, command: str, *args: str, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run one of the venv's commands (never the source tree's: cwd is the venv)."""
        environ = {**os.environ, **env}
        for leak in ("PYTHONPATH", "VIRTUAL_ENV"):
            environ.pop(leak, None)
        return subprocess.run(
            [str(self.bin / command), *args],
            cwd=cwd or self.root,
            env=environ,
            capture_output=True,
            text=True,
            timeout=300,
        )


def checkout_copy(where: Path) -> Path:
    """The files git would put in a fresh clone (tracked, and new ones it does not ignore), as
    they are in the work tree: a build never sees a stale build/ folder, and builds running at
    once never share one."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        path = ROOT / name.decode()
        if path.is_file():
            target = where / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return where


def build_wheel(out: Path) -> tuple[Path, str]:
    """`pip wheel -v` of the checkout (an isolated build, as a user's install does): the wheel
    and everything the build backend printed."""
    source = checkout_copy(out / "source")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--disable-pip-version-check",
         "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("deniable-*.whl")
    return wheel, result.stdout + result.stderr


def metadata_warnings(log: str) -> list[str]:
    """The lines of a build log that warn about the project (setuptools' deprecations and
    warnings about packages, package data or license metadata), not about the environment
    (byte-compiling disabled by PYTHONDONTWRITEBYTECODE)."""
    return [
        line.strip()
        for line in log.splitlines()
        if ("warning" in line.lower() or line.strip() == "!!")
        and "byte-compiling is disabled" not in line
    ]


def install(wheel: Path, where: Path, extras: str = "") -> Installed:
    """A fresh venv with the wheel (and `extras`, like "aggregator") installed from it."""
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    target = Installed(where)
    spec = f"{wheel}[{extras}]" if extras else str(wheel)
    result = subprocess.run(
        [str(target.python), "-m", "pip", "install", "--disable-pip-version-check", spec],
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        cwd=where,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (where / "install.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    return target
