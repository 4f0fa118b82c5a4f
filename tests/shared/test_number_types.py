"""The integer (onebit, none) and multi (rr, none) question types: exact probabilities, hand
values, the sampler against them, and validation errors that name the field."""

from __future__ import annotations

import copy
import math
from collections import Counter
from fractions import Fraction as F
from typing import Any

import pytest
from scipy.stats import chi2

from deniable.shared import Survey, SurveyError
from deniable.shared.mechanisms import MultiRR, OneBit, PlainInteger, PlainSelection
from deniable.shared.probability import format_probability
from tests.aggregator.conftest import NUMBERS_DOC

#: A correct sampler fails one of these checks with probability well below 1e-4 in all.
SE_BOUND = 5
ALPHA = 1e-6


def test_onebit_at_epsilon_1_keeps_warners_probability_rounded_down():
    m = OneBit.from_epsilon(low=0, high=20, epsilon=1.0)
    assert format_probability(m.p_star) == "0.73105857863"  # e / (1 + e) = 0.7310585786300049
    assert m.q_star == 1 - m.p_star
    assert m.p_star <= F(math.e / (1 + math.e))
    assert 1.0 - 1e-9 < m.epsilon <= 1.0
    assert m.epsilon == pytest.approx(math.log(m.p_star / m.q_star), abs=0)


def test_onebit_reports_one_with_the_exact_fraction_of_the_number():
    m = OneBit(low=10, high=30, keep=F(3, 4))
    assert m.one_probability(0) == F(1, 4)  # the minimum: q*
    assert m.one_probability(20) == F(3, 4)  # the maximum: p*
    assert m.one_probability(5) == F(1, 4) + F(1, 2) * F(5, 20) == F(3, 8)
    assert m.probability(0, 5) == F(5, 8)
    assert m.epsilon == pytest.approx(math.log(3))


def test_multi_rr_spends_epsilon_over_k_on_each_option():
    m = MultiRR.from_epsilon(3, epsilon=3.0)
    assert m.keep == OneBit.from_epsilon(low=0, high=1, epsilon=1.0).keep
    assert 3.0 - 1e-9 < m.epsilon <= 3.0
    # Any change of the selected set changes at most k bits, each by a ratio p*/q*:
    worst = max(
        m.probability(out, frozenset({0, 1, 2})) / m.probability(out, frozenset())
        for out in m.outputs()
    )
    assert math.log(worst) == pytest.approx(m.epsilon)
    assert sum(m.probability(out, frozenset({1})) for out in m.outputs()) == 1


def test_multi_rr_below_the_smallest_epsilon_per_option_is_refused_with_the_way_out():
    with pytest.raises(ValueError, match=r"give at least 0\.005"):
        MultiRR.from_epsilon(5, epsilon=0.004)


def test_plain_forms_send_the_answer_itself():
    age = PlainInteger(low=18, high=99)
    assert age.randomize(22) == 40 and age.supports(40) == (22,) and age.k == 82
    apps = PlainSelection(3)
    assert apps.randomize(frozenset({0, 2})) == "101" and apps.supports("101") == (0, 2)
    assert apps.randomize(frozenset()) == "000"


def _within(count: int, n: int, p: F) -> bool:
    expected, se = n * float(p), math.sqrt(n * float(p) * (1 - float(p)))
    return abs(count - expected) <= SE_BOUND * se


@pytest.mark.parametrize("offset", [0, 7, 20])
def test_onebit_sampler_frequencies_match_the_exact_probability(offset: int):
    m = OneBit.from_epsilon(low=0, high=20, epsilon=1.0)
    n = 100_000
    ones = sum(m.randomize(offset) for _ in range(n))
    assert _within(ones, n, m.one_probability(offset)), (ones, float(m.one_probability(offset)))


def test_the_onebit_check_catches_a_probability_off_by_0_02():
    # 0.02 is 14 standard errors at 100,000 draws: caught every time, not 99.5% of the time.
    m = OneBit.from_epsilon(low=0, high=20, epsilon=1.0)
    wrong = OneBit(low=0, high=20, keep=m.keep + F(2, 100))
    n = 100_000
    ones = sum(wrong.randomize(20) for _ in range(n))
    assert not _within(ones, n, m.one_probability(20))


@pytest.mark.parametrize("chosen", [frozenset(), frozenset({0, 2}), frozenset({0, 1, 2})])
def test_multi_sampler_matches_the_exact_table_and_each_bit(chosen: frozenset[int]):
    m = MultiRR.from_epsilon(3, epsilon=2.0)
    n = 100_000
    counts = Counter(m.randomize(chosen) for _ in range(n))
    outputs = list(m.outputs())
    assert set(counts) <= set(outputs)
    stat = sum(
        (counts[out] - n * float(m.probability(out, chosen))) ** 2
        / (n * float(m.probability(out, chosen)))
        for out in outputs
    )
    assert chi2.sf(stat, len(outputs) - 1) > ALPHA, (stat, counts)
    for i in range(3):
        ones = sum(c for out, c in counts.items() if out[i] == "1")
        assert _within(ones, n, m.p_star if i in chosen else m.q_star), (i, ones)


def _question(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(NUMBERS_DOC)
    doc["questions"][0].update(changes)
    return {k: v for k, v in doc.items()}


def _multi(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(NUMBERS_DOC)
    doc["questions"][1].update(changes)
    return doc


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        (_question(min=5, max=5), "questions[0].max", "greater than min"),
        (_question(min=9, max=2), "questions[0].max", "greater than min"),
        (_question(max=2.5), "questions[0].max", "whole number"),
        (_question(min=True), "questions[0].min", "whole number"),
        (_question(max=10**12), "questions[0].max", "whole number"),
        (_question(options=["a", "b"]), "questions[0].options", "min and max"),
        (_question(onebit={"keep": "0.4"}, epsilon=None), "questions[0].onebit.keep", "1/2"),
        (_question(mechanism="rr"), "questions[0].mechanism", "onebit, none"),
        (_question(epsilon=None), "questions[0].epsilon", "missing"),
        (_multi(options=["a", "A"]), "questions[1].options", "distinct"),
        (_multi(options=[]), "questions[1].options", "list of 2"),
        (_multi(options=["a", ""]), "questions[1].options[1]", "non-empty"),
        (_multi(min=0), "questions[1].min", "only an integer question"),
        (_multi(epsilon=0.002), "questions[1].epsilon", "give at least 0.003"),
        (_multi(mechanism="grr"), "questions[1].mechanism", "rr, none"),
    ],
)
def test_bad_documents_are_refused_naming_the_field(doc: dict[str, Any], field: str, words: str):
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict(doc)
    assert str(caught.value).startswith(field), str(caught.value)
    assert words in str(caught.value)


def test_a_plain_integer_is_capped_at_1001_values_and_says_what_to_do():
    doc = copy.deepcopy(NUMBERS_DOC)
    doc["questions"][2].update(min=0, max=5000)
    with pytest.raises(SurveyError, match=r"questions\[2\]\.max: .*at most 1001.*onebit"):
        Survey.from_dict(doc)
    doc["questions"][2].update(min=0, max=1000)
    assert Survey.from_dict(doc).questions["age"].k == 1001


def test_the_resolved_form_has_min_and_max_and_no_options_for_an_integer():
    resolved = Survey.from_dict(NUMBERS_DOC).to_dict()
    drinks, used, age, apps = resolved["questions"]
    assert (drinks["min"], drinks["max"], drinks["mechanism"]) == (0, 20, "onebit")
    assert "options" not in drinks and drinks["onebit"] == {"keep": drinks["p_star"]}
    assert used["rr"] == {"keep": used["p_star"]} and used["options"] == [
        "cannabis",
        "ecstasy",
        "LSD",
    ]
    assert age["epsilon"] is None and apps["epsilon"] is None
    assert resolved["epsilon"] == pytest.approx(drinks["epsilon"] + used["epsilon"])
    assert Survey.from_dict(resolved).hash == Survey.from_dict(NUMBERS_DOC).hash


@pytest.mark.parametrize(
    ("qid", "value", "normal"),
    [
        ("drinks", 3, 3),
        ("drinks", "20", 20),
        ("used", ["cannabis", "LSD"], frozenset({0, 2})),
        ("used", "cannabis,lsd", frozenset({0, 2})),
        ("used", [1], frozenset({1})),
        ("used", [], frozenset()),
        ("used", "", frozenset()),
        ("apps", ["chat"], frozenset({1})),
    ],
)
def test_true_answers_in_every_accepted_form(qid: str, value: Any, normal: Any):
    assert Survey.from_dict(NUMBERS_DOC).questions[qid].normalize(value) == normal


@pytest.mark.parametrize(
    ("qid", "value"),
    [("drinks", 3.5), ("drinks", True), ("drinks", 21), ("drinks", -1), ("drinks", "x")]
    + [("used", "heroin"), ("used", [5]), ("used", 2.0), ("age", 17)],
)
def test_bad_true_answers_are_refused_with_what_to_give(qid: str, value: Any):
    question = Survey.from_dict(NUMBERS_DOC).questions[qid]
    with pytest.raises(SurveyError, match=rf"^{qid}: .* give "):
        question.normalize(value)


@pytest.mark.parametrize(
    ("qid", "wire"),
    [("drinks", 2), ("drinks", "1"), ("drinks", True), ("used", "01"), ("used", "0121")]
    + [("used", 3), ("age", 100), ("age", 40.0), ("apps", "1x")],
)
def test_malformed_wire_answers_are_refused(qid: str, wire: Any):
    with pytest.raises(SurveyError, match=rf"^{qid}: expected"):
        Survey.from_dict(NUMBERS_DOC).questions[qid].validate(wire)
