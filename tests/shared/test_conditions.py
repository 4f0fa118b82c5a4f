"""Skip logic in the protocol: the condition grammar against the shared vectors, its refusals
naming where and why, `Survey.relevant`, and reports holding exactly the questions asked."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.shared import conditions
from deniable.shared.conditions import ConditionError, parse
from deniable.shared.errors import ReportError, SurveyError
from deniable.shared.report import (
    answer_support,
    check_answers,
    make_report,
    parse_report,
    randomize_answers,
)
from deniable.shared.signing import generate_key
from deniable.shared.survey import SUPPORT_MEMO, Survey

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "conformance" / "conditions.json").read_text("utf-8")
)


def category(text: str) -> str | None:
    try:
        parse(text)
    except ConditionError as exc:
        return exc.category
    return None


@pytest.mark.parametrize("case", VECTORS["parse"], ids=lambda c: c["condition"][:40])
def test_the_grammar_and_its_limits_match_the_vectors(case: dict[str, Any]) -> None:
    assert category(case["condition"]) == case["error"]


def _with_condition(survey: dict[str, Any], on: str, condition: str) -> dict[str, Any]:
    doc = copy.deepcopy(survey)
    for question in doc["questions"]:
        if question["id"] == on:
            question["relevant"] = condition
    return doc


@pytest.mark.parametrize("case", VECTORS["check"], ids=lambda c: c["condition"][:40])
def test_conditions_are_checked_against_the_survey_as_the_vectors_say(case: dict[str, Any]) -> None:
    doc = _with_condition(VECTORS["check_survey"], case["on"], case["condition"])
    if case["error"] is None:
        survey = Survey.from_dict(doc)
        assert survey.questions[case["on"]].relevant == case["condition"]
        assert Survey.from_dict(survey.to_dict()).hash == survey.hash
        return
    with pytest.raises(ConditionError) as caught:
        Survey.from_dict(doc)
    assert caught.value.category == case["error"]
    position = [q["id"] for q in doc["questions"]].index(case["on"])
    assert str(caught.value).startswith(f"questions[{position}].relevant: ")


def _values(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: frozenset(v) if isinstance(v, list) else v for k, v in raw.items()}


@pytest.mark.parametrize("case", VECTORS["evaluate"], ids=lambda c: c["condition"][:40])
def test_evaluation_matches_the_vectors(case: dict[str, Any]) -> None:
    condition = parse(case["condition"])
    assert condition.evaluate(_values(case["values"])) is case["result"]
    assert condition.evaluate(case["values"]) is case["result"]  # lists for sets too


def test_the_relevant_questions_match_the_vectors_from_labels_and_from_wire_answers() -> None:
    survey = Survey.from_dict(VECTORS["relevant_survey"])
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    for case in VECTORS["relevant"]:
        assert survey.relevant(case["plain"]) == case["relevant"]
        assert survey.relevant_from_answers(case["wire"]) == case["relevant"]
        assert conditions.relevant_from_answers(survey, case["wire"]) == case["relevant"]


# -- refusals name where and why ---------------------------------------------------------------

GATED: dict[str, Any] = {
    "id": "gated",
    "title": "Gated",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "mechanism": "none"},
        {"id": "drinks", "text": "Do you drink?", "type": "binary", "epsilon": 1.0},
        {
            "id": "freq",
            "text": "Every day?",
            "type": "binary",
            "epsilon": 1.5,
            "relevant": "smokes == 'yes'",
        },
        {
            "id": "brand",
            "text": "Brand?",
            "type": "categorical",
            "options": ["A", "B"],
            "epsilon": 2.0,
            "relevant": "smokes == 'yes'",
        },
        {"id": "always", "text": "Always?", "type": "binary", "epsilon": 0.5},
    ],
}


def refusal(doc: dict[str, Any]) -> str:
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict(doc)
    return str(caught.value)


def test_a_condition_on_a_randomized_question_is_refused_with_the_reason() -> None:
    doc = _with_condition(GATED, "freq", "drinks == 'yes'")
    assert refusal(doc) == (
        "questions[2].relevant: names 'drinks', a randomized question: whether the follow-up is "
        "answered would reveal the true answer; make 'drinks' plain (mechanism none) or drop the "
        "condition"
    )


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("always == 'yes'", "questions[2].relevant: names 'always', which is not asked before"),
        ("freq == 'yes'", "questions[2].relevant: names 'freq', which is not asked before"),
        ("nobody == 'yes'", "questions[2].relevant: names 'nobody', but the survey has no such"),
        ("smokes == 'Yes'", "questions[2].relevant: 'Yes' is not an option of 'smokes'; its "),
        ("smokes == 1", "questions[2].relevant: compares 'smokes', a choice, with the number 1"),
        ("smokes < 'yes'", "questions[2].relevant: < orders numbers only"),
        ("smokes == ", "questions[2].relevant: ends too early"),
        ("x" * 1001, "questions[2].relevant: at most 1000 characters, got 1001"),
        ("(" * 33 + "smokes == 'yes'" + ")" * 33, "questions[2].relevant: nested more than 32"),
    ],
)
def test_bad_conditions_are_one_line_errors_naming_the_question(
    condition: str, message: str
) -> None:
    text = refusal(_with_condition(GATED, "freq", condition))
    assert text.startswith(message), text
    assert "\n" not in text


@pytest.mark.parametrize("bad", [3, "", "  ", ["smokes == 'yes'"], "smokes == 'yes'\x00"])
def test_a_relevant_that_is_no_condition_text_is_refused(bad: object) -> None:
    assert refusal(_with_condition(GATED, "freq", bad)).startswith("questions[2].relevant:")  # type: ignore[arg-type]


def test_the_length_limit_is_checked_before_any_reading() -> None:
    huge = "(" * 5_000_000
    started = time.perf_counter()
    assert category(huge) == "too-long"
    assert time.perf_counter() - started < 1.0  # a bound, not a benchmark: no tokenizing


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_parsing_any_text_raises_nothing_but_a_condition_error(text: str) -> None:
    try:
        condition = parse(text)
    except ConditionError as exc:
        assert exc.category in ("syntax", "too-long", "too-deep")
        assert isinstance(exc, SurveyError)
        return
    assert condition.evaluate({}) in (True, False)


_PIECES = st.sampled_from(
    [
        "smokes",
        "age",
        "p",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "in",
        "and",
        "or",
        "not",
        "(",
        ")",
        ",",
        "'yes'",
        '"no"',
        "3",
        "-2.5",
        "'",
        "x-1",
        "2nd",
        "=",
        "!",
    ]
)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(_PIECES, max_size=40),
    st.dictionaries(
        st.sampled_from(["smokes", "age", "p"]),
        st.one_of(
            st.sampled_from(["yes", "no"]),
            st.integers(-5, 5),
            st.frozensets(st.sampled_from(["yes", "no"])),
        ),
    ),
)
def test_sentences_of_the_grammars_words_parse_or_fail_cleanly(
    pieces: list[str], values: dict[str, Any]
) -> None:
    try:
        condition = parse(" ".join(pieces))
    except ConditionError:
        return
    assert condition.evaluate(values) in (True, False)


# -- the survey, its hash and its epsilon ------------------------------------------------------


def test_a_survey_without_conditions_is_unconditional_and_asks_everything() -> None:
    doc = copy.deepcopy(GATED)
    for question in doc["questions"]:
        question.pop("relevant", None)
    survey = Survey.from_dict(doc)
    assert not survey.conditional and survey.gates == ()
    assert survey.relevant({}) == list(survey.questions)
    assert "relevant" not in json.dumps(survey.to_dict())


def test_conditions_are_part_of_the_hash_and_survive_the_resolved_form() -> None:
    survey = Survey.from_dict(GATED)
    assert survey.to_dict()["questions"][2]["relevant"] == "smokes == 'yes'"
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
    other = Survey.from_dict(_with_condition(GATED, "freq", "smokes != 'no'"))
    assert other.hash != survey.hash
    assert survey.gates == ("smokes",)


def test_the_survey_epsilon_is_the_most_a_report_can_spend() -> None:
    survey = Survey.from_dict(GATED)
    assert survey.epsilon == pytest.approx(5.0)
    assert survey.epsilon_of(survey.relevant({"smokes": "no"})) == pytest.approx(1.5)
    assert survey.epsilon_of(survey.relevant({"smokes": "yes"})) == pytest.approx(5.0)


def test_relevant_reads_plain_answers_in_any_form_normalize_takes() -> None:
    survey = Survey.from_dict(GATED)
    asked = ["smokes", "drinks", "freq", "brand", "always"]
    for given_yes in ("yes", 1, True, "YES"):
        assert survey.relevant({"smokes": given_yes}) == asked
    assert survey.relevant({"smokes": "no", "freq": "yes"}) == ["smokes", "drinks", "always"]
    with pytest.raises(SurveyError, match="smokes: 'perhaps' is not an answer"):
        survey.relevant({"smokes": "perhaps"})


# -- reports -------------------------------------------------------------------------------------


def test_make_report_randomizes_exactly_the_questions_asked() -> None:
    survey = Survey.from_dict(GATED)
    key = generate_key()
    skipped = make_report(survey, {"smokes": "no", "drinks": "no", "always": "yes"}, key)
    assert set(skipped["answers"]) == {"smokes", "drinks", "always"}
    assert skipped["answers"]["smokes"] == 0
    parse_report(skipped, survey)
    asked = {"smokes": "yes", "drinks": "no", "freq": "yes", "brand": "A", "always": "no"}
    full = make_report(survey, asked, key)
    assert set(full["answers"]) == set(survey.questions)
    parse_report(full, survey)


def test_an_answer_to_a_skipped_question_or_a_missing_relevant_one_is_an_error() -> None:
    survey = Survey.from_dict(GATED)
    with pytest.raises(SurveyError) as caught:
        randomize_answers(survey, {"smokes": "no", "drinks": "no", "freq": "yes", "always": "no"})
    assert str(caught.value) == (
        "freq: not asked when smokes is 'no' (its condition: smokes == 'yes'); leave it out"
    )
    with pytest.raises(SurveyError) as caught:
        randomize_answers(survey, {"smokes": "yes", "drinks": "no", "brand": "A", "always": "no"})
    assert str(caught.value) == "freq: no answer given; the answers make it relevant"
    with pytest.raises(SurveyError, match="drinks: no answer given; every question asked"):
        randomize_answers(survey, {"smokes": "no", "always": "no"})


def test_check_answers_names_the_question_and_why() -> None:
    survey = Survey.from_dict(GATED)
    with pytest.raises(ReportError) as caught:
        check_answers(survey, {"smokes": 0, "drinks": 1, "freq": 1, "always": 0})
    assert str(caught.value) == (
        "answers.freq: not asked when smokes is 'no' (its condition: smokes == 'yes'); leave it out"
    )
    with pytest.raises(ReportError) as caught:
        check_answers(survey, {"smokes": 1, "drinks": 1, "freq": 1, "always": 0})
    assert str(caught.value) == "answers.brand: missing; the plain answers make it relevant"
    with pytest.raises(ReportError, match="answers.smokes: "):
        check_answers(survey, {"smokes": 7, "drinks": 1, "always": 0})
    good = {"smokes": 0, "drinks": 1, "always": 0}
    assert check_answers(survey, good) is good
    assert answer_support(survey, good) == {"smokes": (0,), "drinks": (1,), "always": (0,)}
    with pytest.raises(ReportError, match="answers.freq: not asked"):
        answer_support(survey, {**good, "freq": 1})


def test_multi_and_integer_gates_read_from_the_wire() -> None:
    doc = VECTORS["relevant_survey"]
    survey = Survey.from_dict(doc)
    report = {
        "smokes": 1,
        "freq": 0,
        "age": 15,
        "young": 1,
        "partners": "010",
        "about_b": 2,
        "region": 1,
        "always": 0,
    }
    assert check_answers(survey, report) is report
    with pytest.raises(ReportError) as caught:
        check_answers(survey, {**report, "partners": "100"})
    assert str(caught.value).startswith(
        "answers.about_b: not asked when partners has selected 'a' and age is 15"
    )


def test_the_relevance_memo_is_bounded() -> None:
    doc = {
        "id": "wide",
        "title": "Wide gates",
        "questions": [
            {
                "id": "n",
                "text": "N?",
                "type": "integer",
                "min": 0,
                "max": 1000,
                "mechanism": "none",
            },
            {
                "id": "m",
                "text": "M?",
                "type": "multi",
                "options": ["a", "b", "c"],
                "mechanism": "none",
            },
            {
                "id": "q",
                "text": "Q?",
                "type": "binary",
                "epsilon": 1.0,
                "relevant": "n > 500 or 'a' in m",
            },
        ],
    }
    survey = Survey.from_dict(doc)
    for n in range(1001):
        for bits in ("000", "100", "011", "111", "010"):
            asked = survey.relevant_from_answers({"n": n, "m": bits})
            assert ("q" in asked) is (n > 500 or bits[0] == "1")
    assert len(survey._relevant_memo) == SUPPORT_MEMO


def test_relevant_from_answers_does_not_depend_on_earlier_reports() -> None:
    # A gate sent as null is refused whatever was asked before (an absent gate is remembered
    # apart from it).
    doc = {
        "id": "s1",
        "title": "t",
        "questions": [
            {"id": "a", "text": "A", "type": "binary", "mechanism": "none"},
            {"id": "b", "text": "B", "type": "binary", "epsilon": 1, "relevant": "a != 'yes'"},
        ],
    }
    survey = Survey.from_dict(doc)
    assert survey.relevant_from_answers({}) == ["a", "b"]
    with pytest.raises(SurveyError):
        survey.relevant_from_answers({"a": None})
