"""Skip logic and the estimates: a gated question is estimated for the sub-population that was
asked, out of its own n, and that n is exact.

The population: 30% smoke (a plain question); only smokers are asked the randomized `quit`
(rr, epsilon 1), and 60% of smokers have tried to quit. A wrong denominator (the survey's n
instead of the reports that asked it) would put the estimate near 0.3 * 0.6 + ..., far outside
the bounds below; a count of askings off by one would fail the exact-n checks.

Monte Carlo over TRIALS tallies drawn from the mechanism's exact probabilities (numpy, fixed
seed) goes through `results_document`, the function the service runs on the store's tallies
(with the asked slot). Bounds: the mean of TRIALS estimates within 5 standard errors of the
truth (fails about 6 in 10 million runs by chance), coverage of the 95% interval within 5
standard errors of 0.95. A smaller run goes through the real path: simulated respondents who
skip as the survey says (stats/simulate.py, Survey.relevant), signed reports, `analyze`.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from deniable.aggregator.stats import analyze, breakdown
from deniable.aggregator.stats.estimate import results_document
from deniable.aggregator.stats.simulate import parse_truth, respondent_reports
from deniable.shared import Survey
from deniable.shared.signing import generate_key

pytestmark = pytest.mark.slow

SMOKE = 0.3
QUIT = 0.6  # among smokers
N = 2000
TRIALS = 4000
Z5 = 5.0

DOC = {
    "id": "gated-mc",
    "title": "Gated Monte Carlo",
    "questions": [
        {"id": "smokes", "text": "Smoke?", "type": "binary", "mechanism": "none"},
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
        },
        {
            "id": "quit",
            "text": "Tried to quit?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": "smokes == 'yes'",
        },
    ],
}
SURVEY = Survey.from_dict(DOC)


def test_the_gated_estimate_is_unbiased_for_the_asked_and_its_n_exact() -> None:
    rng = np.random.default_rng(20261126)
    rr = SURVEY.questions["quit"].randomizer
    p, q = float(rr.p_star), float(rr.q_star)
    asked = rng.binomial(N, SMOKE, size=TRIALS)  # smokers: the reports holding `quit`
    quitters = rng.binomial(asked, QUIT)
    yes = rng.binomial(quitters, p) + rng.binomial(asked - quitters, q)
    estimates = np.empty(TRIALS)
    covered = 0
    for t in range(TRIALS):
        m, y = int(asked[t]), int(yes[t])
        support = {
            "smokes": [N - m, m],
            "region": [N // 2, N - N // 2],
            "quit": [m - y, y, m],  # no, yes, then the reports that asked it
        }
        entry = results_document(SURVEY, N, support).questions["quit"]
        assert entry.n == m and entry["relevant"] == "smokes == 'yes'"
        row = entry.options[1]
        estimates[t] = row["estimate"]
        covered += row["ci_low"] <= QUIT <= row["ci_high"]
    # The estimator's spread for the expected number asked (its own n, not N).
    lam = q + (p - q) * QUIT
    sd = math.sqrt(lam * (1 - lam) / (N * SMOKE * (p - q) ** 2))
    assert abs(estimates.mean() - QUIT) < Z5 * sd / math.sqrt(TRIALS)
    assert 0.8 * sd < estimates.std() < 1.25 * sd
    coverage = covered / TRIALS
    assert abs(coverage - 0.95) < Z5 * math.sqrt(0.95 * 0.05 / TRIALS), coverage


def test_simulated_respondents_skip_as_the_survey_says() -> None:
    """The real path: respondents drawn with a seed, who are asked `quit` only if they smoke,
    signed reports, `analyze` and `breakdown` of the reports."""
    truth = parse_truth(SURVEY, '{"smokes": {"yes": 0.3}, "quit": {"yes": 0.6}}')
    n = 4000
    reports = respondent_reports(
        SURVEY, truth, [generate_key() for _ in range(n)], random.Random(7)
    )
    smokers = [r for r in reports if r["answers"]["smokes"] == 1]
    assert all(("quit" in r["answers"]) == (r["answers"]["smokes"] == 1) for r in reports)
    res = analyze(SURVEY, reports, verify=False)
    assert res.n == n and res.questions["quit"].n == len(smokers)
    assert res.questions["smokes"].n == n
    rr = SURVEY.questions["quit"].randomizer
    p, q = float(rr.p_star), float(rr.q_star)
    lam = q + (p - q) * QUIT
    se = math.sqrt(lam * (1 - lam) / (len(smokers) * (p - q) ** 2))
    assert abs(res.questions["quit"].estimates["yes"] - QUIT) < Z5 * se
    by_region = breakdown(SURVEY, reports, "quit", "region", verify=False)
    assert by_region.n == len(smokers) and by_region.n_skipped == n - len(smokers)
