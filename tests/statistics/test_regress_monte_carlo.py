"""Monte Carlo: the regression's 95% intervals cover the true coefficients.

2,000 simulated surveys of n = 2,000 respondents per outcome mechanism (rr, coins, grr): plain
covariates region (3 options) and adult (0/1), a true logistic model, noisy reports drawn from
the outcome option's exact (p*, q*) (numpy, fixed seed), fitted by the very `fit` regress
uses. Coverage has a standard error of about 0.005 there, so [0.93, 0.97] is four of them from
95%. A smaller run goes through the device sampler and regress() itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.regress import fit, regress
from deniable.shared import Survey

pytestmark = pytest.mark.slow

SURVEYS = 2000
N = 2000
BETA = np.array([-0.4, 0.6, -0.5, 0.9])  # intercept, region[south], region[east], adult
X = np.array([[1, r == 1, r == 2, a] for r in range(3) for a in range(2)], dtype=float)
SHARES = np.array([0.2, 0.15, 0.2, 0.15, 0.1, 0.2])
Z = z_value(0.95)

OUTCOMES = {
    "rr": ({"type": "binary", "epsilon": 1.0}, 1),
    "coins": ({"type": "binary", "mechanism": "coins", "coins": {"truth": "1/2", "yes": "1/2"}}, 1),
    "grr": (
        {"type": "categorical", "options": ["A", "B", "C"], "mechanism": "grr", "epsilon": 2.0},
        1,
    ),
}


def outcome_pair(name: str) -> tuple[float, float]:
    doc, option = OUTCOMES[name]
    survey = Survey.from_dict(
        {"id": "mc", "title": "mc", "questions": [{"id": "y", "text": "?", **doc}]}
    )
    p, q = survey.questions["y"].randomizer.option_pairs()[option]
    return float(p), float(q)


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_intervals_cover_the_true_coefficients(name):
    p, q = outcome_pair(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    s = 1 / (1 + np.exp(-(X @ BETA)))
    support = q + (p - q) * s
    counts = rng.multinomial(N, SHARES, size=SURVEYS)
    ones = rng.binomial(counts, support)
    covered = np.zeros(len(BETA))
    failed = 0
    for i in range(SURVEYS):
        result = fit(X, ones[i].astype(float), (counts[i] - ones[i]).astype(float), p, q)
        if not result["converged"]:
            failed += 1
            continue
        se = np.sqrt(np.diag(result["covariance"]))
        covered += np.abs(result["beta"] - BETA) <= Z * se
    coverage = covered / (SURVEYS - failed)
    assert failed <= SURVEYS // 100, failed
    assert np.all((coverage >= 0.93) & (coverage <= 0.97)), (name, coverage)


def test_a_noise_only_fit_would_fail_the_same_check():
    # Ignoring the randomization (p* = 1, q* = 0) biases every coefficient towards 0.
    p, q = outcome_pair("rr")
    rng = np.random.default_rng(9)
    s = 1 / (1 + np.exp(-(X @ BETA)))
    counts = rng.multinomial(N, SHARES, size=300)
    ones = rng.binomial(counts, q + (p - q) * s)
    covered = np.zeros(len(BETA))
    for i in range(300):
        result = fit(X, ones[i].astype(float), (counts[i] - ones[i]).astype(float), 1.0, 0.0)
        se = np.sqrt(np.diag(result["covariance"]))
        covered += np.abs(result["beta"] - BETA) <= Z * se
    assert np.any(covered / 300 < 0.93)


def test_regress_through_the_device_sampler():
    survey = Survey.from_dict(
        {
            "id": "mc",
            "title": "mc",
            "questions": [
                {"id": "y", "text": "?", **OUTCOMES["coins"][0]},
                {
                    "id": "region",
                    "text": "?",
                    "type": "categorical",
                    "options": ["n", "s", "e"],
                    "mechanism": "none",
                },
                {"id": "adult", "text": "?", "type": "binary", "mechanism": "none"},
            ],
        }
    )
    rng = np.random.default_rng(4)
    patterns = rng.choice(6, size=6000, p=SHARES)
    s = 1 / (1 + np.exp(-(X @ BETA)))
    rows = []
    for k in patterns:
        truth = int(rng.random() < s[k])
        rows.append(
            {
                "answers": {
                    "y": survey.questions["y"].randomize(truth),
                    "region": int(k) // 2,
                    "adult": int(k) % 2,
                }
            }
        )
    doc = regress(survey, rows, "y ~ region + adult", verify=False)
    assert doc["converged"]
    for coefficient, true in zip(doc["coefficients"], BETA, strict=True):
        assert abs(coefficient["estimate"] - true) <= 5 * coefficient["stderr"], coefficient
