"""The docs site: it builds with --strict (offline), its settings page is rendered from the
settings' declaration, every DENIABLE_* name in the code is documented, the README stays a
short entry point, and nothing cites a document outside the repository."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).parent / "mkdocs"
SKIP_DIRS = {".git", ".venv", "site", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}


def _build(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(out)],
        capture_output=True,
        text=True,
        cwd=config.parent,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(out.parent)},
        timeout=300,
    )


def _settings_script():
    spec = importlib.util.spec_from_file_location(
        "docs_settings", ROOT / "scripts/docs_settings.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_site_builds_with_strict(tmp_path):
    result = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr
    assert (tmp_path / "site" / "architecture" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    """The check above can fail: a link to a missing page or anchor stops a --strict build."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "index.md"
    clean = page.read_text("utf-8")
    for broken, said in [
        ("[gone](no-such-page.md)", "no-such-page.md"),
        ("[gone](surveys.md#no-such-anchor)", "no-such-anchor"),
    ]:
        page.write_text(clean + f"\n{broken}\n", "utf-8")
        result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
        assert result.returncode != 0 and said in result.stderr, result.stderr


def test_the_settings_page_is_rendered_from_the_declaration():
    script = _settings_script()
    page = (ROOT / "docs" / "settings.md").read_text("utf-8")
    assert page == script.render(), "docs/settings.md is out of date: run make docs-settings"


def test_every_deniable_variable_in_the_code_is_documented():
    """Any DENIABLE_* name the code, deploy files or scripts read has a row in docs/settings.md."""
    page = (ROOT / "docs" / "settings.md").read_text("utf-8")
    rows = set(re.findall(r"^\| `(DENIABLE_[A-Z0-9_]+)` \|", page, re.MULTILINE))
    named: set[str] = set()
    for folder in ("shared", "client", "aggregator", "deploy"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {
                ".py",
                ".js",
                ".html",
                ".yaml",
                ".conf",
                ".service",
                "",
            }:
                named |= set(re.findall(r"DENIABLE_[A-Z0-9_]*[A-Z0-9]", path.read_text("utf-8")))
    assert len(named) >= 25
    assert named - rows == set()


def test_the_readme_is_a_short_entry_point():
    readme = (ROOT / "README.md").read_text("utf-8")
    lines = readme.splitlines()
    assert lines[2:6] == [
        "```sh",
        "make demo   # creates .venv, installs, runs the aggregator with a filled demo survey",
        "make test   # creates .venv, installs, runs the whole test suite",
        "```",
    ]
    # Short: the quick starts and one worked example per capability; the rest is in docs/.
    assert len(lines) <= 250
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", readme))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert linked == pages, f"README links no page for: {sorted(pages - linked)}"


def _repository_text_files():
    for path in ROOT.rglob("*"):
        parts = set(path.relative_to(ROOT).parts)
        if (
            path.is_file()
            and not parts & SKIP_DIRS
            and not any(p.endswith(".egg-info") for p in parts)
        ):
            try:
                yield path, path.read_text("utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # images, databases


def test_nothing_cites_a_document_outside_the_repository():
    """Every citation names a file of this repository (docs/...), never the old design document."""
    name = "DES" + "IGN"  # spelled apart, so this file does not cite it either
    cited = re.compile(rf"\b{name}(\.md)?\b")
    offenders = [
        f"{path.relative_to(ROOT)}:{text.count(name)}"
        for path, text in _repository_text_files()
        if cited.search(text)
    ]
    assert offenders == []
