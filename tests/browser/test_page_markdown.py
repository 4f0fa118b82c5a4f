"""ODK's markdown in a survey's texts on the respondent page, in Chromium against a real
aggregator (docs/xlsform.md#labels): **bold**, *italic*, _italic_ and line breaks are shown as
ODK shows them, in every language the page switches to; any HTML in a text shows as written."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

DOC: dict[str, Any] = {
    "id": "marked",
    "title": "Marked up",
    "language": "en",
    "questions": [
        {
            "id": "q",
            "text": "Do you **smoke** *every* day?\nSay _honestly_.",
            "type": "categorical",
            "options": ["**Yes**", "No <b>never</b>", "a_b_c \\*x\\*"],
            "hint": "Think of *last* week.",
            "note": "A **note** <script>alert(1)</script>",
            "epsilon": 1.0,
        }
    ],
    "translations": {
        "fr": {
            "title": "Balisé",
            "questions": {
                "q": {
                    "text": "Fumez-vous **chaque** jour ?",
                    "options": ["**Oui**", "Non <i>jamais</i>", "a_b_c"],
                    "hint": "Pensez à la semaine *dernière*.",
                    "note": "Une **note**",
                }
            },
        }
    },
}


def test_labels_show_odks_markdown_and_html_as_text(live_server: Any, page: Any) -> None:
    live_server.create_survey(DOC)
    alerts: list[str] = []
    page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
    page.goto(f"{live_server.url}/s/marked?lang=en")
    text = page.locator('[data-question-text="q"]')
    expect(text.locator("strong")).to_have_text("smoke")
    expect(text.locator("em")).to_have_text(["every", "honestly"])
    assert text.locator("br").count() == 1
    assert text.inner_text() == "Do you smoke every day?\nSay honestly."
    options = page.locator('[data-option="q"]')
    expect(options.nth(0).locator("strong")).to_have_text("Yes")
    expect(options.nth(1)).to_have_text("No <b>never</b>")  # HTML shown as written
    assert options.nth(1).locator("b").count() == 0
    expect(options.nth(2)).to_have_text("a_b_c *x*")  # no emphasis inside a word; escapes
    expect(page.locator('[data-hint="q"] em')).to_have_text("last")
    note = page.locator('[data-note="q"]')
    expect(note.locator("strong")).to_have_text("note")
    expect(note).to_contain_text("<script>alert(1)</script>")
    assert note.locator("script").count() == 0
    # The wire values stay the labels as written: the radio's value is the raw label.
    assert page.locator('input[name="q"]').nth(0).get_attribute("value") == "**Yes**"
    page.goto(f"{live_server.url}/s/marked?lang=fr")
    expect(page.locator('[data-question-text="q"] strong')).to_have_text("chaque")
    expect(page.locator('[data-option="q"]').nth(1)).to_have_text("Non <i>jamais</i>")
    expect(page.locator('[data-note="q"] strong')).to_have_text("note")
    assert alerts == []
