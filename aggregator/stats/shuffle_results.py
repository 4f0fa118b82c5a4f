"""The central epsilon in a survey's results (docs/anonymity.md#the-central-epsilon): a survey
whose reports come through a relay gets `"shuffle": {"n", "delta", "epsilon_0", "epsilon"}` for
each randomized question and for the whole report. n is the smallest batch: the fewest of the
survey's reports that reached the gateway in one relay batch with the same plain answers
(store/gateway.py); epsilon_0 a question's epsilon, or the report's (the sum over its
randomized questions); epsilon the bound of stats/shuffle.py at `delta`.
"""

from __future__ import annotations

from typing import Any

from deniable.aggregator.stats import shuffle
from deniable.aggregator.stats.results import SurveyResults
from deniable.shared.survey import Survey

FIELD = "shuffle"


def shuffle_entry(n: int, epsilon_0: float, delta: float = shuffle.DEFAULT_DELTA) -> dict[str, Any]:
    """One "shuffle" object: epsilon_0 itself beyond the bound's range (no amplification is
    claimed there)."""
    if epsilon_0 > shuffle.MAX_EPSILON_0 or epsilon_0 <= 0:
        epsilon = epsilon_0
    else:
        epsilon = shuffle.central_epsilon(min(n, shuffle.MAX_N), epsilon_0, delta)
    return {"n": n, "delta": delta, "epsilon_0": epsilon_0, "epsilon": epsilon}


def with_shuffle(
    results: SurveyResults, survey: Survey, n: int, delta: float = shuffle.DEFAULT_DELTA
) -> SurveyResults:
    """The results with their "shuffle" objects, when the survey names a relay (as they are
    otherwise)."""
    if survey.route is None:
        return results
    doc = results.to_dict()
    for entry in doc["questions"]:
        question = survey.questions.get(entry["id"])
        if question is not None and not question.plain and question.epsilon:
            entry[FIELD] = shuffle_entry(n, float(question.epsilon), delta)
    doc[FIELD] = shuffle_entry(n, float(survey.epsilon), delta)
    return SurveyResults(doc)


def shuffle_summary(results: SurveyResults) -> list[str]:
    """The central epsilon in words, for the results table (none without a relay)."""
    found = results.get(FIELD)
    if not found:
        return []
    return [
        "",
        f"through a relay: the smallest batch held {found['n']:,} report(s) with the same plain "
        f"answers; the whole report, epsilon {found['epsilon_0']:.3g} on the device, is "
        f"({found['epsilon']:.3g}, {found['delta']:g})-private against this aggregator alone "
        "(not against a relay and an aggregator that collude)",
    ]
