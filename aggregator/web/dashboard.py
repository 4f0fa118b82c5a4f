"""The researcher dashboard: log in with a token, list surveys, read charts, create and close.

Server-rendered HTML (Jinja) that works without JavaScript; one small static script reloads a
survey page when new reports arrive. Every page but the login needs a session made from a valid
researcher token, and every form carries a CSRF token (Flask-WTF's, checked here, so the JSON
API with its bearer tokens is not affected).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import segno
from flask import (
    Blueprint,
    Flask,
    Request,
    Response,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from flask_wtf.csrf import CSRFError, generate_csrf, validate_csrf
from werkzeug.exceptions import NotFound, RequestEntityTooLarge
from wtforms import ValidationError

from deniable.aggregator import surveys as actions
from deniable.aggregator.params import ParamError, parse_candidates, parse_confidence, parse_flag
from deniable.aggregator.stats import planning
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.results import QuestionResults
from deniable.aggregator.store import SurveyRecord
from deniable.aggregator.web import sessions
from deniable.aggregator.web.charts import question_chart
from deniable.aggregator.web.db import get_store, provider, survey_cache
from deniable.shared import Survey, SurveyError
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import DeniableError
from deniable.shared.survey import format_timestamp

F = TypeVar("F", bound=Callable[..., Any])

bp = Blueprint(
    "dashboard",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/assets",
)

CONFIDENCES = (0.8, 0.9, 0.95, 0.99)
MAX_INVITATIONS_FORM = 1000
#: No inline script or style, nothing from another origin, never framed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: Seconds between the refresh script's checks for new reports.
REFRESH_SECONDS = 5


#: The JSON API and the health check authenticate with bearer tokens, never with the session.
SESSIONLESS_PATHS = ("/api/", "/healthz")


class _SessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie, marked Secure whenever the request came over TLS. It holds the
    session id and the CSRF secret only: the session itself is stored (see sessions.py)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config.get("SESSION_COOKIE_SECURE")) or request.is_secure

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if request.path.startswith(SESSIONLESS_PATHS):
            # The JSON API authenticates with bearer tokens: no session to read or save.
            return self.make_null_session(app)
        if not app.secret_key:
            # The session opens before any before_request hook could load the key.
            from deniable.aggregator.web.app import load_or_create_secret_key

            app.secret_key = load_or_create_secret_key(Path(app.config["DATA_DIR"]))
        return super().open_session(app, request)


def init_dashboard(app: Flask) -> None:
    """Register the dashboard on an app: the blueprint and the session cookie settings."""
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.config["SESSION_COOKIE_SAMESITE"] = "Strict"
    app.config.setdefault("WTF_CSRF_TIME_LIMIT", None)
    app.session_interface = _SessionInterface()
    app.register_blueprint(bp)


# -- authentication ---------------------------------------------------------------------------


def _safe_next(target: str | None) -> str:
    """A dashboard page of this host to go back to after logging in, with only the read-only
    query parameters the dashboard itself produces (see sessions.safe_next)."""
    return sessions.safe_next(target)


@bp.before_request
def _guard() -> Any:
    """Send visitors without a valid session to the login; check CSRF on every POST."""
    if request.endpoint in ("dashboard.static",):
        return None
    if request.method == "POST":
        try:
            validate_csrf(request.form.get("csrf_token"))
        except ValidationError as exc:
            raise CSRFError(str(exc)) from None
    if request.endpoint in ("dashboard.login", "dashboard.logout"):
        return None
    if not sessions.logged_in():  # server-side: see sessions.py
        return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))
    return None


@bp.errorhandler(CSRFError)
def _csrf_error(exc: CSRFError) -> tuple[str, int]:
    kept = request.form.get("document", "") if request.endpoint == "dashboard.new_survey" else ""
    return render_template(
        "error.html",
        title="Form expired",
        message=(
            "The form was missing its security token or it had expired (a login lasts "
            f"{current_app.config['SESSION_HOURS']} hours). Go back, reload the page and try "
            "again." + (" Your survey document is below: copy it first." if kept else "")
        ),
        kept=kept,
    ), 400


@bp.errorhandler(404)
def _not_found(exc: NotFound) -> tuple[str, int]:
    return render_template(
        "error.html",
        title="Not found",
        message="There is no such survey here. It may have another id; the list has them all.",
    ), 404


@bp.errorhandler(ParamError)
def _bad_parameter(exc: ParamError) -> tuple[str, int]:
    """A bad ?confidence= or the like: said on a page, as the API says it in a problem."""
    return render_template(
        "error.html",
        title="Bad request",
        message=f"{exc} Go back and choose another value.",
    ), exc.status


@bp.errorhandler(413)
def _too_large(exc: RequestEntityTooLarge) -> tuple[str, int]:
    limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
    return render_template(
        "error.html",
        title="Too large",
        message=f"The form was larger than the aggregator takes ({limit:,} bytes; "
        "DENIABLE_MAX_BODY). A survey document is far smaller: check the file.",
    ), 413


@bp.after_request
def _headers(response: Response) -> Response:
    response.headers.setdefault("Cache-Control", "no-store")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Content-Security-Policy", CSP)
    return response


@bp.app_template_filter("utc")
def _utc(moment: datetime) -> str:
    """A time as the dashboard shows it, in UTC with a four-digit year."""
    return format_timestamp(moment)[:16].replace("T", " ") + " UTC"


@bp.app_context_processor
def _template_globals() -> dict[str, Any]:
    return {"csrf_token": generate_csrf, "refresh_seconds": REFRESH_SECONDS}


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """The login form; a valid researcher token starts a session (stored server-side)."""
    error = None
    next_path = _safe_next(request.values.get("next"))
    if request.method == "POST":
        token = (request.form.get("token") or "").strip()
        if token and sessions.log_in(token):
            return redirect(next_path)
        error = "That token is not valid here. Make one with `deniable-aggregator create-token`."
    status = 401 if error else 200
    return render_template("login.html", error=error, next=next_path), status


@bp.route("/logout", methods=["POST"])
def logout() -> Any:
    """End the session, for every copy of its cookie."""
    sessions.log_out()
    flash("You are logged out.")
    return redirect(url_for("dashboard.login"))


# -- reading ---------------------------------------------------------------------------------


def _survey_or_404(survey_id: str) -> tuple[SurveyRecord, Survey]:
    try:
        record = actions.survey_or_404(get_store(), survey_id)
    except actions.ActionError:
        abort(404)
    return record, survey_cache().survey(record)


def _status(record: SurveyRecord, survey: Survey) -> str:
    if record.closed or survey.is_closed():
        return "closed"
    return "open"


def _confidence() -> float:
    """?confidence=, or the configured level; a bad one is a ParamError (an error page)."""
    return parse_confidence(request.args.get("confidence"), current_app.config["CONFIDENCE"])


def _results_options() -> dict[str, Any]:
    """The results parameters of the query string, parsed as the API parses them."""
    return {
        "confidence": _confidence(),
        "simultaneous": parse_flag(request.args.get("simultaneous"), "simultaneous"),
        "limits": Limits.from_config(current_app.config),
        "cache": survey_cache(),
    }


def _wide(question: Any, entry: QuestionResults, n: int, confidence: float) -> bool:
    """Whether n reports leave intervals about as wide as the whole range: too few to say much.

    Judged by the planner's worst-case margin at n (half the range or more), or an interval
    that already spans 90% of it."""
    width = float(question.high - question.low) if question.kind.rows == "mean" else 1.0
    spans = [high - low for low, high in entry.conf_int().values()]
    if question.kind.rows == "candidates":  # judged by its candidates' intervals alone
        return any(span >= 0.9 for span in spans)
    if not question.plain and planning.margin_for(question.randomizer, n, confidence) >= width / 2:
        return True
    return any(span >= 0.9 * width for span in spans)


@bp.route("/")
def surveys() -> str:
    """Every survey with its status, reports received and total epsilon."""
    rows = []
    for record in get_store().list_surveys():
        survey = survey_cache().survey(record)
        rows.append({"record": record, "survey": survey, "status": _status(record, survey)})
    return render_template("surveys.html", rows=rows)


def _plain_words(question: Any) -> str:
    """How the mechanism protects an answer, in words."""
    return question.randomizer.in_brief()


@bp.route("/surveys/<survey_id>")
def survey(survey_id: str) -> str:
    """One survey: per question a chart, a table and the mechanism in words."""
    record, resolved = _survey_or_404(survey_id)
    options = _results_options()
    confidence, simultaneous = options["confidence"], options["simultaneous"]
    asked = request.args.get("candidates", "")
    candidate_error = None
    try:
        candidates = parse_candidates(asked)
        doc = actions.results(get_store(), survey_id, candidates=candidates, **options)
    except actions.ActionError as exc:
        if not asked:
            raise
        # Said on the page, which still shows the survey's own candidates.
        candidate_error = str(exc)
        doc = actions.results(get_store(), survey_id, **options)
    n = doc.n
    questions = []
    for entry in doc.questions.values():
        question = resolved.questions[entry.id]
        questions.append(
            {
                "entry": entry,
                "question": question,
                "chart": question_chart(entry, confidence, question.text),
                "words": _plain_words(question),
                "wide": n > 0 and _wide(question, entry, n, confidence),
            }
        )
    return render_template(
        "survey.html",
        record=record,
        survey=resolved,
        status=_status(record, resolved),
        n=n,
        doc=doc,
        questions=questions,
        confidence=confidence,
        confidences=sorted({*CONFIDENCES, confidence}),
        simultaneous=simultaneous,
        respondent_link=respondent_link(record.id),
        asked=asked,
        candidate_error=candidate_error,
    )


def respondent_link(survey_id: str) -> str:
    """The address respondents open to answer (as this request reached the server)."""
    return url_for("respond.page", survey_id=survey_id, _external=True)


@bp.route("/surveys/<survey_id>/qr.svg")
def qr_code(survey_id: str) -> Response:
    """A printable QR code of the survey's respondent link, drawn as SVG on the server."""
    _survey_or_404(survey_id)
    buffer = io.BytesIO()
    segno.make(respondent_link(survey_id), error="m").save(
        buffer, kind="svg", scale=8, border=4, title=f"Answer survey {survey_id}"
    )
    return Response(
        buffer.getvalue(),
        mimetype="image/svg+xml",
        headers={"Content-Disposition": f'inline; filename="{survey_id}-qr.svg"'},
    )


@bp.route("/surveys/<survey_id>/analysis", methods=["GET", "POST"])
def analysis(survey_id: str) -> str:
    """Breakdowns by a plain question, cross-tabs and regression, from the stored reports.
    Breakdowns and cross-tabs are bounded reads of a GET; a regression runs only from the
    form's POST (with its CSRF token), so no link can run a formula: a GET's ?formula= only
    fills the form's field."""
    record, resolved = _survey_or_404(survey_id)
    confidence = _confidence()
    args = request.args
    posted = request.form if request.method == "POST" else {}
    formula = posted.get("formula") or args.get("formula") or ""
    # Text questions are estimated per candidate on the survey's page, not in these analyses.
    randomized = [
        q for q in resolved.questions.values() if not q.plain and q.kind.rows != "candidates"
    ]
    plain = [q for q in resolved.questions.values() if q.plain]
    groups = [q for q in plain if q.kind.groups]
    found: dict[str, Any] = {}
    errors: dict[str, str] = {}
    store, cache = get_store(), survey_cache()
    runs = {  # the service functions the API and the CLI call (aggregator/surveys.py)
        "breakdown": lambda: actions.breakdown(
            store, survey_id, args["question"], args["by"], confidence=confidence, cache=cache
        ),
        "crosstab": lambda: actions.crosstab(
            store, survey_id, args["first"], args["second"], confidence=confidence, cache=cache
        ),
        "regression": lambda: actions.regression(
            store,
            survey_id,
            posted["formula"],  # data, never Python: stats/formula.py checks the grammar
            confidence=confidence,
            limits=Limits.from_config(current_app.config),
            cache=cache,
        ),
    }
    needs = {
        "breakdown": (args, ("question", "by")),
        "crosstab": (args, ("first", "second")),
        "regression": (posted, ("formula",)),
    }
    for name, run in runs.items():
        source, keys = needs[name]
        if all(source.get(key) for key in keys):
            try:
                found[name] = run()
            except DeniableError as exc:
                errors[name] = str(exc)
    charts = []
    if "breakdown" in found:
        doc = found["breakdown"]
        target = resolved.questions[doc.question]
        for group, entry in zip(doc["groups"], doc.groups.values(), strict=True):
            title = f"{target.text}: {doc.by} = {group['group']}"
            charts.append({"group": group, "chart": question_chart(entry, confidence, title)})
    if "crosstab" in found:
        doc = found["crosstab"]
        found["crosstab_rows"] = [
            {"label": a, "cells": [doc.cell(a, b) for b in doc.column_labels]}
            for a in doc.row_labels
        ]
        found["crosstab_columns"] = doc.column_labels
    return render_template(
        "analysis.html",
        record=record,
        survey=resolved,
        randomized=randomized,
        plain=groups,
        questions=[q for q in resolved.questions.values() if q.kind.crosses],
        found=found,
        errors=errors,
        charts=charts,
        args=args,
        formula=formula,
        confidence=confidence,
        example=_example_formula(randomized, plain),
    )


def _example_formula(randomized: list[Any], plain: list[Any]) -> str:
    outcome = next((q.id for q in randomized if q.kind.outcome_row is not None), None)
    choice = [q for q in randomized if q.kind.not_an_outcome is None]
    if outcome is None and choice:
        outcome = f"{choice[0].id}[{choice[0].options[choice[0].kind.example_option]}]"
    usable = [q for q in plain if q.kind.covariate is not None]
    covariates = " + ".join(f"`{q.id}`" if "-" in q.id else q.id for q in usable[:2]) or "1"
    return f"{outcome} ~ {covariates}" if outcome else ""


@bp.route("/surveys/<survey_id>/count.json")
def count(survey_id: str) -> dict[str, Any]:
    """The number of reports received, for the refresh script."""
    record, _ = _survey_or_404(survey_id)
    return {"survey": survey_id, "n": record.report_count}


@bp.route("/surveys/<survey_id>/results.csv")
def download_csv(survey_id: str) -> Response:
    """The results as CSV (the API's content, for a dashboard session)."""
    _survey_or_404(survey_id)
    candidates = parse_candidates(request.args.get("candidates"))
    # A refusal is the API's problem with its own status (abort(413) would read as a body
    # too large); a bad parameter is an error page.
    text = actions.results_csv(get_store(), survey_id, candidates=candidates, **_results_options())
    return Response(
        text,
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-results.csv"'},
    )


@bp.route("/surveys/<survey_id>/reports.jsonl")
def download_reports(survey_id: str) -> Response:
    """Every stored noisy report, one JSON object a line, streamed."""
    _survey_or_404(survey_id)
    return Response(
        actions.report_lines(provider(), survey_id),
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-reports.jsonl"'},
    )


# -- writing ---------------------------------------------------------------------------------


#: A plain decimal number as people type one (not Python's 1_0 or full-width digits).
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[0-9]{1,6}")


def _plan_from_args() -> tuple[dict[str, str], planning.Plan | None, str | None]:
    """The planner form's values, its plan and any error (all None when not asked)."""
    fields = {
        key: request.args.get(key, default)
        for key, default in (
            ("epsilon", "1"),
            ("margin", "0.05"),
            ("options", "2"),
            ("confidence", "0.95"),
            ("mechanism", ""),
            ("range", ""),
        )
    }
    if "epsilon" not in request.args:
        return fields, None, None
    numbers = [fields[key].strip() for key in ("epsilon", "margin", "options", "confidence")]
    if not all(_DECIMAL.fullmatch(text) for text in numbers) or not _WHOLE.fullmatch(numbers[2]):
        return fields, None, "Give numbers: epsilon like 1, margin like 0.05, options like 2."
    epsilon, margin, confidence = float(numbers[0]), float(numbers[1]), float(numbers[3])
    options = int(numbers[2])
    width_text = fields["range"].strip()
    if width_text and not re.fullmatch(r"[0-9]{1,10}", width_text):
        return fields, None, "Give the range as a whole number (max − min), like 30."
    try:
        result = planning.plan(
            epsilon,
            margin=margin,
            options=options,
            confidence=confidence,
            mechanism=fields["mechanism"] or None,
            width=int(width_text) if width_text else None,
        )
    except (planning.PlanError, ValueError) as exc:
        return fields, None, str(exc)
    return fields, result, None


def _create(text: str) -> SurveyRecord:
    """Validate a survey document and store it; SurveyError says what is wrong."""
    try:
        doc = parse_json(text)
    except JSONTextError as exc:
        raise SurveyError(f"not valid JSON: {exc}") from None
    try:
        record, created = actions.create_survey(
            get_store(), doc, Limits.from_config(current_app.config)
        )
    except actions.ActionError as exc:
        raise SurveyError(str(exc)) from None
    if not created:
        raise SurveyError(f"id: survey {record.id!r} already exists; choose another id")
    return record


@bp.route("/surveys/new", methods=["GET", "POST"])
def new_survey() -> Any:
    """Create a survey from pasted or uploaded JSON; the planner helps choose epsilon and n."""
    error = None
    text = ""
    if request.method == "POST":
        text = request.form.get("document") or ""
        upload = request.files.get("file")
        if upload is not None and upload.filename:
            limit = current_app.config.get("MAX_CONTENT_LENGTH") or 8 * 1024 * 1024
            raw = upload.read(limit + 1)
            if len(raw) > limit:
                error = (
                    f"The uploaded file is larger than {limit:,} bytes; a survey is far smaller."
                )
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    error = "The uploaded file is not UTF-8 text."
        if error is None and not text.strip():
            error = "Paste a survey document or choose a JSON file."
        if error is None:
            try:
                created = _create(text)
            except SurveyError as exc:
                error = str(exc)
            else:
                flash(f"Survey {created.id!r} created.")
                return redirect(url_for("dashboard.survey", survey_id=created.id))
    fields, plan_result, plan_error = _plan_from_args()
    return render_template(
        "new.html",
        error=error,
        text=text,
        plan_fields=fields,
        plan=plan_result,
        plan_error=plan_error,
        mechanisms=planning.MECHANISM_NAMES,
        max_options=planning.MAX_OPTIONS,
        plan_query={key: value for key, value in fields.items() if key in request.args},
    ), (400 if error else 200)


@bp.route("/surveys/<survey_id>/invitations", methods=["POST"])
def invitations(survey_id: str) -> Any:
    """Issue single-use invitation codes and show them once."""
    record, resolved = _survey_or_404(survey_id)
    try:
        count = int(request.form.get("count", ""))
    except ValueError:
        count = 0
    limit = min(MAX_INVITATIONS_FORM, current_app.config.get("MAX_INVITATIONS", 10_000))
    if not 1 <= count <= limit:
        flash(f"Ask for 1 to {limit} invitation codes.", "error")
        return redirect(url_for("dashboard.survey", survey_id=survey_id))
    try:
        codes = actions.invite(get_store(), survey_id, count, limit=limit, cache=survey_cache())
    except actions.ActionError as exc:
        flash(str(exc), "error")
        return redirect(url_for("dashboard.survey", survey_id=survey_id))
    return render_template("codes.html", survey=resolved, record=record, codes=codes)


@bp.route("/surveys/<survey_id>/close", methods=["POST"])
def close(survey_id: str) -> Any:
    """Stop accepting reports."""
    _survey_or_404(survey_id)
    actions.close_survey(get_store(), survey_id)
    flash("The survey is closed: it accepts no more reports.")
    return redirect(url_for("dashboard.survey", survey_id=survey_id))
