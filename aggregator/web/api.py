"""The JSON API (v1), exactly as docs/researchers.md's HTTP API table lists it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from deniable.aggregator import surveys
from deniable.aggregator.params import parse_candidates, parse_confidence, parse_flag
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.store import StoreError
from deniable.aggregator.web import report_endpoint
from deniable.aggregator.web.auth import researcher_required
from deniable.aggregator.web.bodies import json_body, json_object
from deniable.aggregator.web.db import get_store, provider, survey_cache
from deniable.aggregator.web.problems import Problem
from deniable.shared.errors import SurveyError

bp = Blueprint("api", __name__)


@bp.get("/healthz")
def healthz() -> Any:
    """Liveness and database check."""
    try:
        get_store().ping()
    except StoreError as exc:
        raise Problem(503, f"database check failed: {exc}") from None
    return jsonify(status="ok")


@bp.get("/api/v1/openapi.json")
def openapi() -> Response:
    """The OpenAPI 3.1 description of this API."""
    text = resources.files("deniable.aggregator.web").joinpath("openapi.json").read_text("utf-8")
    return Response(text, mimetype="application/json")


@bp.get("/api/v1/surveys/<survey_id>")
def get_survey(survey_id: str) -> Any:
    """The resolved survey and its hash (public: respondents randomize with it)."""
    return jsonify(surveys.published(surveys.survey_or_404(get_store(), survey_id)))


@bp.post("/api/v1/surveys")
@researcher_required
def create_survey() -> Any:
    """Create a survey from its document; the same document again answers 200."""
    try:
        record, created = surveys.create_survey(
            get_store(), json_body(), Limits.from_config(current_app.config)
        )
    except SurveyError as exc:
        raise Problem(422, f"invalid survey: {exc}") from None
    body = {"id": record.id, **surveys.published(record)}
    response = jsonify(body)
    response.status_code = 201 if created else 200
    response.headers["Location"] = url_for("api.get_survey", survey_id=record.id)
    return response


@bp.get("/api/v1/surveys")
@researcher_required
def list_surveys() -> Any:
    """Every survey with its report count."""
    return jsonify(surveys=[surveys.summary(r, survey_cache()) for r in get_store().list_surveys()])


@bp.post("/api/v1/surveys/<survey_id>/close")
@researcher_required
def close_survey(survey_id: str) -> Any:
    """Stop accepting reports."""
    return jsonify(surveys.summary(surveys.close_survey(get_store(), survey_id), survey_cache()))


@bp.post("/api/v1/surveys/<survey_id>/invitations")
@researcher_required
def invitations(survey_id: str) -> Any:
    """{"count": n} single-use invitation codes for an invite-only survey."""
    body = json_body()
    unknown = sorted(set(body) - {"count"}) if isinstance(body, dict) else []
    if unknown:
        raise Problem(422, f"{str(unknown[0])[:40]}: unknown field; send only count")
    count = body.get("count") if isinstance(body, dict) else None
    limit = current_app.config["MAX_INVITATIONS"]
    codes = surveys.invite(get_store(), survey_id, count, limit=limit, cache=survey_cache())
    return jsonify(codes=codes), 201


@bp.post("/api/v1/surveys/<survey_id>/enrollments")
def enrollments(survey_id: str) -> Any:
    """Register a public key with an invitation code and a signature proving the key."""
    newly = surveys.enroll(get_store(), survey_id, json_body(), cache=survey_cache())
    return jsonify(enrolled=True), 201 if newly else 200


@bp.post("/api/v1/reports")
def reports() -> Any:
    """One report, or {"reports": [...]}: a result per report (see report_endpoint, which
    answers most of these requests before they reach Flask)."""
    status, text = report_endpoint.answer(
        get_store(), json_body(), current_app._get_current_object()
    )
    return Response(text, status, mimetype="application/json")


def _query(name: str) -> str | None:
    """A query parameter given at most once and not empty (as the OpenAPI document says)."""
    values = request.args.getlist(name)
    if len(values) > 1:
        raise Problem(400, f"{name}: give it once, got {len(values)} values")
    if values and values[0] == "":
        raise Problem(400, f"{name}: empty; give a value or leave the parameter out")
    return values[0] if values else None


def _confidence() -> float:
    """?confidence=, or the configured level (a bad one is a 400 problem)."""
    return parse_confidence(_query("confidence"), current_app.config["CONFIDENCE"])


def _results_options() -> dict[str, Any]:
    return {
        "confidence": _confidence(),
        "simultaneous": parse_flag(_query("simultaneous"), "simultaneous"),
        "candidates": parse_candidates(_query("candidates")),
        "limits": Limits.from_config(current_app.config),
        "cache": survey_cache(),
    }


@bp.get("/api/v1/surveys/<survey_id>/results")
@researcher_required
def results(survey_id: str) -> Any:
    """Estimates with confidence intervals, from the tallies."""
    doc = surveys.results(get_store(), survey_id, **_results_options())
    return Response(json.dumps(doc.to_dict()), mimetype="application/json")


@bp.get("/api/v1/surveys/<survey_id>/results.csv")
@researcher_required
def results_as_csv(survey_id: str) -> Any:
    """The results as CSV, one row per option."""
    text = surveys.results_csv(get_store(), survey_id, **_results_options())
    response = Response(text, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey_id}-results.csv"'
    return response


@bp.get("/api/v1/surveys/<survey_id>/reports.jsonl")
@researcher_required
def reports_jsonl(survey_id: str) -> Any:
    """Every stored noisy report, one JSON per line, streamed (memory flat in their number)."""
    lines = surveys.report_lines(provider(), survey_id)
    response = Response(lines, mimetype="application/x-ndjson")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey_id}-reports.jsonl"'
    return response


def _json(doc: Any) -> Response:
    """A results object's JSON document."""
    return Response(json.dumps(doc.to_dict()), mimetype="application/json")


@bp.get("/api/v1/surveys/<survey_id>/breakdown")
@researcher_required
def breakdown(survey_id: str) -> Any:
    """A randomized question's results within each group of a plain question."""
    surveys.survey_or_404(get_store(), survey_id)  # 404 before a missing parameter's 400
    question, by = _required_query("question"), _required_query("by")
    level = _confidence()
    return _json(
        surveys.breakdown(
            get_store(), survey_id, question, by, confidence=level, cache=survey_cache()
        )
    )


@bp.get("/api/v1/surveys/<survey_id>/crosstab")
@researcher_required
def crosstab(survey_id: str) -> Any:
    """The joint distribution of two questions."""
    surveys.survey_or_404(get_store(), survey_id)  # 404 before a missing parameter's 400
    first, second = _required_query("first"), _required_query("second")
    level = _confidence()
    return _json(
        surveys.crosstab(
            get_store(), survey_id, first, second, confidence=level, cache=survey_cache()
        )
    )


def _required_query(name: str) -> str:
    value = _query(name)
    if value is None:
        raise Problem(400, f"{name}: missing; give a question id, e.g. ?{name}=smokes")
    return value


@bp.post("/api/v1/surveys/<survey_id>/regression")
@researcher_required
def regression(survey_id: str) -> Any:
    """Fit {"formula": "outcome ~ covariates"} (optional "confidence") on the stored reports."""
    surveys.survey_or_404(get_store(), survey_id)  # 404 before the body's 422
    body = json_object()
    unknown = sorted(set(body) - {"formula", "confidence"})
    if unknown:
        raise Problem(422, f"{str(unknown[0])[:40]}: unknown field; send formula and confidence")
    formula = body.get("formula")
    if not isinstance(formula, str) or not formula.strip():
        raise Problem(422, "formula: expected a formula like 'smokes ~ region + adult'")
    level = parse_confidence(  # a field of the body: 422, as its other fields
        body.get("confidence", current_app.config["CONFIDENCE"]), 0.95, status=422, text=False
    )
    return _json(  # the formula is data: stats/formula.py checks it against the grammar
        surveys.regression(
            get_store(),
            survey_id,
            formula,
            confidence=level,
            limits=Limits.from_config(current_app.config),
            cache=survey_cache(),
        )
    )
