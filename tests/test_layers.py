"""The layers keep to themselves: each package imports only what its layer may.

Every `import` and `from ... import` of every module is read from its syntax tree (imports
inside functions and under TYPE_CHECKING count too), so a forbidden dependency fails here
whether or not the code path runs. The rules, by layer (docs/architecture.md):

- `deniable.shared`, the protocol both sides agree on, imports neither side;
- `deniable.client`, the respondent's package, imports no aggregator;
- `deniable.aggregator.stats` is pure computation: no Flask, no database, no HTTP, no client,
  no storage and no edge;
- `deniable.aggregator.store` is storage alone: no Flask, no statistics, no edge;
- `ingest`, `surveys`, `params`, `refusals`, `access`, `audit` and `accounts` (the services
  and the one rule of who may do what) know no Flask and no HTTP edge, nor do `exports`
  (answers for R, Stata and SPSS, which need no ingestion either) and `forms` (XLSForm in
  and out, which needs no store either);
- `web` and `cli` are the edges: they may import anything;
- below the edges a refusal says what kind it is; only `web/statuses.py` maps kinds to HTTP
  statuses.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "shared": "deniable.shared",
    "client": "deniable.client",
    "aggregator": "deniable.aggregator",
}

FLASK = ("flask", "werkzeug", "click", "flask_limiter")
DATABASES = ("sqlite3", "sqlite_utils", "psycopg", "psycopg_pool")
HTTP = ("requests", "urllib3", "http.client", "gunicorn")
EDGES = ("deniable.aggregator.web", "deniable.aggregator.cli")

#: Module prefix -> modules it may not import (a name and everything under it).
RULES: dict[str, tuple[str, ...]] = {
    "deniable.shared": ("deniable.client", "deniable.aggregator"),
    "deniable.client": ("deniable.aggregator",),
    "deniable.aggregator.stats": (
        *FLASK,
        *DATABASES,
        *HTTP,
        "deniable.client",
        "deniable.aggregator.store",
        "deniable.aggregator.ingest",
        "deniable.aggregator.surveys",
        "deniable.aggregator.params",
        *EDGES,
    ),
    "deniable.aggregator.store": (
        *FLASK,
        "deniable.aggregator.stats",
        "deniable.aggregator.ingest",
        "deniable.aggregator.surveys",
        "deniable.aggregator.params",
        *EDGES,
    ),
    "deniable.aggregator.ingest": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.surveys": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.params": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.refusals": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.access": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.audit": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.accounts": (*FLASK, *HTTP, "deniable.client", *EDGES),
    "deniable.aggregator.forms": (
        *FLASK,
        *DATABASES,
        *HTTP,
        "deniable.client",
        "deniable.aggregator.store",
        *EDGES,
    ),
    # answers for R, Stata and SPSS read stored reports: they need no ingestion
    "deniable.aggregator.exports": (
        *FLASK,
        *HTTP,
        "deniable.client",
        "deniable.aggregator.ingest",
        *EDGES,
    ),
}


def module_name(path: Path) -> str:
    """The dotted module a source file of this repository imports as."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = PACKAGES[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module named by an import statement of `source` (relative ones made absolute)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(module: str, names: set[str]) -> list[str]:
    """`module imports name` for each import its layer forbids."""
    found = []
    for layer, forbidden in RULES.items():
        if under(module, layer):
            found += [
                f"{module} imports {name}"
                for name in sorted(names)
                if any(under(name, banned) for banned in forbidden)
            ]
    return found


def sources() -> list[Path]:
    return sorted(p for folder in PACKAGES for p in (ROOT / folder).rglob("*.py"))


def test_every_layer_imports_only_what_it_may() -> None:
    problems = []
    for path in sources():
        module = module_name(path)
        names = imported(path.read_text("utf-8"), module, path.name == "__init__.py")
        problems += violations(module, names)
    assert not problems, "layers crossed:\n" + "\n".join(problems)


def test_the_rules_cover_every_layer_that_exists() -> None:
    """A renamed or moved package would silently escape its rule."""
    modules = {module_name(p) for p in sources()}
    for layer in RULES:
        assert any(under(m, layer) for m in modules), f"no module under {layer}"


@pytest.mark.parametrize(
    ("module", "source", "culprit"),
    [
        ("deniable.aggregator.stats.x", "import flask\n", "flask"),
        (
            "deniable.aggregator.stats.x",
            "def f():\n    from sqlite_utils import Database\n",
            "sqlite_utils",
        ),
        (
            "deniable.aggregator.stats.x",
            "from deniable.client.http import Api\n",
            "deniable.client.http",
        ),
        (
            "deniable.aggregator.store.x",
            "from deniable.aggregator.stats import analyze\n",
            "deniable.aggregator.stats",
        ),
        ("deniable.aggregator.store.x", "from ..stats import tally\n", "deniable.aggregator.stats"),
        ("deniable.aggregator.store.x", "from flask import g\n", "flask"),
        (
            "deniable.aggregator.ingest",
            "from deniable.aggregator.web import db\n",
            "deniable.aggregator.web",
        ),
        ("deniable.shared.x", "from deniable.client import explain\n", "deniable.client"),
        ("deniable.client.x", "import deniable.aggregator.stats\n", "deniable.aggregator.stats"),
    ],
)
def test_a_forbidden_import_is_found(module: str, source: str, culprit: str) -> None:
    found = violations(module, imported(source, module))
    assert any(line.endswith(f"imports {culprit}") for line in found), found


def test_the_edges_and_allowed_imports_pass() -> None:
    assert not violations("deniable.aggregator.web.db", {"flask", "deniable.aggregator.store"})
    assert not violations("deniable.aggregator.stats.x", {"numpy", "deniable.shared.survey"})
    assert not violations("deniable.aggregator.store.x", {"deniable.shared.report"})
    assert not violations("deniable.aggregator.statsx", {"flask"})  # a prefix is not a package


#: Layers below the edges: they say why something was refused (a kind), never an HTTP status.
BELOW_THE_EDGES = tuple(layer for layer in RULES if under(layer, "deniable.aggregator"))


def http_statuses(source: str) -> list[str]:
    """What in `source` speaks HTTP statuses: an import of http, a `status` keyword or attribute
    set, an error raised with a 1xx-5xx number."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names]
            found += [f"imports {name}" for name in names if name == "http" or "HTTPStatus" in name]
        elif isinstance(node, ast.keyword) and node.arg == "status":
            found.append("passes status=")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "status"
            and isinstance(node.ctx, ast.Store)
        ):
            found.append("sets .status")
        elif isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            callee = node.func.id if isinstance(node.func, ast.Name) else callee
            numbers = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and type(a.value) is int and 100 <= a.value < 600
            ]
            if callee.endswith("Error") and numbers:
                found.append(f"raises {callee}({numbers[0]}, ...)")
    return found


def test_only_the_web_layer_knows_http_statuses() -> None:
    """ingest, surveys, params, stats and store say what kind a refusal is; web/statuses.py
    alone turns kinds into statuses."""
    problems = []
    for path in sources():
        module = module_name(path)
        if any(under(module, layer) for layer in BELOW_THE_EDGES):
            problems += [f"{module} {what}" for what in http_statuses(path.read_text("utf-8"))]
    assert not problems, "HTTP statuses below the web layer:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "source",
    [
        "from http import HTTPStatus\n",
        "raise ActionError(404, 'no such survey')\n",
        "check(1, 2, 'x', 'y', status=413)\n",
        "class E(Exception):\n    def __init__(self):\n        self.status = 422\n",
    ],
)
def test_an_http_status_below_the_edges_is_found(source: str) -> None:
    assert http_statuses(source)


def test_every_refusal_has_one_status() -> None:
    """Each kind of refusal (surveys.Refusal, limits.LimitKind) maps to exactly one status."""
    from typing import get_args

    from deniable.aggregator.stats.limits import LimitKind
    from deniable.aggregator.surveys import Refusal
    from deniable.aggregator.web.statuses import REFUSAL_STATUS

    assert set(REFUSAL_STATUS) == set(get_args(Refusal)) >= set(get_args(LimitKind))
