"""The HTTP API through Flask's test client: status codes, result objects, problem+json."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from deniable.aggregator import create_app, credentials
from deniable.aggregator.stats import analyze
from deniable.aggregator.stats.estimate import CSV_COLUMNS
from deniable.aggregator.surveys import enrollment_proof
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, sign_report
from deniable.shared.signing import generate_key, public_key_text, sign

PROBLEM = "application/problem+json"


def assert_problem(response, status: int, detail: str = "") -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM
    body = response.get_json(force=True)
    assert {"type", "title", "status", "detail"} <= set(body)
    assert body["status"] == status
    assert detail in body["detail"]
    return body


@pytest.fixture
def published(client, auth, survey_doc) -> Survey:
    response = client.post("/api/v1/surveys", json=survey_doc, headers=auth)
    assert response.status_code == 201
    return Survey.from_dict(response.get_json()["survey"])


def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}


def test_get_survey_gives_the_resolved_form_and_its_hash(client, published):
    body = client.get(f"/api/v1/surveys/{published.id}").get_json()
    assert set(body) == {"survey", "survey_hash"}
    assert body["survey"] == published.to_dict()
    assert body["survey_hash"] == published.hash == Survey.from_dict(body["survey"]).hash


def test_an_unknown_survey_is_404(client):
    assert_problem(client.get("/api/v1/surveys/nope"), 404, "nope")


def test_researcher_endpoints_need_a_token(client, survey_doc):
    response = client.post("/api/v1/surveys", json=survey_doc)
    assert_problem(response, 401, "create-token")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    wrong = client.get("/api/v1/surveys", headers={"Authorization": "Bearer wrong"})
    assert_problem(wrong, 401)
    assert 'error="invalid_token"' in wrong.headers["WWW-Authenticate"]
    for path in (
        "/api/v1/surveys/x/results",
        "/api/v1/surveys/x/results.csv",
        "/api/v1/surveys/x/reports.jsonl",
    ):
        assert_problem(client.get(path), 401)
    assert_problem(client.post("/api/v1/surveys/x/close"), 401)
    assert_problem(client.post("/api/v1/surveys/x/invitations", json={"count": 1}), 401)


def test_creating_a_survey(client, auth, survey_doc):
    response = client.post("/api/v1/surveys", json=survey_doc, headers=auth)
    assert response.status_code == 201
    body = response.get_json()
    assert body["id"] == "habits" and body["survey_hash"] == Survey.from_dict(survey_doc).hash
    assert response.headers["Location"].endswith("/api/v1/surveys/habits")
    again = client.post("/api/v1/surveys", json=survey_doc, headers=auth)
    assert again.status_code == 200 and again.get_json() == body
    changed = {**survey_doc, "title": "Another"}
    assert_problem(client.post("/api/v1/surveys", json=changed, headers=auth), 409, "another id")
    invalid = {**survey_doc, "questions": []}
    assert_problem(client.post("/api/v1/surveys", json=invalid, headers=auth), 422, "questions")


def test_listing_surveys_with_report_counts(client, auth, published, report_for):
    client.post("/api/v1/reports", json=report_for(published))
    (listed,) = client.get("/api/v1/surveys", headers=auth).get_json()["surveys"]
    assert (
        listed["id"] == published.id and listed["report_count"] == 1 and listed["closed"] is False
    )


def test_a_single_report_accepted_then_duplicate(client, published, report_for):
    report = report_for(published)
    first = client.post("/api/v1/reports", json=report)
    assert first.status_code == 201
    assert first.get_json() == {"report_id": report["report_id"], "result": "accepted"}
    again = client.post("/api/v1/reports", json=report)
    assert again.status_code == 200
    assert again.get_json() == {"report_id": report["report_id"], "result": "duplicate"}


def test_a_report_in_another_languages_formats_is_counted_once(client, auth, published, report_for):
    """Upper-case UUID and hash, sent_at as JavaScript writes it: accepted, then duplicate."""
    report = report_for(published)
    report = sign_report(
        {
            **{k: v for k, v in report.items() if k != "signature"},
            "report_id": report["report_id"].upper(),
            "survey_hash": published.hash.upper(),
            "sent_at": report["sent_at"].replace(":00:00Z", ":00:00.000Z"),
        },
        generate_key(),
    )
    assert client.post("/api/v1/reports", json=report).status_code == 201
    again = client.post("/api/v1/reports", json=report)
    assert again.get_json() == {"report_id": report["report_id"], "result": "duplicate"}
    results = client.get(f"/api/v1/surveys/{published.id}/results", headers=auth).get_json()
    assert results["n"] == 1
    export = client.get(f"/api/v1/surveys/{published.id}/reports.jsonl", headers=auth)
    assert json.loads(export.get_data(as_text=True)) == report


def test_a_rejected_report_is_problem_json_with_its_result(client, published, report_for):
    key = generate_key()
    client.post("/api/v1/reports", json=report_for(published, key))
    second = report_for(published, key)
    body = assert_problem(client.post("/api/v1/reports", json=second), 409)
    assert body["report_id"] == second["report_id"]
    assert body["result"] == "rejected" and "already answered" in body["reason"]
    tampered = report_for(published)
    tampered["answers"]["smokes"] = 1 - tampered["answers"]["smokes"]
    body = assert_problem(client.post("/api/v1/reports", json=tampered), 422, "signature")
    assert body["result"] == "rejected"
    unknown = assert_problem(client.post("/api/v1/reports", json={**second, "survey": "nope"}), 404)
    assert unknown["result"] == "rejected"


def test_a_float_answer_gets_a_result_too(client, published, report_for):
    report = report_for(published)
    report["answers"]["smokes"] = 1.0
    body = assert_problem(client.post("/api/v1/reports", json=report), 422, "float")
    assert body["report_id"] == report["report_id"]


def test_a_batch_answers_in_order(client, auth, published, report_for):
    key = generate_key()
    good = report_for(published, key)
    batch = [good, report_for(published, key), {"v": 1}, good, report_for(published)]
    response = client.post("/api/v1/reports", json={"reports": batch})
    assert response.status_code == 200
    results = response.get_json()["results"]
    assert [r["result"] for r in results] == [
        "accepted",
        "rejected",
        "rejected",
        "duplicate",
        "accepted",
    ]
    assert "reason" not in results[0] and results[1]["reason"]
    summary = client.get(f"/api/v1/surveys/{published.id}/results", headers=auth).get_json()
    assert summary["n"] == 2


def test_batch_limits(app, client, published, report_for):
    app.config["MAX_BATCH"] = 2
    reports = [report_for(published) for _ in range(3)]
    assert_problem(client.post("/api/v1/reports", json={"reports": reports}), 413, "at most 2")
    assert_problem(client.post("/api/v1/reports", json={"reports": []}), 422)
    assert_problem(client.post("/api/v1/reports", json={"reports": reports[:1], "x": 1}), 422)


def test_invitations_and_enrollment(client, auth, invite_doc, report_for):
    survey = Survey.from_dict(
        client.post("/api/v1/surveys", json=invite_doc, headers=auth).get_json()["survey"]
    )
    response = client.post(
        f"/api/v1/surveys/{survey.id}/invitations", json={"count": 3}, headers=auth
    )
    assert response.status_code == 201
    codes = response.get_json()["codes"]
    assert len(codes) == 3 == len(set(codes))
    key = generate_key()
    unenrolled = assert_problem(client.post("/api/v1/reports", json=report_for(survey, key)), 403)
    assert unenrolled["result"] == "rejected"

    def enroll(key, code, *, signer=None):
        pk = public_key_text(key)
        signature = sign(signer or key, enrollment_proof(survey, pk, code))
        return client.post(
            f"/api/v1/surveys/{survey.id}/enrollments",
            json={"public_key": pk, "invitation": code, "signature": signature},
        )

    assert_problem(enroll(key, codes[0], signer=generate_key()), 422, "signature")
    assert_problem(enroll(key, "AAAA-BBBB-CCCC"), 403, "invitation")
    first = enroll(key, codes[0].lower().replace("-", ""))  # codes are typed by people
    assert first.status_code == 201 and first.get_json() == {"enrolled": True}
    assert enroll(key, codes[1]).status_code == 200  # already enrolled: spends nothing
    assert_problem(enroll(generate_key(), codes[0]), 409, "already used")
    assert enroll(generate_key(), codes[1]).status_code == 201
    assert client.post("/api/v1/reports", json=report_for(survey, key)).status_code == 201


def test_invitations_need_an_invite_only_survey_and_a_count(client, auth, published):
    path = f"/api/v1/surveys/{published.id}/invitations"
    assert_problem(client.post(path, json={"count": 2}, headers=auth), 409, "open to everyone")
    assert_problem(
        client.post("/api/v1/surveys/nope/invitations", json={"count": 2}, headers=auth), 404
    )
    for bad in ({"count": 0}, {"count": "3"}, {}, [1], {"count": 1, "extra": 2}):
        assert_problem(client.post(path, json=bad, headers=auth), 422, "count")


def test_closing_a_survey_stops_reports(client, auth, published, report_for):
    sent = report_for(published)
    client.post("/api/v1/reports", json=sent)
    response = client.post(f"/api/v1/surveys/{published.id}/close", headers=auth)
    assert response.status_code == 200 and response.get_json()["closed"] is True
    assert client.post(f"/api/v1/surveys/{published.id}/close", headers=auth).status_code == 200
    assert_problem(client.post("/api/v1/reports", json=report_for(published)), 409, "closed")
    assert (
        client.post("/api/v1/reports", json=sent).status_code == 200
    )  # a resend stays a duplicate
    assert_problem(client.post("/api/v1/surveys/nope/close", headers=auth), 404)


def test_results_json_csv_and_export_agree(client, auth, published, report_for):
    client.post("/api/v1/reports", json={"reports": [report_for(published) for _ in range(30)]})
    base = f"/api/v1/surveys/{published.id}"
    doc = client.get(f"{base}/results", headers=auth).get_json()
    assert doc["survey"] == published.id and doc["n"] == 30 and doc["confidence"] == 0.95
    assert [q["id"] for q in doc["questions"]] == list(published.questions)
    export = client.get(f"{base}/reports.jsonl", headers=auth)
    assert export.status_code == 200
    lines = export.get_data(as_text=True).splitlines()
    assert len(lines) == 30
    assert analyze(published, [json.loads(line) for line in lines]) == doc
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"{base}/results.csv", headers=auth).get_data(as_text=True))
        )
    )
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == sum(q.k for q in published.questions.values())
    assert int(rows[0]["support"]) == doc["questions"][0]["options"][0]["support"]


def test_results_options(client, auth, published):
    base = f"/api/v1/surveys/{published.id}/results"
    doc = client.get(f"{base}?confidence=0.9&simultaneous=true", headers=auth).get_json()
    assert doc["confidence"] == 0.9 and doc["simultaneous"] is True
    extreme = client.get(f"{base}?confidence=0.9999999999999999&simultaneous=1", headers=auth)
    assert extreme.status_code == 200 and extreme.get_json()["confidence"] == 0.9999999999999999
    assert_problem(client.get(f"{base}?confidence=2", headers=auth), 400, "confidence")
    assert_problem(client.get(f"{base}?confidence=abc", headers=auth), 400, "confidence")
    assert_problem(client.get(f"{base}?simultaneous=maybe", headers=auth), 400, "simultaneous")
    assert_problem(client.get("/api/v1/surveys/nope/results", headers=auth), 404)
    assert_problem(client.get("/api/v1/surveys/nope/reports.jsonl", headers=auth), 404)


@pytest.mark.parametrize(
    ("data", "content_type", "status"),
    [
        (b"{", "application/json", 400),
        (b"", "application/json", 400),
        (b"\xff\xfe{}", "application/json", 400),
        (b"[NaN]", "application/json", 400),
        (b'{"a": Infinity}', "application/json", 400),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", 400),
        (b"{}", "text/plain", 415),
        (b"{}", None, 415),
        (b"v=1", "application/x-www-form-urlencoded", 415),
    ],
)
def test_bad_bodies_get_4xx_problems(client, data, content_type, status):
    headers = {"Content-Type": content_type} if content_type else {}
    assert_problem(client.post("/api/v1/reports", data=data, headers=headers), status)


def test_a_lone_surrogate_anywhere_is_malformed_json(client, auth, published, report_for):
    """JSON's \\ud800 escape parses to a str no UTF-8 store or hash takes: 400, never 500."""
    report = report_for(published)
    lone = json.dumps({**report, "report_id": "\ud800"})  # json.dumps writes the escape
    assert "\\ud800" in lone
    batch = json.dumps({"reports": [report_for(published), json.loads(lone)]})
    survey = json.dumps(
        {
            "id": "s2",
            "title": "caf\ud800",
            "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
        }
    )
    enrollment = json.dumps({"public_key": "x", "invitation": "\ud800", "signature": "y"})
    headers = {**auth, "Content-Type": "application/json"}
    for path, body in [
        ("/api/v1/reports", lone),
        ("/api/v1/reports", batch),
        ("/api/v1/surveys", survey),
        (f"/api/v1/surveys/{published.id}/enrollments", enrollment),
    ]:
        assert_problem(client.post(path, data=body, headers=headers), 400, "surrogate")
    results = client.get(f"/api/v1/surveys/{published.id}/results", headers=auth).get_json()
    assert results["n"] == 0  # the batch's valid report was not stored either
    emoji = survey.replace("caf\\ud800", "caf\\u00e9 \\ud83d\\ude00")  # a valid pair
    created = client.post("/api/v1/surveys", data=emoji, headers=headers)
    assert created.status_code == 201 and created.get_json()["survey"]["title"] == "café 😀"


def test_a_body_over_the_limit_is_413(tmp_path, report_for):
    app = create_app({"DATA_DIR": tmp_path, "MAX_CONTENT_LENGTH": 2048})
    response = app.test_client().post(
        "/api/v1/reports", data=b"[" + b"1," * 2000 + b"1]", content_type="application/json"
    )
    assert_problem(response, 413, "2048")


def test_unknown_paths_and_methods_are_problems(client):
    assert_problem(client.get("/nowhere"), 404)
    response = client.delete("/api/v1/reports")
    assert_problem(response, 405)
    assert "POST" in response.headers["Allow"]
    assert_problem(client.put("/api/v1/surveys/x"), 405)


def test_an_unexpected_error_is_a_500_problem_without_a_traceback(app):
    def boom():
        raise RuntimeError("secret internals")

    app.add_url_rule("/boom", view_func=boom)
    body = assert_problem(app.test_client().get("/boom"), 500)
    assert "secret internals" not in json.dumps(body) and "Traceback" not in json.dumps(body)


def test_researcher_tokens_are_stored_hashed(app):
    with app.app_context():
        (token,) = get_store().list_tokens()
        found = get_store().token_by_hash(credentials.digest("test-researcher-token"))
    assert token.id == credentials.digest("test-researcher-token")[:12] and found == token


def test_no_connection_is_opened_by_create_app(tmp_path):
    create_app({"DATA_DIR": tmp_path / "never"})
    assert not (tmp_path / "never").exists()


def test_a_chunked_body_over_the_limit_is_413_not_truncated(tmp_path):
    app = create_app({"DATA_DIR": tmp_path, "MAX_CONTENT_LENGTH": 2048})
    body = io.BytesIO(b"[" + b"1," * 2000 + b"1]")
    response = app.test_client().post(
        "/api/v1/reports",
        input_stream=body,
        content_type="application/json",
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_problem(response, 413)


def test_a_whole_count_written_with_a_point_is_a_whole_number(client, auth, invite_doc):
    # JSON has one number type and JSON Schema calls 2.0 an integer: so does the server.
    client.post("/api/v1/surveys", json=invite_doc, headers=auth)
    path = f"/api/v1/surveys/{invite_doc['id']}/invitations"
    response = client.post(path, json={"count": 2.0}, headers=auth)
    assert response.status_code == 201 and len(response.get_json()["codes"]) == 2
    for bad in (2.5, 0.0, 10_001.0, float("1e300")):
        assert_problem(client.post(path, json={"count": bad}, headers=auth), 422, "count")


@pytest.mark.parametrize(
    "query, detail",
    [
        ("confidence=", "confidence: empty"),
        ("simultaneous=", "simultaneous: empty"),
        ("confidence=0.9&confidence=0.8", "give it once"),
        ("simultaneous=TRUE", "expected true or false"),
        ("simultaneous=%20yes", "expected true or false"),
    ],
)
def test_results_parameters_are_exactly_what_the_document_says(
    client, auth, published, query, detail
):
    for suffix in ("results", "results.csv"):
        response = client.get(f"/api/v1/surveys/{published.id}/{suffix}?{query}", headers=auth)
        assert_problem(response, 400, detail)
    ok = client.get(f"/api/v1/surveys/{published.id}/results?simultaneous=on", headers=auth)
    assert ok.status_code == 200 and ok.get_json()["simultaneous"] is True
