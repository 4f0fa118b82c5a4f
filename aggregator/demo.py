"""The demo: an example survey answered by simulated respondents whose true answers are known.

Each simulated respondent randomizes and signs on "its device" exactly as a real client does
(make_report), and the reports reach the served aggregator over HTTP through the client's
HTTP layer (see stats/simulate.py).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from deniable.aggregator.stats import simulate
from deniable.aggregator.stats.simulate import Sent

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


def fill_over_http(url: str, survey_id: str, respondents: int = DEMO_RESPONDENTS) -> Sent:
    """Answer the served survey with simulated respondents through the client's HTTP layer."""
    api, survey = simulate.fetch_survey(url, survey_id)
    truth = simulate.parse_truth(survey, json.dumps(DEMO_TRUTH))
    return simulate.send(api, survey, truth, respondents, batch=BATCH, seed=2026)
