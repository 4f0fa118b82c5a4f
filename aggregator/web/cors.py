"""CORS for the respondent endpoints, so a page hosted elsewhere (`deniable page export`) can
fetch the survey, enroll and send reports (docs/operations.md#pages-hosted-elsewhere-cors).

Only three routes ever answer cross-origin: GET /api/v1/surveys/<id>, POST /api/v1/reports
and POST /api/v1/surveys/<id>/enrollments, with their OPTIONS preflight. An Origin listed in
DENIABLE_PAGE_ORIGINS gets `Access-Control-Allow-Origin: <that origin>` (a preflight also the
route's methods, `Content-Type` and a max age); any other Origin gets no CORS header, so the
browser refuses. Every answer of those routes says `Vary: Origin`, none ever allows
credentials, and researcher routes never send a CORS header whatever the Origin. `headers` is
the one function that decides: the report endpoint (a WSGI layer in front of Flask) asks it for
/api/v1/reports, and the Flask hook below for the other two routes.
"""

from __future__ import annotations

from flask import Flask, Response, request

#: The respondent routes' endpoints -> the methods a page may use on them cross-origin.
RESPONDENT_ENDPOINTS = {
    "api.get_survey": "GET",
    "api.enrollments": "POST",
    "api.reports": "POST",
}
#: Where the app keeps its allowed origins (a frozenset, from DENIABLE_PAGE_ORIGINS).
EXTENSION = "deniable.page-origins"
VARY = ("Vary", "Origin")
ALLOW_HEADERS = "Content-Type"
MAX_AGE = "600"


def headers(
    allowed: frozenset[str], origin: str | None, methods: str | None = None
) -> list[tuple[str, str]]:
    """The CORS headers of an answer on a respondent route to a request from `origin` (its
    Origin header): `Vary: Origin` always, `Access-Control-Allow-Origin` for an allowed origin,
    and for a preflight (`methods` given) its methods, headers and max age."""
    if origin is None or origin not in allowed:
        return [VARY]
    # Retry-After must be readable: the page's delivery policy waits as long as it says.
    found = [
        VARY,
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Expose-Headers", "Retry-After"),
    ]
    if methods is not None:
        found += [
            ("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers", ALLOW_HEADERS),
            ("Access-Control-Max-Age", MAX_AGE),
        ]
    return found


def apply(response: Response, found: list[tuple[str, str]]) -> Response:
    """`response` with the headers `headers` decided (Origin added to any Vary it has)."""
    for name, value in found:
        if name == "Vary":
            response.vary.add(value)
        else:
            response.headers[name] = value
    return response


def allowed_origins(app: Flask) -> frozenset[str]:
    """The origins the app's respondent routes answer cross-origin."""
    found = app.extensions.get(EXTENSION)
    if found is None:
        found = app.extensions[EXTENSION] = frozenset(app.config.get("PAGE_ORIGINS") or ())
    return found


def init_app(app: Flask) -> None:
    """Add the CORS headers to every answer of the respondent routes Flask answers (errors
    too), and answer their preflight 204."""
    allowed = allowed_origins(app)

    def _cors(response: Response) -> Response:
        rule = request.url_rule
        methods = RESPONDENT_ENDPOINTS.get(rule.endpoint) if rule is not None else None
        if methods is None:
            return response
        preflight = request.method == "OPTIONS"
        if preflight:
            response.status_code = 204
            response.set_data(b"")
            response.headers.pop("Content-Type", None)
        return apply(
            response,
            headers(allowed, request.headers.get("Origin"), methods if preflight else None),
        )

    # On the API blueprint's answers only (the dashboard's and the page's never pass here).
    app.after_request_funcs.setdefault("api", []).append(_cors)
