"""The dashboard's structure (issue 37): one handler shows every refused action, and every
download is the API's own file, made by one function (web/downloads.py) for both edges."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.dashboard.conftest import TOKEN

DASHBOARD = Path(__file__).resolve().parents[2] / "aggregator" / "web" / "dashboard"


def _caught(tree: ast.AST) -> list[str]:
    """The names every `except` clause of a module catches."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            kinds = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            names += [k.id if isinstance(k, ast.Name) else ast.unparse(k) for k in kinds]
    return names


def test_no_route_catches_a_refusal_itself() -> None:
    """Only base.py catches ActionError (its one handler and `attempt`); the routes wrap a call
    in `shown_on(render)` instead of repeating `except ActionError` with its standing kinds."""
    modules = sorted(DASHBOARD.glob("*.py"))
    assert len(modules) >= 8
    catching = {
        path.name
        for path in modules
        if {"ActionError", "ParamError", "DeniableError"}
        & set(_caught(ast.parse(path.read_text())))
    }
    assert catching == {"base.py"}, catching


def test_one_errorhandler_shows_every_refusal(app: Flask) -> None:
    from deniable.aggregator.params import ParamError
    from deniable.aggregator.refusals import ActionError

    handlers = app.error_handler_spec["dashboard"][None]
    assert ActionError in handlers and ParamError not in handlers


DOWNLOADS = [
    "/surveys/habits/results.csv?confidence=0.9",
    "/surveys/habits/reports.jsonl",
    "/surveys/habits/answers.csv",
    "/surveys/habits/export.dta",
    "/surveys/habits/export.sav",
    "/surveys/habits/analysis.R",
    "/surveys/habits/audit.jsonl",
]


@pytest.mark.parametrize("path", DOWNLOADS)
def test_a_dashboard_download_is_the_apis_file(
    client: FlaskClient, researcher: FlaskClient, path: str
) -> None:
    api = client.application.test_client().get(
        f"/api/v1{path}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    page = researcher.get(path)
    assert page.status_code == api.status_code == 200
    assert page.mimetype == api.mimetype
    assert page.headers["Content-Disposition"] == api.headers["Content-Disposition"]
    if path.endswith((".csv", ".csv?confidence=0.9", ".R")) or "reports" in path:
        assert page.get_data() == api.get_data()
