"""Split ballot on the respondent page, in Chromium against a real aggregator
(docs/surveys.md#split-ballot): the page draws each split question's arm with the exact share
before the question is shown, says "sent exactly as you answer" beside a question drawn in the
direct arm, sends a direct answer as given with the arm in the signed report, charges only the
randomized arm, and draws afresh for each respondent of a shared device."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from deniable.shared.report import verify_report

DOC: dict[str, Any] = {
    "id": "ballot",
    "title": "Split ballot on the page",
    "questions": [
        {"id": "cheated", "text": "Have you ever cheated on a test?", "type": "binary",
         "epsilon": 1.0, "direct_share": "1/2"},
        {"id": "general", "text": "Do you exercise?", "type": "binary", "epsilon": 1.0},
    ],
}  # fmt: skip
NOTICE = "This question is asked directly on this device: sent exactly as you answer."


@pytest.fixture
def server(live_server_factory: Any) -> Any:
    server = live_server_factory()
    server.create_survey(DOC)
    return server


def stored_reports(server: Any) -> list[dict[str, Any]]:
    response = server.get("/api/v1/surveys/ballot/reports.jsonl")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def direct_shown(page: Any) -> bool:
    """Whether the page shows the direct notice beside the split question now."""
    notice = page.locator('[data-item="cheated"] [data-direct-notice]')
    return notice.count() == 1 and notice.is_visible()


def test_the_page_draws_the_arm_says_it_and_sends_it_signed(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/s/ballot")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    direct = direct_shown(page)
    if direct:
        expect(page.locator('[data-item="cheated"] [data-direct-notice]')).to_have_text(NOTICE)
        expect(page.locator("#cost")).to_have_text("1")  # only `general` is randomized
    else:
        expect(page.locator("#cost")).to_have_text("2")
    page.locator('input[name="cheated"][value="yes"]').check()
    page.locator('input[name="general"][value="no"]').check()
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_contain_text("accepted")
    (report,) = stored_reports(server)
    verify_report(report)  # the arms are covered by the signature
    assert report["arms"] == {"cheated": "direct" if direct else "randomized"}
    if direct:
        assert report["answers"]["cheated"] == 1  # sent exactly as answered
    results = server.results("ballot")
    entry = next(q for q in results["questions"] if q["id"] == "cheated")
    assert entry["n"] + entry["direct"]["n"] == 1 and entry["direct"]["n"] == int(direct)


def test_the_pages_arm_draw_uses_the_secure_source(server: Any, page: Any) -> None:
    """The page's drawArms with its default source draws both arms (smoke: the draw itself is
    pinned byte for byte by tests/browser/test_randomness_vectors_js.py)."""
    page.goto(f"{server.url}/s/ballot")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    n = 400
    direct = page.evaluate(
        """async (n) => {
            const map = JSON.parse(document.querySelector('script[type=importmap]').textContent);
            const { drawArms } = await import(map.imports.deniable);
            const survey = { questions: [{ id: "q", direct_share: "1/4" }] };
            let direct = 0;
            for (let i = 0; i < n; i++) if (drawArms(survey).q === "direct") direct++;
            return direct;
        }""",
        n,
    )
    assert 0 < direct < n  # all in one arm: 0.75^400 + 0.25^400 < 1e-49


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_shared_device_draws_afresh_for_each_respondent(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/s/ballot?device=shared")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    shown = []
    for i in range(20):  # all in one arm: 2 * 2^-20 < 1e-5
        shown.append(direct_shown(page))
        page.locator('input[name="cheated"][value="yes"]').check()
        page.locator(f'input[name="general"][value="{"yes" if i % 2 else "no"}"]').check()
        page.locator("button[type=submit]").click()
        expect(page.locator("[data-thanks]")).to_be_visible()
        page.locator("[data-next]").click()
        expect(page.locator("button[type=submit]")).to_be_enabled()
    reports = stored_reports(server)
    assert len(reports) == 20
    arms = [report["arms"]["cheated"] for report in reports]
    assert set(arms) == {"direct", "randomized"}
    assert sorted(arms) == sorted("direct" if d else "randomized" for d in shown)
