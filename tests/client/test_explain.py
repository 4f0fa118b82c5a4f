"""Plain-words explanations: what is sent, how likely the truth is kept, what epsilon means."""

from __future__ import annotations

import json
from pathlib import Path

from deniable.client import explain_survey
from deniable.client.explain import odds_ratio, percent
from deniable.shared import Survey

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "health-2026.json"


def binary(mechanism: dict[str, object]) -> Survey:
    question = {"id": "q", "text": "Q?", "type": "binary", **mechanism}
    return Survey.from_dict(
        {"id": "s", "title": "S", "enrollment": "open", "questions": [question]}
    )


def test_two_fair_coins_read_as_three_times_surer() -> None:
    text = explain_survey(binary({"mechanism": "coins", "coins": {"truth": 0.5, "yes": 0.5}}))
    assert "at most 3 times surer you answered yes than no" in text
    assert "ln 3" in text
    assert "Your true answer is kept with probability 50%" in text


def test_both_coins_at_point_eight_give_21() -> None:
    survey = binary({"mechanism": "coins", "coins": {"truth": 0.8, "yes": 0.8}})
    assert odds_ratio(survey.questions["q"]) == 21
    assert "at most 21 times surer" in explain_survey(survey)


def test_rr_states_keep_probability() -> None:
    text = explain_survey(binary({"epsilon": 1.0}))
    assert "kept with probability 73.1%" in text
    assert "2.72 times surer" in text


def test_example_file_explains_every_question_and_total() -> None:
    survey = Survey.from_dict(json.loads(EXAMPLE.read_text()))
    text = explain_survey(survey, spent=1.0, cap=10.0)
    for question in survey.questions.values():
        assert question.text in text
    assert "Total privacy cost: epsilon = 4.099" in text
    assert "cap of 10" in text


def test_oue_explained_as_marks() -> None:
    survey = Survey.from_dict(
        {
            "id": "s",
            "title": "S",
            "enrollment": "open",
            "questions": [
                {
                    "id": "c",
                    "text": "C?",
                    "type": "categorical",
                    "options": [f"o{i}" for i in range(12)],
                    "mechanism": "oue",
                    "epsilon": 1.0,
                }
            ],
        }
    )
    text = explain_survey(survey)
    assert "a mark (0 or 1) for each of the 12 options" in text
    assert "marked with probability 50%" in text


def test_percent() -> None:
    assert percent(0.5) == "50%"
    assert percent(2 / 3) == "66.7%"
