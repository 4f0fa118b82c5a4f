"""The issue's whole path, in Chromium against a real aggregator: the example XLSForm (three
languages, Arabic right to left, a plain question gating two randomized ones, one question of
each type) imported, answered on the page in each language, and the results per question with
the right n (docs/xlsform.md, docs/surveys.md#skip-logic)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests
from playwright.sync_api import expect

from deniable.aggregator.forms import import_xlsform
from deniable.shared import i18n

FORM = Path(__file__).resolve().parents[2] / "examples" / "health-multilingual.xlsx"
GATED = ("cigarettes", "quit")
#: (language, smokes, the direction the page must set)
ANSWERS = [("en", "yes", "ltr"), ("fr", "no", "ltr"), ("ar", "yes", "rtl"), ("fr", "yes", "ltr")]


def answer(page: Any, server: Any, lang: str, smokes: str, direction: str, doc: dict) -> None:
    page.goto(f"{server.url}/s/{doc['id']}?lang={lang}")
    html = page.locator("html")
    expect(html).to_have_attribute("lang", lang)
    expect(html).to_have_attribute("dir", direction)
    if lang != doc["language"]:  # the survey's own words in that language
        words = doc["translations"][lang]
        expect(page.locator("h1")).to_contain_text(words["title"])
        expect(page.get_by_text(words["questions"]["alcohol"]["text"])).to_be_visible()
    expect(page.locator("button[type=submit]")).to_be_enabled()
    page.locator('input[name="age"]').fill("34")
    page.locator('input[name="region"][value="South"]').check()
    for qid in GATED:
        expect(page.locator(f'[data-item="{qid}"]')).to_be_hidden()
    page.locator(f'input[name="smokes"][value="{smokes}"]').check()
    for qid in GATED:
        item = page.locator(f'[data-item="{qid}"]')
        expect(item).to_be_visible() if smokes == "yes" else expect(item).to_be_hidden()
    if smokes == "yes":
        page.locator('input[name="cigarettes"]').fill("12")
        page.locator('input[name="quit"][value="no"]').check()
    page.locator('input[name="alcohol"][value="Every week"]').check()
    page.locator('input[name="used"][value="Cannabis"]').check()
    page.locator('input[name="town"]').fill("Rabat")
    page.locator("button[type=submit]").click()
    accepted = i18n.translator(lang)("accepted: the aggregator stored your randomized report")
    expect(page.locator("#receipt-status")).to_have_text(accepted)


def test_an_imported_xlsform_is_answered_in_each_language_with_per_question_n(
    live_server_factory: Any, browser: Any
) -> None:
    server = live_server_factory()
    doc = import_xlsform(FORM.read_bytes(), filename=FORM.name)
    assert set(doc["translations"]) == {"fr", "ar"} and doc["language"] == "en"
    server.create_survey(doc)
    for lang, smokes, direction in ANSWERS:
        context = browser.new_context()  # a respondent of their own: a fresh browser profile
        try:
            answer(context.new_page(), server, lang, smokes, direction, doc)
        finally:
            context.close()

    results = requests.get(
        f"{server.url}/api/v1/surveys/{doc['id']}/results", headers=server.headers, timeout=30
    ).json()
    smokers = sum(smokes == "yes" for _, smokes, _ in ANSWERS)
    assert results["n"] == len(ANSWERS)
    n_of = {entry["id"]: entry["n"] for entry in results["questions"]}
    assert n_of == {
        qid: smokers if qid in GATED else len(ANSWERS)
        for qid in ("age", "region", "smokes", *GATED, "alcohol", "used", "town")
    }
    region = next(e for e in results["questions"] if e["id"] == "region")
    south = next(row for row in region["options"] if row["option"] == "South")
    assert south["support"] == len(ANSWERS)  # wire values do not change with the language
