"""Monte Carlo: the onebit mean and each option of a multi question are unbiased, their standard
errors honest and their 95% intervals cover, at n = 1,000, for several epsilons and truths.

Noisy answers are drawn from the mechanisms' exact probabilities (numpy, fixed seeds; the
device's sampler is checked against the same probabilities in tests/shared), and each simulated
survey goes through `question_results`, the very function the service's results use. One run
goes through the device sampler and `analyze` itself. Coverage over TRIALS surveys has a
standard error of about 0.004, so [0.93, 0.97] lies five of them from a true 95%; bias and the
variance ratio are checked at Z standard errors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from deniable.aggregator import analyze
from deniable.aggregator.stats.estimate import question_results, z_value
from deniable.shared import Survey
from deniable.shared.survey import Question

pytestmark = pytest.mark.slow

TRIALS = 3000
N = 1000
Z = 4.5
CONFIDENCE = 0.95


def question(doc: dict[str, Any]) -> Question:
    survey = Survey.from_dict(
        {"id": "mc", "title": "mc", "questions": [{"id": "q", "text": "?", **doc}]}
    )
    return survey.questions["q"]


def integer(epsilon: float, low: int = 0, high: int = 20) -> Question:
    return question({"type": "integer", "min": low, "max": high, "epsilon": epsilon})


def multi(epsilon: float, k: int) -> Question:
    options = [f"o{i}" for i in range(k)]
    return question({"type": "multi", "options": options, "epsilon": epsilon})


#: Distributions over 0..20: uniform, skewed towards small numbers, all at one end.
VALUES = np.arange(21)
UNIFORM = np.full(21, 1 / 21)
SKEWED = 0.7**VALUES / np.sum(0.7**VALUES)
NEAR_END = np.where(VALUES == 0, 0.98, np.where(VALUES == 20, 0.02, 0.0))
AT_MIN = np.where(VALUES == 0, 1.0, 0.0)
AT_MAX = np.where(VALUES == 20, 1.0, 0.0)

ONEBIT = [
    ("eps=0.5 uniform", 0.5, UNIFORM),
    ("eps=1 skewed", 1.0, SKEWED),
    ("eps=2 uniform", 2.0, UNIFORM),
    ("eps=4 skewed", 4.0, SKEWED),
    ("eps=1 nearly all at 0", 1.0, NEAR_END),
    ("eps=4 nearly all at 0", 4.0, NEAR_END),
]


def onebit_counts(q: Question, dist: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Reports of 1 in each of TRIALS surveys: each respondent's number drawn from `dist`, then
    their bit from onebit's exact probability for that number."""
    numbers = rng.choice(VALUES, size=(TRIALS, N), p=dist)
    m = q.randomizer
    one = np.array([float(m.one_probability(int(v))) for v in VALUES])
    return (rng.random((TRIALS, N)) < one[numbers]).sum(axis=1)


def rows_of(q: Question, counts: np.ndarray) -> list[list[dict[str, Any]]]:
    """The service's rows (question_results) of each simulated survey."""
    z = z_value(CONFIDENCE)
    return [question_results(q, N, list(map(int, c)), z)["options"] for c in counts]


def check(values: np.ndarray, stderr: np.ndarray, low: np.ndarray, high: np.ndarray, truth: float):
    """(bias in standard errors, variance ratio and its se, coverage) over the trials."""
    mean, sd = values.mean(), values.std(ddof=1)
    bias_z = abs(mean - truth) / (sd / math.sqrt(TRIALS))
    a, s2 = (values - mean) ** 2, stderr**2
    ratio = a.mean() / s2.mean()
    ratio_se = (a - ratio * s2).std(ddof=1) / math.sqrt(TRIALS) / s2.mean()
    coverage = float(np.mean((low <= truth) & (truth <= high)))
    return bias_z, ratio, ratio_se, coverage


def onebit_check(q: Question, dist: np.ndarray, seed: int, *, q_shift: float = 0.0):
    counts = onebit_counts(q, dist, np.random.default_rng(seed))
    truth = float(np.dot(VALUES, dist))
    if q_shift:  # a deliberately wrong q* (the estimator's, not the sampler's)
        p, qs = float(q.p_star), float(q.q_star) + q_shift
        values = 20 * (counts / N - qs) / (p - qs)
        return check(values, np.ones_like(values), values, values, truth)
    rows = [r[0] for r in rows_of(q, np.stack([N - counts, counts], axis=1))]
    arrays = [
        np.array([r[key] for r in rows]) for key in ("estimate", "stderr", "ci_low", "ci_high")
    ]
    return check(*arrays, truth)


@pytest.mark.parametrize(("name", "epsilon", "dist"), ONEBIT, ids=[c[0] for c in ONEBIT])
def test_the_onebit_mean_is_unbiased_and_its_interval_covers(name, epsilon, dist):
    seed = [c[0] for c in ONEBIT].index(name)
    bias_z, ratio, ratio_se, coverage = onebit_check(integer(epsilon), dist, seed)
    assert bias_z < Z, (bias_z, name)
    assert abs(ratio - 1) < Z * ratio_se, (ratio, ratio_se)
    assert 0.93 <= coverage <= 0.97, coverage


@pytest.mark.parametrize(("epsilon", "dist"), [(1.0, AT_MIN), (4.0, AT_MAX)])
def test_a_truth_at_the_end_of_the_scale_is_covered_at_least_as_often(epsilon, dist):
    # At the edge, an interval that misses on the far side is clipped onto the truth, so it
    # covers more often than 95% (about 97.5%): conservative, never less.
    *_, coverage = onebit_check(integer(epsilon), dist, 40)
    assert 0.93 <= coverage <= 0.985, coverage


def test_the_check_catches_a_wrong_q_star():
    bias_z, *_ = onebit_check(integer(1.0), SKEWED, 0, q_shift=0.01)
    assert bias_z > Z


#: Multi truths: each option's chance of being selected, and whether selections go together.
MULTI = [
    ("k=3 eps=3 independent", 3.0, (0.5, 0.2, 0.05), False),
    ("k=3 eps=1 skewed", 1.0, (0.9, 0.3, 0.05), False),
    ("k=4 eps=8 together", 8.0, (0.6, 0.6, 0.1, 0.0), True),
    ("k=2 eps=2 none selected", 2.0, (0.0, 0.0), False),
]


def multi_counts(q: Question, probs: tuple[float, ...], together: bool, seed: int) -> np.ndarray:
    """Per option, the reports with its bit set in each of TRIALS surveys."""
    rng = np.random.default_rng(seed)
    f = np.asarray(probs)
    if together:  # one uniform per respondent: the options' selections are nested, correlated
        u = rng.random((TRIALS, N, 1))
        chosen = u < f
    else:
        chosen = rng.random((TRIALS, N, len(f))) < f
    p, qs = float(q.p_star), float(q.q_star)
    bits = rng.random(chosen.shape) < np.where(chosen, p, qs)
    return bits.sum(axis=1)


@pytest.mark.parametrize(("name", "epsilon", "probs", "together"), MULTI, ids=[m[0] for m in MULTI])
def test_each_multi_option_is_unbiased_and_its_interval_covers(name, epsilon, probs, together):
    q = multi(epsilon, len(probs))
    counts = multi_counts(q, probs, together, seed=10 + [m[0] for m in MULTI].index(name))
    rows = rows_of(q, counts)
    for i, truth in enumerate(probs):
        arrays = [
            np.array([r[i][key] for r in rows])
            for key in ("estimate", "stderr", "ci_low", "ci_high")
        ]
        bias_z, ratio, ratio_se, coverage = check(*arrays, truth)
        assert bias_z < Z, (i, bias_z)
        assert abs(ratio - 1) < Z * ratio_se, (i, ratio, ratio_se)
        if 0 < truth < 1:
            assert 0.93 <= coverage <= 0.97, (i, coverage)
        else:  # at the edge: clipped onto the truth when it misses on the far side
            assert 0.93 <= coverage <= 0.985, (i, coverage)


def test_through_the_device_sampler_and_analyze():
    survey = Survey.from_dict(
        {
            "id": "mc",
            "title": "mc",
            "questions": [
                {"id": "drinks", "text": "?", "type": "integer", "min": 0, "max": 20,
                 "epsilon": 2.0},
                {"id": "used", "text": "?", "type": "multi", "options": ["a", "b", "c"],
                 "epsilon": 3.0},
            ],
        }
    )  # fmt: skip
    rng = np.random.default_rng(7)
    numbers = rng.choice(VALUES, size=4000, p=SKEWED)
    chosen = rng.random((4000, 3)) < np.array([0.5, 0.2, 0.05])
    rows = [
        {
            "answers": {
                "drinks": survey.questions["drinks"].randomize(int(x)),
                "used": survey.questions["used"].randomize([int(i) for i in np.flatnonzero(c)]),
            }
        }
        for x, c in zip(numbers, chosen, strict=True)
    ]
    drinks, used = analyze(survey, rows, verify=False)["questions"]
    mean = drinks["options"][0]
    assert abs(mean["estimate"] - float(np.dot(VALUES, SKEWED))) <= 5 * mean["stderr"], mean
    for row, truth in zip(used["options"], (0.5, 0.2, 0.05), strict=True):
        assert abs(row["estimate"] - truth) <= 5 * row["stderr"], row
