"""Monte Carlo validation of the estimator: unbiased, honest standard errors, covering intervals.

Each setting draws many survey tallies of n respondents sampled from a population with a known
true distribution, straight from the mechanism's exact transition probabilities (numpy, fixed
seed): rr and coins as binomial counts, grr as multinomial reports, oue as per-bit binomials
given the multinomial true answers. (tests/shared/test_sampling.py separately checks that the
device's sampler follows those same probabilities.) The tallies go through `option_stats`, the
very function `results_document` uses, vectorized over trials; a sample of them also goes
through `results_document` itself.

Bounds: every normal-approximation check uses z = Z_CHECK, the Bonferroni level for a failure
probability of 1e-4 spread over at most MAX_CHECKS checks (and never less than 4 standard
errors); coverage has TRIALS large enough that [0.94, 0.96] fails a true 95% interval (whose
exact coverage, computed below, lies within 0.005 of 95%) less than once in 10^6 per check.
The `wrong_*` tests feed deliberately wrong formulas through the same checker and expect it to
fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from deniable.aggregator.stats.estimate import em_share, option_stats, results_document, z_value
from deniable.shared import Survey
from deniable.shared.survey import Question

TRIALS = 100_000
MAX_CHECKS = 400
Z_CHECK = max(4.0, NormalDist().inv_cdf(1 - 1e-4 / (2 * MAX_CHECKS)))
CONFIDENCE = 0.95

#: (counts[trials, k], n) -> (estimate, stderr, ci_low, ci_high), each [trials, k].
Estimator = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Setting:
    name: str
    question: dict[str, Any]
    truth: tuple[float, ...]
    n: int

    @property
    def q(self) -> Question:
        doc = {
            "id": "mc",
            "title": "Monte Carlo",
            "questions": [{"id": "q", "text": "?", **self.question}],
        }
        return Survey.from_dict(doc).questions["q"]


def binary(mechanism: str, **params: Any) -> dict[str, Any]:
    return {"type": "binary", "mechanism": mechanism, **params}


def categorical(mechanism: str, k: int, epsilon: float) -> dict[str, Any]:
    options = [f"o{i}" for i in range(k)]
    return {"type": "categorical", "options": options, "mechanism": mechanism, "epsilon": epsilon}


SETTINGS = [
    Setting("rr eps=1 n=1000", binary("rr", epsilon=1.0), (0.7, 0.3), 1000),
    Setting("rr eps=0.5 n=100", binary("rr", epsilon=0.5), (0.55, 0.45), 100),
    Setting("rr eps=4 n=1000 1%", binary("rr", epsilon=4.0), (0.99, 0.01), 1000),
    Setting("coins fair n=100", binary("coins", coins={"truth": 0.5, "yes": 0.5}), (0.8, 0.2), 100),
    Setting(
        "coins forced n=2000 1%",
        binary("coins", coins={"truth": "2/3", "yes": "1/2"}),
        (0.99, 0.01),
        2000,
    ),
    Setting(
        "coins 0.8/0.8 n=1000", binary("coins", coins={"truth": 0.8, "yes": 0.8}), (0.6, 0.4), 1000
    ),
    Setting("grr k=4 eps=2 n=1000", categorical("grr", 4, 2.0), (0.5, 0.3, 0.19, 0.01), 1000),
    Setting("grr k=3 eps=1 n=100", categorical("grr", 3, 1.0), (0.6, 0.3, 0.1), 100),
    Setting(
        "oue k=6 eps=1 n=1000", categorical("oue", 6, 1.0), (0.4, 0.3, 0.2, 0.05, 0.04, 0.01), 1000
    ),
    Setting(
        "oue k=8 eps=4 n=100",
        categorical("oue", 8, 4.0),
        (0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.04, 0.01),
        100,
    ),
]

CATEGORICAL = [s for s in SETTINGS if s.question["type"] == "categorical"]


def simulate(q: Question, truth: tuple[float, ...], n: int, trials: int, seed: int) -> np.ndarray:
    """Support counts [trials, k] of n respondents sampled from `truth`, by the exact mechanism."""
    rng = np.random.default_rng(seed)
    m = q.randomizer
    f = np.asarray(truth, dtype=float)
    if q.type == "binary":
        lam_yes = sum(f[v] * float(m.probability(1, v)) for v in range(2))
        yes = rng.binomial(n, lam_yes, size=trials)
        return np.stack([n - yes, yes], axis=1)
    if q.mechanism == "grr":
        transition = np.array(
            [[float(m.probability(u, v)) for v in range(q.k)] for u in range(q.k)]
        )
        return rng.multinomial(n, transition @ f, size=trials)
    p, qs = float(m.p_star), float(m.q_star)
    true_counts = rng.multinomial(n, f, size=trials)
    return rng.binomial(true_counts, p) + rng.binomial(n - true_counts, qs)


def deniable(q: Question, m: int = 1) -> Estimator:
    """The estimator the service runs (option_stats with each option's own pair)."""
    pairs = q.randomizer.option_pairs()
    p = np.array([float(a) for a, _ in pairs])
    qs = np.array([float(b) for _, b in pairs])
    return lambda counts, n: option_stats(counts, n, p, qs, z_value(CONFIDENCE, m))


def check(estimator: Estimator, counts: np.ndarray, n: int, truth: tuple[float, ...]) -> list[str]:
    """Failures of bias, variance ratio and 95% coverage, per option; empty when all hold."""
    est, se, low, high = estimator(counts, n)
    trials = est.shape[0]
    failures = []
    for v, f in enumerate(truth):
        x, s2 = est[:, v], se[:, v] ** 2
        mean, sd = x.mean(), x.std(ddof=1)
        if abs(mean - f) > Z_CHECK * sd / math.sqrt(trials):
            failures.append(f"option {v}: bias, mean {mean:.5f} vs truth {f} (sd {sd:.4f})")
        # Empirical variance over mean squared stderr, with its delta-method standard error.
        a = (x - mean) ** 2
        ratio = a.mean() / s2.mean()
        ratio_se = (a - ratio * s2).std(ddof=1) / math.sqrt(trials) / s2.mean()
        if abs(ratio - 1) > Z_CHECK * ratio_se:
            failures.append(f"option {v}: variance ratio {ratio:.4f} (se {ratio_se:.4f})")
        coverage = np.mean((low[:, v] <= f) & (f <= high[:, v]))
        lowest, highest = (0.94, 0.96) if n >= 1000 else (0.93, 1.0)
        if not lowest <= coverage <= highest:
            failures.append(f"option {v}: coverage {coverage:.4f} outside [{lowest}, {highest}]")
    return failures


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_estimates_are_unbiased_with_honest_errors_and_intervals(setting: Setting) -> None:
    q = setting.q
    counts = simulate(q, setting.truth, setting.n, TRIALS, seed=SETTINGS.index(setting))
    assert check(deniable(q), counts, setting.n, setting.truth) == []


def joint_coverage(q: Question, setting: Setting, m: int, seed: int) -> float:
    """The share of trials whose intervals at level z_value(CONFIDENCE, m) cover every option."""
    counts = simulate(q, setting.truth, setting.n, TRIALS, seed=seed)
    _, _, low, high = deniable(q, m=m)(counts, setting.n)
    f = np.asarray(setting.truth)
    return float(np.mean(np.all((low <= f) & (f <= high), axis=1)))


@pytest.mark.parametrize("setting", CATEGORICAL, ids=lambda s: s.name)
def test_simultaneous_intervals_cover_jointly(setting: Setting) -> None:
    # Bonferroni over Wilson intervals: at least 95% jointly up to Wilson's own discreteness,
    # which the marginal bounds allow too (0.945 at n >= 1000; 0.93 at n = 100, where an
    # option at 1% has an expected support of about 2 and its Wilson interval undercovers).
    q = setting.q
    joint = joint_coverage(q, setting, q.k, seed=100 + SETTINGS.index(setting))
    assert joint >= (0.945 if setting.n >= 1000 else 0.93)


@pytest.mark.parametrize("setting", CATEGORICAL, ids=lambda s: s.name)
def test_wrong_marginal_level_for_simultaneous_fails(setting: Setting) -> None:
    q = setting.q
    assert joint_coverage(q, setting, 1, seed=100 + SETTINGS.index(setting)) < 0.93


def exact_coverage(q: Question, option: int, f: float, n: int) -> float:
    """P[interval covers f] summed exactly over the Binomial(n, lambda) support count."""
    p, qs = (float(x) for x in q.randomizer.option_pairs()[option])
    lam = qs + f * (p - qs)
    c = np.arange(n + 1)
    log_pmf = (
        np.array(
            [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)]
        )
        + c * math.log(lam)
        + (n - c) * math.log1p(-lam)
    )
    _, _, low, high = option_stats(c, n, p, qs, z_value(CONFIDENCE))
    return float(np.exp(log_pmf)[(low <= f) & (f <= high)].sum())


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_exact_marginal_coverage(setting: Setting) -> None:
    # The support count of each option is exactly Binomial(n, lambda): coverage has no noise.
    q = setting.q
    for v, f in enumerate(setting.truth):
        coverage = exact_coverage(q, v, f, setting.n)
        if setting.n >= 1000:
            assert 0.945 <= coverage <= 0.955, (v, coverage)
        else:
            assert coverage >= 0.935, (v, coverage)


@pytest.mark.parametrize("setting", CATEGORICAL, ids=lambda s: s.name)
def test_service_numbers_and_share_on_simulated_tallies(setting: Setting) -> None:
    q = setting.q
    survey = Survey.from_dict(
        {
            "id": "mc",
            "title": "Monte Carlo",
            "questions": [{"id": "q", "text": "?", **setting.question}],
        }
    )
    counts = simulate(q, setting.truth, setting.n, 20, seed=200 + SETTINGS.index(setting))
    est, se, low, high = deniable(q)(counts, setting.n)
    p, qs = q.p_star, q.q_star
    for t, row in enumerate(counts):
        doc = results_document(survey, setting.n, {"q": [int(c) for c in row]})
        opts = doc["questions"][0]["options"]
        assert [o["estimate"] for o in opts] == pytest.approx(est[t], abs=1e-12)
        assert [o["stderr"] for o in opts] == list(se[t])
        assert [o["ci_low"] for o in opts] == list(low[t])
        assert [o["ci_high"] for o in opts] == list(high[t])
        share = np.array([o["share"] for o in opts])
        assert np.all(share >= 0) and share.sum() == pytest.approx(1, abs=1e-9)
        assert list(share) == list(em_share(row, p, qs))
        a = (p - qs) * np.eye(q.k) + qs
        o = row / row.sum()
        gradient = a.T @ (o / (a @ share))
        assert np.max(np.abs(share * (gradient - 1))) < 1e-6


# -- the checker catches wrong formulas ----------------------------------------------------


def noise_only(q: Question) -> Estimator:
    """Wang et al.'s variance for the fixed respondents (no sampling term), Wald interval."""
    pairs = q.randomizer.option_pairs()
    p = np.array([float(a) for a, _ in pairs])
    qs = np.array([float(b) for _, b in pairs])
    z = z_value(CONFIDENCE)

    def estimate(counts: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
        est = (counts / n - qs) / (p - qs)
        f = np.clip(est, 0, 1)
        se = np.sqrt((f * p * (1 - p) + (1 - f) * qs * (1 - qs)) / (n * (p - qs) ** 2))
        return est, se, np.clip(est - z * se, 0, 1), np.clip(est + z * se, 0, 1)

    return estimate


def q_off(q: Question, delta: float = 0.01) -> Estimator:
    """The right formulas with q* off by delta."""
    pairs = q.randomizer.option_pairs()
    p = np.array([float(a) for a, _ in pairs])
    qs = np.array([float(b) for _, b in pairs]) + delta
    return lambda counts, n: option_stats(counts, n, p, qs, z_value(CONFIDENCE))


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("rr eps=1 n=1000", "variance"),
        ("rr eps=4 n=1000 1%", "coverage"),
        ("grr k=4 eps=2 n=1000", "variance"),
    ],
)
def test_wrong_noise_only_variance_fails(name: str, kind: str) -> None:
    setting = next(s for s in SETTINGS if s.name == name)
    q = setting.q
    counts = simulate(q, setting.truth, setting.n, TRIALS, seed=SETTINGS.index(setting))
    failures = check(noise_only(q), counts, setting.n, setting.truth)
    assert any(kind in failure for failure in failures), failures


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if s.n >= 1000])
def test_wrong_q_star_fails(name: str) -> None:
    setting = next(s for s in SETTINGS if s.name == name)
    q = setting.q
    counts = simulate(q, setting.truth, setting.n, TRIALS, seed=SETTINGS.index(setting))
    failures = check(q_off(q), counts, setting.n, setting.truth)
    assert any("bias" in failure for failure in failures), failures
