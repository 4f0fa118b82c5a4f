"""Split ballot in the survey model and the report (docs/surveys.md#split-ballot): the share is
kept exactly and hashed, the direct arm is the type's plain mechanism, the arms travel signed
in the report and in its canonical form, and only randomized arms cost epsilon."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from deniable.shared import ReportError, Survey, SurveyError, canonical_json
from deniable.shared.ballot import DIRECT, RANDOMIZED
from deniable.shared.report import (
    answer_support,
    canonical_report,
    check_answers,
    check_structure,
    make_report,
    randomize_answers,
    randomize_report,
    signed_bytes,
    verified_body,
)
from deniable.shared.signing import generate_key

QUESTIONS: list[dict[str, Any]] = [
    {"id": "b", "text": "B?", "type": "binary", "epsilon": 1.0, "direct_share": 0.25},
    {"id": "c", "text": "C?", "type": "categorical", "options": ["x", "y", "z"],
     "mechanism": "oue", "epsilon": 2.0, "direct_share": "1/3"},
    {"id": "i", "text": "I?", "type": "integer", "min": 0, "max": 9, "epsilon": 1.0,
     "direct_share": "0.5"},
    {"id": "m", "text": "M?", "type": "multi", "options": ["p", "q"], "epsilon": 1.0,
     "direct_share": 0.5},
    {"id": "r", "text": "R?", "type": "binary", "epsilon": 0.5},
]  # fmt: skip
TRUTH = {"b": "yes", "c": "z", "i": 7, "m": ["q"], "r": "no"}


def survey(questions: list[dict[str, Any]] = QUESTIONS) -> Survey:
    return Survey.from_dict({"id": "sb", "title": "Split", "questions": questions})


def test_the_share_is_exact_hashed_and_absent_elsewhere() -> None:
    s = survey()
    assert s.split == ("b", "c", "i", "m")
    assert s.questions["c"].direct_share == Fraction(1, 3)
    shown = [q.get("direct_share") for q in s.to_dict()["questions"]]
    assert shown[0] == "0.25" and shown[2] == "0.5" and shown[4] is None
    assert Survey.from_dict(s.to_dict()).hash == s.hash
    other = survey([{**QUESTIONS[0], "direct_share": 0.5}, *QUESTIONS[1:]])
    assert other.hash != s.hash
    plain = survey([{k: v for k, v in q.items() if k != "direct_share"} for q in QUESTIONS])
    assert "direct_share" not in json.dumps(plain.to_dict()) and plain.split == ()


def test_the_direct_question_is_the_types_plain_mechanism() -> None:
    s = survey()
    for qid in s.split:
        direct = s.questions[qid].direct_question
        assert (
            direct.plain and direct.epsilon is None and direct.options == s.questions[qid].options
        )
    assert s.questions["i"].direct_question.k == 10  # one slot per value, like a plain integer
    assert s.questions["c"].direct_question.validate(2) == 2


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"type": "text", "direct_share": 0.2, "options": None}, "a text question"),
        ({"mechanism": "none", "epsilon": None}, "a plain question"),
        ({"direct_share": 0}, "must lie in"),
        ({"direct_share": "2/2"}, "must lie in"),
        ({"direct_share": "half"}, "direct_share"),
    ],
)
def test_bad_split_ballots_are_refused_naming_the_field(
    change: dict[str, Any], reason: str
) -> None:
    question = {**QUESTIONS[0], **change}
    question = {k: v for k, v in question.items() if v is not None}
    with pytest.raises(SurveyError, match=r"questions\[0\]\.direct_share") as found:
        survey([question, QUESTIONS[4]])
    assert reason in str(found.value)


def test_a_wide_integer_cannot_be_asked_directly() -> None:
    wide = {"id": "w", "text": "W?", "type": "integer", "min": 0, "max": 5000, "epsilon": 1.0}
    survey([wide, QUESTIONS[4]])  # randomized it is fine
    with pytest.raises(SurveyError, match="direct_share: its direct arm would be a plain integer"):
        survey([{**wide, "direct_share": 0.5}, QUESTIONS[4]])


def test_direct_answers_are_sent_as_given_and_randomized_ones_randomized() -> None:
    s = survey()
    direct = {qid: DIRECT for qid in s.split}
    assert randomize_answers(s, TRUTH, direct) | {"r": 0} == {
        "b": 1, "c": 2, "i": 7, "m": "01", "r": 0
    }  # fmt: skip
    noisy = randomize_answers(s, TRUTH, {qid: RANDOMIZED for qid in s.split})
    assert noisy["i"] in (0, 1) and isinstance(noisy["c"], str) and len(noisy["c"]) == 3
    with pytest.raises(SurveyError, match="draw the arms"):
        randomize_answers(s, TRUTH)
    with pytest.raises(SurveyError, match=r"arms\.m: missing"):
        randomize_answers(s, TRUTH, {"b": DIRECT, "c": DIRECT, "i": DIRECT})


def test_epsilon_counts_only_randomized_arms() -> None:
    s = survey()
    assert s.epsilon == pytest.approx(5.5)
    arms = {"b": DIRECT, "c": RANDOMIZED, "i": DIRECT, "m": RANDOMIZED}
    assert s.epsilon_of(TRUTH, arms) == pytest.approx(2.0 + 1.0 + 0.5)
    assert s.epsilon_of(TRUTH) == pytest.approx(s.epsilon)


def test_a_report_carries_signed_arms_in_its_canonical_form() -> None:
    s = survey()
    report = make_report(s, TRUTH, generate_key())
    assert set(report["arms"]) == set(s.split)
    assert set(report["arms"].values()) <= {DIRECT, RANDOMIZED}
    assert check_structure(report) is report
    signed, body = canonical_report(report)
    assert signed == signed_bytes(report) and body == canonical_json(report)
    assert b'"arms":{' in signed
    verified_body(report)
    flipped = {q: RANDOMIZED if a == DIRECT else DIRECT for q, a in report["arms"].items()}
    with pytest.raises(ReportError, match="signature: does not verify"):
        verified_body({**report, "arms": flipped})
    checked = check_answers(s, report["answers"], report["arms"])
    assert checked.arms == report["arms"]  # type: ignore[attr-defined]


def test_the_support_of_a_direct_answer_is_its_plain_encodings() -> None:
    s = survey()
    answers = {"b": 1, "c": 2, "i": 7, "m": "01", "r": 0}
    support = answer_support(s, answers, {qid: DIRECT for qid in s.split})
    assert support == {"b": (1,), "c": (2,), "i": (7,), "m": (1,), "r": (0,)}


@pytest.mark.parametrize(
    ("arms", "message"),
    [
        ([], "arms: expected an object"),
        ({"b": 1}, "arms.b: expected 'direct' or 'randomized'"),
        ({"B!": "direct"}, "is not a question id"),
    ],
)
def test_malformed_arms_are_refused_by_shape(arms: object, message: str) -> None:
    report = make_report(survey(), TRUTH, generate_key())
    with pytest.raises(ReportError, match=message):
        check_structure({**report, "arms": arms})


def test_arms_in_a_report_without_split_ballot_are_refused() -> None:
    plain = survey([QUESTIONS[4]])
    assert "arms" not in make_report(plain, {"r": "yes"}, generate_key())
    with pytest.raises(ReportError, match="arms: this survey has no split-ballot question"):
        answer_support(plain, {"r": 1}, {})


def test_randomize_report_draws_each_arm() -> None:
    s = survey()
    seen: dict[str, set[str]] = {qid: set() for qid in s.split}
    for _ in range(200):
        _, arms = randomize_report(s, TRUTH)
        for qid, arm in arms.items():
            seen[qid].add(arm)
    assert all(found == {DIRECT, RANDOMIZED} for found in seen.values())
