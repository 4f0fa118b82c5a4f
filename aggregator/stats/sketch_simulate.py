"""Simulated sketch tallies of text questions, for Monte Carlo checks and the accuracy benchmark:
respondents draw a word from given shares (e.g. Zipf over a named vocabulary), and each
mechanism's counters are drawn from their exact distribution with numpy (the device's sampler
follows the same probabilities: tests/shared/test_sketches.py)."""

from __future__ import annotations

import numpy as np

from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.text import bloom_bits, sketch_column


def zipf(size: int, exponent: float = 1.1) -> np.ndarray:
    """Zipf shares over `size` words, the most frequent first."""
    weights = 1.0 / np.arange(1, size + 1) ** exponent
    return weights / weights.sum()


def _hcms(sk: HCMS, words: list[str], d: np.ndarray, rng) -> np.ndarray:
    cols = np.array([[sketch_column(j, w, sk.m) for w in words] for j in range(sk.k)])
    parity = np.array([bin(x).count("1") & 1 for x in range(sk.m)])
    n = d.size
    j, row = rng.integers(sk.k, size=n), rng.integers(sk.m, size=n)
    entry = 1 - parity[row & cols[j, d]]
    bit = np.where(rng.random(n) < float(sk.keep), entry, 1 - entry)
    return np.bincount(2 * (j * sk.m + row) + bit, minlength=sk.slots)


def _cms(sk: CMS, words: list[str], d: np.ndarray, rng) -> np.ndarray:
    k, m = sk.k, sk.m
    cols = np.array([[sketch_column(j, w, m) for w in words] for j in range(k)])
    j = rng.integers(k, size=d.size)
    joint = np.bincount(j * len(words) + d, minlength=k * len(words)).reshape(k, len(words))
    marked = np.zeros((k, m), dtype=np.int64)
    for j in range(k):
        np.add.at(marked[j], cols[j], joint[j])
    per_j = joint.sum(axis=1)
    p = float(sk.keep)
    ones = rng.binomial(marked, p) + rng.binomial(per_j[:, None] - marked, 1 - p)
    return np.concatenate([ones.ravel(), per_j])


def _rappor(sk: RAPPOR, words: list[str], d: np.ndarray, rng) -> np.ndarray:
    k, m = sk.k, sk.m
    bloom = np.zeros((m, len(words), k), dtype=np.int64)
    for c in range(m):
        for i, w in enumerate(words):
            bloom[c, i, list(bloom_bits(c, w, sk.h, k))] = 1
    cohort = rng.integers(m, size=d.size)
    joint = np.bincount(cohort * len(words) + d, minlength=m * len(words)).reshape(m, len(words))
    set_bits = np.einsum("cd,cdi->ci", joint, bloom)
    per_cohort = joint.sum(axis=1)
    ones = rng.binomial(set_bits, float(sk.set_one)) + rng.binomial(
        per_cohort[:, None] - set_bits, float(sk.unset_one)
    )
    return np.concatenate([ones.ravel(), per_cohort])


def counts_of(sk: Sketch, words: list[str], answers: np.ndarray, rng) -> np.ndarray:
    """The counters of one survey whose respondents answered `words[answers[i]]`."""
    draw = {HCMS: _hcms, CMS: _cms, RAPPOR: _rappor}[type(sk)]
    return draw(sk, words, np.asarray(answers), rng)


def simulate_counts(
    sk: Sketch, words: list[str], shares: np.ndarray, n: int, trials: int, seed: int
) -> np.ndarray:
    """[trials, slots]: the counters of `trials` surveys of n respondents drawn from `shares`."""
    rng = np.random.default_rng(seed)
    return np.stack(
        [counts_of(sk, words, rng.choice(len(words), size=n, p=shares), rng) for _ in range(trials)]
    ).astype(np.float64)


def expected_counts(sk: Sketch, words: list[str], shares: np.ndarray, n: int) -> np.ndarray:
    """The counters' expected values for n respondents answering `words` with `shares`."""
    shares = np.asarray(shares, dtype=np.float64)
    if isinstance(sk, RAPPOR):
        k, m = sk.k, sk.m
        ones = np.zeros((m, k))
        for c in range(m):
            for share, word in zip(shares, words, strict=True):
                bits = np.full(k, float(sk.unset_one))
                bits[list(bloom_bits(c, word, sk.h, k))] = float(sk.set_one)
                ones[c] += share * bits
        return np.concatenate([(n / m) * ones.ravel(), np.full(m, n / m)])
    raise TypeError(f"expected counts of {type(sk).__name__} are not needed by the planner")
