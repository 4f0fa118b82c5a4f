"""Monte Carlo: crosstab and breakdown are unbiased and their 95% intervals cover.

Noisy answers are drawn from the mechanisms' exact transition probabilities (numpy, fixed
seed), vectorized over trials, and go through the very functions crosstab and breakdown use
(crosstab_sums and crosstab_cells; question_results per group). One smaller run goes through
the real device sampler and crosstab() itself. Coverage over TRIALS trials has a standard error
of about 0.004, so [0.93, 0.97] is five of them away from a true 95%.
"""

from __future__ import annotations

import numpy as np
import pytest

from deniable.aggregator.stats.estimate import option_stats, z_value
from deniable.aggregator.stats.joint import crosstab, crosstab_cells, crosstab_sums
from deniable.shared import Survey

pytestmark = pytest.mark.slow

TRIALS = 3000
CHUNK = 250
N = 1000
Z = z_value(0.95)


def survey(first: dict, second: dict) -> Survey:
    return Survey.from_dict(
        {
            "id": "mc",
            "title": "mc",
            "questions": [
                {"id": "a", "text": "a?", **first},
                {"id": "b", "text": "b?", **second},
            ],
        }
    )


def noisy_supports(question, truth_index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """0/1 support matrices [..., k] of noisy reports of the true option indices."""
    mech = question.randomizer
    outputs = list(mech.outputs())
    probs = np.array([[float(mech.probability(o, t)) for o in outputs] for t in range(question.k)])
    cum = probs.cumsum(axis=1)
    u = rng.random(truth_index.shape)
    chosen = (u[..., None] > cum[truth_index]).sum(axis=-1)
    support = np.zeros((len(outputs), question.k))
    for i, o in enumerate(outputs):
        support[i, list(mech.supports(o))] = 1.0
    return support[chosen]


CASES = {
    "rr x grr": (
        {"type": "binary", "epsilon": 1.0},
        {"type": "categorical", "options": ["x", "y", "z"], "mechanism": "grr", "epsilon": 2.0},
        np.array([[0.1, 0.2, 0.1], [0.3, 0.05, 0.25]]),
    ),
    "coins x plain": (
        {"type": "binary", "mechanism": "coins", "coins": {"truth": "1/2", "yes": "1/2"}},
        {"type": "binary", "mechanism": "none"},
        np.array([[0.5, 0.1], [0.15, 0.25]]),
    ),
    "oue x rr": (
        {
            "type": "categorical",
            "options": ["x", "y", "z", "w"],
            "mechanism": "oue",
            "epsilon": 1.5,
        },
        {"type": "binary", "epsilon": 2.0},
        np.array([[0.05, 0.15], [0.3, 0.1], [0.2, 0.05], [0.1, 0.05]]),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_crosstab_is_unbiased_and_covers(name):
    first, second, joint = CASES[name]
    s = survey(first, second)
    a, b = s.questions["a"], s.questions["b"]
    rng = np.random.default_rng(sum(map(ord, name)))
    flat = joint.ravel()
    estimates, covered = [], []
    for _ in range(TRIALS // CHUNK):
        cell = rng.choice(flat.size, size=(CHUNK, N), p=flat)
        ta, tb = np.divmod(cell, joint.shape[1])
        total, squares = crosstab_sums(noisy_supports(a, ta, rng), noisy_supports(b, tb, rng), a, b)
        estimate, _, low, high = crosstab_cells(total, squares, np.full(CHUNK, N), Z)
        estimates.append(estimate)
        covered.append((low <= joint) & (joint <= high))
    estimate = np.concatenate(estimates)
    coverage = np.concatenate(covered).mean(axis=0)
    spread = estimate.std(axis=0) / np.sqrt(TRIALS)
    assert np.all(np.abs(estimate.mean(axis=0) - joint) <= 5 * spread), name
    assert np.all((coverage >= 0.93) & (coverage <= 0.97)), (name, coverage)


def test_a_wrong_standard_error_fails_the_same_check():
    first, second, joint = CASES["rr x grr"]
    s = survey(first, second)
    a, b = s.questions["a"], s.questions["b"]
    rng = np.random.default_rng(7)
    cell = rng.choice(joint.size, size=(500, N), p=joint.ravel())
    ta, tb = np.divmod(cell, joint.shape[1])
    total, squares = crosstab_sums(noisy_supports(a, ta, rng), noisy_supports(b, tb, rng), a, b)
    estimate, stderr, _, _ = crosstab_cells(total, squares, np.full(500, N), Z)
    halved = (np.abs(estimate - joint) <= Z * stderr / 2).mean(axis=0)  # a wrong formula
    assert np.any((halved < 0.93) | (halved > 0.97))


def test_breakdown_groups_cover_like_separate_surveys():
    # Each group is a survey of its own: its yes share covers at the usual rate.
    rng = np.random.default_rng(11)
    s = survey({"type": "binary", "epsilon": 1.0}, {"type": "binary", "mechanism": "none"})
    a = s.questions["a"]
    p, q = float(a.randomizer.p_star), float(a.randomizer.q_star)
    truths = np.array([0.2, 0.6])
    groups = rng.choice(2, size=(TRIALS, N), p=[0.3, 0.7])
    yes = rng.random((TRIALS, N)) < truths[groups]
    sent = np.where(yes, rng.random((TRIALS, N)) < p, rng.random((TRIALS, N)) < q)
    for g in (0, 1):
        n = (groups == g).sum(axis=1)
        c = (sent & (groups == g)).sum(axis=1)
        _, _, low, high = option_stats(c, n, p, q, Z)
        coverage = ((low <= truths[g]) & (truths[g] <= high)).mean()
        assert 0.93 <= coverage <= 0.97, (g, coverage)


def test_crosstab_through_the_device_sampler():
    first, second, joint = CASES["rr x grr"]
    s = survey(first, second)
    rng = np.random.default_rng(3)
    cells = rng.choice(joint.size, size=4000, p=joint.ravel())
    rows = []
    for cell in cells:
        ta, tb = divmod(int(cell), joint.shape[1])
        rows.append(
            {"answers": {"a": s.questions["a"].randomize(ta), "b": s.questions["b"].randomize(tb)}}
        )
    # The truth of this sample is its own shares (the seeded draw is fixed; only the coins vary).
    sample = np.bincount(cells, minlength=joint.size).reshape(joint.shape) / len(cells)
    doc = crosstab(s, rows, "a", "b", verify=False)
    for entry in doc["cells"]:
        i = s.questions["a"].options.index(entry["first"])
        j = s.questions["b"].options.index(entry["second"])
        assert abs(entry["estimate"] - sample[i, j]) <= 5 * entry["stderr"], entry
