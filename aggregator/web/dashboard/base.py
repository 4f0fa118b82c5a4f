"""The dashboard's blueprint and what every page shares: the session cookie, the login guard
and CSRF check, the security headers, who the session speaks for, and the one handler that
shows a refused action (ActionError) as a page.

A refusal of the survey's standing is the same page wherever it happens: not-found is the page
of an unknown id (so ids cannot be probed), forbidden a 403 page saying which role it needs,
unauthenticated the login. A form's own refusal (an unknown account, a bad count) is shown on
that form again: the route wraps the call in `shown_on(render)`, and the handler renders it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, get_args

from flask import (
    Blueprint,
    Flask,
    Request,
    Response,
    current_app,
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

from deniable.aggregator import access
from deniable.aggregator.access import Principal
from deniable.aggregator.params import ParamError, parse_confidence, parse_flag
from deniable.aggregator.refusals import ActionError, Refusal
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.store import SurveyRecord
from deniable.aggregator.web import problems, sessions
from deniable.aggregator.web.db import get_store, survey_cache
from deniable.aggregator.web.statuses import refusal_status
from deniable.shared import Survey
from deniable.shared.errors import DeniableError
from deniable.shared.survey import format_timestamp

T = TypeVar("T")

#: The web package's folder: its templates and static files are the dashboard's.
WEB = Path(__file__).resolve().parent.parent

bp = Blueprint(
    "dashboard",
    __name__,
    template_folder=WEB / "templates",
    static_folder=WEB / "static",
    static_url_path="/assets",
)

#: No inline script or style, nothing from another origin, never framed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: Seconds between the refresh script's checks for new reports.
REFRESH_SECONDS = 5
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

#: Refusals of the survey's standing: always its pages (unknown id, not allowed, the login),
#: never a form's message, so a form cannot tell an unseen survey from an unknown one.
STANDING: frozenset[str] = frozenset({"not-found", "forbidden", "unauthenticated"})
#: Every kind of refusal.
EVERY_KIND: frozenset[str] = frozenset(get_args(Refusal))
#: A form's own refusals: every kind but the standing ones.
FIELD_KINDS: frozenset[str] = EVERY_KIND - STANDING


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


def configure(app: Flask) -> None:
    """The session cookie's settings and interface."""
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.config["SESSION_COOKIE_SAMESITE"] = "Strict"
    app.config.setdefault("WTF_CSRF_TIME_LIMIT", None)
    app.session_interface = _SessionInterface()


# -- who is asking -----------------------------------------------------------------------------


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
        return to_login()
    return None


def to_login() -> Response:
    """To the login, coming back here after it."""
    return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))


def principal() -> Principal:
    """Who this request's session speaks for: its token's principal (the guard has already
    sent a request without a live session to the login)."""
    who = sessions.current_principal()
    if who is None:  # the session died during the request: the handler sends it to the login
        raise ActionError("unauthenticated", "log in again")
    return who


def survey_or_404(survey_id: str, action: access.Action = "view") -> tuple[SurveyRecord, Survey]:
    """The survey, if the session's principal may take `action` on it: else ActionError
    not-found (it may not see the survey: the unknown id's page) or forbidden (a 403 page)."""
    record = access.authorize(get_store(), principal(), survey_id, action)
    return record, survey_cache().survey(record)


def survey_nav(survey_id: str) -> dict[str, Any]:
    """What a survey's pages need to show only what the principal may use: its standing and,
    per action, whether it may take it."""
    who = principal()
    standing = access.role_on(get_store(), who, survey_id)
    can = {action: access.may(who, standing, action) for action in SURVEY_ACTIONS}
    return {"standing": standing, "can": can}


def status_of(record: SurveyRecord, survey: Survey) -> str:
    """Open or closed, as the survey lists and pages say it."""
    if record.closed or survey.is_closed():
        return "closed"
    return "open"


def respondent_link(survey_id: str) -> str:
    """The address respondents open to answer (as this request reached the server)."""
    return url_for("respond.page", survey_id=survey_id, _external=True)


def confidence() -> float:
    """?confidence=, or the configured level; a bad one is a ParamError (an error page)."""
    return parse_confidence(request.args.get("confidence"), current_app.config["CONFIDENCE"])


def results_options() -> dict[str, Any]:
    """The results parameters of the query string, parsed as the API parses them."""
    return {
        "confidence": confidence(),
        "simultaneous": parse_flag(request.args.get("simultaneous"), "simultaneous"),
        "limits": Limits.from_config(current_app.config),
        "cache": survey_cache(),
        # ?weighted=0: a survey with a design, unweighted (docs/statistics.md)
        "weighted": parse_flag(request.args.get("weighted", "1"), "weighted"),
    }


# -- refusals as pages ---------------------------------------------------------------------------


class _Shown(NamedTuple):
    render: Callable[[ActionError], Any]
    kinds: Collection[str]


@contextmanager
def shown_on(
    render: Callable[[ActionError], Any], kinds: Collection[str] = FIELD_KINDS
) -> Iterator[None]:
    """Within the block, a refusal of one of `kinds` is shown by `render(refusal)` (the form
    again, saying why), by the one ActionError handler; any other is that handler's page."""
    g.dashboard_shown = _Shown(render, kinds)
    yield  # a refusal leaves the block here, with dashboard_shown still set for the handler
    g.pop("dashboard_shown", None)


def attempt(run: Callable[[], T]) -> tuple[T | None, str | None]:
    """A form's result, or None and its refusal's words, for a page showing several forms'
    outcomes at once (the analyses); a refusal of the survey's standing is still the handler's."""
    try:
        return run(), None
    except DeniableError as exc:
        if isinstance(exc, ActionError) and exc.kind in STANDING:
            raise  # the survey's standing changed meanwhile: its page, not a field's
        return None, str(exc)


def error_page(title: str, message: str, status: int, **extra: Any) -> tuple[str, int]:
    """The dashboard's error page."""
    return render_template("error.html", title=title, message=message, **extra), status


def _not_found_page() -> tuple[str, int]:
    """The one page of a survey that does not exist and of one the principal may not see."""
    return error_page(
        "Not found",
        "There is no such survey here. It may have another id; the list has them all.",
        404,
    )


@bp.errorhandler(ActionError)
def _refused(exc: ActionError) -> Any:
    """The one handler of a refused action: on its form when the route said so (`shown_on`),
    else a page by its kind. Not-found is the unknown survey's page (so ids cannot be probed),
    forbidden says which role or token it needs, unauthenticated goes to the login, a bad
    parameter (?confidence=2) is said on a page as the API says it in a problem; any other
    refusal (a download over a limit) is the API's problem+json."""
    shown = g.pop("dashboard_shown", None)
    if shown is not None and exc.kind in shown.kinds:
        try:
            return shown.render(exc)
        except ActionError as again:  # the form's page itself refused: the survey's standing
            g.pop("dashboard_shown", None)
            exc = again
    if exc.kind == "not-found":
        return _not_found_page()
    if exc.kind == "unauthenticated":
        return to_login()
    if isinstance(exc, ParamError):
        said = f"{exc} Go back and choose another value."
        return error_page("Bad request", said, refusal_status(exc))
    if exc.kind != "forbidden":
        return problems.response_for(exc, current_app._get_current_object())
    said = str(exc)
    return error_page("Not allowed", said[:1].upper() + said[1:] + ".", refusal_status(exc))


@bp.errorhandler(CSRFError)
def _csrf_error(exc: CSRFError) -> tuple[str, int]:
    kept = request.form.get("document", "") if request.endpoint == "dashboard.new_survey" else ""
    return error_page(
        "Form expired",
        "The form was missing its security token or it had expired (a login lasts "
        f"{current_app.config['SESSION_HOURS']} hours). Go back, reload the page and try "
        "again." + (" Your survey document is below: copy it first." if kept else ""),
        400,
        kept=kept,
    )


@bp.errorhandler(404)
def _not_found(exc: NotFound) -> tuple[str, int]:
    return _not_found_page()


@bp.errorhandler(413)
def _too_large(exc: RequestEntityTooLarge) -> tuple[str, int]:
    limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
    return error_page(
        "Too large",
        f"The form was larger than the aggregator takes ({limit:,} bytes; "
        "DENIABLE_MAX_BODY). A survey document is far smaller: check the file.",
        413,
    )


# -- every page ------------------------------------------------------------------------------------


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
    return {
        "viewer": who,
        "may_create": who is not None and access.may_create(who),
        "is_admin": who is not None and access.is_admin(who),
    }
