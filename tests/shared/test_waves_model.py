"""A survey's series and wave and a question's `longitudinal` field (docs/surveys.md#waves):
validation with the reason, the resolved form and its hash, what a wave costs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from deniable.shared.errors import SurveyError
from deniable.shared.survey import Survey

REPEATED = {"epsilon_perm": 2.0, "epsilon_1": 1.0}


def doc(*questions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "panel-w1", "title": "Panel", "series": "panel", "wave": 1}
    base["questions"] = list(questions) or [
        {"id": "smokes", "text": "Smoke?", "type": "binary", "longitudinal": REPEATED}
    ]
    return {**base, **extra}


def test_a_wave_resolves_and_its_resolved_form_gives_the_same_hash() -> None:
    survey = Survey.from_dict(
        doc(
            {"id": "smokes", "text": "Smoke?", "type": "binary", "longitudinal": REPEATED},
            {
                "id": "party",
                "text": "Party?",
                "type": "categorical",
                "options": ["A", "B", "C"],
                "mechanism": "oue",
                "longitudinal": {"epsilon_perm": 3, "epsilon_1": 1.5},
            },
            {"id": "mood", "text": "Happy?", "type": "binary", "epsilon": 0.5},
        )
    )
    assert (survey.series, survey.wave) == ("panel", 1)
    smokes, party = survey.questions["smokes"], survey.questions["party"]
    assert smokes.mechanism == "l-grr" and party.mechanism == "l-osue"
    assert smokes.longitudinal is not None and survey.questions["mood"].longitudinal is None
    # The most a respondent spends in one wave: epsilon_perm for a value not memoized yet.
    assert smokes.epsilon == pytest.approx(2.0) and party.epsilon == pytest.approx(3.0)
    assert survey.epsilon == pytest.approx(5.5)
    resolved = survey.to_dict()
    assert resolved["series"] == "panel" and resolved["wave"] == 1
    first = resolved["questions"][0]
    assert first["longitudinal"] == {"epsilon_perm": 2, "epsilon_1": 1}
    assert set(first["l-grr"]) == {"p1", "q1", "p2", "q2"}
    again = Survey.from_dict(json.loads(json.dumps(resolved)))
    assert again.hash == survey.hash and again.to_dict() == resolved


def test_a_survey_outside_a_series_keeps_its_hash() -> None:
    plain = {
        "id": "s",
        "title": "S",
        "questions": [{"id": "a", "text": "A?", "type": "binary", "epsilon": 1.0}],
    }
    resolved = Survey.from_dict(plain).to_dict()
    assert "series" not in resolved and "wave" not in resolved
    assert "longitudinal" not in resolved["questions"][0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"wave": 0}, "wave: expected the wave's number, a whole number from 1 to 10000"),
        ({"wave": True}, "wave: expected the wave's number"),
        ({"wave": 10001}, "wave: expected"),
        ({"series": "Panel"}, "series: expected the series id"),
        ({"series": None}, "series: expected the series id"),
        ({"wave": None}, "wave: expected"),
        ({"device": "shared"}, "cannot memoize each respondent's permanent answers"),
    ],
)
def test_series_and_wave_are_checked(change: dict[str, Any], message: str) -> None:
    with pytest.raises(SurveyError, match=message):
        Survey.from_dict({**doc(), **change})


def test_a_longitudinal_question_needs_a_series() -> None:
    bare = doc()
    del bare["series"], bare["wave"]
    with pytest.raises(
        SurveyError, match=r'questions\[0\].longitudinal: .*give the survey "series"'
    ):
        Survey.from_dict(bare)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ({"type": "integer", "min": 0, "max": 5}, "only binary and categorical"),
        ({"type": "text"}, "only binary and categorical"),
        ({"type": "binary", "mechanism": "none"}, "nothing to memoize"),
        ({"type": "binary", "direct_share": "1/2"}, "split-ballot"),
        ({"type": "binary", "rr": {"keep": "0.75"}}, "derives both rounds"),
        ({"type": "binary", "longitudinal": {"epsilon_perm": 1, "epsilon_1": 1}}, "below"),
        ({"type": "binary", "longitudinal": {"epsilon_perm": 11, "epsilon_1": 1}}, "epsilon_perm"),
        ({"type": "binary", "longitudinal": {"epsilon_perm": 2}}, "missing 'epsilon_1'"),
        ({"type": "binary", "longitudinal": [2, 1]}, "expected"),
        ({"type": "binary", "epsilon": 1.0}, "epsilon: a longitudinal question's epsilon"),
        ({"type": "binary", "p_star": "0.7"}, "p_star: '0.7' is not the chained channel's"),
    ],
)
def test_a_bad_longitudinal_question_is_refused_with_the_reason(
    question: dict[str, Any], message: str
) -> None:
    q = {"id": "q", "text": "Q?", "longitudinal": REPEATED, **question}
    with pytest.raises(SurveyError, match=message):
        Survey.from_dict(doc(q))


def test_a_resolved_form_with_other_rounds_or_protocol_is_refused() -> None:
    resolved = Survey.from_dict(doc()).to_dict()
    wrong = copy.deepcopy(resolved)
    wrong["questions"][0]["l-grr"]["p1"] = "0.5"
    with pytest.raises(SurveyError, match="are not the rounds epsilon_perm and epsilon_1 give"):
        Survey.from_dict(wrong)
    other = copy.deepcopy(resolved)
    other["questions"][0]["mechanism"] = "l-osue"
    other["questions"][0]["l-osue"] = other["questions"][0].pop("l-grr")
    with pytest.raises(SurveyError, match="cannot be asked in waves as a binary question"):
        Survey.from_dict(other)
