"""CORS on the respondent endpoints only (docs/operations.md#pages-hosted-elsewhere-cors): the
survey document, reports and enrollments answer an origin in DENIABLE_PAGE_ORIGINS, with their
preflight; every answer of theirs says Vary: Origin; researcher routes never answer another
origin; the setting is checked at start."""

from __future__ import annotations

import copy
import os
import re
import subprocess
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import create_app, credentials
from deniable.aggregator.config import ConfigError, from_env, parse_origins
from deniable.aggregator.surveys import enrollment_proof
from deniable.aggregator.web.cors import RESPONDENT_ENDPOINTS
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key, public_key_text, sign
from tests.aggregator.conftest import SURVEY_DOC, TOKEN, TRUTH
from tests.conftest import AGGREGATOR

PAGE = "https://pages.example.org"
LOCAL = "http://localhost:8080"
STRANGER = "https://evil.example.net"
ORIGINS = f"{PAGE}, {LOCAL}"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def cors_headers(response: Any) -> dict[str, str]:
    """The response's Access-Control-* headers, by lower-case name."""
    return {
        name.lower(): value
        for name, value in response.headers.items()
        if name.lower().startswith("access-control-")
    }


def varies_on_origin(response: Any) -> bool:
    values = [v for name, v in response.headers.items() if name.lower() == "vary"]
    return "origin" in {part.strip().lower() for v in values for part in v.split(",")}


def assert_allowed(response: Any, origin: str) -> None:
    """A simple (non-preflight) answer that lets `origin` read it and its Retry-After (the
    page's delivery policy waits that long), and nothing more."""
    assert cors_headers(response) == {
        "access-control-allow-origin": origin,
        "access-control-expose-headers": "Retry-After",
    }, response.headers
    assert varies_on_origin(response)


def assert_refused(response: Any) -> None:
    """An answer with no CORS header (the browser refuses it), that still says Vary: Origin."""
    assert cors_headers(response) == {}, response.headers
    assert varies_on_origin(response)


def assert_preflight(response: Any, origin: str, methods: str) -> None:
    assert response.status_code == 204, response.get_data(as_text=True)
    assert not response.get_data()
    assert cors_headers(response) == {
        "access-control-allow-origin": origin,
        "access-control-expose-headers": "Retry-After",
        "access-control-allow-methods": methods,
        "access-control-allow-headers": "Content-Type",
        "access-control-max-age": "600",
    }
    assert varies_on_origin(response)


@pytest.fixture
def app(tmp_path) -> Flask:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", "PAGE_ORIGINS": ORIGINS})
    with app.app_context():
        get_store().add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
    return app


@pytest.fixture
def survey(client: FlaskClient) -> Survey:
    created = client.post("/api/v1/surveys", json=copy.deepcopy(SURVEY_DOC), headers=AUTH)
    assert created.status_code == 201
    assert cors_headers(created) == {}  # creating is a researcher's route
    return Survey.from_dict(created.get_json()["survey"])


@pytest.fixture
def invite_survey(client: FlaskClient) -> tuple[Survey, list[str]]:
    doc = {**copy.deepcopy(SURVEY_DOC), "id": "private", "enrollment": "invite"}
    created = client.post("/api/v1/surveys", json=doc, headers=AUTH)
    survey = Survey.from_dict(created.get_json()["survey"])
    codes = client.post("/api/v1/surveys/private/invitations", json={"count": 2}, headers=AUTH)
    return survey, codes.get_json()["codes"]


def origin(value: str | None) -> dict[str, str]:
    return {} if value is None else {"Origin": value}


# -- the survey document -------------------------------------------------------------------


@pytest.mark.parametrize("page", [PAGE, LOCAL])
def test_an_allowed_origin_reads_the_survey_and_its_problems(client, survey, page):
    found = client.get(f"/api/v1/surveys/{survey.id}", headers=origin(page))
    assert found.status_code == 200 and found.get_json()["survey_hash"] == survey.hash
    assert_allowed(found, page)
    missing = client.get("/api/v1/surveys/nope", headers=origin(page))
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
    assert_allowed(missing, page)


@pytest.mark.parametrize("sent", [STRANGER, "null", f"{PAGE}:8443", "http://pages.example.org"])
def test_another_origin_gets_no_cors_header(client, survey, sent):
    found = client.get(f"/api/v1/surveys/{survey.id}", headers=origin(sent))
    assert found.status_code == 200  # the server answers; the browser keeps it from the page
    assert_refused(found)
    assert_refused(client.get("/api/v1/surveys/nope", headers=origin(sent)))


def test_no_origin_gets_only_vary(client, survey):
    found = client.get(f"/api/v1/surveys/{survey.id}")
    assert found.status_code == 200
    assert_refused(found)
    assert_refused(client.get("/api/v1/surveys/nope"))


# -- reports, answered by the report endpoint in front of Flask ---------------------------------


def test_report_posts_from_an_allowed_origin(client, survey):
    report = make_report(survey, TRUTH, generate_key())
    sent = client.post("/api/v1/reports", json=report, headers=origin(PAGE))
    assert sent.status_code == 201, sent.get_data(as_text=True)
    assert_allowed(sent, PAGE)
    again = client.post("/api/v1/reports", json=report, headers=origin(PAGE))
    assert again.status_code == 200 and again.get_json()["result"] == "duplicate"
    assert_allowed(again, PAGE)
    batch = [make_report(survey, TRUTH, generate_key()) for _ in range(2)]
    sent = client.post("/api/v1/reports", json={"reports": batch}, headers=origin(LOCAL))
    assert sent.status_code == 200 and len(sent.get_json()["results"]) == 2
    assert_allowed(sent, LOCAL)


def test_refused_reports_carry_the_cors_headers_too(client, survey):
    forged = make_report(survey, TRUTH, generate_key())
    forged["answers"]["smokes"] = 1 - forged["answers"]["smokes"]  # the signature no longer fits
    problems = [
        client.post("/api/v1/reports", json=forged, headers=origin(PAGE)),
        client.post(
            "/api/v1/reports", data="{", content_type="application/json", headers=origin(PAGE)
        ),
        client.post("/api/v1/reports", data="{}", content_type="text/plain", headers=origin(PAGE)),
        client.post("/api/v1/reports", json={"reports": []}, headers=origin(PAGE)),
    ]
    assert [p.status_code for p in problems] == [422, 400, 415, 422]
    for problem in problems:
        assert problem.mimetype == "application/problem+json"
        assert_allowed(problem, PAGE)
    for sent in (STRANGER, None):
        refused = client.post("/api/v1/reports", json=forged, headers=origin(sent))
        assert refused.status_code == 422
        assert_refused(refused)


def test_a_report_from_another_origin_or_none_gets_no_cors_header(client, survey):
    for sent in (STRANGER, None):
        answered = client.post(
            "/api/v1/reports", json=make_report(survey, TRUTH, generate_key()), headers=origin(sent)
        )
        assert answered.status_code == 201
        assert_refused(answered)


def test_rate_limited_reports_still_say_who_may_read_them(tmp_path):
    app = create_app(
        {"DATA_DIR": tmp_path / "data", "PAGE_ORIGINS": PAGE, "RATE_LIMIT": "1/minute"}
    )
    with app.app_context():
        get_store().add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
    client = app.test_client()
    survey = Survey.from_dict(
        client.post("/api/v1/surveys", json=copy.deepcopy(SURVEY_DOC), headers=AUTH).get_json()[
            "survey"
        ]
    )
    first = client.post(
        "/api/v1/reports", json=make_report(survey, TRUTH, generate_key()), headers=origin(PAGE)
    )
    assert first.status_code == 201
    limited = client.post(
        "/api/v1/reports", json=make_report(survey, TRUTH, generate_key()), headers=origin(PAGE)
    )
    assert limited.status_code == 429 and "Retry-After" in limited.headers
    assert_allowed(limited, PAGE)  # the page can read the problem and when to send again


# -- enrollments ---------------------------------------------------------------------------


def test_enrollments_from_an_allowed_origin(client, invite_survey):
    survey, codes = invite_survey
    key = generate_key()
    pk = public_key_text(key)
    body = {"public_key": pk, "invitation": codes[0]}
    body["signature"] = sign(key, enrollment_proof(survey, pk, codes[0]))
    path = f"/api/v1/surveys/{survey.id}/enrollments"
    enrolled = client.post(path, json=body, headers=origin(PAGE))
    assert enrolled.status_code == 201 and enrolled.get_json() == {"enrolled": True}
    assert_allowed(enrolled, PAGE)
    wrong = client.post(path, json={**body, "invitation": "AAAA-BBBB-CCCC"}, headers=origin(PAGE))
    # The signature covers the code: another code is a 422 problem.
    assert wrong.status_code == 422 and wrong.mimetype == "application/problem+json"
    assert_allowed(wrong, PAGE)
    nowhere = client.post("/api/v1/surveys/nope/enrollments", json=body, headers=origin(LOCAL))
    assert nowhere.status_code == 404
    assert_allowed(nowhere, LOCAL)
    for sent in (STRANGER, None):
        assert_refused(client.post(path, json=body, headers=origin(sent)))


# -- preflight -----------------------------------------------------------------------------

PREFLIGHTS = [
    ("/api/v1/surveys/habits", "GET"),
    ("/api/v1/surveys/nope", "GET"),  # a preflight says nothing about the survey
    ("/api/v1/reports", "POST"),
    ("/api/v1/surveys/habits/enrollments", "POST"),
]


@pytest.mark.parametrize(("path", "method"), PREFLIGHTS)
def test_preflight_of_each_respondent_route(client, survey, path, method):
    asked = {
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "content-type",
    }
    for page in (PAGE, LOCAL):
        assert_preflight(client.options(path, headers={**asked, "Origin": page}), page, method)
    for sent in (STRANGER, None):
        refused = client.options(path, headers={**asked, **origin(sent)})
        assert refused.status_code == 204
        assert_refused(refused)
    allow = client.options(path, headers={**asked, "Origin": PAGE}).headers["Allow"]
    assert method in allow.replace(" ", "").split(",")


# -- researcher routes never ---------------------------------------------------------------


def example_path(rule: Any) -> str:
    """A concrete path for a rule: every variable filled with the survey's id or a name."""
    return re.sub(
        r"<(?:[^:<>]+:)?([^<>]+)>", lambda m: "habits" if "survey" in m[1] else "x", rule.rule
    )


def test_no_other_route_answers_another_origin(app, client, survey):
    others = [r for r in app.url_map.iter_rules() if r.endpoint not in RESPONDENT_ENDPOINTS]
    assert len(others) > 20  # the API's researcher routes, the dashboard, the page, static files
    asked = 0
    for rule in others:
        path = example_path(rule)
        for method in sorted(rule.methods):
            headers = {
                **AUTH,
                "Origin": PAGE,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, authorization",
            }
            response = client.open(path, method=method, headers=headers, json={})
            asked += 1
            assert cors_headers(response) == {}, (method, path, response.headers)
            response.close()
    assert asked > 2 * len(others)
    # The respondent routes under the same prefixes do answer the page (the walk above is real).
    assert_allowed(client.get("/api/v1/surveys/habits", headers=origin(PAGE)), PAGE)


def test_unset_no_route_answers_any_origin(tmp_path):
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data"})
    assert app.config["PAGE_ORIGINS"] == ()
    client = app.test_client()
    for path, method in PREFLIGHTS:
        headers = {"Origin": PAGE, "Access-Control-Request-Method": method}
        preflight = client.options(path, headers=headers)
        assert preflight.status_code == 204
        assert_refused(preflight)
    assert_refused(client.get("/api/v1/surveys/nope", headers=origin(PAGE)))
    assert_refused(client.post("/api/v1/reports", json={}, headers=origin(PAGE)))


# -- the setting ---------------------------------------------------------------------------


def test_origins_are_normalized_as_browsers_send_them():
    given = " HTTPS://Pages.Example.org:443/ ,http://localhost:8080,http://127.0.0.1:80,,https://[::1]:8443"
    assert from_env({"DENIABLE_PAGE_ORIGINS": given})["PAGE_ORIGINS"] == (
        "https://pages.example.org",
        "http://localhost:8080",
        "http://127.0.0.1",
        "https://[::1]:8443",
    )
    assert parse_origins([PAGE, PAGE]) == (PAGE,)
    assert from_env({"DENIABLE_PAGE_ORIGINS": ""}) == {}
    app = create_app(
        {"DATA_DIR": "/nonexistent-never-opened", "PAGE_ORIGINS": ["HTTP://LOCALHOST:8080"]}
    )
    assert app.config["PAGE_ORIGINS"] == (LOCAL,)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("*", "any web page"),
        (f"{PAGE},*", "'*' is not allowed"),
        ("https://pages.example.org/survey", "no path"),
        ("https://pages.example.org?x=1", "no path, query"),
        ("ftp://pages.example.org", "http or https"),
        ("pages.example.org", "http or https"),
        ("https://user@pages.example.org", "no user"),
        ("https://pages.example.org:99999", "not an origin"),
        ("https://pages.example.org:0", "port"),
        ("https://", "not a host"),
        ("https://bad_host.example", "not a host"),
        ("https://pages.ex\tample.org", "no spaces"),
        ("https://bücher.example", "punycode"),
        ("null", "http or https"),
        (",".join(f"https://p{i}.example" for i in range(101)), "at most 100"),
    ],
)
def test_a_bad_origin_stops_the_start_naming_the_setting(given, says):
    with pytest.raises(ConfigError, match="^DENIABLE_PAGE_ORIGINS: ") as caught:
        from_env({"DENIABLE_PAGE_ORIGINS": given})
    assert says in str(caught.value)
    assert len(str(caught.value)) < 300 and "\n" not in str(caught.value)


@pytest.mark.parametrize("given", ["*", 42, ["https://a.example", 7], "https://a.example/x"])
def test_a_bad_origin_given_to_create_app_is_refused(tmp_path, given):
    with pytest.raises(ConfigError, match="^PAGE_ORIGINS: "):
        create_app({"DATA_DIR": tmp_path / "data", "PAGE_ORIGINS": given})


def test_the_console_script_says_one_line(tmp_path):
    env = {**os.environ, "DENIABLE_DATA_DIR": str(tmp_path / "data"), "DENIABLE_PAGE_ORIGINS": "*"}
    result = subprocess.run(
        [str(AGGREGATOR), "run", "--port", "1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: DENIABLE_PAGE_ORIGINS: '*' is not allowed")
    assert result.stderr.count("\n") == 1


# -- over real HTTP ------------------------------------------------------------------------


def test_preflight_and_post_over_http(live_server_factory):
    server = live_server_factory({"DENIABLE_PAGE_ORIGINS": ORIGINS})
    survey = Survey.from_dict(server.create_survey(copy.deepcopy(SURVEY_DOC))["survey"])
    preflight = requests.options(
        f"{server.url}/api/v1/reports",
        headers={
            "Origin": PAGE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
        timeout=10,
    )
    assert preflight.status_code == 204 and preflight.content == b""
    assert cors_headers(preflight) == {
        "access-control-allow-origin": PAGE,
        "access-control-expose-headers": "Retry-After",
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": "Content-Type",
        "access-control-max-age": "600",
    }
    assert varies_on_origin(preflight)
    sent = requests.post(
        f"{server.url}/api/v1/reports",
        json=make_report(survey, TRUTH, generate_key()),
        headers={"Origin": PAGE},
        timeout=10,
    )
    assert sent.status_code == 201, sent.text
    assert_allowed(sent, PAGE)
    fetched = requests.get(
        f"{server.url}/api/v1/surveys/habits", headers={"Origin": LOCAL}, timeout=10
    )
    assert fetched.status_code == 200 and fetched.json()["survey_hash"] == survey.hash
    assert_allowed(fetched, LOCAL)
    stranger = requests.post(
        f"{server.url}/api/v1/reports",
        json=make_report(survey, TRUTH, generate_key()),
        headers={"Origin": STRANGER},
        timeout=10,
    )
    assert stranger.status_code == 201
    assert_refused(stranger)
    researcher = requests.get(
        f"{server.url}/api/v1/surveys", headers={**server.headers, "Origin": PAGE}, timeout=10
    )
    assert researcher.status_code == 200 and cors_headers(researcher) == {}
    assert server.results("habits")["n"] == 2
