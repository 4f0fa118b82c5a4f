"""POST /api/v1/reports, the ingestion endpoint: the one path every report takes.

Checking, verifying and storing a report costs about as much CPU as Flask's per-request work
(app and request contexts, routing, the session, a Response object), so every request to the
path is answered here, in a WSGI layer in front of the Flask app, and never by a Flask view:
the body is read through werkzeug's own size check (`get_input_stream`, as Flask reads it),
parsed by bodies.parse_json_body (as every JSON route parses its body), counted against
DENIABLE_RATE_LIMIT when set (limits.PostCounter, as enrollments are), ingested by `answer`,
and any refusal answered by problems.response_for (as the Flask app answers its errors). The
retention tick and the proxy headers are WSGI layers in front of this one (app.py). The CORS
preflight (OPTIONS) of the path is answered here too, and every answer here carries the
headers cors.headers decides (docs/operations.md#pages-hosted-elsewhere-cors). Other methods on
the path go on to Flask, whose route for it only says which methods it takes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from datetime import timedelta
from functools import partial
from http import HTTPStatus
from typing import Any

from flask import Flask

from deniable.aggregator.ingest import RecordCache, ingest, results_json
from deniable.aggregator.store import Store, open_store
from deniable.aggregator.store.commit import GroupCommitter
from deniable.aggregator.web import cors, problems
from deniable.aggregator.web.bodies import parse_json_body, read_body
from deniable.aggregator.web.db import EXTENSION as STORES
from deniable.aggregator.web.db import SURVEYS
from deniable.aggregator.web.limits import RELAYED, post_counter
from deniable.aggregator.web.problems import Problem
from deniable.aggregator.web.statuses import REPORT_STATUS

PATH = "/api/v1/reports"
COMMITTER = "deniable.committer"
RECORDS = "deniable.survey-records"

_STATUS_LINES = {status: f"{status} {HTTPStatus(status).phrase}" for status in (200, 201, 204)}
#: The methods the path takes (its Flask route's), as a preflight's Allow says them.
ALLOW = ("Allow", "OPTIONS, POST")
#: The methods a page hosted elsewhere may use on the path (a preflight's answer).
METHODS = cors.RESPONDENT_ENDPOINTS["api.reports"]


def recent_records(app: Flask) -> RecordCache:
    """The app's short-lived cache of survey records (see RecordCache)."""
    found = app.extensions.get(RECORDS)
    if found is None:
        found = app.extensions[RECORDS] = RecordCache()
    return found


def committer(app: Flask) -> GroupCommitter:
    """This process's group committer for the app (a forked worker makes its own)."""
    found = app.extensions.get(COMMITTER)
    if found is None or found[0] != os.getpid():
        writer = partial(open_store, app.config, writer=True)
        found = app.extensions[COMMITTER] = (os.getpid(), GroupCommitter(writer=writer))
    return found[1]


def answer(store: Store, body: object, app: Flask) -> tuple[int, str]:
    """The status and JSON text answering a POST of `body`: one report, or {"reports": [...]}
    with a result per report. Problem when the request is refused as a whole, or its one
    report is rejected."""
    batch = body.get("reports") if isinstance(body, dict) and body.keys() == {"reports"} else None
    if isinstance(body, list):
        batch = body
    if batch is None and isinstance(body, dict) and "reports" in body:
        raise Problem(422, 'a batch is {"reports": [...]} with a list of reports and nothing else')
    config = app.config
    options = {
        "clock_skew": timedelta(seconds=config["CLOCK_SKEW"]),
        "committer": committer(app),
        "records": recent_records(app),
        "cache": app.extensions[SURVEYS],
    }
    if batch is not None:
        limit = config["MAX_BATCH"]
        if not isinstance(batch, list) or not batch:
            raise Problem(422, "reports: expected a non-empty list of reports")
        if len(batch) > limit:
            raise Problem(
                413,
                f"a batch holds at most {limit} reports, got {len(batch)}; send smaller batches",
            )
        return 200, results_json(ingest(store, batch, **options))
    (outcome,) = ingest(store, body, **options)
    status = REPORT_STATUS[outcome.kind]
    if outcome.result == "rejected":
        raise Problem(status, outcome.reason or "rejected", **outcome.to_dict())
    return status, json.dumps(outcome.to_dict())


StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class ReportEndpoint:
    """WSGI layer: answers every POST to /api/v1/reports, passes on every other request."""

    def __init__(self, app: Flask, wsgi_app: WSGIApp):
        self.app = app
        self.wsgi_app = wsgi_app
        self.origins = cors.allowed_origins(app)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH:
            return self.wsgi_app(environ, start_response)
        method = environ.get("REQUEST_METHOD")
        if method == "OPTIONS":
            found = cors.headers(self.origins, environ.get("HTTP_ORIGIN"), METHODS)
            start_response(_STATUS_LINES[204], [ALLOW, *found])
            return []
        if method != "POST":
            return self.wsgi_app(environ, start_response)
        # No Origin (the Python client, curl): the constant Vary alone, no CORS work.
        origin = environ.get("HTTP_ORIGIN")
        extra = [cors.VARY] if origin is None else cors.headers(self.origins, origin)
        try:
            status, text = respond(self.app, environ)
        except Exception as exc:
            refusal = cors.apply(problems.response_for(exc, self.app), extra)
            return refusal(environ, start_response)
        payload = text.encode("utf-8")
        start_response(
            _STATUS_LINES[status],
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(payload))),
                *extra,
            ],
        )
        return [payload]


def respond(app: Flask, environ: dict[str, Any]) -> tuple[int, str]:
    """The status and JSON text answering one report POST; raises what refuses it."""
    counter = post_counter(app)
    address = environ.get("REMOTE_ADDR") or "127.0.0.1"
    relayed = bool(environ.get(RELAYED))  # opened by the gateway (a relay's address, perhaps)
    if counter is not None:
        counter.admit("reports", address, relayed=relayed)
    data = read_body(environ, app.config.get("MAX_CONTENT_LENGTH"))
    body = parse_json_body(data, environ.get("CONTENT_TYPE"))
    if counter is not None:
        counter.charge("reports", address, data, relayed=relayed)
    with app.extensions[STORES].borrowed() as store:
        return answer(store, body, app)


def init_app(app: Flask) -> None:
    """Answer every report POST from `ReportEndpoint`, in front of the Flask app."""
    app.wsgi_app = ReportEndpoint(app, app.wsgi_app)  # type: ignore[method-assign]
