"""The respondent page in the survey's languages, in Chromium against a real aggregator
(docs/surveys.md#languages): `?lang=`, the browser's language and the switcher pick the
survey's texts and the product's words; `<html lang dir>` follows (right to left for Arabic);
the wire values never change with the language."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from deniable.shared import i18n
from deniable.shared.page import MODULES, render_page
from deniable.shared.report import verify_report
from deniable.shared.survey import Survey
from tests.static_host import StaticHost

DENIABLE = Path(sys.executable).parent / "deniable"
DOC: dict[str, Any] = {
    "id": "languages",
    "title": "Health and habits",
    "description": "A short survey.",
    "language": "en",
    "questions": [
        {
            "id": "region",
            "text": "Where do you live?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
            "hint": "Your home region.",
        },
        {
            "id": "worked",
            "text": "Did you work last week?",
            "type": "binary",
            "mechanism": "none",
        },
        {
            "id": "smokes",
            "text": "Do you smoke?",
            "type": "binary",
            "epsilon": 1.0,
            "note": "The next question is sensitive.",
        },
    ],
    "translations": {
        "fr": {
            "title": "Santé et habitudes",
            "description": "Une courte enquête.",
            "questions": {
                "region": {
                    "text": "Où habitez-vous ?",
                    "options": ["nord", "sud"],
                    "hint": "Votre région.",
                },
                "worked": {
                    "text": "Avez-vous travaillé la semaine dernière ?",
                    "options": ["non", "oui"],
                },
                "smokes": {
                    "text": "Fumez-vous ?",
                    "options": ["non", "oui"],
                    "note": "La question suivante est délicate.",
                },
            },
        },
        "ar": {
            "title": "الصحة والعادات",
            "description": "استبيان قصير.",
            "questions": {
                "region": {"text": "أين تسكن؟", "options": ["الشمال", "الجنوب"], "hint": "منطقتك."},
                "worked": {"text": "هل عملت الأسبوع الماضي؟", "options": ["لا", "نعم"]},
                "smokes": {
                    "text": "هل تدخن؟",
                    "options": ["لا", "نعم"],
                    "note": "السؤال التالي حساس.",
                },
            },
        },
    },
}
TEXTS = {
    tag: {
        "title": DOC["translations"][tag]["title"] if tag != "en" else DOC["title"],
        "region": DOC["translations"][tag]["questions"]["region"]
        if tag != "en"
        else DOC["questions"][0],
    }
    for tag in ("en", "fr", "ar")
}
SEND = "Send my randomized answers"


@pytest.fixture
def server(live_server_factory: Any) -> Any:
    server = live_server_factory()
    server.create_survey(DOC)
    return server


def posted(page: Any) -> list[dict[str, Any]]:
    """The reports the page POSTs, as they happen."""
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            bodies.append(json.loads(r.post_data))
            if r.method == "POST" and r.url.endswith("/api/v1/reports")
            else None
        ),
    )
    return bodies


def answer(page: Any) -> None:
    """The same true answers in any language: by value, never by the label shown."""
    page.locator('input[name="region"][value="south"]').check()
    page.locator('input[name="worked"][value="yes"]').check()
    page.locator('input[name="smokes"][value="no"]').check()


def expect_language(page: Any, tag: str) -> None:
    """The page shows the survey and the product's words in `tag`."""
    html = page.locator("html")
    expect(html).to_have_attribute("lang", tag)
    expect(html).to_have_attribute("dir", "rtl" if tag == "ar" else "ltr")
    expect(page.locator("h1")).to_have_text(TEXTS[tag]["title"])
    region = TEXTS[tag]["region"]
    expect(page.locator('[data-question-text="region"]')).to_have_text(region["text"])
    expect(page.locator('[data-option="region"][data-index="1"]')).to_have_text(
        region["options"][1]
    )
    expect(page.locator('[data-hint="region"]')).to_have_text(region["hint"])
    expect(page.locator("button[type=submit]")).to_have_text(i18n.translator(tag)(SEND))


def test_the_catalogs_translate_the_send_button() -> None:
    """The product's words exist in French and Arabic (else the page tests below would pass on
    English alone)."""
    for tag in ("fr", "ar"):
        if i18n.has_catalog(tag):
            assert i18n.messages(tag).get(SEND, SEND) != SEND


@pytest.mark.parametrize("tag", ["fr", "ar"])
def test_lang_in_the_address_renders_the_page_in_that_language(
    server: Any, page: Any, tag: str
) -> None:
    # The server's first render already speaks the language (lang, dir, texts, fixed words).
    html = requests.get(f"{server.url}/s/languages?lang={tag}", timeout=10).text
    direction = "rtl" if tag == "ar" else "ltr"
    assert f'<html lang="{tag}" dir="{direction}">' in html
    assert TEXTS[tag]["title"] in html and i18n.translator(tag)(SEND) in html
    reports = posted(page)
    page.goto(f"{server.url}/s/languages?lang={tag}")
    expect_language(page, tag)
    note = DOC["translations"][tag]["questions"]["smokes"]["note"]
    expect(page.locator('[data-note="smokes"]')).to_have_text(note)
    expect(page.locator("button[type=submit]")).to_be_enabled()
    answer(page)
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_have_text(
        i18n.translator(tag)("accepted: the aggregator stored your randomized report")
    )
    (report,) = reports
    verify_report(report)
    survey = Survey.from_dict(DOC)
    assert report["answers"]["region"] == survey.questions["region"].normalize("south")
    assert report["answers"]["worked"] == survey.questions["worked"].normalize("yes")
    survey.questions["smokes"].validate(report["answers"]["smokes"])
    receipt = page.locator("#receipt-answers").inner_text()
    assert DOC["translations"][tag]["questions"]["smokes"]["text"] in receipt


@pytest.mark.parametrize(
    ("locale", "tag"), [("fr-CA", "fr"), ("ar-EG", "ar"), ("de-DE", "en"), ("fr", "fr")]
)
def test_the_browser_language_picks_the_survey_language(
    server: Any, browser: Any, locale: str, tag: str
) -> None:
    context = browser.new_context(locale=locale)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(f"{server.url}/s/languages")
        expect_language(page, tag)
        expect(page.locator("[data-lang-switcher]")).to_have_value(tag)
        # ?lang= wins over the browser's language.
        page.goto(f"{server.url}/s/languages?lang=en")
        expect_language(page, "en")
    finally:
        context.close()


def test_the_switcher_changes_every_text_and_keeps_the_answers(server: Any, page: Any) -> None:
    reports = posted(page)
    page.goto(f"{server.url}/s/languages?lang=en")
    expect_language(page, "en")
    switcher = page.locator("[data-lang-switcher]")
    # Each language is named in its own language.
    expect(switcher.locator('option[value="fr"]')).to_have_text("Français")
    expect(switcher.locator('option[value="ar"]')).to_have_text("العربية")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    answer(page)
    english = page.locator('[data-explain="smokes"]').inner_text()
    switcher.select_option("fr")
    expect_language(page, "fr")
    expect(page.locator('input[name="region"][value="south"]')).to_be_checked()
    expect(page.locator('input[name="worked"][value="yes"]')).to_be_checked()
    if i18n.has_catalog("fr"):  # the explanation is deniable explain's, in French
        expect(page.locator('[data-explain="smokes"]')).not_to_have_text(english)
    switcher.select_option("ar")
    expect_language(page, "ar")
    expect(page.locator('input[name="smokes"][value="no"]')).to_be_checked()
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_be_visible()
    (report,) = reports
    assert report["answers"]["region"] == Survey.from_dict(DOC).questions["region"].normalize(
        "south"
    )
    switcher.select_option("en")
    expect_language(page, "en")
    expect(page.locator("#receipt-answers")).to_contain_text("Do you smoke? → ")


def test_verify_page_passes_on_a_page_in_another_language(server: Any, tmp_path: Path) -> None:
    """The page rendered for ?lang=ar is exactly what deniable renders for it."""
    result = subprocess.run(
        [str(DENIABLE), "verify-page", f"{server.url}/s/languages?lang=ar"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DENIABLE_HOME": str(tmp_path / "home")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "page: same" in result.stdout and "conditions.js: same" in result.stdout


def test_translated_texts_stay_data_in_every_block() -> None:
    """A translation holding `</script>` ends no script block and runs nothing: the title, the
    explanations and the product's words read back as written."""
    doc = copy.deepcopy(DOC)
    hostile = "</script><script>alert(1)</script> & <!--"
    doc["translations"]["fr"]["title"] = hostile
    doc["translations"]["fr"]["questions"]["smokes"]["text"] = "\u2028</SCRIPT >?"
    survey = Survey.from_dict(doc)
    html = render_page(
        survey,
        aggregator="https://agg.example",
        assets={name: f"./{name}" for name in MODULES},
        integrity={name: "sha384-x" for name in MODULES},
        service_worker="./sw.js",
        closed=False,
        cap=10.0,
        module_sha256="0" * 64,
        verify_hint="deniable verify-page URL",
        lang="fr",
    )
    assert "<script>alert(1)" not in html and html.count("</script>") == 6
    assert '<html lang="fr" dir="ltr">' in html
    start = html.index('id="pinned-survey">') + len('id="pinned-survey">')
    pinned = json.loads(html[start : html.index("</script>", start)])
    assert pinned["survey"]["translations"]["fr"]["title"] == hostile


def test_the_exported_page_picks_its_language_in_the_browser(
    live_server_factory: Any, browser: Any, tmp_path: Path
) -> None:
    """An exported page is written in the default language and decides in the browser:
    the browser's locale, then `?lang=`; it sends the same wire values and verifies."""
    root = tmp_path / "www"
    root.mkdir()
    host = StaticHost(root)
    try:
        server = live_server_factory({"DENIABLE_PAGE_ORIGINS": host.url})
        server.create_survey(DOC)
        env = {**os.environ, "DENIABLE_HOME": str(tmp_path / "home")}
        done = subprocess.run(
            [str(DENIABLE), "page", "export", f"{server.url}/s/languages", str(root / "site")],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        index = (root / "site" / "index.html").read_text("utf-8")
        assert '<html lang="en" dir="ltr">' in index
        verified = subprocess.run(
            [str(DENIABLE), "verify-page", f"{host.url}/site/"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        context = browser.new_context(locale="ar")
        try:
            page = context.new_page()
            page.set_default_timeout(15_000)
            reports = posted(page)
            page.goto(f"{host.url}/site/")
            expect_language(page, "ar")
            page.goto(f"{host.url}/site/?lang=fr")
            expect_language(page, "fr")
            answer(page)
            page.locator("button[type=submit]").click()
            expect(page.locator("#receipt-status")).to_be_visible()
            (report,) = reports
            assert report["answers"]["region"] == 1 and report["answers"]["worked"] == 1
        finally:
            context.close()
    finally:
        host.close()
