"""The HTTP status of each kind of outcome and refusal: the one table, in the web layer.

Ingestion says what became of a report (aggregator/ingest.py, `Outcome.kind`); a lone report
is answered with the status below, a batch with 200 and a result per report. A refused action
(aggregator/surveys.py, `ActionError.kind`) and a request over a limit
(aggregator/stats/limits.py, `LimitError.kind`) say why; the status of each reason is here.
"""

from __future__ import annotations

from deniable.aggregator.ingest import Kind, Outcome
from deniable.aggregator.stats.limits import LimitError
from deniable.aggregator.surveys import ActionError, Refusal

REPORT_STATUS: dict[Kind, int] = {
    "accepted": 201,
    "duplicate": 200,
    "invalid": 422,
    "no-survey": 404,
    "closed": 409,
    "stale-survey": 409,
    "broken-survey": 409,
    "conflict": 409,
    "answered": 409,
    "not-enrolled": 403,
}


def report_status(outcome: Outcome) -> int:
    """The HTTP status a lone report with this outcome is answered with."""
    return REPORT_STATUS[outcome.kind]


REFUSAL_STATUS: dict[Refusal, int] = {
    "bad-parameter": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "not-found": 404,
    "conflict": 409,
    "too-large": 413,
    "invalid": 422,
}


def refusal_status(exc: ActionError | LimitError) -> int:
    """The HTTP status answering a refused action or a request over a limit."""
    return REFUSAL_STATUS[exc.kind]
