"""Skip logic at ingestion, over real HTTP on SQLite and PostgreSQL: a report holds exactly the
questions its plain answers make relevant; anything else is refused (422) naming the question,
and nothing is stored (docs/surveys.md#skip-logic)."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from deniable.shared import Survey, make_report, sign_report
from deniable.shared.report import hour_now, new_report_id
from deniable.shared.signing import generate_key

SKIP_DOC: dict[str, Any] = {
    "id": "skips",
    "title": "Smoking, with a gate",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "mechanism": "none"},
        {
            "id": "freq",
            "text": "Every day?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": "smokes == 'yes'",
        },
        {
            "id": "age",
            "text": "Age?",
            "type": "integer",
            "min": 0,
            "max": 120,
            "mechanism": "none",
        },
        {
            "id": "young",
            "text": "Started before 18?",
            "type": "binary",
            "epsilon": 0.5,
            "relevant": "smokes == 'yes' and age < 30",
        },
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 2.0,
        },
    ],
}


def post(server: Any, report: dict[str, Any]) -> requests.Response:
    return requests.post(f"{server.url}/api/v1/reports", json=report, timeout=30)


def signed(survey: Survey, answers: dict[str, Any]) -> dict[str, Any]:
    """A well-signed report of exactly these (encoded) answers, however wrong they are."""
    unsigned = {
        "v": 1,
        "survey": survey.id,
        "survey_hash": survey.hash,
        "answers": answers,
        "report_id": new_report_id(),
        "sent_at": hour_now(),
    }
    return sign_report(unsigned, generate_key())


@pytest.fixture
def published(live_server: Any) -> Survey:
    return Survey.from_dict(live_server.create_survey(SKIP_DOC, fresh=True)["survey"])


def test_the_published_survey_keeps_its_conditions(published: Survey) -> None:
    assert published.questions["freq"].relevant == "smokes == 'yes'"
    assert published.conditional and published.gates == ("smokes", "age")
    assert published.epsilon == pytest.approx(3.5)  # the most a respondent can spend


def test_reports_holding_exactly_the_relevant_questions_are_stored(
    live_server: Any, published: Survey
) -> None:
    key = generate_key()
    smoker = make_report(
        published, {"smokes": "yes", "freq": "no", "age": 20, "young": "yes", "party": "A"}, key
    )
    assert set(smoker["answers"]) == {"smokes", "freq", "age", "young", "party"}
    older = make_report(
        published, {"smokes": "yes", "freq": "yes", "age": 40, "party": "B"}, generate_key()
    )
    assert set(older["answers"]) == {"smokes", "freq", "age", "party"}
    other = make_report(published, {"smokes": "no", "age": 20, "party": "C"}, generate_key())
    assert set(other["answers"]) == {"smokes", "age", "party"}
    for report in (smoker, older, other):
        response = post(live_server, report)
        assert response.status_code == 201, response.text
    assert live_server.results(published.id)["n"] == 3


#: Reports of well-signed but wrong answers, and the start of the reason each is refused with.
REFUSED: list[tuple[dict[str, Any], str]] = [
    (
        {"smokes": 0, "freq": 1, "age": 20, "party": 0},
        "answers.freq: not asked when smokes is 'no' (its condition: smokes == 'yes')",
    ),
    (
        {"smokes": 1, "freq": 1, "age": 45, "young": 0, "party": 0},
        "answers.young: not asked when smokes is 'yes' and age is 45",
    ),
    (
        {"smokes": 1, "age": 20, "young": 1, "party": 0},
        "answers.freq: missing; the plain answers make it relevant",
    ),
    (
        {"smokes": 1, "freq": 0, "age": 20, "party": 0},
        "answers.young: missing; the plain answers make it relevant",
    ),
    (
        {"freq": 0, "age": 20, "party": 0},
        "answers.smokes: missing; every question must be answered",
    ),
    ({"smokes": 0, "age": 20}, "answers.party: missing; every question must be answered"),
    ({"smokes": 2, "age": 20, "party": 0}, "answers.smokes:"),
]


def test_a_report_answering_a_skipped_question_or_skipping_a_relevant_one_is_refused(
    live_server: Any, published: Survey
) -> None:
    stored = make_report(published, {"smokes": "no", "age": 20, "party": "C"}, generate_key())
    assert post(live_server, stored).status_code == 201
    for answers, detail in REFUSED:
        report = signed(published, answers)
        response = post(live_server, report)
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["result"] == "rejected" and body["report_id"] == report["report_id"]
        assert body["detail"].startswith(detail), body["detail"]
        batch = requests.post(
            f"{live_server.url}/api/v1/reports", json={"reports": [report]}, timeout=30
        ).json()["results"]
        assert batch == [
            {"report_id": report["report_id"], "result": "rejected", "reason": body["detail"]}
        ]
    assert live_server.results(published.id)["n"] == 1  # nothing else stored


def test_a_survey_refusing_a_condition_on_a_randomized_question_stores_nothing(
    live_server: Any,
) -> None:
    doc = {**SKIP_DOC, "id": "gated-by-noise"}
    doc["questions"] = [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "freq",
            "text": "Every day?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": "smokes == 'yes'",
        },
    ]
    response = requests.post(
        f"{live_server.url}/api/v1/surveys", json=doc, headers=live_server.headers, timeout=10
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert "questions[1].relevant: names 'smokes', a randomized question" in detail
    assert "would reveal the true answer" in detail
    assert live_server.get("/api/v1/surveys/gated-by-noise").status_code == 404
