"""POST /api/v1/reports, the ingestion endpoint, answered straight from WSGI.

Checking, verifying and storing a report costs about as much CPU as Flask's per-request work
(app and request contexts, routing, the session, a Response object), so the endpoint runs as a
WSGI middleware in front of the Flask app. It answers the requests it can answer completely: a
POST to the path with a JSON body sized by Content-Length within the body limit, that parses.
Everything else goes to the Flask app, with the body given back: every other path, another
content type, a chunked body, malformed JSON. Both answer through `answer` and the same
problem+json renderers, so a report gets the same answer either way.

With DENIABLE_RATE_LIMIT set, every report request must pass Flask-Limiter, so the Flask view
answers them all and this middleware is not installed.
"""

from __future__ import annotations

import io
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
from deniable.aggregator.web import problems, retention
from deniable.aggregator.web.db import EXTENSION as STORES
from deniable.aggregator.web.db import SURVEYS
from deniable.aggregator.web.problems import Problem
from deniable.aggregator.web.statuses import REPORT_STATUS
from deniable.shared.canonical import JSONTextError, parse_json

PATH = "/api/v1/reports"
COMMITTER = "deniable.committer"
RECORDS = "deniable.survey-records"

_STATUS_LINES = {status: f"{status} {HTTPStatus(status).phrase}" for status in (200, 201)}


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
    """WSGI middleware: answers report POSTs it can answer completely, passes on the rest."""

    def __init__(self, app: Flask, wsgi_app: WSGIApp):
        self.app = app
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH or environ.get("REQUEST_METHOD") != "POST":
            return self.wsgi_app(environ, start_response)
        mimetype = environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
        length = environ.get("CONTENT_LENGTH", "")
        limit = self.app.config.get("MAX_CONTENT_LENGTH")
        if (
            mimetype != "application/json"
            or not (length.isascii() and length.isdigit())
            or (limit is not None and int(length) > limit)
        ):
            return self.wsgi_app(environ, start_response)
        try:
            data = environ["wsgi.input"].read(int(length))
            body = parse_json(data)
        except JSONTextError:  # the Flask view says what is wrong with it
            environ["wsgi.input"] = io.BytesIO(data)
            environ["CONTENT_LENGTH"] = str(len(data))
            return self.wsgi_app(environ, start_response)
        except Exception as exc:  # e.g. the server could not read the body
            return self._problem(exc, environ, start_response)
        timer = self.app.extensions.get(retention.EXTENSION)
        if timer is not None:
            timer.tick()
        try:
            with self.app.extensions[STORES].borrowed() as store:
                status, text = answer(store, body, self.app)
        except Exception as exc:
            return self._problem(exc, environ, start_response)
        payload = text.encode("utf-8")
        start_response(
            _STATUS_LINES[status],
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
        )
        return [payload]

    def _problem(
        self, exc: Exception, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        """The problem+json the Flask app answers for this exception."""
        return problems.response_for(exc, self.app.logger)(environ, start_response)


def init_app(app: Flask) -> None:
    """Serve report POSTs from `ReportEndpoint`, unless rate limits need the Flask view."""
    if not app.config.get("RATE_LIMIT"):
        app.wsgi_app = ReportEndpoint(app, app.wsgi_app)  # type: ignore[method-assign]
