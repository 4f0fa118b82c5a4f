"""Shared-device mode in Chromium against a real aggregator: one tablet passed from respondent to
respondent (docs/fieldwork.md). Each submission is a new respondent with a fresh key that is
never stored; after it only the thanks, the counts and the button for the next are shown."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

SHARED = {
    "id": "tablet",
    "title": "On a shared tablet",
    "device": "shared",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "city",
            "text": "Where were you born?",
            "type": "text",
            "epsilon": 1.0,
            "hcms": {"k": 4, "m": 64},
        },
    ],
}


def answer_one(page: Any, i: int, invitation: str | None = None) -> None:
    """One respondent answers the form (a town unique to them) and sends it."""
    if invitation is not None:
        page.locator("[data-invitation]").fill(invitation)
    page.locator(f'input[name="smokes"][value="{"yes" if i % 2 else "no"}"]').check()
    page.locator(f'input[name="party"][value="{"ABC"[i % 3]}"]').check()
    page.locator('input[name="city"]').fill(f"Hometown{i}")
    page.locator("button[type=submit]").click()


def stored_reports(server: Any, survey_id: str) -> list[dict[str, Any]]:
    """Every report the aggregator stored for the survey (reports.jsonl)."""
    response = server.get(f"/api/v1/surveys/{survey_id}/reports.jsonl")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def on_screen_blank(page: Any) -> bool:
    """No answer of the last respondent is on screen: no control checked or filled."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#answer input')].every(
              (i) => !i.checked && (i.type !== 'text' && i.type !== 'number' || i.value === ''))"""
    )


def stored_keys(page: Any) -> int:
    """How many key pairs this browser's ledger holds (IndexedDB 'keys')."""
    return page.evaluate(
        """() => new Promise((resolve, reject) => {
            const open = indexedDB.open('deniable', 1);
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
              const req = open.result.transaction('keys').objectStore('keys').count();
              req.onsuccess = () => { resolve(req.result); open.result.close(); };
            };
        })"""
    )


@pytest.mark.parametrize("backend", ["sqlite"])
def test_each_respondent_gets_a_fresh_key_and_only_the_thanks(live_server: Any, page: Any) -> None:
    live_server.create_survey(SHARED)
    page.goto(f"{live_server.url}/s/tablet")
    note = page.locator("[data-shared-note]")
    expect(note).to_be_visible()
    expect(note).to_contain_text("ledger of this browser does not apply")
    expect(note).to_contain_text(re.compile(r"epsilon (is )?4\b"))  # the survey's: 1 + 2 + 1
    expect(note).to_contain_text("fresh key")
    expect(page.locator("#spent")).to_be_hidden()
    for i in range(3):
        answer_one(page, i)
        thanks = page.locator("[data-thanks]")
        expect(thanks).to_be_visible()
        expect(thanks).to_contain_text("Please hand the device back")
        expect(page.locator("[data-sent]")).to_have_text(str(i + 1))
        expect(page.locator("[data-waiting]")).to_have_text("0")
        expect(page.locator("#answer")).to_be_hidden()
        expect(page.locator("#receipt")).to_be_hidden()
        assert f"hometown{i}" not in page.content().lower()
        assert on_screen_blank(page)
        page.locator("[data-next]").click()
        expect(thanks).to_be_hidden()
        expect(page.locator("#answer")).to_be_visible()
        expect(page.locator("button[type=submit]")).to_be_enabled()
        assert on_screen_blank(page)
    reports = stored_reports(live_server, "tablet")
    assert len(reports) == 3
    assert len({r["public_key"] for r in reports}) == 3  # a fresh key per respondent
    assert stored_keys(page) == 0  # never kept: only inside its signed report
    page.reload()  # a reload starts a fresh form, never a receipt of the last respondent
    expect(page.locator("#answer")).to_be_visible()
    expect(page.locator("#receipt")).to_be_hidden()
    expect(page.locator("[data-sent]")).to_have_text("3")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_device_shared_in_the_address_switches_a_personal_survey(
    live_server: Any, page: Any
) -> None:
    live_server.create_survey({**SHARED, "id": "personal", "device": "personal"})
    page.goto(f"{live_server.url}/s/personal?device=shared")
    expect(page.locator("[data-shared-note]")).to_be_visible()
    for i in range(2):
        answer_one(page, i)
        expect(page.locator("[data-thanks]")).to_be_visible()
        page.locator("[data-next]").click()
    assert len({r["public_key"] for r in stored_reports(live_server, "personal")}) == 2
    spent = page.evaluate("async () => (await import('/static/deniable.js')).epsilonSpent()")
    assert spent == 0  # other people's answers: this browser's ledger is not charged
    page.goto(f"{live_server.url}/s/personal")  # the same survey in personal mode
    expect(page.locator("[data-shared-note]")).to_be_hidden()
    expect(page.locator("#spent")).to_have_text("0.00")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_each_respondent_types_their_own_invitation(live_server: Any, page: Any) -> None:
    live_server.create_survey({**SHARED, "id": "invited", "enrollment": "invite"})
    response = requests.post(
        f"{live_server.url}/api/v1/surveys/invited/invitations",
        json={"count": 2},
        headers=live_server.headers,
        timeout=10,
    )
    first, second = response.json()["codes"]
    page.goto(f"{live_server.url}/s/invited")
    code = page.locator("[data-invitation]")
    expect(code).to_be_visible()
    answer_one(page, 0, "WRNG-CODE-XXXX")
    expect(page.locator("#status")).to_contain_text("not a valid invitation code")
    expect(page.locator("[data-thanks]")).to_be_hidden()
    answer_one(page, 0, first)
    expect(page.locator("[data-thanks]")).to_be_visible()
    page.locator("[data-next]").click()
    expect(code).to_have_value("")  # the next respondent types their own
    answer_one(page, 1, first)  # a code already spent by the last respondent
    expect(page.locator("#status")).to_contain_text("invitation")
    expect(page.locator("[data-thanks]")).to_be_hidden()
    answer_one(page, 1, second)
    expect(page.locator("[data-thanks]")).to_be_visible()
    reports = stored_reports(live_server, "invited")
    assert len(reports) == 2 and len({r["public_key"] for r in reports}) == 2
    assert stored_keys(page) == 0
