"""The device's sampler against the exact transition matrices (chi-square, secure coins).

Each check fails a correct sampler with probability below 1e-6 (eight checks: below 1e-5 in
all), and the sample sizes are chosen so that the same checks catch a probability off by
0.005 (the `wrong` tests feed such samplers through the same checker and expect a failure).
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction as F

import pytest
from scipy.stats import chi2

from deniable.shared.mechanisms import GRR, OUE, RR, Coins, Mechanism

ALPHA = 1e-6


def draw(m: Mechanism, draws: int) -> list[Counter]:
    """Counts of each encoded report, for `draws` reports split evenly over the true options."""
    per_row = draws // m.k
    return [Counter(m.randomize(true) for _ in range(per_row)) for true in range(m.k)]


def p_values(m: Mechanism, counts: list[Counter]) -> dict[str, float]:
    """Full-table chi-square, and the pooled support-of-the-true-option test (1 df)."""
    stat, df = 0.0, 0
    diag_dev, diag_var = 0.0, 0.0
    outputs = list(m.outputs())
    for true, row in enumerate(counts):
        n = sum(row.values())
        unexpected = set(row) - set(outputs)
        assert not unexpected, f"sampler produced impossible reports {unexpected}"
        for out in outputs:
            expected = n * float(m.probability(out, true))
            stat += (row[out] - expected) ** 2 / expected
        df += len(outputs) - 1
        p_true = float(m.option_pairs()[true][0])
        supported = sum(c for out, c in row.items() if true in m.supports(out))
        diag_dev += supported - n * p_true
        diag_var += n * p_true * (1 - p_true)
    return {
        "table": float(chi2.sf(stat, df)),
        "truth kept": float(chi2.sf(diag_dev**2 / diag_var, 1)),
    }


CASES = [
    (RR.from_epsilon(epsilon=1.0), 900_000),
    (Coins(truth=F(1, 2), yes=F(1, 2)), 400_000),
    (GRR.from_epsilon(3, epsilon=1.0), 900_000),
    (OUE.from_epsilon(3, epsilon=1.0), 600_000),
]


@pytest.mark.parametrize(("m", "draws"), CASES, ids=lambda c: getattr(c, "name", str(c)))
def test_sampled_frequencies_match_the_transition_matrix(m: Mechanism, draws: int):
    result = p_values(m, draw(m, draws))
    assert min(result.values()) > ALPHA, result


def shifted(m: Mechanism) -> Mechanism:
    """The same mechanism with its main probability off by 0.005."""
    if isinstance(m, RR):
        return RR(keep=m.keep + F(5, 1000))
    if isinstance(m, GRR):
        return GRR(m.k, keep=m.keep - F(5, 1000))
    assert isinstance(m, OUE)
    return OUE(m.k, q=m.q + F(5, 1000))


@pytest.mark.parametrize(("m", "draws"), [CASES[0], CASES[2], CASES[3]], ids=["rr", "grr", "oue"])
def test_the_checker_catches_a_probability_off_by_0_005(m: Mechanism, draws: int):
    result = p_values(m, draw(shifted(m), draws))
    assert min(result.values()) < ALPHA, result


def test_bernoulli_uses_exact_integer_comparison():
    """A probability with a huge denominator is still drawn exactly (no float rounding)."""
    from deniable.shared.probability import bernoulli

    tiny = F(1, 10**30)
    assert not any(bernoulli(tiny) for _ in range(10_000))
    assert all(bernoulli(1 - tiny) for _ in range(10_000))
    assert math.isclose(
        sum(bernoulli(F(1, 3)) for _ in range(30_000)) / 30_000, 1 / 3, abs_tol=0.015
    )


@pytest.mark.parametrize(
    "p", [F(0), F(1), F(1, 2), F(1, 3), F(268941421370, 10**12), F(255, 256), F(1, 256), F(5, 6)]
)
def test_coin_digits_are_the_exact_base_256_expansion(p):
    """A flip compares secure bytes with these digits, so they must bracket p exactly."""
    from deniable.shared.probability import Coin

    coin = Coin(p)
    if p == 1:
        assert coin.flips(1000) == [True] * 1000
        return
    prefix = sum(F(coin.digit(i), 256 ** (i + 1)) for i in range(12))
    assert prefix <= p < prefix + F(1, 256**12)
    if p == 0:
        assert coin.flips(1000) == [False] * 1000
