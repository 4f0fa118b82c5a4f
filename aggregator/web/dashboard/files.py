"""The dashboard's downloads: the same files as the API's, made by the same functions
(web/downloads.py), for a dashboard session."""

from __future__ import annotations

from typing import Any

from flask import Response, request

from deniable.aggregator.exports.tables import StatFormat
from deniable.aggregator.params import parse_candidates
from deniable.aggregator.web import downloads
from deniable.aggregator.web.dashboard.base import (
    bp,
    error_page,
    principal,
    results_options,
    shown_on,
    survey_or_404,
)


@bp.route("/surveys/<survey_id>/results.csv")
def download_csv(survey_id: str) -> Response:
    """The results as CSV (the API's content, for a dashboard session); a refusal is an error
    page with the refusal's own status (abort(413) would read as a body too large)."""
    survey_or_404(survey_id, "results")
    options = {
        "candidates": parse_candidates(request.args.get("candidates")),
        **results_options(),
    }
    return downloads.results_csv(survey_id, principal(), options)


@bp.route("/surveys/<survey_id>/reports.jsonl")
def download_reports(survey_id: str) -> Response:
    """Every stored noisy report, one JSON object a line, streamed."""
    survey_or_404(survey_id, "export")
    return downloads.reports_jsonl(survey_id, principal())


@bp.route("/surveys/<survey_id>/answers.csv")
def download_answers(survey_id: str) -> Response:
    """Every report's answers, a row per report and a column per question, streamed."""
    survey_or_404(survey_id, "export")
    return downloads.answers_csv(survey_id, principal())


@bp.route("/surveys/<survey_id>/export.dta", defaults={"fmt": "dta"})
@bp.route("/surveys/<survey_id>/export.sav", defaults={"fmt": "sav"})
def download_stat_file(survey_id: str, fmt: StatFormat) -> Response:
    """The answers as a Stata or SPSS file (labels, and the design in the notes)."""
    return downloads.stat_file(survey_id, fmt, principal())


@bp.route("/surveys/<survey_id>/analysis.R")
def download_r_script(survey_id: str) -> Any:
    """An R script fitting ?formula= with R's rr on answers.csv (without one: the randomized
    yes/no questions' shares); a refused formula is a page saying why."""
    survey_or_404(survey_id, "export")
    formula = request.args.get("formula") or None
    with shown_on(lambda exc: error_page("Formula refused", str(exc), 422), {"invalid"}):
        return downloads.analysis_script(survey_id, formula, principal())


@bp.route("/surveys/<survey_id>/audit.jsonl")
def survey_audit_jsonl(survey_id: str) -> Response:
    """The survey's whole audit log, one JSON object a line, streamed from a store of its own
    (memory flat in its length)."""
    survey_or_404(survey_id, "audit")
    return downloads.audit_jsonl(survey_id, principal())
