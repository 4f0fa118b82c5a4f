"""The HTTP status of each kind of ingestion outcome: the one table, in the web layer.

Ingestion says what became of a report (aggregator/ingest.py, `Outcome.kind`); a lone report
is answered with the status below, a batch with 200 and a result per report.
"""

from __future__ import annotations

from deniable.aggregator.ingest import Kind, Outcome

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
