"""The researcher dashboard: log in with a token, list surveys, read charts, create and close;
the people of a survey, accounts and tokens, and the audit log (docs/accounts.md).

Server-rendered HTML (Jinja) that works without JavaScript; one small static script reloads a
survey page when new reports arrive. Every page but the login needs a session made from a live
researcher token, and every page and action passes the session's principal to the service
functions, which apply the one rule (aggregator/access.py): a survey the principal may not see
is this dashboard's 404 page, word for word the page of an unknown id; a visible survey and a
forbidden action is a 403 page saying which role it needs; buttons and forms the principal may
not use are not shown. Every form carries a CSRF token (Flask-WTF's, checked here, so the JSON
API with its bearer tokens is not affected).
"""

from __future__ import annotations

import io
import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import segno
from flask import (
    Blueprint,
    Flask,
    Request,
    Response,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from flask_wtf.csrf import CSRFError, generate_csrf, validate_csrf
from werkzeug.exceptions import NotFound, RequestEntityTooLarge
from wtforms import ValidationError

from deniable.aggregator import access, accounts, audit, exports, forms
from deniable.aggregator import surveys as actions
from deniable.aggregator.access import Principal
from deniable.aggregator.params import (
    ParamError,
    parse_candidates,
    parse_confidence,
    parse_cuts,
    parse_flag,
    parse_whole,
)
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.stats import planning, power, series_planning
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.results import QuestionResults, shown_row
from deniable.aggregator.store import AuditEntry, SurveyRecord
from deniable.aggregator.web import problems, sessions
from deniable.aggregator.web.charts import question_chart, scale_of, series_chart
from deniable.aggregator.web.db import get_store, provider, survey_cache
from deniable.aggregator.web.languages import texts_in
from deniable.aggregator.web.statuses import refusal_status
from deniable.shared import Survey, SurveyError, conditions
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
#: The audit pages show the newest entries, this many at most (the JSONL download has all).
AUDIT_PAGE_LIMIT = 500
#: What a survey page may offer, each shown only to a principal that may take it.
SURVEY_ACTIONS: tuple[access.Action, ...] = (
    "results",
    "analyze",
    "export",
    "invite",
    "close",
    "grant",
    "audit",
)


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
    if sessions.current_principal() is None:  # server-side: see sessions.py
        return _to_login()
    return None


def _to_login() -> Response:
    return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))


def principal() -> Principal:
    """Who this request's session speaks for: its token's principal (the guard has already
    sent a request without a live session to the login)."""
    who = sessions.current_principal()
    if who is None:  # the session died during the request: the handler sends it to the login
        raise ActionError("unauthenticated", "log in again")
    return who


def _may_create(who: Principal | None) -> bool:
    """Whether the principal may create surveys (access.require_creator)."""
    if who is None:
        return False
    try:
        access.require_creator(who)
    except ActionError:
        return False
    return True


def _is_admin(who: Principal | None) -> bool:
    """Whether the principal may manage accounts and tokens and read the whole audit log
    (access.require_admin: an admin account's full token)."""
    if who is None:
        return False
    try:
        access.require_admin(who)
    except ActionError:
        return False
    return True


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


def _not_found_page() -> tuple[str, int]:
    """The one page of a survey that does not exist and of one the principal may not see."""
    return render_template(
        "error.html",
        title="Not found",
        message="There is no such survey here. It may have another id; the list has them all.",
    ), 404


@bp.errorhandler(404)
def _not_found(exc: NotFound) -> tuple[str, int]:
    return _not_found_page()


@bp.errorhandler(ActionError)
def _refused(exc: ActionError) -> Any:
    """A refused action as a page: not-found is the unknown survey's page (so ids cannot be
    probed), forbidden says which role or token it needs, unauthenticated goes to the login.
    Any other refusal (a download over a limit) is the API's problem+json, as before."""
    if exc.kind == "not-found":
        return _not_found_page()
    if exc.kind == "unauthenticated":
        return _to_login()
    if exc.kind != "forbidden":
        return problems.response_for(exc, current_app._get_current_object())
    said = str(exc)
    message = said[:1].upper() + said[1:] + "."
    return render_template("error.html", title="Not allowed", message=message), refusal_status(exc)


@bp.errorhandler(ParamError)
def _bad_parameter(exc: ParamError) -> tuple[str, int]:
    """A bad ?confidence= or the like: said on a page, as the API says it in a problem."""
    return render_template(
        "error.html",
        title="Bad request",
        message=f"{exc} Go back and choose another value.",
    ), refusal_status(exc)


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


@bp.context_processor
def _viewer() -> dict[str, Any]:
    """What the navigation shows: New survey to creators, Accounts and Audit to admins."""
    who = g.get("dashboard_principal")
    return {"viewer": who, "may_create": _may_create(who), "is_admin": _is_admin(who)}


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """The login form; a valid researcher token starts a session (stored server-side)."""
    error = None
    next_path = _safe_next(request.values.get("next"))
    if request.method == "POST":
        token = (request.form.get("token") or "").strip()
        try:
            if not token:
                raise ActionError("unauthenticated", "Paste a researcher token.")
            sessions.log_in(token)
        except ActionError as exc:
            error = str(exc)
        else:
            return redirect(next_path)
    status = 401 if error else 200
    return render_template("login.html", error=error, next=next_path), status


@bp.route("/logout", methods=["POST"])
def logout() -> Any:
    """End the session, for every copy of its cookie."""
    sessions.log_out()
    flash("You are logged out.")
    return redirect(url_for("dashboard.login"))


# -- reading ---------------------------------------------------------------------------------


def _survey_or_404(survey_id: str, action: access.Action = "view") -> tuple[SurveyRecord, Survey]:
    """The survey, if the session's principal may take `action` on it: else ActionError
    not-found (it may not see the survey: the unknown id's page) or forbidden (a 403 page)."""
    record = access.authorize(get_store(), principal(), survey_id, action)
    return record, survey_cache().survey(record)


def _standing(survey_id: str) -> tuple[str | None, dict[str, bool]]:
    """The principal's standing on a survey and, per action a page may offer, whether it may
    take it: the page shows only what it may use."""
    who = principal()
    standing = access.role_on(get_store(), who, survey_id)
    return standing, {action: access.may(who, standing, action) for action in SURVEY_ACTIONS}


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
        # ?weighted=0: a survey with a design, unweighted (docs/statistics.md)
        "weighted": parse_flag(request.args.get("weighted", "1"), "weighted"),
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
    """Every survey the principal may see, with its status, reports received, total epsilon
    and the principal's role on it."""
    who = principal()
    store = get_store()
    roles = store.roles_of(who.account_id) if who.account_id is not None else {}
    rows = []
    for record in access.visible_surveys(store, who):
        survey = survey_cache().survey(record)
        role = "admin" if who.admin else roles.get(record.id)
        rows.append(
            {"record": record, "survey": survey, "status": _status(record, survey), "role": role}
        )
    return render_template("surveys.html", rows=rows)


def _plain_words(question: Any) -> str:
    """How the mechanism protects an answer, in words."""
    return question.randomizer.in_brief()


@bp.route("/surveys/<survey_id>")
def survey(survey_id: str) -> str:
    """One survey: per question a chart, a table and the mechanism in words, in the survey's
    default language or `?lang=` another of its own (web/languages.py)."""
    record, resolved = _survey_or_404(survey_id, "results")
    who = principal()
    texts = texts_in(resolved, request.args.get("lang"))
    options = _results_options()
    confidence, simultaneous = options["confidence"], options["simultaneous"]
    asked = request.args.get("candidates", "")
    candidate_error = None
    try:
        candidates = parse_candidates(asked)
        doc = actions.results(get_store(), survey_id, candidates=candidates, who=who, **options)
    except ActionError as exc:
        if not asked or exc.kind in ("not-found", "forbidden", "unauthenticated"):
            raise
        # Said on the page, which still shows the survey's own candidates.
        candidate_error = str(exc)
        doc = actions.results(get_store(), survey_id, who=who, **options)
    n = doc.n
    questions = []
    for entry in doc.questions.values():
        question = resolved.questions[entry.id]
        text = texts.text(entry.id, question.text)
        # A text question's rows are candidates, a mean's one row: neither is an option label.
        wire = [str(o["option"]) for o in entry.options]
        labels = texts.labels(entry.id, wire) if wire == question.options else wire
        questions.append(
            {
                "entry": entry,
                "question": question,
                "text": text,
                "labels": labels,
                "chart": question_chart(
                    entry,
                    confidence,
                    text,
                    labels,
                    lang=None if texts.default else texts.lang,
                    direction=texts.direction,
                ),
                "words": _plain_words(question),
                # Judged on the reports that asked it (its own n, with skip logic).
                "wide": entry.n > 0 and _wide(question, entry, entry.n, confidence),
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
        texts=texts,
        **_survey_nav(survey_id),
    )


@bp.route("/series/<series_id>")
def series(series_id: str) -> str:
    """A series of waves (docs/researchers.md, "Series"): per followed question option a chart
    of the waves' estimates with their intervals, and the changes and the trend in a table.
    Readable as the API's series results are: the unknown series' page when none is seen."""
    confidence = _confidence()
    doc = actions.series_results(
        get_store(),
        series_id,
        who=principal(),
        confidence=confidence,
        limits=Limits.from_config(current_app.config),
        cache=survey_cache(),
    )
    return render_template(
        "series.html", doc=doc, confidence=confidence, followed=_followed_charts(doc, confidence)
    )


def _followed_charts(doc: Any, confidence: float) -> list[dict[str, Any]]:
    """Per followed (question, option) of a series, in the trend's order: its chart over the
    waves, its changes and its trend entry."""
    out = []
    for trend in doc.trend:
        qid, option = trend["question"], trend["option"]
        points, scale = [], None
        for wave in doc["waves"]:
            for entry in wave["results"].get("questions", ()):
                if entry["id"] != qid:
                    continue
                scale = scale or scale_of(entry)
                for o in entry["options"]:
                    if str(o["option"]) == str(option):
                        # As every table shows it: the estimate within its interval and range.
                        shown = shown_row(o, int(entry.get("n") or 0), scale.low, scale.high)
                        points.append({"wave": wave["wave"], **o, **_interval_of(shown)})
        title = f"{qid} = {option}"
        out.append(
            {
                "question": qid,
                "option": option,
                "chart": series_chart(points, confidence, title, scale or scale_of({})),
                "points": points,
                "changes": [
                    c for c in doc.changes if (c["question"], c["option"]) == (qid, option)
                ],
                "trend": trend,
            }
        )
    return out


def _interval_of(shown: dict[str, Any]) -> dict[str, Any]:
    """A shown row's estimate and interval (shown_row: each inside the other and the range)."""
    return {key: shown[key] for key in ("estimate", "ci_low", "ci_high")}


def _survey_nav(survey_id: str) -> dict[str, Any]:
    """What a survey's pages need to show only what the principal may use: its standing and,
    per action, whether it may take it."""
    standing, can = _standing(survey_id)
    return {"standing": standing, "can": can}


def respondent_link(survey_id: str) -> str:
    """The address respondents open to answer (as this request reached the server)."""
    return url_for("respond.page", survey_id=survey_id, _external=True)


@bp.route("/surveys/<survey_id>/qr.svg")
def qr_code(survey_id: str) -> Response:
    """A printable QR code of the survey's respondent link, drawn as SVG on the server."""
    _survey_or_404(survey_id, "view")
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
    record, resolved = _survey_or_404(survey_id, "analyze")
    who = principal()
    confidence = _confidence()
    args = request.args
    posted = request.form if request.method == "POST" else {}
    formula = posted.get("formula") or args.get("formula") or ""
    # Text questions are estimated per candidate on the survey's page, not in these analyses.
    randomized = [
        q for q in resolved.questions.values() if not q.plain and q.kind.rows != "candidates"
    ]
    plain = [q for q in resolved.questions.values() if q.plain]
    # Group by a plain choice question, or a plain number in bands (its cuts typed in).
    groups = [q for q in plain if q.kind.groups or q.low is not None]
    found: dict[str, Any] = {}
    errors: dict[str, str] = {}
    store, cache = get_store(), survey_cache()
    runs = {  # the service functions the API and the CLI call (aggregator/surveys.py)
        "breakdown": lambda: actions.breakdown(
            store,
            survey_id,
            args["question"],
            args["by"],
            confidence=confidence,
            cache=cache,
            who=who,
            cuts=parse_cuts(args.get("cuts")),
        ),
        "crosstab": lambda: actions.crosstab(
            store,
            survey_id,
            args["first"],
            args["second"],
            confidence=confidence,
            cache=cache,
            who=who,
        ),
        "regression": lambda: actions.regression(
            store,
            survey_id,
            posted["formula"],  # data, never Python: stats/formula.py checks the grammar
            confidence=confidence,
            limits=Limits.from_config(current_app.config),
            cache=cache,
            who=who,
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
            except ActionError as exc:  # a field's value (a bad cut, say): beside its form
                if exc.kind in ("not-found", "forbidden", "unauthenticated"):
                    raise  # the survey's standing changed meanwhile: its page, not a field's
                errors[name] = str(exc)
            except DeniableError as exc:
                errors[name] = str(exc)
    charts = []
    if "breakdown" in found:
        doc = found["breakdown"]
        target = resolved.questions[doc.question]
        for group, entry in zip(doc["groups"], doc.groups.values(), strict=True):
            title = f"{target.text}: {doc.by} = {group['group']}"
            charts.append(
                {
                    "group": group,
                    "entry": entry,
                    "chart": question_chart(entry, confidence, title),
                }
            )
    if "crosstab" in found:
        doc = found["crosstab"]
        found["crosstab_rows"] = [
            {"label": a, "cells": [shown_row(doc.cell(a, b), doc.n) for b in doc.column_labels]}
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
        **_survey_nav(survey_id),
    )


def _named_by(question: Any) -> set[str]:
    """The questions a question's skip-logic condition names (none without one)."""
    return set(conditions.parse(question.relevant).questions) if question.relevant else set()


def _example_formula(randomized: list[Any], plain: list[Any]) -> str:
    """A formula the regression form suggests, one that fits its survey: a randomized yes/no
    outcome (or a categorical's option) on up to two plain covariates, none of them named by
    the condition of the outcome or of another term (a condition fixes what it names among the
    reports that hold the question, so such a covariate would be collinear with the
    intercept: `hit_child ~ has_children` when hit_child is asked only if has_children is yes)."""
    target = next((q for q in randomized if q.kind.outcome_row is not None), None)
    outcome = None if target is None else target.id
    if target is None:
        choice = [q for q in randomized if q.kind.not_an_outcome is None]
        if not choice:
            return ""
        target = choice[0]
        outcome = f"{target.id}[{target.options[target.kind.example_option]}]"
    chosen: list[Any] = []
    fixed = _named_by(target)
    for question in plain:
        if len(chosen) == 2:
            break
        if question.kind.covariate is None or question.id in fixed:
            continue
        if _named_by(question) & {q.id for q in chosen}:
            continue  # asked only given a chosen covariate's answer: it would fix that one
        chosen.append(question)
        fixed |= _named_by(question)
    covariates = " + ".join(f"`{q.id}`" if "-" in q.id else q.id for q in chosen) or "1"
    return f"{outcome} ~ {covariates}"


@bp.route("/surveys/<survey_id>/count.json")
def count(survey_id: str) -> dict[str, Any]:
    """The number of reports received, for the refresh script."""
    record, _ = _survey_or_404(survey_id, "view")
    return {"survey": survey_id, "n": record.report_count}


@bp.route("/surveys/<survey_id>/results.csv")
def download_csv(survey_id: str) -> Response:
    """The results as CSV (the API's content, for a dashboard session)."""
    _survey_or_404(survey_id, "results")
    candidates = parse_candidates(request.args.get("candidates"))
    # A refusal is an error page with the refusal's own status (abort(413) would read as a
    # body too large).
    text = actions.results_csv(
        get_store(), survey_id, candidates=candidates, who=principal(), **_results_options()
    )
    return Response(
        text,
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-results.csv"'},
    )


@bp.route("/surveys/<survey_id>/reports.jsonl")
def download_reports(survey_id: str) -> Response:
    """Every stored noisy report, one JSON object a line, streamed."""
    _survey_or_404(survey_id, "export")
    return Response(
        actions.report_lines(provider(), survey_id, who=principal()),
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-reports.jsonl"'},
    )


@bp.route("/surveys/<survey_id>/answers.csv")
def download_answers(survey_id: str) -> Response:
    """Every report's answers, a row per report and a column per question, streamed."""
    _survey_or_404(survey_id, "export")
    return Response(
        exports.answers_csv(provider(), survey_id, who=principal()),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-answers.csv"'},
    )


@bp.route("/surveys/<survey_id>/export.dta", defaults={"fmt": "dta"})
@bp.route("/surveys/<survey_id>/export.sav", defaults={"fmt": "sav"})
def download_stat_file(survey_id: str, fmt: str) -> Response:
    """The answers as a Stata or SPSS file (labels, and the design in the notes)."""
    data = exports.stat_file(
        get_store(),
        survey_id,
        fmt,  # type: ignore[arg-type]
        who=principal(),
        cache=survey_cache(),
    )
    return Response(
        data,
        mimetype="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}.{fmt}"'},
    )


@bp.route("/surveys/<survey_id>/analysis.R")
def download_r_script(survey_id: str) -> Any:
    """An R script fitting ?formula= with R's rr on answers.csv (without one: the randomized
    yes/no questions' shares); a refused formula is a page saying why."""
    _survey_or_404(survey_id, "export")
    formula = request.args.get("formula") or None
    try:
        script = exports.analysis_script(
            get_store(), survey_id, formula, who=principal(), cache=survey_cache()
        )
    except ActionError as exc:
        if exc.kind != "invalid":
            raise
        return render_template("error.html", title="Formula refused", message=str(exc)), 422
    return Response(
        script,
        mimetype="text/plain",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-analysis.R"'},
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


#: The power form's fields and their defaults (docs/statistics.md, "Power").
POWER_FIELDS = (
    ("power_test", "one-sample"),
    ("share", "0.2"),
    ("control", ""),
    ("null", ""),
    ("alpha", "0.05"),
    ("sided", "two"),
    ("n", ""),
    ("target", "0.8"),
    ("power_mechanism", "rr"),
    ("power_epsilon", "1"),
)


def _power_from_args() -> tuple[dict[str, str], power.PowerResult | None, str | None]:
    """The power form's values, its answer and any error (None when not asked): the power at
    n when n is given, else the smallest n reaching the target power."""
    fields = {key: request.args.get(key, default) for key, default in POWER_FIELDS}
    if "power_test" not in request.args:
        return fields, None, None
    try:
        mechanism = fields["power_mechanism"]
        epsilon_text = fields["power_epsilon"].strip()
        if epsilon_text and not _DECIMAL.fullmatch(epsilon_text):
            raise power.PowerError(f"epsilon: expected a number like 1, got {epsilon_text!r}")
        p_star, q_star = power.design_of(mechanism, float(epsilon_text) if epsilon_text else None)
        common: dict[str, Any] = {
            "p_star": p_star,
            "q_star": q_star,
            "alpha": power.parse_probability("alpha", fields["alpha"]),
            "one_sided": fields["sided"] == "one",
        }
        for key in ("control", "null"):
            text = fields[key].strip()
            common[key] = power.parse_probability(key, text) if text else None
        share = power.parse_probability("share", fields["share"])
        n_text = fields["n"].strip()
        if n_text:
            if not re.fullmatch(r"[0-9]{1,12}", n_text):
                raise power.PowerError(f"n: expected a whole number, got {n_text!r}")
            result = power.power(fields["power_test"], share, n=int(n_text), **common)
        else:
            target = power.parse_probability("power", fields["target"])
            result = power.sample_size(fields["power_test"], share, target=target, **common)
    except (power.PowerError, planning.PlanError, ValueError) as exc:
        return fields, None, str(exc)
    return fields, result, None


#: The series planner's fields and their defaults (docs/researchers.md, "Planning a survey").
SERIES_FIELDS = (
    ("series_epsilon_perm", "2"),
    ("series_epsilon_1", "1"),
    ("series_options", "2"),
    ("series_margin", "0.05"),
    ("series_change_margin", "0.05"),
    ("series_mechanism", "l-grr"),
)


def _series_plan_from_args() -> tuple[dict[str, str], Any, str | None]:
    """The series planner's values, its plan (stats/series_planning.py) and any error (None
    when not asked): respondents per wave for a margin on a wave's share and on a change."""
    fields = {key: request.args.get(key, default) for key, default in SERIES_FIELDS}
    if "series_epsilon_perm" not in request.args:
        return fields, None, None
    texts = [fields[key].strip() for key, _ in SERIES_FIELDS[:5]]
    if not all(_DECIMAL.fullmatch(t) for t in texts[:2]) or not _WHOLE.fullmatch(texts[2]):
        return fields, None, "Give numbers: epsilons like 2 and 1, options like 2."
    margins: list[float | None] = []
    for text in texts[3:]:
        if text and not _DECIMAL.fullmatch(text):
            return fields, None, "Give each margin as a number like 0.05, or leave it empty."
        margins.append(float(text) if text else None)
    if margins == [None, None]:
        return fields, None, "Give a margin on a wave, on a change or both, like 0.05."
    if fields["series_mechanism"] not in series_planning.SERIES_MECHANISMS:
        return fields, None, "Choose the mechanism l-grr, l-osue or auto."
    try:
        plan = series_planning.plan_series(
            int(texts[2]),
            float(texts[0]),
            float(texts[1]),
            margin=margins[0],
            change_margin=margins[1],
            confidence=_confidence(),
            mechanism=fields["series_mechanism"],
        )
    except (planning.PlanError, ValueError, DeniableError) as exc:
        return fields, None, str(exc)
    return fields, plan, None


def _create(text: str) -> SurveyRecord:
    """Validate a survey document and store it; SurveyError says what is wrong."""
    try:
        doc = parse_json(text)
    except JSONTextError as exc:
        raise SurveyError(f"not valid JSON: {exc}") from None
    try:
        record, created = actions.create_survey(
            get_store(), doc, Limits.from_config(current_app.config), who=principal()
        )
    except ActionError as exc:
        if exc.kind in ("forbidden", "unauthenticated"):
            raise
        raise SurveyError(str(exc)) from None
    if not created:
        raise SurveyError(f"id: survey {record.id!r} already exists; choose another id")
    return record


def _from_xlsform(upload: Any, drop_unsupported: bool) -> tuple[str, list[str], list[str]]:
    """An uploaded XLSForm's survey document as JSON text (or ""), its problems (one line
    each, naming the sheet, row and column) and its notices; a file over
    forms.MAX_FORM_BYTES is refused before it is parsed."""
    raw = upload.read(forms.MAX_FORM_BYTES + 1)
    if len(raw) > forms.MAX_FORM_BYTES:
        return "", [f"larger than {forms.MAX_FORM_BYTES:,} bytes; a form is far smaller"], []
    try:
        imported = forms.read_xlsform(
            raw, filename=upload.filename or "form.xlsx", drop_unsupported=drop_unsupported
        )
    except forms.XLSFormError as exc:
        return "", exc.problems, exc.notices
    return json.dumps(imported.document, indent=2, ensure_ascii=False), [], imported.notices


@bp.route("/surveys/new", methods=["GET", "POST"])
def new_survey() -> Any:
    """Create a survey from pasted or uploaded JSON; the planner helps choose epsilon and n.
    Only for a principal that may create surveys (a 403 page otherwise); it owns what it
    creates."""
    access.require_creator(principal())
    error = None
    text = ""
    filled = None
    form_errors: list[str] = []  # shown beside the XLSForm upload (docs/xlsform.md)
    form_notices: list[str] = []
    if request.method == "POST":
        text = request.form.get("document") or ""
        upload = request.files.get("file")
        xlsform = request.files.get("xlsform")
        from_form = xlsform is not None and bool(xlsform.filename)
        if from_form:  # docs/xlsform.md: problems and notices beside the upload
            drop = request.form.get("drop_unsupported") == "yes"
            form_text, form_errors, form_notices = _from_xlsform(xlsform, drop)
            text = form_text or text
            if not form_errors and request.form.get("xlsform_action") != "create":
                filled = xlsform.filename
            elif not form_errors:
                try:
                    created = _create(text)
                except SurveyError as exc:
                    form_errors = [str(exc)]
                else:
                    flash(f"Survey {created.id!r} created from {xlsform.filename}.")
                    for notice in [*form_notices, *actions.language_notices(created)]:
                        flash(f"Note: {notice}.", "notice")
                    return redirect(url_for("dashboard.survey", survey_id=created.id))
        elif upload is not None and upload.filename:
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
        if not from_form and error is None and not text.strip():
            error = "Paste a survey document or choose a JSON file."
        if not from_form and error is None:
            try:
                created = _create(text)
            except SurveyError as exc:
                error = str(exc)
            else:
                flash(f"Survey {created.id!r} created.")
                for notice in actions.language_notices(created):
                    flash(f"Note: {notice}.", "notice")
                return redirect(url_for("dashboard.survey", survey_id=created.id))
    fields, plan_result, plan_error = _plan_from_args()
    power_fields, power_result, power_error = _power_from_args()
    series_fields, series_plan, series_error = _series_plan_from_args()
    return render_template(
        "new.html",
        series_fields=series_fields,
        series_plan=series_plan,
        series_error=series_error,
        series_mechanisms=series_planning.SERIES_MECHANISMS,
        power_fields=power_fields,
        power_result=power_result,
        power_error=power_error,
        power_tests=power.TESTS,
        power_mechanisms=tuple(power.BINARY),
        error=error,
        text=text,
        filled=filled,
        form_errors=form_errors,
        form_notices=form_notices,
        max_form_bytes=forms.MAX_FORM_BYTES,
        plan_fields=fields,
        plan=plan_result,
        plan_error=plan_error,
        mechanisms=planning.MECHANISM_NAMES,
        max_options=planning.MAX_OPTIONS,
        plan_query={key: value for key, value in fields.items() if key in request.args},
    ), (400 if error or form_errors else 200)


@bp.route("/surveys/<survey_id>/invitations", methods=["POST"])
def invitations(survey_id: str) -> Any:
    """Issue single-use invitation codes and show them once."""
    record, resolved = _survey_or_404(survey_id, "invite")
    count = parse_whole(request.form.get("count"))
    limit = min(MAX_INVITATIONS_FORM, current_app.config.get("MAX_INVITATIONS", 10_000))
    try:
        codes = actions.invite(
            get_store(), survey_id, count, limit=limit, cache=survey_cache(), who=principal()
        )
    except ActionError as exc:
        if exc.kind in ("not-found", "forbidden", "unauthenticated"):
            raise
        flash(str(exc), "error")
        return redirect(url_for("dashboard.survey", survey_id=survey_id))
    return render_template("codes.html", survey=resolved, record=record, codes=codes)


@bp.route("/surveys/<survey_id>/close", methods=["POST"])
def close(survey_id: str) -> Any:
    """Stop accepting reports."""
    _survey_or_404(survey_id, "close")
    actions.close_survey(get_store(), survey_id, who=principal())
    flash("The survey is closed: it accepts no more reports.")
    return redirect(url_for("dashboard.survey", survey_id=survey_id))


# -- people, accounts and the audit log (docs/accounts.md) ------------------------------------


def _people_page(survey_id: str, *, error: str | None = None, status: int = 200) -> Any:
    """The People tab: who has which role on the survey, with the forms to grant and revoke."""
    record, resolved = _survey_or_404(survey_id, "grant")
    grants = accounts.people(get_store(), principal(), survey_id)
    return render_template(
        "people.html",
        record=record,
        survey=resolved,
        grants=grants,
        roles=("analyst", "owner"),
        error=error,
        account=(request.form.get("account") or "")[:100] if error else "",
        **_survey_nav(survey_id),
    ), status


@bp.route("/surveys/<survey_id>/people")
def people(survey_id: str) -> Any:
    """Who has which role on the survey: for its owners and admins."""
    return _people_page(survey_id)


@bp.route("/surveys/<survey_id>/people", methods=["POST"])
def grant(survey_id: str) -> Any:
    """Give an account (by name) a role on the survey; a refusal (an unknown account, a bad
    role) is said on the People page."""
    _survey_or_404(survey_id, "grant")
    name = (request.form.get("account") or "").strip()
    role = request.form.get("role") or ""
    try:
        made = accounts.grant(get_store(), principal(), survey_id, name, role)
    except ActionError as exc:
        return _people_page(survey_id, error=str(exc), status=refusal_status(exc))
    flash(f"{made.account} is now {made.role} on this survey.")
    return redirect(url_for("dashboard.people", survey_id=survey_id))


@bp.route("/surveys/<survey_id>/people/revoke", methods=["POST"])
def revoke(survey_id: str) -> Any:
    """Take an account's role on the survey away (never its last owner's: said on the page)."""
    _survey_or_404(survey_id, "grant")
    name = (request.form.get("account") or "").strip()
    try:
        accounts.revoke(get_store(), principal(), survey_id, name)
    except ActionError as exc:
        return _people_page(survey_id, error=str(exc), status=refusal_status(exc))
    flash(f"{name} no longer has a role on this survey.")
    if access.may(principal(), access.role_on(get_store(), principal(), survey_id), "grant"):
        return redirect(url_for("dashboard.people", survey_id=survey_id))
    return redirect(url_for("dashboard.surveys"))  # an owner who revoked itself


def _accounts_page(
    *,
    error: str | None = None,
    status: int = 200,
    new_token: str | None = None,
    new_record: Any = None,
) -> Any:
    """The Accounts page: every account with its tokens, and the forms to create an account,
    create a token (shown once) and revoke a token. For admins."""
    who = principal()
    access.require_admin(who)
    store = get_store()
    tokens: dict[str, list[Any]] = {}
    for token in accounts.list_tokens(store, who):
        tokens.setdefault(token.account, []).append(token)
    return render_template(
        "accounts.html",
        accounts=accounts.list_accounts(store, who),
        tokens=tokens,
        error=error,
        new_token=new_token,
        new_record=new_record,
        now=actions.utc_now(),
    ), status


@bp.route("/accounts")
def accounts_page() -> Any:
    """Accounts and their tokens (ids and labels, never a token), for admins."""
    return _accounts_page()


@bp.route("/accounts", methods=["POST"])
def create_account() -> Any:
    """Create an account (a researcher or a team), optionally an admin."""
    access.require_admin(principal())
    name = (request.form.get("name") or "").strip()
    try:
        made = accounts.create_account(
            get_store(), principal(), name, admin=request.form.get("admin") == "1"
        )
    except ActionError as exc:
        return _accounts_page(error=str(exc), status=refusal_status(exc))
    flash(f"Account {made.name!r} created.")
    return redirect(url_for("dashboard.accounts_page"))


def _survey_ids(text: str) -> list[str]:
    """The survey ids of the token form's field (separated by commas or spaces), bounded."""
    most = accounts.MAX_TOKEN_SURVEYS
    ids = [part for part in re.split(r"[\s,]+", text, maxsplit=most + 1) if part]
    if len(ids) > most:
        raise ActionError("bad-parameter", f"surveys: at most {most} ids; leave it empty for all")
    return list(dict.fromkeys(ids))


@bp.route("/accounts/tokens", methods=["POST"])
def create_token() -> Any:
    """Make a token for an account, shown once on the page (never in a cookie or a log)."""
    access.require_admin(principal())
    form = request.form
    try:
        token, record = accounts.create_token(
            get_store(),
            principal(),
            (form.get("account") or "").strip(),
            expires=(form.get("expires") or "").strip() or None,
            read_only=form.get("read_only") == "1",
            surveys=_survey_ids(form.get("surveys") or ""),
            name=(form.get("label") or "").strip() or None,
        )
    except ActionError as exc:
        return _accounts_page(error=str(exc), status=refusal_status(exc))
    return _accounts_page(new_token=token, new_record=record)


@bp.route("/accounts/tokens/revoke", methods=["POST"])
def revoke_token() -> Any:
    """Revoke a token by its id: it, and every session opened with it, is refused from the
    next request on."""
    access.require_admin(principal())
    token_id = (request.form.get("token_id") or "").strip()[:100]
    try:
        record = accounts.revoke_token(get_store(), principal(), token_id)
    except ActionError as exc:
        return _accounts_page(error=str(exc), status=refusal_status(exc))
    flash(f"Token {record.id} of {record.account!r} is revoked.")
    return redirect(url_for("dashboard.accounts_page"))


def _newest(entries: Iterator[AuditEntry]) -> list[AuditEntry]:
    """The newest AUDIT_PAGE_LIMIT entries, newest first (memory bounded by the limit)."""
    return list(reversed(deque(entries, maxlen=AUDIT_PAGE_LIMIT)))


def _params(entry: AuditEntry) -> str:
    return json.dumps(dict(entry.params), ensure_ascii=False, sort_keys=True)


@bp.route("/audit")
def audit_log() -> Any:
    """The whole audit log's newest entries, for admins."""
    who = principal()
    access.require_admin(who)
    entries = _newest(accounts.audit_entries(get_store(), who))
    return render_template(
        "audit.html", entries=entries, params=_params, limit=AUDIT_PAGE_LIMIT, survey=None
    )


@bp.route("/surveys/<survey_id>/audit")
def survey_audit(survey_id: str) -> Any:
    """The survey's audit log, newest entries first, for its owners and admins."""
    record, resolved = _survey_or_404(survey_id, "audit")
    entries = _newest(accounts.audit_entries(get_store(), principal(), survey=survey_id))
    return render_template(
        "audit.html",
        entries=entries,
        params=_params,
        limit=AUDIT_PAGE_LIMIT,
        survey=resolved,
        record=record,
        **_survey_nav(survey_id),
    )


@bp.route("/surveys/<survey_id>/audit.jsonl")
def survey_audit_jsonl(survey_id: str) -> Response:
    """The survey's whole audit log, one JSON object a line, streamed from a store of its own
    (memory flat in its length)."""
    _survey_or_404(survey_id, "audit")
    who, stores = principal(), provider()

    def stream() -> Iterator[str]:
        with stores.borrowed() as store:
            yield from audit.lines(accounts.audit_entries(store, who, survey=survey_id))

    return Response(
        stream(),
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{survey_id}-audit.jsonl"'},
    )
