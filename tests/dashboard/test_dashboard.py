"""The dashboard over Flask's test client: login, no leaks, CSRF, charts, downloads, forms."""

from __future__ import annotations

import io
import json
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from tests.dashboard.conftest import DOC, SECRET_TITLE, TOKEN, csrf_of

PAGES = [
    "/",
    "/surveys/habits",
    "/surveys/habits?confidence=0.9",
    "/surveys/habits/results.csv",
    "/surveys/habits/reports.jsonl",
    "/surveys/habits/count.json",
    "/surveys/new",
    "/surveys/new?epsilon=1&margin=0.05",
    "/surveys/nosuch",
]
POSTS = ["/surveys/habits/close", "/surveys/habits/invitations", "/surveys/new"]


def visible_pages(researcher: FlaskClient) -> list[str]:
    """Every page a logged-in researcher sees (for the no-other-host check)."""
    return [
        researcher.get(path).get_data(as_text=True)
        for path in (
            "/",
            "/surveys/habits",
            "/surveys/empty",
            "/surveys/new?epsilon=1&margin=0.05",
            "/login",
        )
    ]


@pytest.mark.parametrize("path", PAGES)
def test_unauthenticated_get_shows_login_and_no_data(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login")
    body = response.get_data(as_text=True)
    assert SECRET_TITLE not in body and "habits" not in body.split("next=")[0]
    followed = client.get(path, follow_redirects=True)
    html = followed.get_data(as_text=True)
    assert 'name="token"' in html
    assert SECRET_TITLE not in html and "Do you smoke" not in html and "<svg" not in html


@pytest.mark.parametrize("path", POSTS)
def test_unauthenticated_post_changes_nothing(app: Flask, client: FlaskClient, path: str) -> None:
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post(
        path, data={"csrf_token": csrf, "count": "3", "document": json.dumps(DOC)}
    )
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    with app.app_context():
        from deniable.aggregator.web.db import get_store

        assert get_store().get_survey("habits").closed_at is None


def test_wrong_token_is_refused(client: FlaskClient) -> None:
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"token": "nope", "csrf_token": csrf})
    assert response.status_code == 401
    assert "not valid" in response.get_data(as_text=True)
    assert client.get("/").status_code == 302


def test_login_without_csrf_is_refused(client: FlaskClient) -> None:
    client.get("/login")
    response = client.post("/login", data={"token": TOKEN})
    assert response.status_code == 400
    assert client.get("/").status_code == 302


@pytest.mark.parametrize("path", POSTS)
def test_post_without_csrf_is_refused(app: Flask, researcher: FlaskClient, path: str) -> None:
    response = researcher.post(path, data={"count": "3", "document": json.dumps(DOC)})
    assert response.status_code == 400
    assert "security token" in response.get_data(as_text=True)
    with app.app_context():
        from deniable.aggregator.web.db import get_store

        assert get_store().get_survey("habits").closed_at is None


def test_session_cookie_flags(app: Flask, client: FlaskClient) -> None:
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"token": TOKEN, "csrf_token": csrf})
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    tls = app.test_client()
    page = tls.get("/login", base_url="https://localhost")
    assert "Secure" in page.headers["Set-Cookie"]
    secure = tls.post(
        "/login",
        data={"token": TOKEN, "csrf_token": csrf_of(page.get_data(as_text=True))},
        base_url="https://localhost",
        headers={"Referer": "https://localhost/login"},
    )
    assert secure.status_code == 302
    assert "Secure" in secure.headers["Set-Cookie"] and "HttpOnly" in secure.headers["Set-Cookie"]


@pytest.mark.parametrize(
    "target", ["//evil.example/x", "/x\r\nSet-Cookie: a=b", "/x\nLocation: //evil", "/\\evil"]
)
def test_login_next_stays_on_this_host(client: FlaskClient, target: str) -> None:
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"token": TOKEN, "csrf_token": csrf, "next": target})
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


def test_survey_list(researcher: FlaskClient) -> None:
    html = researcher.get("/").get_data(as_text=True)
    assert SECRET_TITLE in html and "Nobody answered yet" in html
    assert ">80<" in html and "open" in html
    assert 'href="/surveys/habits"' in html


def test_survey_page_has_inline_svg_chart_and_table(researcher: FlaskClient) -> None:
    response = researcher.get("/surveys/habits")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert html.count("<svg") == 2
    assert re.search(r"<svg[^>]*role=\"img\"", html)
    assert "<title" in html and "<desc" in html
    assert "each answer is kept truthfully with probability 73%" in html
    assert "95% interval" in html
    assert (
        'href="/surveys/habits/results.csv' in html
        and 'href="/surveys/habits/reports.jsonl"' in html
    )
    # The table holds every option with support, estimate, interval, count, share.
    for option in ("no", "yes", "A", "B", "C", "D"):
        assert f'<th scope="row"><bdi>{option}</bdi></th>' in html


def test_confidence_selector_changes_intervals(researcher: FlaskClient) -> None:
    html = researcher.get("/surveys/habits?confidence=0.8").get_data(as_text=True)
    assert "80% interval" in html
    assert '<option value="0.8" selected>' in html


def test_empty_survey_says_no_reports(researcher: FlaskClient) -> None:
    html = researcher.get("/surveys/empty").get_data(as_text=True)
    assert "No reports yet" in html
    assert "<svg" not in html


def test_too_few_reports_is_said(app: Flask, researcher: FlaskClient) -> None:
    from deniable.aggregator.ingest import ingest
    from deniable.aggregator.web.db import get_store
    from deniable.shared import Survey, make_report
    from deniable.shared.signing import generate_key

    with app.app_context():
        survey = Survey.from_dict(get_store().get_survey("empty").resolved)
        ingest(get_store(), [make_report(survey, {"q": "yes"}, generate_key()) for _ in range(3)])
    html = researcher.get("/surveys/empty").get_data(as_text=True)
    assert "Too few reports to say much" in html


def test_no_page_references_another_host(researcher: FlaskClient) -> None:
    for html in visible_pages(researcher):
        for attr in re.findall(r'(?:src|href|action)\s*=\s*"([^"]*)"', html):
            assert not re.match(r"^(?:[a-z]+:)?//", attr, re.I), attr
        assert "@import" not in html


def test_static_assets_served_and_local(researcher: FlaskClient) -> None:
    html = researcher.get("/surveys/habits").get_data(as_text=True)
    assets = re.findall(r'(?:src|href)="(/assets/[^"]+)"', html)
    assert any(a.endswith(".css") for a in assets) and any(a.endswith(".js") for a in assets)
    for asset in assets:
        body = researcher.get(asset).get_data(as_text=True)
        assert "http://" not in body and "https://" not in body
    assert "<script>" not in html and " style=" not in html


def test_downloads(researcher: FlaskClient) -> None:
    csv = researcher.get("/surveys/habits/results.csv")
    assert csv.status_code == 200 and csv.mimetype == "text/csv"
    lines = csv.get_data(as_text=True).splitlines()
    assert lines[0] == "question,option,support,estimate,stderr,ci_low,ci_high,count,share"
    assert len(lines) == 1 + 2 + 4
    jsonl = researcher.get("/surveys/habits/reports.jsonl").get_data(as_text=True).splitlines()
    assert len(jsonl) == 80 and json.loads(jsonl[0])["survey"] == "habits"
    assert researcher.get("/surveys/habits/count.json").get_json()["n"] == 80


def test_create_survey_shows_validation_error_and_keeps_input(researcher: FlaskClient) -> None:
    csrf = csrf_of(researcher.get("/surveys/new").get_data(as_text=True))
    bad = '{"id": "x", "title": "T", "questions": [}'
    response = researcher.post("/surveys/new", data={"document": bad, "csrf_token": csrf})
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert 'id="document-error"' in html and "not valid JSON" in html
    assert "questions&#34;: [}" in html or 'questions": [}' in html
    invalid = {**DOC, "id": "other", "questions": [{"id": "q", "type": "binary"}]}
    response = researcher.post(
        "/surveys/new", data={"document": json.dumps(invalid), "csrf_token": csrf}
    )
    assert response.status_code == 400 and "questions[0]" in response.get_data(as_text=True)


def test_create_survey_by_paste_and_upload(researcher: FlaskClient) -> None:
    csrf = csrf_of(researcher.get("/surveys/new").get_data(as_text=True))
    doc = {**DOC, "id": "pasted", "enrollment": "open"}
    response = researcher.post(
        "/surveys/new", data={"document": json.dumps(doc), "csrf_token": csrf}
    )
    assert response.status_code == 302 and response.headers["Location"] == "/surveys/pasted"

    upload = (io.BytesIO(json.dumps({**doc, "id": "uploaded"}).encode()), "survey.json")
    response = researcher.post(
        "/surveys/new",
        data={"file": upload, "csrf_token": csrf},
        content_type="multipart/form-data",
    )
    assert response.status_code == 302 and response.headers["Location"] == "/surveys/uploaded"
    again = researcher.post("/surveys/new", data={"document": json.dumps(doc), "csrf_token": csrf})
    assert again.status_code == 400 and "already exists" in again.get_data(as_text=True)


def test_invitations_and_close(researcher: FlaskClient) -> None:
    csrf = csrf_of(researcher.get("/surveys/habits").get_data(as_text=True))
    response = researcher.post(
        "/surveys/habits/invitations", data={"count": "3", "csrf_token": csrf}
    )
    codes = re.findall(r"\b[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}\b", response.get_data(as_text=True))
    assert len(set(codes)) == 3
    response = researcher.post(
        "/surveys/habits/close", data={"csrf_token": csrf}, follow_redirects=True
    )
    html = response.get_data(as_text=True)
    assert "closed" in html and "Close the survey" not in html


@pytest.mark.parametrize("count", ["0", "abc", "1001", " ", "-3", "²"])
def test_a_bad_invitation_count_is_said_by_the_action(researcher: FlaskClient, count: str) -> None:
    """The form's count is checked once, by the action (surveys.invite), whose words show."""
    csrf = csrf_of(researcher.get("/surveys/habits").get_data(as_text=True))
    response = researcher.post(
        "/surveys/habits/invitations",
        data={"count": count, "csrf_token": csrf},
        follow_redirects=True,
    )
    html = response.get_data(as_text=True)
    assert "count: expected a whole number from 1 to 1000" in html
    assert not re.findall(r"\b[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}\b", html)


def test_plan_form_matches_cli_number(researcher: FlaskClient) -> None:
    html = researcher.get("/surveys/new?epsilon=1&margin=0.05&options=2&confidence=0.95").get_data(
        as_text=True
    )
    assert re.search(r'id="plan-n">1,799<', html)
    bad = researcher.get("/surveys/new?epsilon=99&margin=0.05").get_data(as_text=True)
    assert "epsilon" in bad and 'role="alert"' in bad


def test_logout_ends_session(researcher: FlaskClient) -> None:
    csrf = csrf_of(researcher.get("/").get_data(as_text=True))
    response = researcher.post("/logout", data={"csrf_token": csrf})
    assert response.status_code == 302
    assert researcher.get("/surveys/habits").status_code == 302


def test_a_survey_document_posted_after_the_session_ended_is_shown_back(
    researcher: FlaskClient,
) -> None:
    csrf = csrf_of(researcher.get("/surveys/new").get_data(as_text=True))
    with researcher.session_transaction() as saved:
        saved.clear()  # the login ended while the researcher typed
    document = '{"id": "typed", "title": "<b>Typed</b> for an hour"}'
    response = researcher.post("/surveys/new", data={"document": document, "csrf_token": csrf})
    html = response.get_data(as_text=True)
    assert response.status_code == 400 and "Form expired" in html
    assert "copy it first" in html and "&lt;b&gt;Typed&lt;/b&gt; for an hour" in html


def test_hostile_new_survey_input_is_an_error_page_not_a_500(researcher: FlaskClient) -> None:
    page = researcher.get("/surveys/new?endpoint=x&_external=1&epsilon=1")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'action="/surveys/new?epsilon=1"' in html and "_external" not in html
    csrf = csrf_of(html)
    deep = "[" * 100_000 + "]" * 100_000
    digits = '{"id": "x", "title": "T", "epsilon": ' + "9" * 5000 + ', "questions": []}'
    for document, says in [(deep, "nested too deeply"), (digits, "not valid JSON")]:
        response = researcher.post("/surveys/new", data={"document": document, "csrf_token": csrf})
        assert response.status_code == 400 and says in response.get_data(as_text=True)
    big = (io.BytesIO(b" " * (8 * 1024 * 1024 + 1)), "big.json")
    response = researcher.post(
        "/surveys/new", data={"file": big, "csrf_token": csrf}, content_type="multipart/form-data"
    )
    assert response.status_code == 413 and response.mimetype == "text/html"
    assert "larger than the aggregator takes" in response.get_data(as_text=True)


def test_planner_takes_plain_numbers_only(researcher: FlaskClient) -> None:
    for epsilon in ("1_0", "\uff11", "1e999"):
        html = researcher.get(f"/surveys/new?epsilon={epsilon}&margin=0.05").get_data(as_text=True)
        assert 'role="alert"' in html and 'id="plan-n"' not in html


def test_an_unknown_survey_is_an_html_page(researcher: FlaskClient) -> None:
    for path in ("/surveys/no-such", "/surveys/h%00x", "/surveys/h%00x/results.csv"):
        response = researcher.get(path)
        assert response.status_code == 404 and response.mimetype == "text/html", path
    assert "Not found" in response.get_data(as_text=True)


def test_long_words_wrap_and_right_to_left_text_is_isolated(
    app: Flask, researcher: FlaskClient
) -> None:
    doc = {
        **DOC,
        "id": "odd",
        "title": "x" * 500 + "\u202e evil",
        "description": "Line one.\nLine two.",
        "closes_at": "0001-01-01T00:00:00Z",
    }
    with app.app_context():
        create_survey(get_store(), doc, who=OPERATOR)
    listing = researcher.get("/").get_data(as_text=True)
    assert "<bdi>" + "x" * 500 + "\u202e evil</bdi>" in listing
    assert "0001-01-01 00:00 UTC" in listing
    page = researcher.get("/surveys/odd").get_data(as_text=True)
    assert "Line one.\nLine two." in page and "0001-01-01 00:00 UTC" in page
    css = researcher.get("/static/dashboard.css").get_data(as_text=True)
    assert "overflow-wrap: anywhere" in css and "unicode-bidi: isolate" in css
