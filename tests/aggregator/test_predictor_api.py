"""A randomized answer as a predictor over real HTTP, the dashboard, the CLI (stored and offline)
and the Researcher client: the same fit everywhere, and rr's Nigeria maximum from a CSV."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from deniable.aggregator.stats import regress
from deniable.client import Researcher
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.conftest import AGGREGATOR, LiveServer
from tests.dashboard.conftest import csrf_of
from tests.postgres_support import SQLITE_ONLY
from tests.statistics.test_predictor import COLUMNS, DATA, FORMULA, R_OUTCOME, R_PREDICTOR

DOC = json.loads((DATA / "nigeria-survey.json").read_text("utf-8"))
SURVEY = Survey.from_dict(DOC)
SHORT = "civic ~ assets + female + contact"


def signed_reports(n: int, seed: int) -> list[dict[str, Any]]:
    """Respondents from a known joint model, each report randomized by the device's own secure
    coins and signed. With 1,500 reports and no category to empty, no draw of the coins comes
    near the boundaries where the fit has no finite maximum."""
    rng = np.random.default_rng(seed)
    reports = []
    for _ in range(n):
        assets, female = int(rng.integers(0, 10)), int(rng.integers(0, 2))
        contact = rng.random() < 1 / (1 + np.exp(-(-0.5 + 0.1 * assets - 0.5 * female)))
        eta = -0.8 + 0.15 * assets + 0.1 * female + 1.0 * contact
        truth = {
            "contact": int(contact),
            "civic": int(rng.random() < 1 / (1 + np.exp(-eta))),
            "assets": assets,
            "married": int(rng.integers(0, 2)),
            "age": int(rng.integers(16, 100)),
            "education": int(rng.integers(1, 11)),
            "female": female,
        }
        reports.append(make_report(SURVEY, truth, generate_key()))
    return reports


@pytest.fixture
def stored(live_server: LiveServer) -> list[dict[str, Any]]:
    live_server.create_survey(DOC)
    reports = signed_reports(1500, seed=3)
    for start in range(0, len(reports), 500):
        response = requests.post(
            f"{live_server.url}/api/v1/reports",
            json={"reports": reports[start : start + 500]},
            timeout=60,
        )
        assert response.status_code == 200, response.text
        assert all(r["result"] == "accepted" for r in response.json()["results"])
    return reports


# fits read stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_http_cli_researcher_and_python_give_one_fit(live_server: LiveServer, stored):
    response = requests.post(
        f"{live_server.url}/api/v1/surveys/nigeria/regression",
        json={"formula": SHORT},
        headers=live_server.headers,
        timeout=60,
    )
    assert response.status_code == 200, response.text
    fit = response.json()
    assert fit["converged"] and fit["n"] == 1500 and fit["predictor"] == "contact"
    assert [c["term"] for c in fit["coefficients"]] == ["Intercept", "assets", "female", "contact"]
    assert [c["term"] for c in fit["predictor_model"]["coefficients"]] == [
        "Intercept", "assets", "female",
    ]  # fmt: skip
    assert fit == regress(SURVEY, stored, SHORT).to_dict()  # the signed reports, offline
    as_json = live_server.cli("regress", "nigeria", SHORT, "--json")
    assert json.loads(as_json.stdout) == fit
    table = live_server.cli("regress", "nigeria", SHORT).stdout
    assert "civic (logistic):" in table and "contact (randomized" in table
    with Researcher(live_server.url, live_server.token) as researcher:
        assert researcher.regress("nigeria", SHORT) == fit
        assert researcher.regress("nigeria", SHORT, confidence=0.9)["confidence"] == 0.9
    # The dashboard's regression form, as a browser posts it, shows both models.
    with requests.Session() as browser:
        login = browser.get(f"{live_server.url}/login", timeout=30).text
        answer = browser.post(
            f"{live_server.url}/login",
            data={"token": live_server.token, "csrf_token": csrf_of(login)},
            timeout=30,
        )
        assert answer.status_code == 200
        path = f"{live_server.url}/surveys/nigeria/analysis"
        html = browser.post(
            path,
            data={"formula": SHORT, "csrf_token": csrf_of(browser.get(path, timeout=30).text)},
            timeout=60,
        ).text
    outcome = html.split('id="regression-result"', 1)[1].split("</table>", 1)[0]
    predictor = html.split('id="regression-predictor"', 1)[1].split("</table>", 1)[0]
    assert "contact" in outcome and outcome.count('<th scope="row">') == 4
    assert "The randomized <bdi>contact</bdi>" in predictor
    assert predictor.count('<th scope="row">') == 3
    assert f"{fit['predictor_model']['coefficients'][2]['estimate']:.3f}" in predictor


# fits read stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_http_refuses_what_cannot_be_fitted(live_server: LiveServer):
    live_server.create_survey(DOC)
    for formula, detail in [
        ("civic ~ assets * contact", "may only be a term of its own"),
        ("civic ~ I(contact + assets)", "may only be a term of its own"),
        ("civic ~ assets", "is plain"),
    ]:
        response = requests.post(
            f"{live_server.url}/api/v1/surveys/nigeria/regression",
            json={"formula": formula},
            headers=live_server.headers,
            timeout=60,
        )
        assert response.status_code == 422 and detail in response.json()["detail"], formula


def test_the_cli_offline_reaches_rs_maximum_on_the_nigeria_csv(tmp_path: Path):
    """rr's Nigeria rows as a CSV of wire-encoded answers, a column per question id."""
    answers = tmp_path / "answers.csv"
    with (DATA / "nigeria.csv").open(newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    with answers.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        writer.writerows([row[column] for column in COLUMNS.values()] for row in rows)
    run = subprocess.run(
        [str(AGGREGATOR), "regress", "nigeria", FORMULA, "--json",
         "--survey", str(DATA / "nigeria-survey.json"), "--answers", str(answers)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "DENIABLE_DATA_DIR": str(tmp_path)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    fit = json.loads(run.stdout)
    assert fit["converged"] and fit["n"] == 2423
    for rows_, reference in (
        (fit["coefficients"], R_OUTCOME),
        (fit["predictor_model"]["coefficients"], R_PREDICTOR),
    ):
        for row, (estimate, stderr) in zip(rows_, reference, strict=True):
            assert row["estimate"] == pytest.approx(estimate, abs=2e-6)
            assert row["stderr"] == pytest.approx(stderr, rel=2e-5)
