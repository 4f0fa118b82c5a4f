"""No GET changes anything: every GET route is one reviewed as a read, and requesting each of
them, with the queries a hostile link could carry, leaves the database as it was (dashboard
sessions aside: a dead session is deleted when its cookie comes back; and the audit log,
which records reads too: docs/accounts.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator.store.sqlite import DB_FILE
from tests.dashboard.conftest import TOKEN

#: Every endpoint that answers GET, each reviewed: it reads (the store, a file or its
#: arguments) and writes nothing. Rate-limit counters, the retention timer (a purge the
#: operator's DENIABLE_RETENTION_DAYS schedules, whatever the request), the purge of expired
#: dashboard sessions and the audit log's record of the read are the only state a GET may
#: touch. A new GET route fails this test until
#: it is reviewed and added here.
REVIEWED_READS = {
    "static": "the respondent page's scripts and styles",
    "respond.worker_file": "the service worker and the module it imports (files)",
    "respond.versioned_file": "a file of the respondent page at its versioned URL",
    "dashboard.static": "the dashboard's stylesheet and scripts",
    "api.healthz": "a database ping",
    "api.openapi": "a file",
    "api.get_survey": "a survey",
    "api.list_surveys": "the survey list",
    "api.results": "estimates from the tallies (candidates bounded by their limits)",
    "api.series_results": "a series' waves' estimates, changes and trends (reads are audited)",
    "api.results_as_csv": "the same as CSV",
    "api.reports_jsonl": "the stored reports, streamed",
    "api.answers_csv": "every report's answers as CSV, streamed",
    "api.export_file": "the answers as .dta or .sav (bounded by its cell limit)",
    "api.analysis_r": "an R script from the survey and a checked formula",
    "api.breakdown": "a bounded analysis of two question ids",
    "api.crosstab": "a bounded analysis of two question ids",
    "api.people": "who has which role on a survey (PUT and DELETE change)",
    "api.survey_audit": "a survey's audit log, streamed",
    "respond.page": "the respondent page",
    "dashboard.login": "the login form (POST logs in)",
    "dashboard.surveys": "the survey list",
    "dashboard.survey": "a survey's results",
    "dashboard.series": "a series' waves, changes and trends (reads are audited)",
    "dashboard.qr_code": "a QR code of the respondent link",
    "dashboard.analysis": "breakdowns and cross-tabs of question ids (regression is a POST)",
    "dashboard.count": "a survey's report count",
    "dashboard.download_csv": "the results as CSV",
    "dashboard.download_reports": "the stored reports, streamed",
    "dashboard.download_answers": "every report's answers as CSV, streamed",
    "dashboard.download_stat_file": "the answers as .dta or .sav (bounded by its cell limit)",
    "dashboard.download_r_script": "an R script from the survey and a checked formula",
    "dashboard.new_survey": "the form and the planner's arithmetic (POST creates)",
    "dashboard.people": "who has which role on a survey (POST grants)",
    "dashboard.accounts_page": "accounts and their tokens' ids (POSTs to other paths change)",
    "dashboard.audit_log": "the audit log's newest entries",
    "dashboard.survey_audit": "a survey's audit log's newest entries",
    "dashboard.survey_audit_jsonl": "a survey's audit log, streamed",
}

#: What a link may point a logged-in researcher's browser at.
GETS = [
    "/",
    "/login?next=/surveys/habits",
    "/surveys/habits",
    "/surveys/habits?confidence=0.9&simultaneous=1&candidates=a,b",
    "/surveys/habits/qr.svg",
    "/series/habits-series",
    "/surveys/habits/analysis?question=smokes&by=party",
    "/surveys/habits/analysis?first=smokes&second=party",
    "/surveys/habits/analysis?formula=smokes+~+party",
    "/surveys/habits/count.json",
    "/surveys/habits/results.csv",
    "/surveys/habits/reports.jsonl",
    "/surveys/habits/answers.csv",
    "/surveys/habits/export.dta",
    "/surveys/habits/export.sav",
    "/surveys/habits/analysis.R?formula=smokes+~+1",
    "/surveys/new?power_test=one-sample&share=0.2&n=100",
    "/surveys/new?epsilon=1&margin=0.05&document=%7B%7D",
    "/surveys/habits/close",
    "/surveys/habits/invitations?count=5",
    "/surveys/habits/people?account=tests&role=analyst",
    "/surveys/habits/people/revoke?account=tests",
    "/accounts?name=evil&admin=1",
    "/accounts/tokens?account=tests",
    "/accounts/tokens/revoke?token_id=000000000000",
    "/audit",
    "/surveys/habits/audit",
    "/surveys/habits/audit.jsonl",
    "/logout",
    "/assets/dashboard.css",
    "/static/deniable.js",
    "/s/habits",
    "/healthz",
    "/api/v1/openapi.json",
    "/api/v1/surveys",
    "/api/v1/surveys/habits",
    "/api/v1/surveys/habits/results?confidence=0.9",
    "/api/v1/surveys/habits/results.csv",
    "/api/v1/series/habits-series/results",
    "/api/v1/surveys/habits/reports.jsonl",
    "/api/v1/surveys/habits/breakdown?question=smokes&by=party",
    "/api/v1/surveys/habits/crosstab?first=smokes&second=party",
    "/api/v1/surveys/habits/regression?formula=smokes+~+party",
    "/api/v1/surveys/habits/close",
    "/api/v1/surveys/habits/invitations",
    "/api/v1/surveys/habits/people",
    "/api/v1/surveys/habits/people/tests?role=analyst",
    "/api/v1/surveys/habits/audit.jsonl?since=2000-01-01",
    "/api/v1/reports",
]


#: Tables a GET may add rows to: dashboard sessions (a dead one is deleted) and the audit log
#: (reads are recorded, with their sequence numbers).
_TOUCHED = (
    'INSERT INTO "sessions"',
    'INSERT INTO "audit"',
    "INSERT INTO \"sqlite_sequence\" VALUES('audit'",
)


def _dump(app: Flask) -> list[str]:
    """Every row of every table but the dashboard sessions and the audit log, as SQL text."""
    with sqlite3.connect(Path(app.config["DATA_DIR"]) / DB_FILE) as conn:
        return [line for line in conn.iterdump() if not line.startswith(_TOUCHED)]


def test_every_get_route_is_a_reviewed_read(app: Flask) -> None:
    answering_get = {rule.endpoint for rule in app.url_map.iter_rules() if "GET" in rule.methods}
    assert answering_get == set(REVIEWED_READS)


def test_no_get_changes_the_database(app: Flask, researcher: FlaskClient) -> None:
    before = _dump(app)
    assert any("habits" in line for line in before)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    statuses = {}
    for path in GETS:
        for method in (researcher.get, researcher.head):
            response = method(path, headers=bearer)
            response.close()
            statuses[path] = response.status_code
    assert all(status < 500 for status in statuses.values()), statuses
    for post_only in (
        "/surveys/habits/close",
        "/logout",
        "/api/v1/surveys/habits/close",
        "/surveys/habits/people/revoke?account=tests",
        "/accounts/tokens?account=tests",
        "/accounts/tokens/revoke?token_id=000000000000",
        "/api/v1/surveys/habits/people/tests?role=analyst",
    ):
        assert statuses[post_only] == 405, post_only
    assert researcher.get("/").status_code == 200  # still logged in: GET /logout ends nothing
    assert _dump(app) == before
