"""One survey answered through the public API (q.randomize on the device's secure coins, real
signed reports, analyze): every true share lies within 5 standard errors of its estimate.

The true answers are a fixed split of the respondents, so the estimates' spread is only the
mechanism's noise, below the standard error (which adds the sampling term): with 16 options
checked at 5 standard errors a correct estimator fails less than once in 10^5 runs.
"""

from __future__ import annotations

from typing import Any

from deniable.aggregator.stats import analyze
from deniable.shared import Survey, build_report
from deniable.shared.signing import generate_key

N = 3000
DOC: dict[str, Any] = {
    "id": "public-api",
    "title": "Public API",
    "questions": [
        {"id": "rr", "text": "?", "type": "binary", "epsilon": 1.0},
        {
            "id": "coins",
            "text": "?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": "2/3", "yes": "1/2"},
        },
        {
            "id": "grr",
            "text": "?",
            "type": "categorical",
            "options": ["a", "b", "c", "d"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "oue",
            "text": "?",
            "type": "categorical",
            "options": ["a", "b", "c", "d", "e", "f"],
            "mechanism": "oue",
            "epsilon": 1.0,
        },
    ],
}
TRUTH = {
    "rr": [0.7, 0.3],
    "coins": [0.99, 0.01],
    "grr": [0.5, 0.3, 0.19, 0.01],
    "oue": [0.4, 0.3, 0.2, 0.05, 0.04, 0.01],
}


def answers(shares: list[float], n: int) -> list[int]:
    """n true answers split exactly by `shares` (option v for about shares[v] * n of them)."""
    bounds = [round(sum(shares[: v + 1]) * n) for v in range(len(shares))]
    return [next(v for v, b in enumerate(bounds) if i < b) for i in range(n)]


def test_analyze_recovers_the_truth_from_real_reports() -> None:
    survey = Survey.from_dict(DOC)
    truths = {qid: answers(shares, N) for qid, shares in TRUTH.items()}
    reports = []
    for i in range(N):
        noisy = {qid: q.randomize(truths[qid][i]) for qid, q in survey.questions.items()}
        reports.append(build_report(survey, noisy, generate_key()))
    doc = analyze(survey, reports)
    assert doc["n"] == N
    for question in doc["questions"]:
        exact = [truths[question["id"]].count(v) / N for v in range(len(question["options"]))]
        for option, f in zip(question["options"], exact, strict=True):
            assert abs(option["estimate"] - f) <= 5 * option["stderr"], (question["id"], option, f)
            assert option["ci_low"] <= option["ci_high"]
        assert abs(sum(o["share"] for o in question["options"]) - 1) < 1e-9
