"""Errors as application/problem+json (RFC 9457): every failure says what happened and what to do.

No request gets an HTML error page or a traceback; unexpected errors are logged and answered
with a 500 problem that points at the server log.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app
from werkzeug.exceptions import ClientDisconnected, HTTPException

from deniable.aggregator.stats.limits import LimitError
from deniable.aggregator.store import StoreError
from deniable.aggregator.surveys import ActionError
from deniable.aggregator.web.statuses import refusal_status

PROBLEM_JSON = "application/problem+json"

#: Clearer details than werkzeug's defaults, for the errors a client can cause.
DETAILS = {
    404: "no such resource; see GET /api/v1/openapi.json for the API's paths",
    405: "this path does not accept that method; the Allow header lists the ones it does",
    413: "the request body is larger than this aggregator accepts; send less (e.g. a smaller batch)",
    415: "send the body as JSON with Content-Type: application/json",
}


class Problem(Exception):
    """An error to answer as problem+json; `extra` adds members (e.g. a report's result)."""

    def __init__(
        self, status: int, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


def problem_response(
    status: int, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    """A problem+json response with type, title, status and detail (and any extra members)."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _http_error(exc: HTTPException, app: Flask) -> Response:
    status = exc.code or 500
    detail = DETAILS.get(status) or exc.description or HTTPStatus(status).phrase
    if isinstance(exc, ClientDisconnected):  # werkzeug's word for a body the server cut short
        detail = "the request body could not be read (it ended early); send it again"
    if status == 413 and app.config.get("MAX_CONTENT_LENGTH"):
        limit = app.config["MAX_CONTENT_LENGTH"]
        detail = f"the request body is larger than the limit of {limit} bytes; send less (e.g. a smaller batch)"
    headers = {}
    if exc.response is None:
        for name, value in exc.get_headers():
            if name.lower() in ("allow", "www-authenticate", "retry-after", "location"):
                headers[name] = value
    return problem_response(status, detail, headers=headers)


def _problem(exc: Problem) -> Response:
    return problem_response(exc.status, exc.detail, headers=exc.headers, **exc.extra)


def _refusal(exc: ActionError | LimitError) -> Response:
    return problem_response(refusal_status(exc), str(exc))


def _store_error(exc: Exception, logger: logging.Logger) -> Response:
    logger.error("database unavailable: %s", exc)
    return problem_response(
        503, "the database is unavailable or busy; try again shortly", headers={"Retry-After": "5"}
    )


#: Where gunicorn's errors for a request body it cannot read come from (a bad chunk size, a
#: body cut short); the app reads the body lazily, so they surface here, not in gunicorn.
SERVER_READ_ERRORS = "gunicorn.http.errors"


def _unexpected(exc: Exception, logger: logging.Logger) -> Response:
    if type(exc).__module__ == SERVER_READ_ERRORS:
        detail = str(exc)[:200] or type(exc).__name__
        return problem_response(
            400, f"the request body could not be read ({detail}); send it again"
        )
    logger.exception("unexpected error")
    return problem_response(500, "internal error; the aggregator's log has the details")


def response_for(exc: Exception, app: Flask) -> Response:
    """The problem answering any exception: what the app's error handlers answer, and what the
    report endpoint (which answers without Flask's request handling) answers."""
    logger = app.logger
    if isinstance(exc, HTTPException):
        return _http_error(exc, app)
    if isinstance(exc, Problem):
        return _problem(exc)
    # A refused action, or a request over a documented limit wherever it surfaced.
    if isinstance(exc, ActionError | LimitError):
        return _refusal(exc)
    if isinstance(exc, StoreError | sqlite3.OperationalError):
        return _store_error(exc, logger)
    return _unexpected(exc, logger)


def register(app: Flask) -> None:
    """Answer every error of the app as problem+json."""
    app.register_error_handler(HTTPException, lambda exc: _http_error(exc, current_app))
    app.register_error_handler(Exception, lambda exc: response_for(exc, current_app))
