"""Estimators against hand-computed values, the results shape (docs/researchers.md), EM share."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator.stats.estimate import (
    CSV_COLUMNS,
    em_share,
    option_stats,
    results_csv,
    results_document,
    z_value,
)
from deniable.shared import Survey

Z95 = 1.959963984540054

SURVEY_DOC: dict[str, Any] = {
    "id": "stats",
    "title": "Estimation",
    "questions": [
        {
            "id": "coins",
            "text": "Two fair coins",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "mechanism": "grr",
            "grr": {"keep": 0.6},
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["N", "E", "S", "W"],
            "mechanism": "oue",
            "oue": {"p": 0.5, "q": 0.25},
        },
    ],
}


@pytest.fixture(scope="module")
def survey() -> Survey:
    return Survey.from_dict(SURVEY_DOC)


def doc_for(survey: Survey, n: int, **support: list[int]) -> dict[str, Any]:
    """Results with the given counts and neutral counts for every other question."""
    defaults = {
        "coins": [n - n // 2, n // 2],
        "smokes": [n - n // 2, n // 2],
        "party": [n - 2 * (n // 3), n // 3, n // 3],
        "region": [n // 2] * 4,
    }
    return results_document(survey, n, {**defaults, **support})


def question(doc: dict[str, Any], qid: str) -> dict[str, Any]:
    return next(q for q in doc["questions"] if q["id"] == qid)


def options(doc: dict[str, Any], qid: str) -> dict[str, dict[str, Any]]:
    return {o["option"]: o for o in question(doc, qid)["options"]}


def wilson(c: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval, written out from its textbook formula."""
    lam = c / n
    centre = (lam + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(lam * (1 - lam) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# -- the seed example and hand-computed values --------------------------------------------


def test_two_fair_coins_yes_share_035_estimates_02(survey: Survey) -> None:
    doc = doc_for(survey, 1000, coins=[650, 350])
    coins = options(doc, "coins")
    assert coins["yes"]["estimate"] == 0.2
    assert coins["no"]["estimate"] == 0.8
    assert coins["yes"]["count"] == 200.0
    assert coins["no"]["count"] == 800.0
    assert coins["yes"]["support"] == 350 and coins["no"]["support"] == 650


def test_stderr_and_wilson_interval_by_hand(survey: Survey) -> None:
    # n = 100, 35 yes with p* = 3/4, q* = 1/4: stderr = sqrt(.35 * .65 / (99 * .25)).
    yes = options(doc_for(survey, 100, coins=[65, 35]), "coins")["yes"]
    assert yes["stderr"] == pytest.approx(0.0958744970882, rel=1e-9)
    # By hand: Wilson for 35/100 at 95% is 0.355549 -+ 0.091907 = [0.263642, 0.447456];
    # mapped by (x - 1/4) / (1/2).
    assert yes["ci_low"] == pytest.approx((0.263642 - 0.25) / 0.5, abs=4e-6)
    assert yes["ci_high"] == pytest.approx((0.447456 - 0.25) / 0.5, abs=4e-6)
    lo, hi = wilson(35, 100, Z95)
    assert yes["ci_low"] == pytest.approx((lo - 0.25) / 0.5, rel=1e-12)
    assert yes["ci_high"] == pytest.approx((hi - 0.25) / 0.5, rel=1e-12)


def test_binary_no_mirrors_yes(survey: Survey) -> None:
    opts = options(doc_for(survey, 100, smokes=[58, 42]), "smokes")
    no, yes = opts["no"], opts["yes"]
    assert no["estimate"] == pytest.approx(1 - yes["estimate"], abs=1e-15)
    assert no["stderr"] == yes["stderr"]
    assert no["ci_low"] == pytest.approx(1 - yes["ci_high"], abs=1e-15)
    assert no["ci_high"] == pytest.approx(1 - yes["ci_low"], abs=1e-15)
    assert no["share"] + yes["share"] == pytest.approx(1, abs=1e-15)


def test_rr_numbers_from_its_own_pair(survey: Survey) -> None:
    q = survey.questions["smokes"]
    p, qs = q.p_star, q.q_star
    assert p == pytest.approx(math.e / (1 + math.e), abs=1e-11)
    no = options(doc_for(survey, 100, smokes=[58, 42]), "smokes")["no"]
    # no has the complementary pair (1 - q*, 1 - p*), whose gap is the same p* - q*.
    assert no["estimate"] == pytest.approx((0.58 - (1 - p)) / (p - qs), rel=1e-12)
    lo, hi = wilson(58, 100, Z95)
    assert no["ci_low"] == pytest.approx((lo - (1 - p)) / (p - qs), rel=1e-12)
    assert no["ci_high"] == pytest.approx((hi - (1 - p)) / (p - qs), rel=1e-12)


def test_categorical_estimate_stderr_and_count(survey: Survey) -> None:
    # grr keep 0.6 over 3 options: p* = 0.6, q* = 0.2.
    opts = options(doc_for(survey, 50, party=[25, 15, 10]), "party")
    assert [o["estimate"] for o in opts.values()] == pytest.approx([0.75, 0.25, 0.0])
    assert opts["A"]["stderr"] == pytest.approx(math.sqrt(0.5 * 0.5 / (49 * 0.16)), rel=1e-12)
    assert opts["B"]["count"] == pytest.approx(12.5)
    assert opts["C"]["ci_low"] == 0.0


def test_oue_counts_each_bit(survey: Survey) -> None:
    # oue p* = 1/2, q* = 1/4: supports need not add up to n.
    opts = options(doc_for(survey, 40, region=[20, 10, 10, 13]), "region")
    assert opts["N"]["estimate"] == 1.0
    assert opts["E"]["estimate"] == 0.0
    assert opts["W"]["estimate"] == pytest.approx((13 / 40 - 0.25) / 0.25)


def test_estimates_are_not_clipped_but_intervals_are(survey: Survey) -> None:
    opts = options(doc_for(survey, 100, coins=[80, 20]), "coins")
    assert opts["yes"]["estimate"] == pytest.approx(-0.1)
    assert opts["yes"]["count"] == pytest.approx(-10.0)
    assert opts["yes"]["ci_low"] == 0.0
    assert 0 < opts["yes"]["ci_high"] < 1
    assert opts["no"]["estimate"] == pytest.approx(1.1)
    assert opts["no"]["ci_high"] == 1.0
    assert opts["yes"]["share"] == 0.0 and opts["no"]["share"] == 1.0


# -- confidence and simultaneous intervals ------------------------------------------------


def test_z_value() -> None:
    assert z_value(0.95) == pytest.approx(Z95, rel=1e-12)
    assert z_value(0.95, 4) == pytest.approx(NormalDist().inv_cdf(1 - 0.05 / 8), rel=1e-12)
    assert z_value(0.95, 4) > z_value(0.95) > z_value(0.9)


@pytest.mark.parametrize("confidence", [1 - 1e-9, 1 - 1e-15, 0.9999999999999999])
def test_z_value_far_in_the_tail(confidence) -> None:
    """1 - alpha/2 rounds to 1.0 there; z still grows with the level and the Bonferroni m."""
    alpha = 1 - confidence
    assert z_value(confidence) == pytest.approx(-NormalDist().inv_cdf(alpha / 2), rel=1e-9)
    assert z_value(confidence, 256) > z_value(confidence) > z_value(1 - 1e-8)


@pytest.mark.parametrize(
    "bad", [0, 1, 0.0, 1.0, -0.5, 95, float("nan"), float("inf"), True, "0.9", None]
)
def test_confidence_must_lie_strictly_between_0_and_1(survey: Survey, bad: object) -> None:
    with pytest.raises(ValueError, match="confidence"):
        z_value(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence"):
        results_document(survey, 0, {}, confidence=bad)  # type: ignore[arg-type]


def test_simultaneous_widens_categorical_but_not_binary(survey: Survey) -> None:
    support = {"coins": [60, 40], "smokes": [60, 40], "party": [50, 30, 20], "region": [30] * 4}
    marginal = results_document(survey, 100, support)
    joint = results_document(survey, 100, support, simultaneous=True)
    assert joint["simultaneous"] is True and marginal["simultaneous"] is False
    for qid in ("party", "region"):
        for m, j in zip(
            question(marginal, qid)["options"], question(joint, qid)["options"], strict=True
        ):
            assert j["ci_low"] <= m["ci_low"] and j["ci_high"] >= m["ci_high"]
            assert j["ci_high"] - j["ci_low"] > m["ci_high"] - m["ci_low"]
            assert j["estimate"] == m["estimate"] and j["stderr"] == m["stderr"]
    # k = 3: the Bonferroni level 1 - 0.05/3, checked by hand against Wilson.
    b = question(joint, "party")["options"][1]
    lo, hi = wilson(30, 100, NormalDist().inv_cdf(1 - 0.05 / 6))
    assert b["ci_low"] == pytest.approx((lo - 0.2) / 0.4, rel=1e-12)
    assert b["ci_high"] == pytest.approx((hi - 0.2) / 0.4, rel=1e-12)
    assert question(joint, "coins") == question(marginal, "coins")


def test_higher_confidence_gives_wider_intervals(survey: Survey) -> None:
    support = {"coins": [60, 40], "smokes": [60, 40], "party": [50, 30, 20], "region": [30] * 4}
    narrow = results_document(survey, 100, support, confidence=0.8)
    wide = results_document(survey, 100, support, confidence=0.99)
    assert narrow["confidence"] == 0.8
    a, b = options(narrow, "smokes")["yes"], options(wide, "smokes")["yes"]
    assert b["ci_low"] < a["ci_low"] < a["ci_high"] < b["ci_high"]


# -- document shape, edge cases, CSV --------------------------------------------------------


def test_document_shape(survey: Survey) -> None:
    doc = doc_for(survey, 90)
    assert list(doc) == ["survey", "survey_hash", "n", "confidence", "simultaneous", "questions"]
    assert doc["survey"] == "stats" and doc["survey_hash"] == survey.hash and doc["n"] == 90
    assert [q["id"] for q in doc["questions"]] == ["coins", "smokes", "party", "region"]
    smokes = question(doc, "smokes")
    assert list(smokes) == [
        "id",
        "type",
        "mechanism",
        "epsilon",
        "n",
        "p_star",
        "q_star",
        "options",
    ]
    assert smokes["type"] == "binary" and smokes["mechanism"] == "rr" and smokes["n"] == 90
    assert smokes["epsilon"] == pytest.approx(1.0, abs=1e-9)
    assert smokes["p_star"] == survey.questions["smokes"].p_star
    assert [o["option"] for o in smokes["options"]] == ["no", "yes"]
    assert [o["option"] for o in question(doc, "party")["options"]] == ["A", "B", "C"]
    keys = ["option", "support", "estimate", "stderr", "ci_low", "ci_high", "count", "share"]
    for q in doc["questions"]:
        for o in q["options"]:
            assert list(o) == keys
            for key in keys[2:]:
                assert type(o[key]) is float
            assert type(o["support"]) is int
    json.dumps(doc, allow_nan=False)


def test_no_reports(survey: Survey) -> None:
    doc = results_document(survey, 0, {})
    assert doc["n"] == 0
    for q in doc["questions"]:
        assert q["n"] == 0
        for o in q["options"]:
            assert o["support"] == 0
            assert o["estimate"] is None and o["stderr"] is None and o["share"] is None
            assert (o["ci_low"], o["ci_high"], o["count"]) == (0.0, 1.0, 0.0)
    json.dumps(doc, allow_nan=False)
    assert results_csv(doc).splitlines()[1] == "coins,no,0,,,0.0,1.0,0.0,"


def test_one_report(survey: Survey) -> None:
    doc = results_document(
        survey, 1, {"coins": [0, 1], "smokes": [1, 0], "party": [0, 0, 1], "region": [0] * 4}
    )
    yes = options(doc, "coins")["yes"]
    assert yes["estimate"] == 1.5 and yes["stderr"] is None and yes["share"] == 1.0
    lo, hi = wilson(1, 1, Z95)
    assert yes["ci_low"] == pytest.approx(max(0, (lo - 0.25) / 0.5))
    assert yes["ci_high"] == 1.0
    region = options(doc, "region")
    assert [o["share"] for o in region.values()] == [0.25] * 4
    assert all(o["estimate"] == -1.0 for o in region.values())
    json.dumps(doc, allow_nan=False)


def test_counts_are_checked(survey: Survey) -> None:
    base = {"coins": [5, 5], "smokes": [5, 5], "party": [4, 3, 3], "region": [5] * 4}
    results_document(survey, 10, base)
    for bad in (
        {"coins": [5, 4]},
        {"party": [4, 3]},
        {"region": [11, 0, 0, 0]},
        {"party": [12, -1, -1]},
        {"smokes": [5.0, 5.0]},
    ):
        with pytest.raises(ValueError):
            results_document(survey, 10, {**base, **bad})
    with pytest.raises(ValueError, match="party"):
        results_document(survey, 10, {k: v for k, v in base.items() if k != "party"})
    with pytest.raises(ValueError, match="n"):
        results_document(survey, -1, base)


def test_numpy_counts_give_plain_json(survey: Survey) -> None:
    support = {
        "coins": np.array([6, 4]),
        "smokes": np.array([3, 7]),
        "party": np.array([2, 3, 5]),
        "region": np.array([5, 2, 1, 0]),
    }
    doc = results_document(survey, 10, support)
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc


def test_results_csv(survey: Survey) -> None:
    doc = doc_for(survey, 100, coins=[65, 35])
    text = results_csv(doc)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == list(CSV_COLUMNS)
    assert rows[0] == "question option support estimate stderr ci_low ci_high count share".split()
    assert len(rows) == 1 + 2 + 2 + 3 + 4
    assert rows[1][:2] == ["coins", "no"] and rows[2][:2] == ["coins", "yes"]
    yes = options(doc, "coins")["yes"]
    assert rows[2][2:] == [
        str(yes[c])
        for c in ("support", "estimate", "stderr", "ci_low", "ci_high", "count", "share")
    ]
    assert float(rows[2][3]) == 0.2


# -- the EM share ------------------------------------------------------------------------------


def matrix(k: int, p: float, q: float) -> np.ndarray:
    return (p - q) * np.eye(k) + q * np.ones((k, k))


def fixed_point_gap(share: np.ndarray, counts: list[int], p: float, q: float) -> float:
    """max_v |s_v (sum_u A_uv o_u / (A s)_u - 1)|: zero at a fixed point (docs/statistics.md)."""
    a = matrix(len(counts), p, q)
    o = np.asarray(counts, dtype=float) / sum(counts)
    gradient = a.T @ (o / (a @ share))
    return float(np.max(np.abs(share * (gradient - 1))))


def grid_mle(counts: list[int], p: float, q: float, step: float = 0.001) -> np.ndarray:
    """Brute force: the share on a fine grid of the 3-simplex maximizing sum_u C_u log (A s)_u."""
    a = matrix(3, p, q)
    xs = np.arange(0, 1 + step / 2, step)
    s0, s1 = np.meshgrid(xs, xs, indexing="ij")
    keep = s0 + s1 <= 1 + 1e-12
    grid = np.stack([s0[keep], s1[keep], np.clip(1 - s0[keep] - s1[keep], 0, 1)], axis=1)
    loglik = np.log(grid @ a.T) @ np.asarray(counts, dtype=float)
    return grid[np.argmax(loglik)]


@pytest.mark.parametrize(
    ("counts", "p", "q"),
    [
        ([45, 33, 22], 0.6, 0.2),  # interior maximum
        ([50, 32, 18], 0.6, 0.2),  # maximum on the boundary (C's estimate is negative)
        ([50, 30, 20], 0.6, 0.2),  # C's estimate exactly 0: EM converges slowly there
        ([25, 25, 25], 0.5, 0.25),  # oue-like pair, supports not adding up to n
        ([70, 10, 40], 0.5, 0.3),
    ],
)
def test_em_share_is_the_maximum_likelihood_distribution(
    counts: list[int], p: float, q: float
) -> None:
    share = em_share(counts, p, q)
    assert np.all(share >= 0)
    assert share.sum() == pytest.approx(1, abs=1e-12)
    assert fixed_point_gap(share, counts, p, q) < 1e-6
    assert share == pytest.approx(grid_mle(counts, p, q), abs=2e-3)


def test_em_share_is_the_estimate_when_that_is_a_distribution() -> None:
    # With every estimate in [0, 1] (and summing to 1 under grr), the unbiased estimate is the MLE.
    counts = [45, 33, 22]
    estimate, *_ = option_stats(np.array(counts), 100, 0.6, 0.2, Z95)
    assert em_share(counts, 0.6, 0.2) == pytest.approx(estimate, abs=1e-7)


def test_share_in_the_document_is_em(survey: Survey) -> None:
    doc = doc_for(survey, 100, party=[50, 32, 18], region=[40, 10, 30, 25])
    party = [o["share"] for o in question(doc, "party")["options"]]
    assert party == list(em_share([50, 32, 18], 0.6, 0.2))
    # C's unbiased estimate is -0.05; the share puts (almost) nothing there.
    assert question(doc, "party")["options"][2]["estimate"] == pytest.approx(-0.05)
    assert party[2] < 1e-6 and sum(party) == pytest.approx(1, abs=1e-12)
    region = [o["share"] for o in question(doc, "region")["options"]]
    assert fixed_point_gap(np.array(region), [40, 10, 30, 25], 0.5, 0.25) < 1e-6


def test_em_share_of_no_support_is_uniform() -> None:
    assert list(em_share([0, 0, 0, 0], 0.5, 0.25)) == [0.25] * 4


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(0, 10_000), min_size=2, max_size=12).filter(lambda c: sum(c) > 0),
    keep=st.floats(0.3, 0.95),
    ratio=st.floats(0.01, 0.6),
)
def test_em_share_properties(counts: list[int], keep: float, ratio: float) -> None:
    # Mechanisms that carry some information (p* - q* >= 0.12): there the update reaches the
    # fixed point well within its 10,000 rounds. Near p* = q* it can stop at the cap first
    # (docs/statistics.md, "Note on convergence"), which test_em_share_stops_at_the_cap shows.
    p, q = keep, keep * ratio
    share = em_share(counts, p, q)
    assert np.all(np.isfinite(share)) and np.all(share >= 0)
    assert share.sum() == pytest.approx(1, abs=1e-9)
    assert fixed_point_gap(share, counts, p, q) < 1e-6


def test_em_share_stops_at_the_cap_where_the_reports_carry_almost_nothing() -> None:
    counts, p, q = [5000, 4990, 5010, 4995], 0.3, 0.27
    capped = em_share(counts, p, q)
    assert capped.sum() == pytest.approx(1) and np.all(capped >= 0)
    assert fixed_point_gap(capped, counts, p, q) > 1e-9  # 10,000 rounds were not enough
    longer = em_share(counts, p, q, max_rounds=200_000)
    assert fixed_point_gap(longer, counts, p, q) <= 1e-10  # the same update, run on, arrives


# -- no NaN or inf, whatever the counts -------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 5),
    data=st.data(),
    confidence=st.floats(0.001, 0.999),
    simultaneous=st.booleans(),
)
def test_any_tally_gives_valid_json(
    survey: Survey, n: int, data: st.DataObject, confidence: float, simultaneous: bool
) -> None:
    yes = data.draw(st.integers(0, n))
    smokes = data.draw(st.integers(0, n))
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(0, n - a))
    region = data.draw(st.lists(st.integers(0, n), min_size=4, max_size=4))
    support = {
        "coins": [n - yes, yes],
        "smokes": [n - smokes, smokes],
        "party": [a, b, n - a - b],
        "region": region,
    }
    doc = results_document(survey, n, support, confidence=confidence, simultaneous=simultaneous)
    json.dumps(doc, allow_nan=False)
    for q in doc["questions"]:
        for o in q["options"]:
            assert 0.0 <= o["ci_low"] <= o["ci_high"] <= 1.0
            if n:
                assert o["estimate"] is not None and 0.0 <= o["share"] <= 1.0
                # A Wilson interval always holds its own point estimate.
                clipped = min(max(o["estimate"], 0.0), 1.0)
                assert o["ci_low"] - 1e-12 <= clipped <= o["ci_high"] + 1e-12
            if n >= 2:
                assert o["stderr"] is not None and o["stderr"] >= 0


def test_option_stats_broadcasts_over_trials() -> None:
    counts = np.array([[35, 65], [20, 80], [0, 100]])
    est, se, lo, hi = option_stats(counts, 100, 0.75, 0.25, Z95)
    assert est.shape == se.shape == lo.shape == hi.shape == (3, 2)
    for c, e in itertools.product(range(3), range(2)):
        single = option_stats(np.array(counts[c, e]), 100, 0.75, 0.25, Z95)
        assert [float(x) for x in single] == [est[c, e], se[c, e], lo[c, e], hi[c, e]]


def test_a_plain_question_is_estimated_as_the_sample_share():
    survey = Survey.from_dict(
        {
            "id": "plain-results",
            "title": "Plain",
            "questions": [
                {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0},
                {
                    "id": "region",
                    "text": "Region?",
                    "type": "categorical",
                    "options": ["n", "s", "e"],
                    "mechanism": "none",
                },
            ],
        }
    )
    doc = results_document(survey, 10, {"smokes": [5, 5], "region": [2, 3, 5]})
    region = doc["questions"][1]
    assert region["epsilon"] is None and (region["p_star"], region["q_star"]) == (1.0, 0.0)
    east = region["options"][2]
    assert east["estimate"] == 0.5 and east["share"] == 0.5 and east["count"] == 5.0
    assert east["stderr"] == pytest.approx(math.sqrt(0.5 * 0.5 / 9))
    assert [o["share"] for o in region["options"]] == [0.2, 0.3, 0.5]


def test_em_shares_of_many_questions_are_each_questions_own_em_share():
    """The survey-wide EM iterates same-size questions together; each share must be the very
    floats of that question's own EM (its rounds and its stopping rule), all-zero counts kept
    uniform."""
    from deniable.aggregator.stats.estimate import em_share, em_shares

    rng = np.random.default_rng(7)
    problems = []
    for _ in range(120):
        k = int(rng.choice([2, 3, 5, 16, 64]))
        eps = float(rng.choice([0.01, 0.3, 1.0, 4.0]))
        p, q = np.exp(eps) / (np.exp(eps) + k - 1), 1 / (np.exp(eps) + k - 1)
        n = int(rng.integers(0, 500))
        counts = rng.multinomial(n, rng.dirichlet(np.ones(k))) if n else np.zeros(k, int)
        problems.append((counts, float(p), float(q)))
    together = em_shares(problems)
    for (counts, p, q), share in zip(problems, together, strict=True):
        assert np.array_equal(share, em_share(counts, p, q))
    assert em_shares([]) == []
