"""Every file a researcher downloads, one function each, called alike by the JSON API and the
dashboard: the same service call, media type and file name, whichever edge asked (each edge
checks its principal's rule and parses its parameters first, then calls one of these)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from flask import Response

from deniable.aggregator import accounts, audit, exports, surveys
from deniable.aggregator.access import Principal
from deniable.aggregator.exports.tables import StatFormat
from deniable.aggregator.web.db import get_store, provider, survey_cache

#: The statistics packages' files: format -> media type.
STAT_TYPES: dict[str, str] = {"dta": "application/x-stata-dta", "sav": "application/x-spss-sav"}


def attachment(body: bytes | str | Iterable[str], mimetype: str, filename: str) -> Response:
    """A download: `body` (streamed when an iterator) saved as `filename`."""
    return Response(
        body,
        mimetype=mimetype,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def results_csv(survey_id: str, who: Principal, options: dict[str, Any]) -> Response:
    """The results as CSV, one row per option (`options`: surveys.results' parsed parameters)."""
    doc = surveys.results(get_store(), survey_id, who=who, action="results.csv", **options)
    return attachment(doc.to_csv(), "text/csv", f"{survey_id}-results.csv")


def reports_jsonl(survey_id: str, who: Principal) -> Response:
    """Every stored noisy report, one JSON object a line, streamed (memory flat in their number)."""
    lines = surveys.report_lines(provider(), survey_id, who=who)
    return attachment(lines, "application/x-ndjson", f"{survey_id}-reports.jsonl")


def answers_csv(survey_id: str, who: Principal) -> Response:
    """One row per report, a column per question (wire-encoded answers), streamed."""
    lines = exports.answers_csv(provider(), survey_id, who=who)
    return attachment(lines, "text/csv", f"{survey_id}-answers.csv")


def stat_file(survey_id: str, fmt: StatFormat, who: Principal) -> Response:
    """The answers as Stata .dta or SPSS .sav, with labels and the design in the notes."""
    data = exports.stat_file(get_store(), survey_id, fmt, who=who, cache=survey_cache())
    return attachment(data, STAT_TYPES[fmt], f"{survey_id}.{fmt}")


def analysis_script(survey_id: str, formula: str | None, who: Principal) -> Response:
    """An R script fitting `formula` with R's rr on answers.csv (the design filled in); without
    one, each randomized yes/no question's share. A refused formula is ActionError invalid."""
    script = exports.analysis_script(get_store(), survey_id, formula, who=who, cache=survey_cache())
    return attachment(script, "text/plain", f"{survey_id}-analysis.R")


def audit_jsonl(survey_id: str, who: Principal, since: str | None = None) -> Response:
    """The survey's audit log (from `since`), one JSON object a line, streamed from a store of
    its own (memory flat in its length)."""
    stores = provider()

    def lines() -> Iterator[str]:
        with stores.borrowed() as store:
            yield from audit.lines(
                accounts.audit_entries(store, who, survey=survey_id, since=since)
            )

    return attachment(lines(), "application/x-ndjson", f"{survey_id}-audit.jsonl")
