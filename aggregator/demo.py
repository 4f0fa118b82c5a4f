"""The demo: an example survey answered by simulated respondents whose true answers are known.

Each simulated respondent randomizes and signs on "its device" exactly as a real client does
(make_report); the reports go through the same ingestion as HTTP requests, directly.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from importlib import resources
from typing import Any

from deniable.aggregator import simulate
from deniable.aggregator.ingest import ingest
from deniable.aggregator.simulate import Sent
from deniable.aggregator.store import Store
from deniable.shared.report import make_report
from deniable.shared.signing import generate_key
from deniable.shared.survey import Survey

DEMO_RESPONDENTS = 3000
BATCH = 1000

#: The true population shares the simulated respondents are drawn to match, per question.
DEMO_TRUTH: dict[str, dict[str, float]] = {
    "smokes": {"no": 0.8, "yes": 0.2},
    "cheated": {"no": 0.65, "yes": 0.35},
    "commute": {"car": 0.45, "transit": 0.3, "bike": 0.15, "walk": 0.1},
    "screen-time": {"under 1": 0.05, "1-3": 0.25, "3-5": 0.35, "5-8": 0.25, "over 8": 0.1},
}


def demo_survey_doc() -> dict[str, Any]:
    """The example survey document shipped in aggregator/examples/demo-survey.json."""
    path = resources.files("deniable.aggregator").joinpath("examples/demo-survey.json")
    return json.loads(path.read_text("utf-8"))


def true_answers(
    survey: Survey, truth: Mapping[str, Mapping[str, float]], n: int, *, seed: int | None = None
) -> list[dict[str, str]]:
    """n respondents' true answers whose shares match `truth` as closely as n allows."""
    rng = random.Random(seed)
    columns: dict[str, list[str]] = {}
    for qid in survey.questions:
        shares = truth[qid]
        labels = list(shares)
        counts = [int(shares[label] * n) for label in labels]
        counts[0] += n - sum(counts)  # rounding leftovers go to the first option
        column = [label for label, c in zip(labels, counts, strict=True) for _ in range(c)]
        rng.shuffle(column)
        columns[qid] = column
    return [{qid: columns[qid][i] for qid in survey.questions} for i in range(n)]


def fill_over_http(url: str, survey_id: str, respondents: int = DEMO_RESPONDENTS) -> Sent:
    """Answer the served survey with simulated respondents through the client's HTTP layer."""
    api, survey = simulate.fetch_survey(url, survey_id)
    truth = simulate.parse_truth(survey, json.dumps(DEMO_TRUTH))
    return simulate.send(api, survey, truth, respondents, batch=BATCH, seed=2026)


def fill(
    store: Store,
    survey: Survey,
    respondents: int = DEMO_RESPONDENTS,
    truth: Mapping[str, Mapping[str, float]] = DEMO_TRUTH,
) -> int:
    """Answer the survey with simulated respondents (a fresh key each); the number accepted."""
    accepted = 0
    answers = true_answers(survey, truth, respondents)
    for start in range(0, respondents, BATCH):
        batch = [make_report(survey, a, generate_key()) for a in answers[start : start + BATCH]]
        accepted += sum(o.result == "accepted" for o in ingest(store, batch))
    return accepted
