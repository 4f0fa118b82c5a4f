"""Exact properties of the mechanisms: epsilon, transition matrices, p* and q*."""

from __future__ import annotations

import math
from fractions import Fraction as F
from itertools import combinations

import pytest

from deniable.shared import mechanisms as mech
from deniable.shared.mechanisms import GRR, OUE, RR, Coins, Mechanism


def all_mechanisms() -> list[Mechanism]:
    built: list[Mechanism] = [
        Coins(truth=F(1, 2), yes=F(1, 2)),
        Coins(truth=F(4, 5), yes=F(4, 5)),
        Coins(truth=F(2, 3), yes=F(1, 2)),
        Coins(truth=F(3, 10), yes=F(1, 10)),
    ]
    for eps in (0.1, 0.5, 1.0, 2.0, 4.0, 8.0):
        built.append(RR.from_epsilon(epsilon=eps))
        for k in (2, 3, 5):
            built.append(GRR.from_epsilon(k, epsilon=eps))
            built.append(OUE.from_epsilon(k, epsilon=eps))
    return built


def max_row_ratio(m: Mechanism) -> F:
    best = F(0)
    outputs = list(m.outputs())
    for a, b in combinations(range(m.k), 2):
        for out in outputs:
            pa, pb = m.probability(out, a), m.probability(out, b)
            best = max(best, pa / pb, pb / pa)
    return best


def test_two_fair_coins_give_ln_3_exactly():
    assert Coins(truth=F(1, 2), yes=F(1, 2)).epsilon == math.log(3)


def test_two_coins_at_0_8_give_ln_21_exactly():
    assert Coins(truth=F(4, 5), yes=F(4, 5)).epsilon == math.log(21)


def test_forced_response_die_gives_ln_5():
    coins = Coins(truth=F(2, 3), yes=F(1, 2))
    assert coins.epsilon == pytest.approx(math.log(5), rel=1e-15)
    assert (coins.p_star, coins.q_star) == (F(5, 6), F(1, 6))


@pytest.mark.parametrize("m", all_mechanisms(), ids=repr)
def test_largest_ratio_between_rows_is_e_to_the_epsilon(m: Mechanism):
    assert math.log(max_row_ratio(m)) == pytest.approx(m.epsilon, rel=1e-12)


@pytest.mark.parametrize("m", all_mechanisms(), ids=repr)
def test_rows_are_distributions_and_support_probabilities_are_p_and_q(m: Mechanism):
    outputs = list(m.outputs())
    for true in range(m.k):
        assert sum(m.probability(out, true) for out in outputs) == 1
        for option, (p, q) in enumerate(m.option_pairs()):
            supported = sum(
                m.probability(out, true) for out in outputs if option in m.supports(out)
            )
            assert supported == (p if option == true else q)


@pytest.mark.parametrize("eps", [0.001, 0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize(
    "build",
    [
        RR.from_epsilon,
        lambda **kw: GRR.from_epsilon(7, **kw),
        lambda **kw: OUE.from_epsilon(7, **kw),
    ],
)
def test_epsilon_from_probabilities_never_exceeds_the_requested_one(build, eps):
    m = build(epsilon=eps)
    assert m.epsilon <= eps + 1e-15
    assert m.epsilon == pytest.approx(eps, abs=1e-6)


def test_rr_keep_is_the_exact_decimal_of_warners_probability():
    rr = RR.from_epsilon(epsilon=1.0)
    assert rr.keep == F(731058578630, 10**12)
    assert rr.p_star - rr.q_star == 2 * rr.keep - 1
    assert rr.params_text() == {"keep": "0.73105857863"}


def test_grr_q_star_is_the_remaining_mass_split_evenly():
    grr = GRR.from_epsilon(4, epsilon=2.0)
    assert grr.p_star + 3 * grr.q_star == 1
    assert grr.p_star / grr.q_star == pytest.approx(math.exp(2.0), rel=1e-9)


def test_binary_option_no_has_the_complementary_pair():
    coins = Coins(truth=F(1, 2), yes=F(1, 5))
    (p_no, q_no), (p_yes, q_yes) = coins.option_pairs()
    assert (p_no, q_no) == (1 - q_yes, 1 - p_yes)
    assert p_no - q_no == p_yes - q_yes


@pytest.mark.parametrize(
    ("k", "eps", "expected"),
    [(2, 1.0, "grr"), (4, 2.0, "grr"), (32, 1.0, "oue"), (64, 2.0, "oue"), (64, 5.0, "grr")],
)
def test_auto_picks_the_lower_variance(k, eps, expected):
    chosen = mech.auto(k, epsilon=eps)
    assert chosen.name == expected
    other = (GRR if expected == "oue" else OUE).from_epsilon(k, epsilon=eps)
    assert chosen.variance(1000, 1 / k, 0) <= other.variance(1000, 1 / k, 0)


def test_variance_is_the_population_formula():
    rr = RR.from_epsilon(epsilon=1.0)
    lam = float(rr.q_star) + 0.3 * float(rr.p_star - rr.q_star)
    assert rr.variance(500, 0.3) == pytest.approx(
        lam * (1 - lam) / (500 * float(rr.p_star - rr.q_star) ** 2)
    )
    assert rr.worst_variance(500) == pytest.approx(0.25 / (500 * float(rr.p_star - rr.q_star) ** 2))


def test_worst_variance_when_p_star_is_below_one_half():
    grr = GRR.from_epsilon(16, epsilon=0.5)
    p = float(grr.p_star)
    assert p < 0.5
    assert grr.worst_variance(1) == pytest.approx(p * (1 - p) / float(grr.p_star - grr.q_star) ** 2)


@pytest.mark.parametrize(
    ("m", "bad"),
    [
        (RR.from_epsilon(epsilon=1), 2),
        (RR.from_epsilon(epsilon=1), True),
        (RR.from_epsilon(epsilon=1), 1.0),
        (GRR.from_epsilon(3, epsilon=1), 3),
        (GRR.from_epsilon(3, epsilon=1), -1),
        (GRR.from_epsilon(3, epsilon=1), "1"),
        (OUE.from_epsilon(3, epsilon=1), "0102"),
        (OUE.from_epsilon(3, epsilon=1), "01"),
        (OUE.from_epsilon(3, epsilon=1), 5),
    ],
)
def test_validate_refuses_malformed_reports(m, bad):
    with pytest.raises(ValueError):
        m.validate(bad)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"truth": F(0), "yes": F(1, 2)},
        {"truth": F(1), "yes": F(1, 2)},
        {"truth": F(1, 2), "yes": F(0)},
        {"truth": F(1, 2), "yes": F(1)},
    ],
)
def test_degenerate_coins_are_refused(kwargs):
    with pytest.raises(ValueError):
        Coins(**kwargs)


@pytest.mark.parametrize("eps", [0, -1, 0.0001, 11, float("nan"), float("inf"), True, "1"])
def test_out_of_range_epsilon_is_refused(eps):
    with pytest.raises(ValueError, match="epsilon"):
        RR.from_epsilon(epsilon=eps)
