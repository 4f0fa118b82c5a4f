"""The respondent page speaks to respondents, in Chromium against a real aggregator: per
question one plain sentence is what shows; the probabilities, epsilon and "times surer" wait in
a collapsed <details>, the code's hash and verify-page in another at the foot; counts take
their language's plural form (English, French, Arabic's six), as the catalogs' gettext rules
say, in the page's outbox."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_page_languages import DOC as LANGUAGES
from tests.browser.test_respondent_page import DOC, fill

RANDOMIZED = "Your answer is randomized on this device before it is sent."
PLAIN = "Sent exactly as you answer: not randomized."
#: What only the details say: nobody has to read it to answer.
TECHNICAL = ("probability", "epsilon", "ε", "times surer", "sha256", "verify-page")


@pytest.fixture
def server(live_server_factory: Any) -> Any:
    server = live_server_factory()
    server.create_survey(DOC)
    return server


def visible_text(page: Any, selector: str) -> str:
    """What a reader sees of an element (inner text leaves closed details' contents out)."""
    return page.locator(selector).inner_text()


def test_each_question_says_one_plain_sentence_and_keeps_the_details_closed(
    server: Any, page: Any
) -> None:
    page.goto(f"{server.url}/s/web-page")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    for question in DOC["questions"]:
        qid = question["id"]
        seen = visible_text(page, f"#q-{qid}")
        plain = question.get("mechanism") == "none"
        # One plain sentence, said once; nothing technical in sight.
        assert seen.count(PLAIN if plain else RANDOMIZED) == 1, (qid, seen)
        assert seen.count("not randomized") == (1 if plain else 0), (qid, seen)
        assert not any(word in seen for word in TECHNICAL), (qid, seen)
        if plain:
            expect(page.locator(f"#q-{qid} details")).to_have_count(0)
            continue
        # The details are there, closed; opened, they say how and what it reveals.
        details = page.locator(f"#q-{qid} details.explain")
        expect(details).not_to_have_attribute("open", "")
        expect(page.locator(f'[data-explain="{qid}"]')).to_be_hidden()
        details.locator("summary").click()
        expect(page.locator(f'[data-explain="{qid}"]')).to_be_visible()
        opened = visible_text(page, f"#q-{qid}")
        assert "What is sent" in opened and "times surer" in opened, (qid, opened)
    # The whole page before any details is opened: no epsilon, no hash, no command.
    page.reload()
    expect(page.locator("button[type=submit]")).to_be_enabled()
    everything = visible_text(page, "main")
    assert not any(word in everything for word in TECHNICAL), everything
    # The code's hash and verify-page wait at the foot, in a collapsed details of their own.
    expect(page.locator("#module-sha256")).to_be_hidden()
    page.locator("footer details summary").click()
    expect(page.locator("#module-sha256")).to_be_visible()
    assert "deniable verify-page" in visible_text(page, "footer")
    # The privacy budget too, and the page still answers as before.
    page.locator("details.budget summary").click()
    expect(page.locator("#spent")).to_have_text("0.00")
    fill(page)
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_contain_text("accepted")


def outbox(page: Any) -> str:
    return page.locator(".outbox").inner_text()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_counts_take_their_plural_form_in_every_language(live_server: Any, browser: Any) -> None:
    """A shared tablet whose reports wait (the aggregator refuses the connection): the outbox
    says 1 answer, 2 answers, in English, then in French (0 and 1 singular) and Arabic (its
    forms for 0, 1, 2, 3 and 11)."""
    doc = {**copy.deepcopy(LANGUAGES), "id": "plurals", "device": "shared"}
    doc["questions"] = [q for q in LANGUAGES["questions"] if q["id"] == "smokes"]
    for words in doc["translations"].values():
        words["questions"] = {"smokes": words["questions"]["smokes"]}
    live_server.create_survey(doc)
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.route("**/api/v1/reports", lambda route: route.abort("connectionrefused"))
        page.goto(f"{live_server.url}/s/plurals?lang=en")
        expect(page.locator("button[type=submit]")).to_be_enabled()
        sent = {}
        answered = 0
        for count in (1, 2, 3, 11):
            while answered < count:
                page.locator('input[name="smokes"][value="no"]').check()
                page.locator("button[type=submit]").click()
                expect(page.locator("[data-thanks]")).to_be_visible()
                answered += 1
                # The counts are written after the thanks shows: wait for this one's, never
                # read a count not yet written (it would send one answer too many).
                expect(page.locator("[data-waiting]")).to_have_text(str(answered))
                page.locator("[data-next]").click()
            expect(page.locator("[data-waiting]")).to_have_text(str(count))
            sent[count] = {}
            for lang in ("en", "fr", "ar"):
                page.locator("[data-lang-switcher]").select_option(lang)
                sent[count][lang] = outbox(page)
            page.locator("[data-lang-switcher]").select_option("en")
        assert sent[1]["en"].startswith("1 answer waiting to be sent from this device.")
        assert sent[2]["en"].startswith("2 answers waiting to be sent from this device.")
        assert sent[1]["en"].endswith("0 answers sent from this device.")  # English 0: plural
        assert sent[1]["fr"].startswith("1 réponse en attente")
        assert sent[1]["fr"].endswith("0 réponse envoyée depuis cet appareil.")  # French 0: one
        assert sent[2]["fr"].startswith("2 réponses en attente")
        assert sent[1]["ar"].startswith("إجابة واحدة في انتظار")  # one
        assert sent[2]["ar"].startswith("إجابتان في انتظار")  # two
        assert sent[3]["ar"].startswith("3 إجابات في انتظار")  # few
        assert sent[11]["ar"].startswith("11 إجابةً في انتظار")  # many
        assert "لم تُرسَل أي إجابة" in sent[1]["ar"]  # zero
    finally:
        context.close()
