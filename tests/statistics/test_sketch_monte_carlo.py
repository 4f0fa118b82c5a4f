"""Monte Carlo: candidate frequencies from text sketches are unbiased and their 95% intervals
cover at n = 10,000, for cms, hcms (joint decoding) and rappor, at small and large sketches;
Apple's estimator, which ignores the candidates' collisions, does not cover at small sketches.

40 words with Zipf(1.1) shares, every word a candidate, epsilon 4 (cms, hcms). Coverage pooled
over the 40 candidates and TRIALS surveys has a standard error near 0.0008, so [0.93, 0.97]
is far from chance; each candidate's own coverage (standard error 0.005) must lie in
[0.91, 0.99], and its bias within 5 standard errors.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.sketch_estimate import SketchDecodeError, decoder, fwht
from deniable.aggregator.stats.sketch_simulate import simulate_counts, zipf
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch

pytestmark = pytest.mark.slow

WORDS = [f"word{i}" for i in range(40)]
SHARES = zipf(40)
N = 10_000
TRIALS = 2_000
Z = z_value(0.95)

CASES = {
    "hcms k=16 m=64": HCMS.from_epsilon(k=16, m=64, epsilon=4.0),
    "hcms k=16 m=1024": HCMS.from_epsilon(k=16, m=1024, epsilon=4.0),
    "cms k=16 m=64": CMS.from_epsilon(k=16, m=64, epsilon=4.0),
    "cms k=32 m=256": CMS.from_epsilon(k=32, m=256, epsilon=4.0),
    "rappor k=32 h=2 m=16": RAPPOR(k=32, h=2, m=16, f=F(1, 2), p=F(1, 2), q=F(3, 4)),
    "rappor k=64 h=2 m=32": RAPPOR(k=64, h=2, m=32, f=F(1, 4), p=F(1, 4), q=F(3, 4)),
}


def coverage(sk: Sketch, seed: int, *, joint: bool = True, trials: int = TRIALS):
    counts = simulate_counts(sk, WORDS, SHARES, N, trials, seed)
    est, se, low, high = decoder(sk, WORDS, joint=joint).estimate(N, counts, Z)
    covered = (low <= SHARES) & (SHARES <= high)
    bias_z = np.abs(est.mean(axis=0) - SHARES) / (est.std(axis=0, ddof=1) / np.sqrt(trials))
    ratio = est.var(axis=0, ddof=1).sum() / (se**2).mean(axis=0).sum()
    return covered.mean(), covered.mean(axis=0), bias_z, ratio


@pytest.mark.parametrize("name", sorted(CASES))
def test_candidate_frequencies_are_unbiased_and_their_intervals_cover(name: str) -> None:
    pooled, each, bias_z, ratio = coverage(CASES[name], seed=sorted(CASES).index(name))
    assert 0.93 <= pooled <= 0.97, pooled
    assert np.all((each >= 0.91) & (each <= 0.99)), each
    assert np.all(bias_z < 5), bias_z.max()
    assert 0.95 <= ratio <= 1.05, ratio  # the standard errors are honest, pooled


def test_apples_estimator_misses_at_a_small_sketch_where_joint_decoding_covers() -> None:
    small = CASES["hcms k=16 m=64"]
    pooled, each, bias_z, _ = coverage(small, seed=11, joint=False, trials=500)
    assert each.min() < 0.5 and bias_z.max() > 10  # a frequent word's collisions lift others
    pooled, each, *_ = coverage(small, seed=11, trials=500)
    assert 0.93 <= pooled <= 0.97 and each.min() > 0.88


def test_the_hadamard_transform_is_its_own_inverse_up_to_m() -> None:
    x = np.random.default_rng(0).normal(size=(16, 3))
    h = np.array([[(-1) ** bin(a & b).count("1") for b in range(16)] for a in range(16)])
    assert np.allclose(fwht(x), h @ x) and np.allclose(fwht(fwht(x)) / 16, x)


def test_candidates_a_sketch_cannot_tell_apart_are_refused() -> None:
    with pytest.raises(SketchDecodeError, match="at least one candidate"):
        decoder(CASES["hcms k=16 m=64"], [])
    tiny = HCMS.from_epsilon(k=1, m=2, epsilon=1.0)
    with pytest.raises(SketchDecodeError, match="cannot tell these candidates apart"):
        decoder(tiny, ["a", "b", "c"])
