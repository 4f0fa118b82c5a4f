"""One service function per action (aggregator/surveys.py), one parser per request parameter
(aggregator/params.py): the API, the dashboard and the CLI give the same answer to the same
request, and refuse a bad confidence level the same way (docs/architecture.md)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from markupsafe import escape

from deniable.aggregator import access, credentials, surveys
from deniable.aggregator.cli.core import cli
from deniable.aggregator.params import ParamError, parse_candidates, parse_confidence, parse_flag
from deniable.aggregator.stats.results import shown_row
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.statuses import refusal_status
from tests.aggregator.conftest import TOKEN
from tests.aggregator.test_results_objects import BREAKDOWN, CROSSTAB, DOC, FORMULA
from tests.aggregator.test_results_objects import stored as stored  # the survey, 600 reports

SURVEY_ID = DOC["id"]
API = f"/api/v1/surveys/{SURVEY_ID}"
PAGE = f"/surveys/{SURVEY_ID}"
LEVEL = "0.9"


def refusal(value: str) -> str:
    """What every edge says of a bad ?confidence= / --confidence (aggregator/params.py)."""
    return f"confidence: expected a level between 0 and 1, like 0.95, got {value!r}"


@pytest.fixture
def dashboard(client: FlaskClient) -> FlaskClient:
    """The test client, logged in to the dashboard with the researcher token."""
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    response = client.post("/login", data={"token": TOKEN, "csrf_token": csrf.group(1)})
    assert response.status_code == 302
    return client


def run_cli(runner: FlaskCliRunner, *args: str) -> Any:
    return runner.invoke(cli, list(args))


def cli_json(runner: FlaskCliRunner, *args: str) -> Any:
    result = run_cli(runner, *args, "--json")
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def api_json(client: FlaskClient, auth: dict[str, str], path: str, **body: Any) -> Any:
    if body:
        response = client.post(path, json=body, headers=auth)
    else:
        response = client.get(path, headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


# -- the same answer on every edge -------------------------------------------------------------


def test_results_are_the_same_on_the_api_the_cli_and_the_dashboard(
    app: Flask, client, auth, runner, dashboard, stored
) -> None:
    query = f"?confidence={LEVEL}&simultaneous=true&candidates=x"
    from_api = api_json(client, auth, f"{API}/results{query}")
    options = ("--confidence", LEVEL, "--simultaneous", "--candidates", "x")
    assert cli_json(runner, "results", SURVEY_ID, *options) == from_api
    with app.app_context():
        service = surveys.results(
            get_store(),
            SURVEY_ID,
            who=access.OPERATOR,
            confidence=0.9,
            simultaneous=True,
            candidates=("x",),
        )
    assert service.to_dict() == from_api and from_api["confidence"] == 0.9
    # The CSV: the API's, the dashboard's and the CLI's are the same bytes, those of the JSON.
    api_csv = client.get(f"{API}/results.csv{query}", headers=auth)
    page_csv = dashboard.get(f"{PAGE}/results.csv{query}")
    cli_csv = run_cli(runner, "results", SURVEY_ID, *options, "--csv")
    assert api_csv.status_code == page_csv.status_code == 200 and cli_csv.exit_code == 0
    assert api_csv.data == page_csv.data == cli_csv.stdout.encode() == service.to_csv().encode()
    # The survey page shows the same n and the level asked for.
    page = dashboard.get(f"{PAGE}{query}").get_data(as_text=True)
    assert f"{from_api['n']:,}" in page and 'value="0.9" selected' in page


def test_breakdown_is_the_same_on_the_api_the_cli_and_the_dashboard(
    client, auth, runner, dashboard, stored
) -> None:
    question, by = BREAKDOWN
    from_api = api_json(
        client, auth, f"{API}/breakdown?question={question}&by={by}&confidence={LEVEL}"
    )
    assert from_api["confidence"] == 0.9
    assert cli_json(
        runner, "breakdown", SURVEY_ID, question, "--by", by, "--confidence", LEVEL
    ) == (from_api)
    page = dashboard.get(f"{PAGE}/analysis?question={question}&by={by}&confidence={LEVEL}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert 'role="alert"' not in text
    assert f"χ² = {from_api['test']['statistic']:.3f}" in text


def test_crosstab_is_the_same_on_the_api_the_cli_and_the_dashboard(
    client, auth, runner, dashboard, stored
) -> None:
    first, second = CROSSTAB
    from_api = api_json(
        client, auth, f"{API}/crosstab?first={first}&second={second}&confidence={LEVEL}"
    )
    assert cli_json(runner, "crosstab", SURVEY_ID, first, second, "--confidence", LEVEL) == (
        from_api
    )
    page = dashboard.get(f"{PAGE}/analysis?first={first}&second={second}&confidence={LEVEL}")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and 'role="alert"' not in text
    cells = re.findall(
        r'<span data-shown="estimate">([0-9.]+)%\*?</span><br>'
        r'<span class="muted" data-shown="interval">([^<]+)</span>',
        text,
    )
    shown = [shown_row(c, from_api["n"]) for c in from_api["cells"]]  # as every table shows
    expected = [
        (f"{c['estimate'] * 100:.1f}", f"{c['ci_low'] * 100:.1f}% – {c['ci_high'] * 100:.1f}%")
        for c in shown
    ]
    assert sorted(cells) == sorted(expected) and len(cells) == 4 * 3


def test_regression_is_the_same_on_the_api_the_cli_and_the_dashboard(
    client, auth, runner, dashboard, stored
) -> None:
    from_api = api_json(client, auth, f"{API}/regression", formula=FORMULA, confidence=0.9)
    assert from_api["converged"] is True and from_api["confidence"] == 0.9
    assert cli_json(runner, "regress", SURVEY_ID, FORMULA, "--confidence", LEVEL) == from_api
    form = dashboard.get(f"{PAGE}/analysis?confidence={LEVEL}").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert csrf is not None
    page = dashboard.post(
        f"{PAGE}/analysis?confidence={LEVEL}",
        data={"formula": FORMULA, "csrf_token": csrf.group(1)},
    )
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and 'role="alert"' not in text
    for row in from_api["coefficients"]:
        shown = f'<td class="num">{row["estimate"]:.3f}</td><td class="num">{row["stderr"]:.3f}'
        assert shown in text, row["term"]


def test_the_export_is_the_same_from_the_api_and_the_dashboard(
    client, auth, dashboard, stored
) -> None:
    from_api = client.get(f"{API}/reports.jsonl", headers=auth)
    from_page = dashboard.get(f"{PAGE}/reports.jsonl")
    assert from_api.status_code == from_page.status_code == 200
    assert from_api.data == from_page.data
    assert [json.loads(line) for line in from_api.data.splitlines()] == stored
    assert client.get("/api/v1/surveys/nope/reports.jsonl", headers=auth).status_code == 404
    assert dashboard.get("/surveys/nope/reports.jsonl").status_code == 404


# -- a bad confidence, refused the same way everywhere -----------------------------------------


@pytest.mark.parametrize("bad", ["2", "abc", "0", "1", "nan", "-0.5", "inf"])
def test_a_bad_confidence_is_refused_on_every_edge(
    client, auth, runner, dashboard, stored, bad: str
) -> None:
    said = refusal(bad)
    question, by = BREAKDOWN
    for path in (
        f"{API}/results?confidence={bad}",
        f"{API}/results.csv?confidence={bad}",
        f"{API}/breakdown?question={question}&by={by}&confidence={bad}",
        f"{API}/crosstab?first={CROSSTAB[0]}&second={CROSSTAB[1]}&confidence={bad}",
    ):
        response = client.get(path, headers=auth)
        assert response.status_code == 400, path
        assert response.content_type == "application/problem+json"
        assert response.get_json()["detail"] == said
    # The dashboard says it on an error page (it used to fall back to 0.95 without a word).
    for path in (
        f"{PAGE}?confidence={bad}",
        f"{PAGE}/results.csv?confidence={bad}",
        f"{PAGE}/analysis?question={question}&by={by}&confidence={bad}",
    ):
        response = dashboard.get(path)
        assert response.status_code == 400, path
        assert escape(said) in response.get_data(as_text=True), path
    # The CLI: one line on stderr, exit status 1, for the results and every analysis.
    for args in (
        ("results", SURVEY_ID),
        ("results", SURVEY_ID, "--csv"),
        ("breakdown", SURVEY_ID, question, "--by", by),
        ("crosstab", SURVEY_ID, *CROSSTAB),
        ("regress", SURVEY_ID, FORMULA),
    ):
        result = run_cli(runner, *args, "--confidence", bad)
        assert result.exit_code == 1, args
        assert result.stderr == f"error: {said}\n" and result.stdout == "", args


@pytest.mark.parametrize("bad", [2, 0, 1, -0.5, "0.9", None, True])
def test_a_bad_confidence_in_a_json_body_is_a_422(client, auth, stored, bad: object) -> None:
    response = client.post(
        f"{API}/regression", json={"formula": FORMULA, "confidence": bad}, headers=auth
    )
    assert response.status_code == 422
    assert response.get_json()["detail"] == refusal(bad)  # type: ignore[arg-type]


def test_no_confidence_is_the_configured_level_on_every_edge(
    app: Flask, client, auth, runner, dashboard, stored
) -> None:
    app.config["CONFIDENCE"] = 0.8
    assert api_json(client, auth, f"{API}/results")["confidence"] == 0.8
    assert cli_json(runner, "results", SURVEY_ID)["confidence"] == 0.8
    page = dashboard.get(PAGE).get_data(as_text=True)
    assert 'value="0.8" selected' in page


# -- the parsers -------------------------------------------------------------------------------


def test_parse_confidence() -> None:
    assert parse_confidence(None, 0.9) == 0.9 and parse_confidence("", 0.9) == 0.9
    assert parse_confidence("0.99", 0.9) == 0.99 and parse_confidence(0.5, 0.9) == 0.5
    with pytest.raises(ParamError) as refused:
        parse_confidence("1.5", 0.95)
    assert refusal_status(refused.value) == 400 and str(refused.value) == refusal("1.5")
    with pytest.raises(ParamError) as in_body:
        parse_confidence("0.9", 0.95, kind="invalid", text=False)  # JSON sends a number
    assert refusal_status(in_body.value) == 422
    with pytest.raises(ParamError):
        parse_confidence(None, 0.95, text=False)  # a JSON null is not a level


def test_parse_flag_and_candidates() -> None:
    assert parse_flag(None, "simultaneous") is False and parse_flag("true", "s") is True
    assert parse_flag("0", "s") is False and parse_flag(True, "s") is True
    with pytest.raises(ParamError, match="simultaneous: expected true or false, got '2'"):
        parse_flag("2", "simultaneous")
    assert parse_candidates(" Paris ,paris,, Lyon") == ("paris", "lyon")
    with pytest.raises(ParamError, match="at most 50") as many:
        parse_candidates(",".join(f"w{i}" for i in range(60)))
    assert refusal_status(many.value) == 400


# -- invitations and closing: the same action from every edge ----------------------------------


def test_invitations_and_closing_are_one_action_on_every_edge(
    app: Flask, client, auth, runner, dashboard, invite_doc: dict[str, Any]
) -> None:
    assert client.post("/api/v1/surveys", json=invite_doc, headers=auth).status_code == 201
    api_codes = client.post(
        "/api/v1/surveys/private/invitations", json={"count": 2}, headers=auth
    ).get_json()["codes"]
    cli = run_cli(runner, "invite", "private", "2")
    assert cli.exit_code == 0, cli.stderr
    page = dashboard.get("/surveys/private").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    shown = dashboard.post(
        "/surveys/private/invitations", data={"count": "2", "csrf_token": csrf.group(1)}
    ).get_data(as_text=True)
    codes_text = re.search(r'<textarea id="codes"[^>]*>([^<]*)</textarea>', shown)
    assert codes_text is not None
    codes = [*api_codes, *cli.stdout.split(), *codes_text.group(1).split()]
    assert len(set(codes)) == 6
    with app.app_context():  # every edge's codes are stored the same way: each enrolls a key
        store = get_store()
        for i, code in enumerate(codes):
            assert store.enroll("private", f"key-{i}", credentials.digest(code)) == "enrolled"
    # Closing: the API's summary, the CLI's line and the dashboard's redirect, one state.
    closed = client.post("/api/v1/surveys/private/close", headers=auth).get_json()
    assert closed["closed"] is True
    again = run_cli(runner, "close", "private")
    assert again.exit_code == 0 and again.stdout.startswith(
        f"private closed at {closed['closed_at']}"
    )
    assert (
        dashboard.post("/surveys/private/close", data={"csrf_token": csrf.group(1)}).status_code
        == 302
    )
    with app.app_context():
        record = surveys.survey_or_404(get_store(), "private")
    assert record.closed and record.closed_at == closed["closed_at"]
