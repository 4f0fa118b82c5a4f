"""Power and sample size of tests on a randomized binary answer (aggregator/stats/power.py):
rr::power.rr.test's numbers, the closed forms at several designs, and the smallest n."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from statistics import NormalDist

import pytest

from deniable.aggregator.stats import power as pw
from deniable.aggregator.stats.planning import coins_at
from deniable.shared.mechanisms import from_epsilon

FORCED = pw.forced_response(2 / 3, 1 / 6, 1 / 6)  # p* = 5/6, q* = 1/6
Z = NormalDist()


def test_designs_of_rr_are_p_star_q_star_pairs() -> None:
    assert FORCED == pytest.approx((5 / 6, 1 / 6), abs=1e-15)
    assert pw.forced_response(0.7, 0.2, 0.1) == pytest.approx((0.9, 0.2))
    assert pw.mirrored(0.8) == pytest.approx((0.8, 0.2))
    with pytest.raises(pw.PowerError, match="add up to 1"):
        pw.forced_response(0.7, 0.2, 0.2)


# Numbers from R 4.2, rr 1.4.2, printed with sprintf("%.17g", ...):
#   power.rr.test(p = 2/3, p1 = 1/6, p0 = 1/6, n = 200, presp = .2, presp.null = 0,
#     design = "forced-known", sig.level = .01, type = "one.sample",
#     alternative = "one.sided")$power                                  0.9868871581954195
#   ... n = 150, presp = .3, presp.null = .1, sig.level = .05, "two.sided"  0.95238789402686197
#   power.rr.test(p = 0.8, n = 500, presp = .25, presp.null = .15, design = "mirrored",
#     sig.level = .05, type = "one.sample", alternative = "one.sided")  0.89398852815445295
#   power.rr.test(p = 0.8, n = 400, prespT = .35, prespC = .2, prespC.null = .2,
#     design = "mirrored", sig.level = .05, type = "two.sample",
#     alternative = "two.sided")                                        0.77276147465691591
#   power.rr.test(p = 0.7, p1 = 0.2, p0 = 0.1, n = 300, prespT = .3, prespC = .15,
#     prespC.null = .15, design = "forced-known", sig.level = .01, type = "two.sample",
#     alternative = "one.sided")                                        0.67405597095425207
RR_POWER = [
    ("one-sample", FORCED, 200, 0.2, None, 0.0, 0.01, True, 0.9868871581954195),
    ("one-sample", FORCED, 150, 0.3, None, 0.1, 0.05, False, 0.95238789402686197),
    ("one-sample", pw.mirrored(0.8), 500, 0.25, None, 0.15, 0.05, True, 0.89398852815445295),
    ("two-sample", pw.mirrored(0.8), 400, 0.35, 0.2, 0.2, 0.05, False, 0.77276147465691591),
    (
        "two-sample",
        pw.forced_response(0.7, 0.2, 0.1),
        300,
        0.3,
        0.15,
        0.15,
        0.01,
        True,
        0.67405597095425207,
    ),
]


@pytest.mark.parametrize(
    ("test", "design", "n", "share", "control", "null", "alpha", "one_sided", "expected"),
    RR_POWER,
)
def test_power_equals_rr_power_rr_test(
    test: str,
    design: tuple[float, float],
    n: int,
    share: float,
    control: float | None,
    null: float,
    alpha: float,
    one_sided: bool,
    expected: float,
) -> None:
    result = pw.power(
        test,
        share,
        n=n,
        p_star=design[0],
        q_star=design[1],
        control=control,
        null=null,
        alpha=alpha,
        one_sided=one_sided,
    )
    assert result.power == pytest.approx(expected, rel=1e-12)
    assert result.to_dict() == {"power": result.power, "n": n}


def test_sample_size_is_the_smallest_n_where_rr_stops_within_0_01() -> None:
    # R: power.rr.test(p = 2/3, p1 = 1/6, p0 = 1/6, power = .8, presp = .2, presp.null = 0,
    #   design = "forced-known", sig.level = .05, type = "one.sample",
    #   alternative = "two.sided")$n                                     69
    # and its power at n = 69, 70, 71: 0.79475666224746033, 0.79968087750300709,
    # 0.80449923658957656: rr's 69 is within 0.01 of 0.8 but below it; 71 is the first above.
    result = pw.sample_size(
        "one-sample", 0.2, target=0.8, p_star=FORCED[0], q_star=FORCED[1], alpha=0.05
    )
    assert result.n == 71
    assert result.power == pytest.approx(0.80449923658957656, rel=1e-12)
    for n, expected in ((69, 0.79475666224746033), (70, 0.79968087750300709)):
        at = pw.power("one-sample", 0.2, n=n, p_star=FORCED[0], q_star=FORCED[1], alpha=0.05)
        assert at.power == pytest.approx(expected, rel=1e-12)
        assert at.power < 0.8


def _per_report_sd(share: float, p_star: float, q_star: float) -> float:
    lam = q_star + (p_star - q_star) * share
    return math.sqrt(lam * (1 - lam)) / abs(p_star - q_star)


DESIGNS = {
    "rr at 1": from_epsilon("rr", 2, epsilon=1.0),
    "rr at 3": from_epsilon("rr", 2, epsilon=3.0),
    "coins at 0.5": coins_at(0.5),
    "coins at 2": coins_at(2.0),
}


@pytest.mark.parametrize("name", list(DESIGNS))
@pytest.mark.parametrize(("share", "null", "alpha"), [(0.3, 0.2, 0.05), (0.1, 0.25, 0.01)])
def test_one_sided_power_and_sample_size_match_the_closed_form(
    name: str, share: float, null: float, alpha: float
) -> None:
    """One-sided: power = Phi((|pi - pi0| sqrt(n) - z_(1-a) s0) / s1), and the smallest n with
    power >= b is ceil(((z_(1-a) s0 + z_b s1) / |pi - pi0|)^2) (s: per-report SDs)."""
    mech = DESIGNS[name]
    p, q = float(mech.p_star), float(mech.q_star)
    s1, s0 = _per_report_sd(share, p, q), _per_report_sd(null, p, q)
    za = Z.inv_cdf(1 - alpha)
    for n in (10, 1000, 123_457):
        got = pw.power("one-sample", share, n=n, p_star=p, q_star=q, null=null, alpha=alpha,
                       one_sided=True).power  # fmt: skip
        closed = Z.cdf((abs(share - null) * math.sqrt(n) - za * s0) / s1)
        assert got == pytest.approx(closed, rel=1e-9, abs=1e-300)
    for target in (0.5, 0.8, 0.95):
        closed_n = math.ceil(((za * s0 + Z.inv_cdf(target) * s1) / abs(share - null)) ** 2)
        found = pw.sample_size("one-sample", share, target=target, p_star=p, q_star=q,
                               null=null, alpha=alpha, one_sided=True)  # fmt: skip
        assert found.n == closed_n
        assert found.power >= target


@pytest.mark.parametrize("name", list(DESIGNS))
def test_two_sample_two_sided_power_and_smallest_n(name: str) -> None:
    """Two-sided two-sample power is the two tails of N(delta, s1^2/n) beyond the null's
    +-z_(1-a/2) s0 / sqrt(n), and the n found is the first whose power reaches the target."""
    mech = DESIGNS[name]
    p, q = float(mech.p_star), float(mech.q_star)
    share, control, alpha = 0.4, 0.3, 0.05
    s1 = math.hypot(_per_report_sd(share, p, q), _per_report_sd(control, p, q))
    s0 = math.sqrt(2) * _per_report_sd(control, p, q)
    z = Z.inv_cdf(1 - alpha / 2)
    n = 2500
    delta = share - control
    closed = Z.cdf((-z * s0 - delta * math.sqrt(n)) / s1) + Z.cdf(
        (delta * math.sqrt(n) - z * s0) / s1
    )
    got = pw.power("two-sample", share, control=control, n=n, p_star=p, q_star=q, alpha=alpha)
    assert got.power == pytest.approx(closed, rel=1e-9)
    found = pw.sample_size("two-sample", share, control=control, target=0.9, p_star=p, q_star=q)
    assert found.power >= 0.9
    before = pw.power("two-sample", share, control=control, n=found.n - 1, p_star=p, q_star=q)
    assert before.power < 0.9


def test_plain_question_has_the_binomial_variance() -> None:
    # none: p* = 1, q* = 0, so the share's variance is pi (1 - pi) / n.
    p, q = pw.design_of("none", None)
    assert (p, q) == (1.0, 0.0)
    assert pw.variance(0.3, p, q, 100) == pytest.approx(0.3 * 0.7 / 100)
    rr = pw.design_of("rr", 1.0)
    assert rr == (float(from_epsilon("rr", 2, epsilon=1.0).p_star), pytest.approx(rr[1]))


def test_one_sided_below_the_null_looks_down() -> None:
    up = pw.power("one-sample", 0.3, null=0.2, n=300, p_star=0.8, q_star=0.2, one_sided=True)
    down = pw.power("one-sample", 0.1, null=0.2, n=300, p_star=0.8, q_star=0.2, one_sided=True)
    assert 0.5 < up.power < 1 and 0.5 < down.power < 1
    two = pw.power("one-sample", 0.3, null=0.2, n=300, p_star=0.8, q_star=0.2)
    assert two.power < up.power


def test_zero_variance_under_the_null_is_a_point_mass() -> None:
    # Forced response with p1 = 0 (q* = 0): a "yes" proves the trait, so under a null of 0
    # the estimate is exactly 0 (rr's solve() fails there: "computationally singular").
    p, q = pw.forced_response(0.8, 0.0, 0.2)
    result = pw.power("one-sample", 0.05, n=50, p_star=p, q_star=q, one_sided=True)
    sd = math.sqrt(pw.variance(0.05, p, q, 50))
    assert result.power == pytest.approx(Z.cdf(0.05 / sd))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"share": 0.2, "n": 10, "p_star": 0.5, "q_star": 0.5}, "say nothing"),
        ({"share": 1.2, "n": 10, "p_star": 0.8, "q_star": 0.2}, "share"),
        ({"share": 0.2, "n": 0, "p_star": 0.8, "q_star": 0.2}, "n: expected"),
        ({"share": 0.2, "n": 10, "p_star": 0.8, "q_star": 0.2, "alpha": 1}, "alpha"),
        ({"share": 0.2, "n": 10, "p_star": 0.8, "q_star": 0.2, "control": 0.1}, "control"),
    ],
)
def test_bad_input_is_refused_with_a_message(kwargs: dict, message: str) -> None:
    share = kwargs.pop("share")
    with pytest.raises(pw.PowerError, match=message):
        pw.power("one-sample", share, **kwargs)


def test_unreachable_power_is_refused_not_searched_forever() -> None:
    with pytest.raises(pw.PowerError, match="not reached"):
        pw.sample_size("one-sample", 0.2, null=0.2, target=0.8, p_star=0.8, q_star=0.2)
    with pytest.raises(pw.PowerError, match="control"):
        pw.sample_size("two-sample", 0.2, target=0.8, p_star=0.8, q_star=0.2)


def test_probabilities_parse_as_decimals_or_fractions() -> None:
    assert pw.parse_probability("p-star", "5/6") == float(Fraction(5, 6))
    assert pw.parse_probability("p-star", " 0.25 ") == 0.25
    for bad in ("7/6", "1/0", "abc", "1e999", "-0.1", "1" * 50):
        with pytest.raises(pw.PowerError, match="p-star"):
            pw.parse_probability("p-star", bad)


def plan(*args: str) -> tuple[int, str, str]:
    """`deniable-aggregator plan ARGS`: exit code, stdout, stderr."""
    from click.testing import CliRunner

    from deniable.aggregator.cli.core import cli

    result = CliRunner().invoke(cli, ["plan", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--epsilon", "1", "--respondents", "9" * 400),  # was "unexpected OverflowError"
        ("--epsilon", "1", "--margin", "0.05", "--options", "9" * 400),  # was 400 digits long
        ("--test", "one-sample", "--share", "0.2", "--epsilon", "1", "--n", "9" * 400),
    ],
)
def test_plan_refuses_a_huge_whole_number_in_one_short_line(args: tuple[str, ...]) -> None:
    code, out, err = plan(*args)
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and "expected" in err and "unexpected" not in err
    assert err.count("\n") == 1 and len(err) < 200, err


def test_plan_test_prints_rr_power_as_json() -> None:
    # The forced design of rr's documentation as a (p*, q*) pair, fractions as typed.
    code, out, _ = plan(
        "--test", "one-sample", "--share", "0.2", "--alpha", "0.01", "--one-sided",
        "--n", "200", "--p-star", "5/6", "--q-star", "1/6", "--json",
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert doc.keys() == {"power", "n"}
    assert doc["n"] == 200
    assert doc["power"] == pytest.approx(0.9868871581954195, rel=1e-12)


def test_plan_test_sample_size_in_words_ends_with_n() -> None:
    code, out, _ = plan(
        "--test", "one-sample", "--share", "0.2", "--power", "0.8",
        "--p-star", "5/6", "--q-star", "1/6",
    )  # fmt: skip
    assert code == 0
    assert out.strip().splitlines()[-1] == "71"


def test_plan_test_by_mechanism_and_epsilon() -> None:
    code, out, _ = plan(
        "--test", "two-sample", "--share", "0.4", "--control", "0.3", "--power", "0.9",
        "--mechanism", "coins", "--epsilon", "2", "--json",
    )  # fmt: skip
    assert code == 0
    mech = coins_at(2.0)
    expected = pw.sample_size(
        "two-sample", 0.4, control=0.3, target=0.9,
        p_star=float(mech.p_star), q_star=float(mech.q_star),
    )  # fmt: skip
    assert json.loads(out) == {"power": expected.power, "n": expected.n}
    code, out, _ = plan(
        "--test", "one-sample", "--share", "0.3", "--n", "100", "--mechanism", "none", "--json"
    )
    assert code == 0 and json.loads(out)["n"] == 100


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("--test", "one-sample", "--share", "0.2", "--n", "10"), 1, "epsilon"),
        (("--test", "one-sample", "--share", "2", "--n", "10", "--epsilon", "1"), 1, "share"),
        (("--test", "two-sample", "--share", ".2", "--n", "10", "--epsilon", "1"), 1, "control"),
        (("--test", "one-sample", "--share", ".2", "--epsilon", "1"), 2, "--n"),
        (("--test", "one-sample", "--share", ".2", "--n", "9", "--p-star", "0.8"), 2, "q-star"),
        (("--epsilon", "1", "--margin", "0.05", "--share", "0.2"), 2, "--test"),
        (
            (
                "--test",
                "one-sample",
                "--share",
                "0.2",
                "--n",
                "9",
                "--p-star",
                "1e99999",
                "--q-star",
                "0",
            ),
            1,
            "p-star",
        ),
    ],
)
def test_plan_test_bad_input(args: tuple[str, ...], code: int, words: str) -> None:
    got, out, err = plan(*args)
    assert got == code
    assert words in err
    if code == 1:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_rr_at_epsilon_2_two_samples_as_rr_mirrored() -> None:
    # Our rr at epsilon 2 is rr's mirrored design with p = p* = 880797077977/10^12. R:
    #   p <- 880797077977/1000000000000
    #   power.rr.test(p = p, n = 547, prespT = .3, prespC = .2, prespC.null = .2,
    #     design = "mirrored", sig.level = .05, type = "two.sample",
    #     alternative = "two.sided")$power                    0.8000289391184715
    #   ... power = .8 instead of n: $n                         533 (power 0.79002767224353876)
    p_star, q_star = pw.design_of("rr", 2.0)
    assert (p_star, q_star) == pytest.approx(pw.mirrored(880797077977 / 10**12), abs=1e-15)
    at = pw.power("two-sample", 0.3, control=0.2, n=547, p_star=p_star, q_star=q_star)
    assert at.power == pytest.approx(0.8000289391184715, rel=1e-12)
    rr_n = pw.power("two-sample", 0.3, control=0.2, n=533, p_star=p_star, q_star=q_star)
    assert rr_n.power == pytest.approx(0.79002767224353876, rel=1e-12)
    found = pw.sample_size("two-sample", 0.3, control=0.2, target=0.8, p_star=p_star,
                           q_star=q_star)  # fmt: skip
    assert found.n == 547
