"""Offline re-analysis: tally real signed reports and estimate as the service does."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from deniable.aggregator.stats import analyze
from deniable.aggregator.stats.analyze import tally
from deniable.aggregator.stats.estimate import results_document
from deniable.shared import ReportError, Survey, make_report
from deniable.shared.signing import generate_key

DOC: dict[str, Any] = {
    "id": "reanalysis",
    "title": "Re-analysis",
    "questions": [
        {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 2.0,
            "mechanism": "grr",
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["N", "E", "S", "W", "X"],
            "epsilon": 1.0,
            "mechanism": "oue",
        },
    ],
}


@pytest.fixture(scope="module")
def survey() -> Survey:
    return Survey.from_dict(DOC)


@pytest.fixture(scope="module")
def reports(survey: Survey) -> list[dict[str, Any]]:
    truths = [
        {"smokes": i % 3 == 0, "party": "ABC"[i % 3], "region": ["N", "E", "S", "W", "X"][i % 5]}
        for i in range(60)
    ]
    return [make_report(survey, truth, generate_key()) for truth in truths]


def expected_support(survey: Survey, reports: list[dict[str, Any]]) -> dict[str, list[int]]:
    support = {qid: [0] * q.k for qid, q in survey.questions.items()}
    for r in reports:
        for qid, answer in r["answers"].items():
            if isinstance(answer, str):
                for i, bit in enumerate(answer):
                    support[qid][i] += bit == "1"
            else:
                support[qid][answer] += 1
    return support


def test_tally_counts_supports(survey: Survey, reports: list[dict[str, Any]]) -> None:
    n, support = tally(survey, reports)
    assert n == 60
    assert support == expected_support(survey, reports)
    assert sum(support["smokes"]) == 60 and sum(support["party"]) == 60


def test_analyze_is_results_document_of_the_tally(
    survey: Survey, reports: list[dict[str, Any]]
) -> None:
    n, support = tally(survey, reports)
    expected = results_document(survey, n, support, confidence=0.9, simultaneous=True)
    got = analyze(survey, reports, confidence=0.9, simultaneous=True)
    assert json.dumps(got) == json.dumps(expected)
    assert got["n"] == 60 and got["confidence"] == 0.9 and got["simultaneous"] is True


def test_analyze_accepts_documents_and_json_lines(
    survey: Survey, reports: list[dict[str, Any]]
) -> None:
    expected = analyze(survey, reports)
    jsonl = "\n".join(json.dumps(r) for r in reports) + "\n"
    assert analyze(copy.deepcopy(DOC), reports) == expected
    assert analyze(survey.to_dict(), jsonl) == expected
    assert analyze(survey, jsonl.encode()) == expected
    assert analyze(survey, iter(jsonl.splitlines())) == expected
    published = {"survey": survey.to_dict(), "survey_hash": survey.hash}
    assert analyze(published, reports) == expected


def test_a_resent_report_counts_once(survey: Survey, reports: list[dict[str, Any]]) -> None:
    assert analyze(survey, reports + reports[:5]) == analyze(survey, reports)


def test_no_reports(survey: Survey) -> None:
    doc = analyze(survey, [])
    assert doc["n"] == 0
    assert all(o["estimate"] is None for q in doc["questions"] for o in q["options"])


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda r: r["answers"].update(smokes=1 - r["answers"]["smokes"]), "signature"),
        (lambda r: r["answers"].update(party=7), "answers.party"),
        (lambda r: r.update(survey_hash="0" * 64), "survey_hash"),
        (lambda r: r.update(survey="other"), "survey"),
        (lambda r: r.pop("signature"), "signature: missing"),
    ],
)
def test_a_bad_report_names_its_line_and_id(
    survey: Survey, reports: list[dict[str, Any]], tamper: Any, reason: str
) -> None:
    bad = copy.deepcopy(reports[:4])
    tamper(bad[2])
    with pytest.raises(ReportError, match=rf"line 3 \({bad[2]['report_id']}\): {reason}"):
        analyze(survey, bad)


def test_conflicting_reports_are_refused(survey: Survey, reports: list[dict[str, Any]]) -> None:
    key = generate_key()
    first = make_report(survey, {"smokes": 1, "party": 0, "region": 0}, key)
    second = make_report(survey, {"smokes": 0, "party": 1, "region": 1}, key)
    with pytest.raises(ReportError, match="line 2 .*same public key"):
        analyze(survey, [first, second])
    other = make_report(survey, {"smokes": 1, "party": 0, "region": 0}, generate_key())
    other_same_id = make_report(
        survey, {"smokes": 1, "party": 0, "region": 0}, generate_key(), report_id=other["report_id"]
    )
    with pytest.raises(ReportError, match="report_id already used"):
        analyze(survey, [other, other_same_id])


def test_not_json_is_refused(survey: Survey, reports: list[dict[str, Any]]) -> None:
    text = json.dumps(reports[0]) + "\n{not json\n"
    with pytest.raises(ReportError, match="line 2: not JSON"):
        analyze(survey, text)


def test_a_bad_confidence_is_refused_first(survey: Survey) -> None:
    with pytest.raises(ValueError, match="confidence"):
        analyze(survey, ["{not json"], confidence=1.5)


def test_the_package_exports_the_function_not_its_module() -> None:
    """`analyze` is both a function and the module holding it: the package gives the function,
    whichever was imported first."""
    import importlib

    importlib.import_module("deniable.aggregator.stats.analyze")
    import deniable.aggregator

    assert callable(deniable.aggregator.stats.analyze)
    assert callable(deniable.aggregator.create_app)
