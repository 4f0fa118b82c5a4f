"""regress: the MLE, its failures said plainly, and the same JSON from Python, HTTP and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from deniable.aggregator import AnalysisError, regress
from deniable.aggregator.cli.core import cli
from deniable.aggregator.stats.regress import fit
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

DOC = {
    "id": "armed",
    "title": "Contact with armed groups",
    "questions": [
        {"id": "contact", "text": "Contact?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "none",
        },
        {"id": "adult", "text": "Over 40?", "type": "binary", "mechanism": "none"},
    ],
}
SURVEY = Survey.from_dict(DOC)


def answers(n: int, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        region, adult = int(rng.integers(3)), int(rng.integers(2))
        eta = -0.5 + 0.8 * (region == 2) - 0.6 * adult
        truth = int(rng.random() < 1 / (1 + np.exp(-eta)))
        rows.append(
            {
                "answers": {
                    "contact": SURVEY.questions["contact"].randomize(truth),
                    "party": SURVEY.questions["party"].randomize(int(rng.integers(3))),
                    "region": region,
                    "adult": adult,
                }
            }
        )
    return rows


def irls(x: np.ndarray, ones: np.ndarray, zeros: np.ndarray) -> np.ndarray:
    """Ordinary logistic regression on grouped counts, by textbook IRLS."""
    beta = np.zeros(x.shape[1])
    total = ones + zeros
    for _ in range(100):
        mu = 1 / (1 + np.exp(-(x @ beta)))
        w = total * mu * (1 - mu)
        beta = beta + np.linalg.solve(x.T @ (x * w[:, None]), x.T @ (ones - total * mu))
    return beta


def test_with_no_noise_it_is_ordinary_logistic_regression():
    rng = np.random.default_rng(5)
    x = np.column_stack([np.ones(6), [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2]])
    total = rng.integers(50, 200, 6).astype(float)
    ones = np.floor(total * rng.uniform(0.2, 0.8, 6))
    result = fit(x, ones, total - ones, 1.0, 0.0)
    assert result["converged"]
    np.testing.assert_allclose(result["beta"], irls(x, ones, total - ones), rtol=0, atol=1e-8)


def test_a_fit_reports_every_coefficient_in_the_order_written():
    doc = regress(SURVEY, answers(3000), "contact ~ adult + region", verify=False)
    assert doc["converged"] and doc["n"] == 3000 and doc["iterations"] < 50
    assert [c["term"] for c in doc["coefficients"]] == [
        "Intercept",
        "adult",
        "region[T.south]",
        "region[T.east]",
    ]
    east = doc["coefficients"][3]
    assert abs(east["estimate"] - 0.8) < 5 * east["stderr"]
    assert east["ci_low"] < east["estimate"] < east["ci_high"]
    assert 0 <= east["p_value"] <= 1 and east["z"] == pytest.approx(
        east["estimate"] / east["stderr"]
    )
    party = regress(SURVEY, answers(500), "party[B] ~ adult", verify=False)
    assert party["converged"] and party["outcome"]["option"] == "B"


@pytest.mark.parametrize(
    "formula, message",
    [
        ("contact", "expected 'outcome ~ covariates'"),
        ("contact ~ region +", "cannot parse"),
        ("nope ~ region", "no question 'nope'"),
        ("contact ~ nope", "no question 'nope'"),
        ("contact ~ party", "randomized"),
        ("region ~ adult", "plain"),
        ("party ~ adult", "name one as the outcome"),
        ("party[Z] ~ adult", "no option 'Z'"),
    ],
)
def test_bad_formulas_say_what_to_write(formula, message):
    with pytest.raises(AnalysisError, match=message):
        regress(SURVEY, answers(50), formula, verify=False)


def test_too_few_reports_is_an_error():
    with pytest.raises(AnalysisError, match="reports"):
        regress(SURVEY, answers(3), "contact ~ region + adult", verify=False)


def test_separation_is_reported_instead_of_numbers():
    rows = answers(600)
    for row in rows:
        if row["answers"]["region"] == 2:
            row["answers"]["contact"] = 1  # every report in the east supports yes
    doc = regress(SURVEY, rows, "contact ~ region", verify=False)
    assert doc["converged"] is False and "separation" in doc["message"]
    assert all(c["estimate"] is None and c["stderr"] is None for c in doc["coefficients"])


@pytest.fixture
def stored(client, auth):
    client.post("/api/v1/surveys", json=DOC, headers=auth)
    rng = np.random.default_rng(2)
    reports = [
        make_report(
            SURVEY,
            {
                "contact": int(rng.integers(2)),
                "party": "ABC"[int(rng.integers(3))],
                "region": int(rng.integers(3)),
                "adult": int(rng.integers(2)),
            },
            generate_key(),
        )
        # 1,200 reports put about 200 in each region-by-age cell, so the share of noisy yes
        # answers in every cell is more than six standard errors inside (q*, p*): the fit
        # converges whatever the secure coins say (a failure about once in 10^10 runs).
        for _ in range(1200)
    ]
    for start in range(0, len(reports), 600):  # within a batch's limit of 1,000
        response = client.post("/api/v1/reports", json={"reports": reports[start : start + 600]})
        assert all(r["result"] == "accepted" for r in response.get_json()["results"])
    return reports


def test_http_cli_and_python_give_the_same_json(app, client, auth, stored):
    formula = "contact ~ region + adult"
    response = client.post(
        "/api/v1/surveys/armed/regression", json={"formula": formula}, headers=auth
    )
    assert response.status_code == 200
    assert response.get_json() == regress(SURVEY, stored, formula)
    result = CliRunner().invoke(
        cli,
        ["regress", "armed", formula, "--json"],
        env={"DENIABLE_DATA_DIR": str(app.config["DATA_DIR"])},
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == response.get_json()
    table = CliRunner().invoke(
        cli, ["regress", "armed", formula], env={"DENIABLE_DATA_DIR": str(app.config["DATA_DIR"])}
    )
    assert table.exit_code == 0 and "region[T.east]" in table.output


def test_http_errors(client, auth, stored):
    path = "/api/v1/surveys/armed/regression"
    for body, status, detail in [
        ({"formula": "contact ~ party"}, 422, "randomized"),
        ({"formula": "contact ~ nope"}, 422, "no question"),
        ({"formula": ""}, 422, "formula"),
        ({"formula": "contact ~ adult", "confidence": 1.5}, 422, "confidence"),
        ({"formula": "contact ~ adult", "extra": 1}, 422, "unknown field"),
    ]:
        response = client.post(path, json=body, headers=auth)
        assert response.status_code == status and detail in response.get_json()["detail"]
    assert client.post(path, json={"formula": "contact ~ adult"}).status_code == 401


def test_one_model_building_step_builds_checks_and_refuses_too_few_reports():
    """build_model, the step every fitter (plain, weighted, randomized predictor) takes: the
    matrix by the formula, one per fixed setting, and too few reports refused by the number of
    coefficients the fitter fits."""
    from deniable.aggregator.stats import formula as grammar
    from deniable.aggregator.stats.limits import OFFLINE_LIMITS
    from deniable.aggregator.stats.regress import build_model

    parsed = grammar.parse("contact ~ region + adult")
    patterns = [(0, 0), (1, 1), (2, 0), (2, 1)]
    model = build_model(SURVEY, parsed, ["region", "adult"], patterns, 5, OFFLINE_LIMITS)
    assert model.terms[0] == "Intercept" and len(model.terms) == 4 == model.columns
    (x,) = model.matrices
    assert x.shape == (4, 4) and list(x[:, -1]) == [0.0, 1.0, 0.0, 1.0]  # adult as 0/1
    with pytest.raises(AnalysisError, match="4 reports cannot fit 4 coefficients"):
        build_model(SURVEY, parsed, ["region", "adult"], patterns, 4, OFFLINE_LIMITS)
    # A column held at 0 then 1 (the randomized predictor's), and a fitter of 2p - 1.
    fixed = build_model(
        SURVEY,
        parsed,
        ["region"],
        patterns,
        8,
        OFFLINE_LIMITS,
        fixed=({"adult": 0.0}, {"adult": 1.0}),
        coefficients=lambda p: 2 * p - 1,
    )
    x0, x1 = fixed.matrices
    assert list(x0[:, -1]) == [0.0] * 4 and list(x1[:, -1]) == [1.0] * 4
    with pytest.raises(AnalysisError, match="7 reports cannot fit 7 coefficients"):
        build_model(
            SURVEY,
            parsed,
            ["region"],
            patterns,
            7,
            OFFLINE_LIMITS,
            fixed=({"adult": 0.0}, {"adult": 1.0}),
            coefficients=lambda p: 2 * p - 1,
        )
