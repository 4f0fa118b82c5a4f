"""L-GRR and L-OSUE (shared/longitudinal.py): parameters, exactness, the channel against
multi-freq-ldpy's clients, the stated epsilons, the memo, and the device's sampling.

multi-freq-ldpy (Arcolezi et al.) is not installed (numba is heavy): its formulas are written
down below from src/multi_freq_ldpy/long_freq_est/L_GRR.py (L_GRR_Client), L_OSUE.py
(L_OSUE_Client) and pure_frequency_oracles/GRR.py (GRR_Client), in floats as it computes them.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from deniable.shared.errors import SurveyError
from deniable.shared.longitudinal import LGRR, LOSUE, Longitudinal, auto, from_question_doc
from deniable.shared.mechanisms import MAX_EPSILON, MIN_EPSILON

#: Each sampling check fails a correct sampler with probability below 1e-6.
ALPHA = 1e-6

GRID = [
    (2, 2.0, 1.0),
    (2, 0.5, 0.1),
    (2, 8.0, 0.3),
    (3, 2.0, 1.0),
    (4, 3.0, 1.0),
    (5, 1.0, 0.5),
    (10, 4.0, 1.0),
    (10, 0.01, 0.005),
    (64, 6.0, 2.0),
]


# -- multi-freq-ldpy's formulas, written down (see the module docstring) ---------------------------
def lib_lgrr(k: int, eps_perm: float, eps_1: float) -> tuple[float, float, float, float]:
    """L_GRR_Client's p1, q1, p2, q2 (long_freq_est/L_GRR.py)."""
    p1 = np.exp(eps_perm) / (np.exp(eps_perm) + k - 1)
    q1 = (1 - p1) / (k - 1)
    p2 = (q1 - np.exp(eps_1) * p1) / (
        (-p1 * np.exp(eps_1)) + k * q1 * np.exp(eps_1) - q1 * np.exp(eps_1) - p1 * (k - 1) + q1
    )
    q2 = (1 - p2) / (k - 1)
    return float(p1), float(q1), float(p2), float(q2)


def lib_grr_matrix(k: int, epsilon: float) -> np.ndarray:
    """GRR_Client's channel (pure_frequency_oracles/GRR.py): keep with e^eps/(e^eps + k - 1),
    else a uniform other value. Row: true value, column: report."""
    p = np.exp(epsilon) / (np.exp(epsilon) + k - 1)
    return np.where(np.eye(k, dtype=bool), p, (1 - p) / (k - 1))


def lib_lgrr_matrix(k: int, eps_perm: float, eps_1: float) -> np.ndarray:
    """L_GRR_Client: GRR_Client at eps_perm, then GRR_Client at eps_sec_round = ln(p2/q2)."""
    _, _, p2, q2 = lib_lgrr(k, eps_perm, eps_1)
    return lib_grr_matrix(k, eps_perm) @ lib_grr_matrix(k, float(np.log(p2 / q2)))


def lib_losue(eps_perm: float, eps_1: float) -> tuple[float, float, float, float]:
    """L_OSUE_Client's p1, q1, p2, q2 (long_freq_est/L_OSUE.py), per bit."""
    p1 = 1 / 2
    q1 = 1 / (np.exp(eps_perm) + 1)
    p2 = (1 - np.exp(eps_1 + eps_perm)) / (
        np.exp(eps_1) - np.exp(eps_perm) - np.exp(eps_1 + eps_perm) + 1
    )
    return p1, float(q1), float(p2), float(1 - p2)


def matrix(m: Longitudinal) -> list[list[Fraction]]:
    """Our exact channel: row true option, column report (in m.outputs() order)."""
    return [[m.probability(out, true) for out in m.outputs()] for true in range(m.k)]


# -- parameters -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("k", "eps_perm", "eps_1"), GRID)
def test_lgrr_parameters_are_the_formulas_rounded_towards_privacy(k, eps_perm, eps_1):
    m = LGRR(k, eps_perm, eps_1)
    p1, q1, p2, q2 = lib_lgrr(k, eps_perm, eps_1)
    for ours, theirs, tolerance in ((m.p1, p1, 2e-12), (m.q1, q1, 2e-12), (m.p2, p2, 1e-9)):
        assert isinstance(ours, Fraction)
        assert abs(float(ours) - theirs) < tolerance
    # Rounded down: p1 below the formula, and p2 below the formula at the rounded p1 (a
    # smaller p1 needs a slightly larger p2 for the same single-report epsilon).
    assert float(m.p1) <= p1
    e1, rp1, rq1 = math.exp(eps_1), float(m.p1), float(m.q1)
    at_rounded = (rq1 - e1 * rp1) / (-rp1 * e1 + k * rq1 * e1 - rq1 * e1 - rp1 * (k - 1) + rq1)
    assert float(m.p2) <= at_rounded
    assert m.q1 == (1 - m.p1) / (k - 1) and m.q2 == (1 - m.p2) / (k - 1)
    assert Fraction(1, k) < m.p2 < 1


@pytest.mark.parametrize(("k", "eps_perm", "eps_1"), GRID)
def test_losue_parameters_are_the_formulas_rounded_towards_privacy(k, eps_perm, eps_1):
    m = LOSUE(k, eps_perm, eps_1)
    p1, q1, p2, q2 = lib_losue(eps_perm, eps_1)
    assert m.p1 == Fraction(1, 2)
    assert abs(float(m.q1) - q1) < 2e-12 and float(m.q1) >= q1  # rounded up
    assert abs(float(m.p2) - p2) < 2e-12 and float(m.p2) <= p2  # rounded down
    assert m.q2 == 1 - m.p2 and Fraction(1, 2) < m.p2 < 1


@pytest.mark.parametrize(("k", "eps_perm", "eps_1"), GRID)
@pytest.mark.parametrize("kind", [LGRR, LOSUE])
def test_every_stated_epsilon_holds_for_the_probabilities_used(kind, k, eps_perm, eps_1):
    m = kind(k, eps_perm, eps_1)
    assert eps_perm - 1e-6 < m.epsilon <= eps_perm  # the permanent round
    assert m.epsilon_single <= eps_1  # one report, through both rounds
    assert m.epsilon_perm == eps_perm and m.epsilon_1 == eps_1
    # The largest ratio of two rows of the exact channel, column by column, is e^single.
    if m.k <= 4:
        rows = matrix(m)
        worst = max(
            rows[a][j] / rows[b][j]
            for a in range(m.k)
            for b in range(m.k)
            for j in range(len(rows[0]))
        )
        assert math.isclose(math.log(worst), m.epsilon_single, rel_tol=1e-12)


def test_binary_single_report_epsilon_is_the_stated_one():
    # For k = 2 multi-freq-ldpy's p2 makes ln(p*/q*) exactly eps_1; rounding keeps it below.
    m = LGRR(2, 2.0, 1.0, binary=True)
    assert 1.0 - 1e-9 < m.epsilon_single <= 1.0
    assert m.option_pairs() == [(m.p_star, m.q_star), (m.p_star, m.q_star)]


# -- the channel -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("k", "eps_perm", "eps_1"), GRID)
def test_lgrr_channel_is_multi_freq_ldpys_client(k, eps_perm, eps_1):
    m = LGRR(k, eps_perm, eps_1)
    theirs = lib_lgrr_matrix(k, eps_perm, eps_1)
    ours = np.array([[float(x) for x in row] for row in matrix(m)])
    assert np.max(np.abs(ours - theirs)) < 1e-11
    # The chained pair, and not multi-freq-ldpy's IBU q = p1 q2 + q1 p2 (another channel's
    # for k > 2; the same for k = 2).
    assert m.p_star == m.p1 * m.p2 + (1 - m.p1) * m.q2
    assert m.q_star == m.q1 * m.p2 + (1 - m.q1) * m.q2
    assert abs(theirs[0, 0] - float(m.p_star)) < 1e-11
    assert abs(theirs[0, 1] - float(m.q_star)) < 1e-11
    lib_ibu_q = m.p1 * m.q2 + m.q1 * m.p2
    assert (lib_ibu_q == m.q_star) == (k == 2)


@pytest.mark.parametrize(("k", "eps_perm", "eps_1"), [(3, 2.0, 1.0), (4, 3.0, 0.5)])
def test_losue_channel_is_multi_freq_ldpys_client(k, eps_perm, eps_1):
    m = LOSUE(k, eps_perm, eps_1)
    p1, q1, p2, q2 = lib_losue(eps_perm, eps_1)
    # L_OSUE_Client: bit i is 1 after both rounds with p1 p2 + (1 - p1) q2 (own) or
    # q1 p2 + (1 - q1) q2 (other), each bit on its own coins.
    own, other = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
    for true in range(k):
        for out in m.outputs():
            theirs = math.prod(
                (own if i == true else other) if c == "1" else 1 - (own if i == true else other)
                for i, c in enumerate(str(out))
            )
            assert abs(float(m.probability(out, true)) - theirs) < 1e-11
    # The bitwise shortcut is the exact sum over memos.
    for true in range(k):
        for out in m.outputs():
            by_memo = sum(
                m.memo_probability(memo, true) * m.report_probability(out, memo)
                for memo in m.outputs()
            )
            assert by_memo == m.probability(out, true)


@pytest.mark.parametrize("m", [LGRR(3, 2.0, 1.0), LOSUE(3, 2.0, 1.0), LGRR(2, 1.0, 0.5)])
def test_channel_rows_are_exact_distributions(m: Longitudinal):
    for true in range(m.k):
        assert sum(m.probability(out, true) for out in m.outputs()) == 1
        assert sum(m.memo_probability(memo, true) for memo in m.outputs()) == 1
    for memo in m.outputs():
        assert sum(m.report_probability(out, memo) for out in m.outputs()) == 1
    # A report supports v with p* under v and q* under any other value, exactly.
    for true in range(m.k):
        for v in range(m.k):
            supported = sum(m.probability(out, true) for out in m.outputs() if v in m.supports(out))
            assert supported == (m.p_star if v == true else m.q_star)


@pytest.mark.parametrize("m", [LGRR(3, 2.0, 1.0), LOSUE(3, 2.0, 1.0), LGRR(2, 3.0, 0.5)])
def test_waves_share_the_memo_so_their_covariance_is_the_memos(m: Longitudinal):
    """Two waves of one unchanged true value are dependent through the memo: their support
    indicators' covariance is exactly wave_covariance, positive."""
    outs = list(m.outputs())
    for true in range(m.k):
        for v in range(m.k):
            both = sum(
                m.joint_probability((a, b), true)
                for a in outs
                for b in outs
                if v in m.supports(a) and v in m.supports(b)
            )
            single = m.p_star if v == true else m.q_star
            cov = float(both - single * single)
            assert cov > 0
            expected = m.wave_covariance(1.0 if v == true else 0.0, v)
            assert math.isclose(cov, expected, rel_tol=1e-9)


# -- the device ----------------------------------------------------------------------------------------
def _chi2_p(counts: Counter, probs: dict, n: int) -> float:
    assert set(counts) <= set(probs), f"impossible outcomes {set(counts) - set(probs)}"
    stat = sum((counts[o] - n * float(p)) ** 2 / (n * float(p)) for o, p in probs.items())
    return float(chi2.sf(stat, len(probs) - 1))


SAMPLED = [(LGRR(3, 2.0, 1.0), 300_000), (LOSUE(3, 2.0, 1.0), 300_000)]


@pytest.mark.parametrize(("m", "draws"), SAMPLED, ids=lambda c: getattr(c, "name", str(c)))
def test_permanent_and_instantaneous_draws_follow_their_rounds(m: Longitudinal, draws: int):
    true = 1
    memos = Counter(m.permanent(true) for _ in range(draws))
    probs = {memo: m.memo_probability(memo, true) for memo in m.outputs()}
    assert _chi2_p(memos, probs, draws) > ALPHA
    memo = next(iter(m.outputs()))
    reports = Counter(m.instantaneous(memo) for _ in range(draws))
    probs = {out: m.report_probability(out, memo) for out in m.outputs()}
    assert _chi2_p(reports, probs, draws) > ALPHA


@pytest.mark.parametrize(("m", "draws"), SAMPLED, ids=lambda c: getattr(c, "name", str(c)))
def test_two_waves_of_one_respondent_follow_the_joint_channel(m: Longitudinal, draws: int):
    """Each simulated respondent draws the memo once and reports it in two waves."""
    true = 0
    pairs: Counter = Counter()
    for _ in range(draws // 2):
        memo = m.permanent(true)
        pairs[(m.instantaneous(memo), m.instantaneous(memo))] += 1
    outs = list(m.outputs())
    probs = {(a, b): m.joint_probability((a, b), true) for a in outs for b in outs}
    assert _chi2_p(pairs, probs, draws // 2) > ALPHA


def test_the_checker_catches_fresh_coins_each_wave():
    """Drawing the memo again each wave (no memoization) is caught by the same check."""
    m, draws = LGRR(3, 2.0, 1.0), 300_000
    pairs = Counter((m.randomize(0), m.randomize(0)) for _ in range(draws // 2))
    outs = list(m.outputs())
    probs = {(a, b): m.joint_probability((a, b), 0) for a in outs for b in outs}
    assert _chi2_p(pairs, probs, draws // 2) < ALPHA


def test_wire_answers_and_memos_are_validated():
    grr, oue, yes_no = LGRR(3, 2.0, 1.0), LOSUE(3, 2.0, 1.0), LGRR(2, 2.0, 1.0, binary=True)
    assert grr.validate(2) == 2 and grr.supports(2) == (2,)
    assert oue.validate("101") == "101" and oue.supports("101") == (0, 2)
    for bad in (3, -1, True, "1", 1.0, None):
        with pytest.raises(ValueError, match="option index from 0 to 2"):
            grr.validate(bad)
    for bad in ("10", "1012", "1a1", 5, b"101"):
        with pytest.raises(ValueError, match="3 characters"):
            oue.validate(bad)
    with pytest.raises(ValueError, match="0 or 1"):
        yes_no.validate(2)
    with pytest.raises(ValueError, match="option index"):
        grr.instantaneous(7)  # a memo read back from a damaged ledger
    with pytest.raises(ValueError, match="option index"):
        grr.permanent(3)
    assert oue.validate(oue.permanent(0)) in set(oue.outputs())
    assert grr.validate(grr.instantaneous(grr.permanent(2))) in (0, 1, 2)


def test_params_describe_and_stated():
    m = LGRR(2, 2.0, 1.0, binary=True)
    assert set(m.params_text()) == {"p1", "q1", "p2", "q2"}
    assert m.params_text()["p1"] == "0.880797077977"
    assert m.stated() == {"epsilon_perm": 2.0, "epsilon_1": 1.0}
    text = m.describe()
    assert "epsilon 1" in text and "at most 2" in text and "88.1%" in text and "80.3%" in text
    assert "costs 2 again" in text
    assert "4.7%" in LOSUE(4, 3.0, 1.0).describe()
    assert m.name == "l-grr" and LOSUE.name == "l-osue"
    assert math.isclose(float(m.odds_ratio()), math.exp(m.epsilon))


def test_auto_picks_the_lower_variance():
    assert isinstance(auto(3, 2.0, 1.0), LGRR)
    assert isinstance(auto(32, 4.0, 1.0), LOSUE)


# -- refusals --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("eps_perm", "eps_1", "message"),
    [
        (1.0, 1.0, "epsilon_1: must be below epsilon_perm"),
        (1.0, 2.0, "epsilon_1: must be below epsilon_perm"),
        (MAX_EPSILON + 1, 1.0, "epsilon_perm: expected a number"),
        (1.0, MIN_EPSILON / 2, "epsilon_1: expected a number"),
        (float("nan"), 1.0, "epsilon_perm: expected a number"),
        (True, 0.5, "epsilon_perm: expected a number"),
        ("2", 1.0, "epsilon_perm: expected a number"),
    ],
)
def test_bad_epsilons_are_refused(eps_perm, eps_1, message):
    for kind in (LGRR, LOSUE):
        with pytest.raises(ValueError, match=message):
            kind(3, eps_perm, eps_1)


def _doc(**extra):
    return {
        "id": "q",
        "type": "categorical",
        "options": ["a", "b", "c"],
        "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0},
    } | extra


def test_from_question_doc_picks_the_protocol():
    assert isinstance(from_question_doc(_doc(), 3), LGRR)
    assert isinstance(from_question_doc(_doc(mechanism="grr"), 3), LGRR)
    assert isinstance(from_question_doc(_doc(mechanism="oue"), 3), LOSUE)
    binary = from_question_doc(_doc(type="binary", mechanism="rr"), 2)
    assert isinstance(binary, LGRR) and binary.binary and binary.k == 2


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_doc(longitudinal=2.0), r"questions\[0\]\.longitudinal: expected"),
        (_doc(longitudinal={"epsilon_perm": 2.0}), "missing 'epsilon_1'"),
        (_doc(longitudinal={"epsilon_perm": 2, "epsilon_1": 1, "x": 0}), "unknown key 'x'"),
        (_doc(type="integer"), "only binary and categorical"),
        (_doc(type="text"), "only binary and categorical"),
        (_doc(type="multi"), "only binary and categorical"),
        (_doc(mechanism="none"), "nothing to memoize"),
        (_doc(direct_share=0.5), "split-ballot"),
        (_doc(grr={"keep": 0.8}), "parameters of 'grr'"),
        (_doc(type="binary", mechanism="coins", coins={"truth": 0.5, "yes": 0.5}), "'coins'"),
        (_doc(mechanism="rr"), "allowed: grr, oue, auto"),
        (
            _doc(longitudinal={"epsilon_perm": 1.0, "epsilon_1": 1.0}),
            r"questions\[0\]\.longitudinal\.epsilon_1: must be below",
        ),
    ],
)
def test_from_question_doc_refuses_with_the_field(doc, message):
    with pytest.raises(SurveyError, match=message):
        from_question_doc(doc, len(doc.get("options", ())) or 2, "questions[0].")


def test_epsilon_1_just_below_epsilon_perm():
    # The second round then keeps the memo almost surely; at 1e-12 apart nothing is left.
    close = LGRR(3, 1.0, 0.9999999)
    assert close.p2 > Fraction(999999, 1000000) and close.epsilon_single <= 0.9999999
    with pytest.raises(ValueError, match="epsilon_1: 1 with epsilon_perm 1 gives no usable"):
        LGRR(3, 1.0, 0.999999999999)
    tiny = LOSUE(3, MIN_EPSILON * 2, MIN_EPSILON)
    assert tiny.epsilon_single <= MIN_EPSILON and tiny.epsilon <= MIN_EPSILON * 2


def test_round_two_epsilon_and_words_for_researchers():
    grr, oue = LGRR(4, 3.0, 1.0), LOSUE(4, 3.0, 1.0)
    assert math.isclose(grr.epsilon_round2, math.log(grr.p2 / grr.q2))
    assert math.isclose(oue.epsilon_round2, 2 * math.log(oue.p2 / oue.q2))
    assert grr.epsilon_round2 > grr.epsilon_single  # the chain reveals less than its rounds
    assert "at most epsilon 1, every wave together at most 3" in grr.in_brief()
    assert "one of the 4 options" in grr.describe() and "another option" in grr.describe()
    assert repr(grr).startswith("LGRR(k=4, epsilon_perm=3.0, epsilon_1=1.0, p1=")
    with pytest.raises(ValueError, match="a binary question has 2 options"):
        LGRR(3, 2.0, 1.0, binary=True)
    auto_doc = {"type": "categorical", "mechanism": "auto", "longitudinal": _doc()["longitudinal"]}
    assert isinstance(from_question_doc(auto_doc, 3), LGRR)


def test_a_rounding_over_the_bound_is_moved_back_under_it(monkeypatch):
    """A float error of an ulp could put a rounded probability over its epsilon: the guard
    steps it back. Rounding the wrong way (up for p1 and p2, down for q1) stands in for it."""
    import deniable.shared.longitudinal as lon
    from deniable.shared.probability import round_down, round_up

    monkeypatch.setattr(lon, "round_down", round_up)
    monkeypatch.setattr(lon, "round_up", round_down)
    for m in (lon.LGRR(3, 2.0, 1.0), lon.LGRR(2, 2.0, 1.0, binary=True), lon.LOSUE(3, 2.0, 1.0)):
        assert m.epsilon <= 2.0 and m.epsilon_single <= 1.0
        assert m.epsilon > 2.0 - 1e-9
