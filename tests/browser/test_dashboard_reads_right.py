"""The dashboard's numbers read right, in Chromium: every number shown for an option inside
the interval shown beside it and within 0 to 100% (an option of true share 0 has a negative
unbiased estimate here), "Support" explained where it appears, long labels wrapped (never
clipped) at desktop and phone widths, and breakdowns (a plain integer in bands) with their
numbers beside their charts."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests

from deniable.shared import Survey
from deniable.shared.report import build_report
from deniable.shared.signing import generate_key
from tests.browser.test_dashboard_browser import login

LONG = "Internet Explorer 11 (retired in 2022, still installed on some office computers)"
DOC = {
    "id": "reads-right",
    "title": "Browsers",
    "questions": [
        {
            "id": "browser",
            "text": "Which browser do you use most?",
            "type": "categorical",
            "options": ["Google Chrome", "Mozilla Firefox", LONG, "Safari"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "age",
            "text": "How old are you?",
            "type": "integer",
            "min": 18,
            "max": 90,
            "mechanism": "none",
        },
    ],
}
#: Noisy answers as reported (option index -> reports): the long option, whose true share is
#: 0, has fewer reports than its noise alone gives (25 of 400 against q* = 9.6%): its unbiased
#: estimate is negative (-5.5%); so is smokes' yes (90 of 400 against q* = 26.9%).
BROWSERS = [0] * 200 + [1] * 100 + [2] * 25 + [3] * 75
SMOKES = [1] * 90 + [0] * 310
NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


@pytest.fixture
def server(live_server: Any) -> Any:
    survey = Survey.from_dict(live_server.create_survey(DOC)["survey"])
    reports = [
        build_report(
            survey,
            {"browser": b, "smokes": s, "age": 18 + (i * 7) % 73},
            generate_key(),
        )
        for i, (b, s) in enumerate(zip(BROWSERS, SMOKES, strict=True))
    ]
    response = requests.post(
        f"{live_server.url}/api/v1/reports", json={"reports": reports}, timeout=60
    )
    assert all(r["result"] == "accepted" for r in response.json()["results"])
    return live_server


def numbers(text: str) -> list[float]:
    """The numbers of a cell's text (a percentage or a mean)."""
    return [float(x) for x in NUMBER.findall(text.replace("\u2212", "-"))]


def check_rows(page: Any, selector: str) -> int:
    """Every option row under `selector`: its share and estimate inside its interval, all
    inside 0 to 100%; the number of rows checked."""
    rows = page.locator(f"{selector} tr[data-option-row]")
    count = rows.count()
    for i in range(count):
        row = rows.nth(i)
        share = numbers(row.locator('[data-shown="share"]').inner_text())
        estimate = numbers(row.locator('[data-shown="estimate"]').inner_text())
        low, high = numbers(row.locator('[data-shown="interval"]').inner_text())
        label = row.locator("th").inner_text()
        for value in (*share, *estimate):
            assert low <= value <= high, (label, value, low, high)
        assert 0 <= low <= high <= 100, (label, low, high)
        assert "-" not in row.inner_text().replace(" – ", ""), row.inner_text()  # none negative
    return count


def labels_fit(page: Any) -> None:
    """No chart label is clipped: each fits its box across and down."""
    boxes = page.evaluate(
        """() => Array.from(document.querySelectorAll('.chart-label'), (label) => {
            const span = label.querySelector('span').getBoundingClientRect();
            const box = label.closest('foreignObject').getBoundingClientRect();
            return {text: label.textContent, sw: label.scrollWidth, cw: label.clientWidth,
                    span: [span.left, span.right, span.top, span.bottom],
                    box: [box.left, box.right, box.top, box.bottom],
                    inside: span.left >= box.left - 1 && span.right <= box.right + 1
                      && span.top >= box.top - 1 && span.bottom <= box.bottom + 1};
        })"""
    )
    assert boxes and any(box["text"] == LONG for box in boxes)
    for box in boxes:
        assert box["sw"] <= box["cw"], box
        assert box["inside"], box


@pytest.mark.parametrize("width", [1200, 360])
def test_every_number_shown_lies_inside_its_interval(server: Any, browser: Any, width: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        login(page, server, server.token)
        page.goto(f"{server.url}/surveys/reads-right")
        estimates = server.results("reads-right")["questions"]
        assert estimates[0]["options"][2]["estimate"] < 0  # the JSON keeps it as computed
        assert estimates[1]["options"][1]["estimate"] < 0
        assert check_rows(page, "table.results") == 4 + 2 + 1
        # The estimate below 0 is shown at its interval's end, marked and said.
        ie = page.locator("tr[data-option-row]", has_text="Internet Explorer")
        assert ie.locator('[data-shown="estimate"]').inner_text().startswith("0.0%")
        assert ie.locator('[data-shown="share"]').inner_text() == "0.0%"
        assert page.locator("#clipped-browser").is_visible()
        # "Support" is named for what it is where it appears.
        if width > 480:
            support = page.locator("th abbr", has_text="Support").first
            assert "noisy reports" in support.get_attribute("title")
        assert (
            "noisy reports that chose this option"
            in page.locator(".support-note").first.inner_text()
        )
        labels_fit(page)
    finally:
        context.close()


def test_a_breakdown_by_a_number_in_bands_shows_its_numbers(server: Any, page: Any) -> None:
    login(page, server, server.token)
    page.goto(f"{server.url}/surveys/reads-right/analysis?question=browser&by=age&cuts=30,50")
    groups = page.locator(".breakdown-group")
    assert groups.count() == 3
    captions = [groups.nth(i).locator("figcaption").inner_text() for i in range(3)]
    assert [c.split(":")[0] for c in captions] == ["age = < 30", "age = 30–49", "age = ≥ 50"]
    for i in range(3):  # each chart with its numbers beside it
        assert groups.nth(i).locator("svg.chart").count() == 1
        assert check_rows(page, f".breakdown-group:nth-of-type({i + 1}) table") == 4
    assert check_rows(page, "#breakdown-result") == 12
    labels_fit(page)
    # A bad cut is said beside the form, not a server error.
    page.goto(f"{server.url}/surveys/reads-right/analysis?question=browser&by=age&cuts=10")
    assert "each cut must be above 18" in page.get_by_role("alert").inner_text()
