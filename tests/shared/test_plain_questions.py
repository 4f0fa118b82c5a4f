"""Plain questions (mechanism `none`): sent exactly as answered, no epsilon, p* = 1, q* = 0."""

from __future__ import annotations

import pytest

from deniable.shared import Survey, SurveyError
from deniable.shared.mechanisms import Plain
from deniable.shared.report import check_answers

DOC = {
    "id": "plain",
    "title": "With covariates",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {"id": "adult", "text": "Over 40?", "type": "binary", "mechanism": "none"},
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "none",
        },
    ],
}


def test_a_plain_question_resolves_with_a_null_epsilon_and_adds_nothing():
    survey = Survey.from_dict(DOC)
    region = survey.questions["region"]
    assert region.plain and region.mechanism == "none" and region.epsilon is None
    assert (region.p_star, region.q_star) == (1.0, 0.0)
    assert survey.epsilon == survey.questions["smokes"].epsilon  # plain adds nothing
    resolved = survey.to_dict()
    entry = resolved["questions"][2]
    assert entry["epsilon"] is None and "none" not in entry
    assert (entry["p_star"], entry["q_star"]) == ("1", "0")
    again = Survey.from_dict(resolved)  # the resolved form resolves to itself
    assert again.hash == survey.hash and again.to_dict() == resolved


def test_a_plain_answer_is_sent_exactly_as_given():
    survey = Survey.from_dict(DOC)
    for _ in range(200):
        assert survey.questions["region"].randomize("east") == 2
        assert survey.questions["adult"].randomize("yes") == 1
    assert survey.questions["region"].supports(1) == (1,)


@pytest.mark.parametrize(
    "change, where",
    [
        ({"epsilon": 1.0}, "questions[1].epsilon"),
        ({"none": {"keep": 0.9}}, "questions[1].none"),
        ({"mechanism": "nope"}, "questions[1].mechanism"),
    ],
)
def test_bad_plain_questions_say_what_is_wrong(change, where):
    doc = {**DOC, "questions": [DOC["questions"][0], {**DOC["questions"][1], **change}]}
    with pytest.raises(SurveyError, match=rf"^{where.replace('[', '.').replace(']', '.')}"):
        Survey.from_dict(doc)


def test_a_survey_of_plain_questions_only_is_refused():
    with pytest.raises(SurveyError, match="at least one randomized question"):
        Survey.from_dict({**DOC, "questions": DOC["questions"][1:]})


@pytest.mark.parametrize("bad", [3, -1, True, 1.0, "1", None])
def test_ingestion_refuses_what_no_plain_answer_can_be(bad):
    survey = Survey.from_dict(DOC)
    with pytest.raises(Exception, match="region"):
        check_answers(survey, {"smokes": 1, "adult": 0, "region": bad})


def test_the_exact_probabilities_are_the_identity():
    plain = Plain(3)
    for truth in range(3):
        assert {o: plain.probability(o, truth) for o in plain.outputs()} == {
            o: int(o == truth) for o in range(3)
        }
    assert plain.variance(100, 0.3, 0) == pytest.approx(0.3 * 0.7 / 100)
