"""The dashboard in a real browser: log in, see charts, create a survey, log out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from deniable.aggregator.credentials import digest
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

DOC = {
    "id": "browser",
    "title": "Browser survey",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 2.0,
        },
    ],
}


def fill(server: Any, n: int) -> None:
    """Post n real signed reports."""
    survey = Survey.from_dict(server.create_survey(DOC)["survey"])
    reports = [
        make_report(survey, {"smokes": i % 3 == 0, "party": "ABB"[i % 3]}, generate_key())
        for i in range(n)
    ]
    response = requests.post(f"{server.url}/api/v1/reports", json={"reports": reports}, timeout=30)
    assert response.status_code == 200
    assert all(r["result"] == "accepted" for r in response.json()["results"])


def login(page: Any, server: Any, token: str) -> None:
    page.goto(f"{server.url}/")
    assert page.url.startswith(f"{server.url}/login")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Log in").click()


def test_login_chart_create_logout(live_server: Any, page: Any, tmp_path: Path) -> None:
    fill(live_server, 400)
    outside: list[str] = []
    page.on(
        "request",
        lambda r: None if r.url.startswith(live_server.url) else outside.append(r.url),
    )
    login(page, live_server, "wrong-token")
    assert page.get_by_role("alert").inner_text().startswith("That token is not valid")
    login(page, live_server, live_server.token)
    page.wait_for_url(f"{live_server.url}/")
    page.screenshot(path=tmp_path / "surveys.png", full_page=True)
    page.get_by_role("link", name="Browser survey").click()
    page.wait_for_url(f"{live_server.url}/surveys/browser")
    charts = page.locator("svg.chart")
    assert charts.count() == 2
    assert charts.first.is_visible()
    assert page.locator("svg.chart rect.bar-share").count() == 5  # a share bar per option
    assert page.locator("svg.chart path.mark-est").count() == 5  # and its unbiased estimate
    assert "73%" in page.locator(".words").first.inner_text()
    page.screenshot(path=tmp_path / "survey.png", full_page=True)
    page.select_option("#confidence", "0.99")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**confidence=0.99**")
    assert "99% interval" in page.content()

    page.get_by_role("link", name="New survey").first.click()
    page.get_by_label("Paste the survey JSON").fill('{"id": "bad", "questions": [')
    page.get_by_role("button", name="Create survey", exact=True).click()
    error = page.locator("#document-error")
    assert "not valid JSON" in error.inner_text()
    assert (
        page.get_by_label("Paste the survey JSON").input_value() == '{"id": "bad", "questions": ['
    )
    page.screenshot(path=tmp_path / "new-error.png", full_page=True)
    page.get_by_label("Paste the survey JSON").fill(
        '{"id": "fresh", "title": "Fresh survey", "questions": '
        '[{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1}]}'
    )
    page.get_by_role("button", name="Create survey", exact=True).click()
    page.wait_for_url(f"{live_server.url}/surveys/fresh")
    assert "No reports yet" in page.content()

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login")
    page.goto(f"{live_server.url}/surveys/browser")
    assert page.url.startswith(f"{live_server.url}/login")
    assert "Browser survey" not in page.content()
    page.screenshot(path=tmp_path / "logged-out.png")
    assert outside == []
    for name in ("surveys.png", "survey.png", "new-error.png", "logged-out.png"):
        assert (tmp_path / name).stat().st_size > 1000


def test_phone_layout_has_no_horizontal_scroll(
    live_server: Any, browser: Any, tmp_path: Path
) -> None:
    fill(live_server, 200)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        login(page, live_server, live_server.token)
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{live_server.url}/surveys/browser")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.textContent")
        assert "Skip to content" in focused
        page.screenshot(path=tmp_path / "phone.png", full_page=True)
    finally:
        context.close()


@pytest.mark.own_server  # it counts the reports of the survey other tests fill
def test_survey_page_refreshes_when_reports_arrive(live_server: Any, page: Any) -> None:
    violations: list[str] = []
    page.on(
        "console",
        lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    fill(live_server, 30)
    login(page, live_server, live_server.token)
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/surveys/browser")
    assert page.locator("#n").inner_text() == "30"
    survey = Survey.from_dict(live_server.get("/api/v1/surveys/browser").json()["survey"])
    more = [make_report(survey, {"smokes": True, "party": "C"}, generate_key()) for _ in range(5)]
    requests.post(f"{live_server.url}/api/v1/reports", json={"reports": more}, timeout=30)
    # A locator, not wait_for_function: the dashboard's CSP (rightly) forbids eval.
    expect(page.locator("#n")).to_have_text("35", timeout=20_000)
    assert not violations, violations


COVARIATES = {
    "id": "covariates",
    "title": "With covariates",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 2.0},
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
        },
    ],
}


def test_analysis_page_breakdown_and_regression(live_server: Any, page: Any) -> None:
    survey = Survey.from_dict(live_server.create_survey(COVARIATES)["survey"])
    reports = [
        make_report(survey, {"smokes": i % 3 == 0, "region": i % 2}, generate_key())
        for i in range(200)
    ]
    requests.post(f"{live_server.url}/api/v1/reports", json={"reports": reports}, timeout=30)
    login(page, live_server, live_server.token)
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/surveys/covariates")
    page.get_by_role("link", name="Breakdowns, cross-tabs, regression").click()
    page.get_by_role("button", name="Break down").click()
    expect(page.locator("#breakdown-result svg.chart")).to_have_count(2)
    page.get_by_label("Formula", exact=True).fill("smokes ~ nope")
    page.get_by_role("button", name="Fit").click()
    expect(page.get_by_role("alert")).to_contain_text("no question 'nope'")
    page.get_by_label("Formula", exact=True).fill("smokes ~ region")
    page.get_by_role("button", name="Fit").click()
    expect(page.locator("#regression-result")).to_contain_text("region[T.south]")


@pytest.mark.own_server  # it makes accounts and tokens
def test_accounts_people_and_a_revoked_token(live_server: Any, browser: Any, page: Any) -> None:
    """An admin makes an account and its token on the Accounts page and grants it analyst on
    the People tab; the analyst sees the survey without Close or People; revoked, it is back at
    the login on its next request."""
    fill(live_server, 30)
    login(page, live_server, live_server.token)
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("link", name="Accounts").click()
    page.get_by_label("Name").fill("team")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("status").first).to_contain_text("Account 'team' created.")
    page.select_option("#token-account", "team")
    page.get_by_label("Label").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator(".new-token")).to_contain_text("Copy it now")
    token = page.locator("#new-token").input_value()
    assert len(token) > 20
    page.goto(f"{live_server.url}/surveys/browser")
    page.get_by_role("link", name="People").click()
    page.get_by_label("Account").fill("team")
    page.select_option("#grant-role", "analyst")
    page.get_by_role("button", name="Grant").click()
    expect(page.locator("#people")).to_contain_text("team")

    context = browser.new_context()
    analyst = context.new_page()
    try:
        login(analyst, live_server, token)
        analyst.wait_for_url(f"{live_server.url}/")
        analyst.get_by_role("link", name="Browser survey").click()
        analyst.wait_for_url(f"{live_server.url}/surveys/browser")
        assert analyst.locator("svg.chart").count() == 2
        assert analyst.get_by_role("button", name="Close the survey").count() == 0
        assert analyst.get_by_role("link", name="People").count() == 0
        assert analyst.get_by_role("link", name="Accounts").count() == 0

        page.goto(f"{live_server.url}/accounts")
        page.get_by_role("button", name=f"Revoke token {digest(token)[:12]}").click()
        expect(page.get_by_role("status").first).to_contain_text("is revoked")
        analyst.reload()
        assert analyst.url.startswith(f"{live_server.url}/login")
        assert "Browser survey" not in analyst.content()
    finally:
        context.close()
