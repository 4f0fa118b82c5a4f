"""The JSON API (v1), exactly as docs/researchers.md's HTTP API table lists it.

Every researcher route authenticates the bearer token (web/auth.py) and passes the principal
to the service function, which applies the one rule (access.py: a survey the token may not
see is 404, a forbidden action 403) and logs the action (docs/accounts.md). A route that reads
parameters first checks the rule first, so an unseen survey is 404 whatever the request says.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request, url_for

from deniable.aggregator import access, accounts, forms, surveys
from deniable.aggregator.access import Action
from deniable.aggregator.exports.tables import StatFormat
from deniable.aggregator.params import (
    parse_candidates,
    parse_confidence,
    parse_cuts,
    parse_flag,
)
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.store import Grant, StoreError
from deniable.aggregator.web import downloads, report_endpoint
from deniable.aggregator.web.auth import principal, researcher_required
from deniable.aggregator.web.bodies import json_body, json_object, read_body
from deniable.aggregator.web.db import get_store, survey_cache
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


#: The XLSForm media types POST /api/v1/surveys takes besides JSON (docs/xlsform.md).
XLSFORM_TYPES = (
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.ms-excel",
)


def _survey_document() -> tuple[Any, list[str]]:
    """The request's survey document and the notices of reading it: its JSON body, or an
    XLSForm's document (`?drop_unsupported=true` leaves out what deniable cannot honour);
    an XLSForm's problems are one 422 listing each one (`errors`)."""
    drop = parse_flag(request.args.get("drop_unsupported"), "drop_unsupported")
    if (request.mimetype or "").lower() not in XLSFORM_TYPES:
        return json_body(), []
    data = read_body(request.environ, request.max_content_length)
    if len(data) > forms.MAX_FORM_BYTES:
        raise Problem(413, f"an XLSForm may have at most {forms.MAX_FORM_BYTES:,} bytes")
    try:
        imported = forms.read_xlsform(data, filename="form.xlsx", drop_unsupported=drop)
    except forms.XLSFormError as exc:
        count = len(exc.problems)
        raise Problem(
            422,
            f"invalid XLSForm: {count} problem{'s' if count != 1 else ''} (errors)",
            errors=exc.problems,
            notices=exc.notices,
        ) from None
    return imported.document, imported.notices


@bp.post("/api/v1/surveys")
@researcher_required
def create_survey() -> Any:
    """Create a survey from its document, or from an XLSForm, owned by the token's account;
    the same document again answers 200."""
    who = principal()
    access.require_creator(who)  # before the body: a read-only token is 403 whatever it sends
    doc, notices = _survey_document()
    try:
        record, created = surveys.create_survey(
            get_store(), doc, Limits.from_config(current_app.config), who=who
        )
    except SurveyError as exc:
        raise Problem(422, f"invalid survey: {exc}") from None
    body = {
        "id": record.id,
        **surveys.published(record),
        "notices": [*notices, *surveys.language_notices(record)],
    }
    response = jsonify(body)
    response.status_code = 201 if created else 200
    response.headers["Location"] = url_for("api.get_survey", survey_id=record.id)
    return response


@bp.get("/api/v1/surveys")
@researcher_required
def list_surveys() -> Any:
    """Every survey the token may see, with its report count."""
    return jsonify(surveys=surveys.list_surveys(get_store(), principal(), survey_cache()))


@bp.post("/api/v1/surveys/<survey_id>/close")
@researcher_required
def close_survey(survey_id: str) -> Any:
    """Stop accepting reports."""
    record = surveys.close_survey(get_store(), survey_id, who=principal())
    return jsonify(surveys.summary(record, survey_cache()))


@bp.post("/api/v1/surveys/<survey_id>/invitations")
@researcher_required
def invitations(survey_id: str) -> Any:
    """{"count": n} single-use invitation codes for an invite-only survey."""
    _authorize(survey_id, "invite")
    body = json_body()
    unknown = sorted(set(body) - {"count"}) if isinstance(body, dict) else []
    if unknown:
        raise Problem(422, f"{str(unknown[0])[:40]}: unknown field; send only count")
    count = body.get("count") if isinstance(body, dict) else None
    limit = current_app.config["MAX_INVITATIONS"]
    codes = surveys.invite(
        get_store(), survey_id, count, who=principal(), limit=limit, cache=survey_cache()
    )
    return jsonify(codes=codes), 201


@bp.post("/api/v1/surveys/<survey_id>/enrollments")
def enrollments(survey_id: str) -> Any:
    """Register a public key with an invitation code and a signature proving the key."""
    newly = surveys.enroll(get_store(), survey_id, json_body(), cache=survey_cache())
    return jsonify(enrolled=True), 201 if newly else 200


@bp.post("/api/v1/reports")
def reports() -> Any:
    """One report, or {"reports": [...]}. Every POST here is answered by report_endpoint, in
    front of Flask; the route gives the path its methods (405 and OPTIONS) and its name."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    status, text = report_endpoint.respond(app, request.environ)
    return Response(text, status, mimetype="application/json")


def _authorize(survey_id: str, action: Action) -> None:
    """Apply the rule before reading the request's parameters (the service applies it again):
    a survey the token may not see is 404, a forbidden action 403, whatever the request says."""
    access.authorize(get_store(), principal(), survey_id, action)


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


#: The longest weights table a query string carries (characters): URLs longer than a few
#: KiB are cut by servers and proxies (gunicorn's request line is 4 KiB by default). A larger
#: table goes in the regression's JSON body or the CLI's --weights FILE.csv.
MAX_QUERY_WEIGHTS = 2000


def _weighting() -> dict[str, Any]:
    """?weights= (a weights table's CSV text) and ?weighted=false (the raw estimates of a
    survey with a design), docs/statistics.md "Weights and designs"."""
    weighted = _query("weighted")
    weights = _query("weights")
    if weights is not None and len(weights) > MAX_QUERY_WEIGHTS:
        raise Problem(
            400,
            f"weights: at most {MAX_QUERY_WEIGHTS:,} characters in a query; send a larger "
            "table with the CLI's --weights FILE.csv or in a regression's JSON body",
        )
    return {
        "weights": weights,
        "weighted": True if weighted is None else parse_flag(weighted, "weighted"),
    }


def _results_options() -> dict[str, Any]:
    return {
        **_weighting(),
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
    _authorize(survey_id, "results")
    doc = surveys.results(get_store(), survey_id, who=principal(), **_results_options())
    return Response(json.dumps(doc.to_dict()), mimetype="application/json")


@bp.get("/api/v1/series/<series_id>/results")
@researcher_required
def series_results(series_id: str) -> Any:
    """Each wave's results, the changes between waves and the trend (docs/surveys.md#waves)."""
    surveys.series_waves(get_store(), series_id, who=principal())  # 404 before the parameters
    doc = surveys.series_results(
        get_store(),
        series_id,
        who=principal(),
        confidence=_confidence(),
        limits=Limits.from_config(current_app.config),
        cache=survey_cache(),
    )
    return Response(json.dumps(doc.to_dict()), mimetype="application/json")


@bp.get("/api/v1/surveys/<survey_id>/results.csv")
@researcher_required
def results_as_csv(survey_id: str) -> Any:
    """The results as CSV, one row per option."""
    _authorize(survey_id, "results")
    return downloads.results_csv(survey_id, principal(), _results_options())


@bp.get("/api/v1/surveys/<survey_id>/reports.jsonl")
@researcher_required
def reports_jsonl(survey_id: str) -> Any:
    """Every stored noisy report, one JSON per line, streamed (memory flat in their number)."""
    return downloads.reports_jsonl(survey_id, principal())


@bp.get("/api/v1/surveys/<survey_id>/answers.csv")
@researcher_required
def answers_csv(survey_id: str) -> Any:
    """One row per report, a column per question (wire-encoded answers), streamed."""
    return downloads.answers_csv(survey_id, principal())


@bp.get("/api/v1/surveys/<survey_id>/export.dta", defaults={"fmt": "dta"})
@bp.get("/api/v1/surveys/<survey_id>/export.sav", defaults={"fmt": "sav"})
@researcher_required
def export_file(survey_id: str, fmt: StatFormat) -> Any:
    """The rows as Stata .dta or SPSS .sav, with labels and the design in the notes."""
    return downloads.stat_file(survey_id, fmt, principal())


@bp.get("/api/v1/surveys/<survey_id>/analysis.R")
@researcher_required
def analysis_r(survey_id: str) -> Any:
    """An R script fitting ?formula= with R's rr on answers.csv (the design filled in); without
    a formula, each randomized yes/no question's share."""
    _authorize(survey_id, "export")  # 404 or 403 before a repeated formula's 400
    return downloads.analysis_script(survey_id, _query("formula"), principal())


def _json(doc: Any) -> Response:
    """A results object's JSON document."""
    return Response(json.dumps(doc.to_dict()), mimetype="application/json")


@bp.get("/api/v1/surveys/<survey_id>/breakdown")
@researcher_required
def breakdown(survey_id: str) -> Any:
    """A randomized question's results within each group of a plain question (`cuts=30,50`:
    a plain integer in bands)."""
    _authorize(survey_id, "analyze")  # 404 or 403 before a missing parameter's 400
    question, by = _required_query("question"), _required_query("by")
    level = _confidence()
    cuts = parse_cuts(request.args.get("cuts"))
    return _json(
        surveys.breakdown(
            get_store(),
            survey_id,
            question,
            by,
            who=principal(),
            confidence=level,
            cache=survey_cache(),
            cuts=cuts,
            **_weighting(),
        )
    )


@bp.get("/api/v1/surveys/<survey_id>/crosstab")
@researcher_required
def crosstab(survey_id: str) -> Any:
    """The joint distribution of two questions."""
    _authorize(survey_id, "analyze")  # 404 or 403 before a missing parameter's 400
    first, second = _required_query("first"), _required_query("second")
    level = _confidence()
    return _json(
        surveys.crosstab(
            get_store(),
            survey_id,
            first,
            second,
            who=principal(),
            confidence=level,
            cache=survey_cache(),
            **_weighting(),
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
    _authorize(survey_id, "analyze")  # 404 or 403 before the body's 422
    body = json_object()
    unknown = sorted(set(body) - {"formula", "confidence", "weights", "weighted"})
    if unknown:
        raise Problem(
            422,
            f"{str(unknown[0])[:40]}: unknown field; send formula, confidence, weights, weighted",
        )
    weights, weighted = body.get("weights"), body.get("weighted", True)
    if weights is not None and not isinstance(weights, str):
        raise Problem(422, "weights: expected a weights table as CSV text")
    if not isinstance(weighted, bool):
        raise Problem(422, "weighted: expected true or false")
    formula = body.get("formula")
    if not isinstance(formula, str) or not formula.strip():
        raise Problem(422, "formula: expected a formula like 'smokes ~ region + adult'")
    level = parse_confidence(  # a field of the body: 422, as its other fields
        body.get("confidence", current_app.config["CONFIDENCE"]), 0.95, kind="invalid", text=False
    )
    return _json(  # the formula is data: stats/formula.py checks it against the grammar
        surveys.regression(
            get_store(),
            survey_id,
            formula,
            who=principal(),
            confidence=level,
            limits=Limits.from_config(current_app.config),
            cache=survey_cache(),
            weights=weights,
            weighted=weighted,
        )
    )


# -- who may do what on a survey, and what was done (docs/accounts.md) -------------------------

#: An account's name in a path, before accounts.py checks it (longer is not a name).
MAX_ACCOUNT_CHARS = 64


def _person(given: Grant) -> dict[str, Any]:
    """A role on a survey as the API shows it."""
    return {"account": given.account, "role": given.role, "granted_at": given.granted_at}


def _account_name(account: str) -> str:
    if len(account) > MAX_ACCOUNT_CHARS:
        raise Problem(404, f"no account {account[:MAX_ACCOUNT_CHARS]!r}...; check the name")
    return account


@bp.get("/api/v1/surveys/<survey_id>/people")
@researcher_required
def people(survey_id: str) -> Any:
    """Who has which role on the survey (owners and admins)."""
    found = accounts.people(get_store(), principal(), survey_id)
    return jsonify(people=[_person(g) for g in found])


@bp.put("/api/v1/surveys/<survey_id>/people/<account>")
@researcher_required
def grant(survey_id: str, account: str) -> Any:
    """{"role": "owner"|"analyst"}: give the account that role on the survey."""
    _authorize(survey_id, "grant")
    body = json_object()
    unknown = sorted(set(body) - {"role"})
    if unknown:
        raise Problem(422, f"{str(unknown[0])[:40]}: unknown field; send only role")
    role = body.get("role")
    if not isinstance(role, str):
        raise Problem(422, "role: expected owner or analyst")
    given = accounts.grant(get_store(), principal(), survey_id, _account_name(account), role)
    return jsonify(_person(given))


@bp.delete("/api/v1/surveys/<survey_id>/people/<account>")
@researcher_required
def revoke(survey_id: str, account: str) -> Any:
    """Take the account's role on the survey away."""
    accounts.revoke(get_store(), principal(), survey_id, _account_name(account))
    return Response(status=204)


@bp.get("/api/v1/surveys/<survey_id>/audit.jsonl")
@researcher_required
def survey_audit(survey_id: str) -> Any:
    """The survey's audit log (?since=), one JSON object a line, streamed (owners and admins)."""
    who = principal()
    _authorize(survey_id, "audit")
    since = _query("since")
    if since is not None:
        accounts.parse_since(since)  # a bad ?since= is a 400 now, not a broken stream later
    return downloads.audit_jsonl(survey_id, who, since)
