"""The respondent's web page in a real browser: answer, reload, offline, invitations, sampler."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from deniable.shared import Survey
from deniable.shared.report import check_structure, verify_report
from deniable.shared.text import sketch_column

DOC = {
    "id": "web-page",
    "title": "Answering in the browser",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cheated",
            "text": "Cheated on a test?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": "2/3", "yes": "1/2"},
        },
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "apps",
            "text": "Main app?",
            "type": "categorical",
            "options": ["mail", "maps", "chat", "news", "games", "bank"],
            "mechanism": "oue",
            "epsilon": 1.5,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "none",
        },
        {
            "id": "drinks",
            "text": "Drinks last week?",
            "type": "integer",
            "min": 0,
            "max": 20,
            "epsilon": 0.5,
        },
        {
            "id": "used",
            "text": "Ever used?",
            "type": "multi",
            "options": ["cannabis", "ecstasy", "LSD"],
            "epsilon": 1.5,
        },
        {
            "id": "age",
            "text": "Age?",
            "type": "integer",
            "min": 18,
            "max": 99,
            "mechanism": "none",
        },
        {
            "id": "city",
            "text": "Where were you born?",
            "type": "text",
            "epsilon": 1.0,
            "hcms": {"k": 4, "m": 64},
            "candidates": ["lagos", "kano"],
        },
    ],
}
ANSWERS: dict[str, Any] = {
    "smokes": "yes",
    "cheated": "no",
    "party": "B",
    "apps": "chat",
    "region": "east",
    "drinks": "7",
    "used": ["cannabis", "LSD"],
    "age": "42",
    "city": "  Port HARCOURT ",
}


@pytest.fixture
def server(live_server_factory: Any) -> Any:
    server = live_server_factory()
    server.create_survey(DOC)
    return server


def n_reports(server: Any, survey_id: str = "web-page") -> int:
    return server.results(survey_id)["n"]


def fill(page: Any) -> None:
    """Answer every question through the form: radios, checkboxes and number inputs."""
    for qid, value in ANSWERS.items():
        if isinstance(value, list):
            for label in value:
                page.locator(f'input[name="{qid}"][value="{label}"]').check()
        elif page.locator(f'input[name="{qid}"]:is([type="number"], [type="text"])').count():
            page.locator(f'input[name="{qid}"]').fill(value)
        else:
            page.locator(f'input[name="{qid}"][value="{value}"]').check()


def fill_and_send(page: Any) -> None:
    fill(page)
    page.locator("button[type=submit]").click()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_answering_sends_only_a_signed_noisy_report(server: Any, page: Any) -> None:
    posted: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            posted.append(json.loads(r.post_data))
            if r.method == "POST" and r.url.endswith("/api/v1/reports")
            else None
        ),
    )
    page.goto(f"{server.url}/s/web-page")
    expect(page.locator("h1")).to_have_text("Answering in the browser")
    expect(page.locator("#spent")).to_have_text("0.00")
    # The plain-words explanation is deniable explain's text, rendered by the server.
    expect(page.locator("#q-smokes .explain")).to_contain_text("What is sent")
    fill_and_send(page)
    receipt = page.locator("[data-report-id]")
    expect(receipt).to_be_visible()
    expect(page.locator("#receipt-status")).to_contain_text("accepted")
    assert n_reports(server) == 1
    assert len(posted) == 1
    report = posted[0]
    assert receipt.get_attribute("data-report-id") == report["report_id"]
    survey = Survey.from_dict(
        requests.get(f"{server.url}/api/v1/surveys/web-page").json()["survey"]
    )
    check_structure(report)
    verify_report(report)  # the browser's Ed25519 signature verifies in Python
    assert report["survey_hash"] == survey.hash
    assert set(report["answers"]) == set(survey.questions)
    for qid, sent in report["answers"].items():
        survey.questions[qid].validate(sent)  # wire-encoded noisy answers only
    assert report["answers"]["apps"] != "chat" and len(report["answers"]["apps"]) == 6
    assert report["answers"]["region"] == 2  # plain: sent exactly as answered, and said so
    assert report["answers"]["age"] == 42
    assert report["answers"]["drinks"] in (0, 1)  # one bit, never the number
    assert len(report["answers"]["used"]) == 3
    city = report["answers"]["city"]  # [j, l, bit]: never the words
    assert isinstance(city, list) and len(city) == 3 and "harcourt" not in json.dumps(report)
    expect(page.locator("#q-age .plain")).to_have_count(1)
    expect(page.locator("#q-drinks .explain")).to_contain_text("one bit")
    receipt_text = page.locator("#receipt").inner_text()
    assert "Drinks last week? → " in receipt_text and "Ever used? → " in receipt_text
    expect(page.locator("#q-region .plain")).to_have_text(
        "Sent exactly as you answer: not randomized."
    )
    expect(page.locator("#q-smokes .plain")).to_have_count(0)
    assert report["sent_at"].endswith(":00:00Z")
    expect(page.locator("#spent")).not_to_have_text("0.00")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_reload_shows_the_receipt_and_never_randomizes_again(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/s/web-page")
    fill_and_send(page)
    first = page.locator("[data-report-id]").get_attribute("data-report-id")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.reload()
    expect(page.locator("[data-report-id]")).to_have_attribute("data-report-id", first)
    expect(page.locator("#answer")).to_be_hidden()
    page.wait_for_timeout(300)
    assert posts == []  # an accepted report is not sent again
    assert n_reports(server) == 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_offline_the_report_waits_and_is_sent_once(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/s/web-page")
    page.route("**/api/v1/reports", lambda route: route.abort("internetdisconnected"))
    fill_and_send(page)
    expect(page.locator("#receipt-status")).to_contain_text("waiting to be sent")
    stored = page.locator("[data-report-id]").get_attribute("data-report-id")
    assert n_reports(server) == 0
    sent: list[str] = []
    page.on(
        "request",
        lambda r: (
            sent.append(json.loads(r.post_data)["report_id"])
            if r.method == "POST" and r.url.endswith("/api/v1/reports")
            else None
        ),
    )
    page.unroute("**/api/v1/reports")
    page.evaluate("window.dispatchEvent(new Event('online'))")
    expect(page.locator("#receipt-status")).to_contain_text("accepted")
    assert sent == [stored] and n_reports(server) == 1
    page.reload()
    expect(page.locator("[data-report-id]")).to_have_attribute("data-report-id", stored)
    page.wait_for_timeout(300)
    assert sent == [stored] and n_reports(server) == 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_an_invitation_link_enrolls_and_a_wrong_code_is_refused(server: Any, browser: Any) -> None:
    server.create_survey({**DOC, "id": "invited", "enrollment": "invite"})
    response = requests.post(
        f"{server.url}/api/v1/surveys/invited/invitations",
        json={"count": 1},
        headers=server.headers,
        timeout=10,
    )
    (code,) = response.json()["codes"]
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{server.url}/s/invited#invitation=WRNG-CODE-XXXX")
        fill_and_send(page)
        expect(page.locator("#status")).to_contain_text("not a valid invitation code")
        expect(page.locator("[data-report-id]")).to_have_count(0)
        assert n_reports(server, "invited") == 0
        page.goto(f"{server.url}/s/invited#invitation={code}")
        page.reload()
        fill_and_send(page)
        expect(page.locator("#receipt-status")).to_contain_text("accepted")
        assert n_reports(server, "invited") == 1
    finally:
        context.close()


#: Draws per mechanism: a quick sanity check of the page's default (secure) source, the draws
#: themselves being pinned byte for byte by tests/browser/test_randomness_vectors_js.py. 5.5
#: standard errors of a frequency fail about 1 time in 26 million each (about 16 checks: below
#: 1e-6 for the test).
DRAWS = 10_000
SE_BOUND = 5.5


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_modules_sampler_matches_the_exact_probabilities(server: Any, page: Any) -> None:
    survey = Survey.from_dict(
        requests.get(f"{server.url}/api/v1/surveys/web-page").json()["survey"]
    )
    page.goto(f"{server.url}/s/web-page")
    resolved = survey.to_dict()["questions"]
    counts = page.evaluate(
        """async ([questions, draws]) => {
            const { randomize } = await import('/static/deniable.js');
            const out = {};
            for (const q of questions) {
              const truth = q.type === 'binary' ? 'yes'
                : q.type === 'integer' ? q.min + 7
                : q.type === 'multi' ? [q.options[1]]
                : q.type === 'text' ? 'Lagos' : q.options[1];
              const tally = {};
              for (let i = 0; i < draws; i += 1) {
                const a = String(randomize(q, truth));
                tally[a] = (tally[a] || 0) + 1;
              }
              out[q.id] = tally;
            }
            return out;
        }""",
        [resolved, DRAWS],
    )
    for question in survey.questions.values():
        truth: Any = 1  # "yes", the second option, the second selected alone
        mech = question.randomizer
        observed = counts[question.id]
        if question.type == "integer":
            truth = 7  # the offset from min
        if question.type == "text":  # hcms: the bit is the Hadamard entry with probability keep
            sketch = question.randomizer
            kept = 0
            for text, n in observed.items():
                j, row, bit = (int(x) for x in text.split(","))
                kept += n * (bit == sketch.entry(row, sketch_column(j, "lagos", sketch.m)))
            p = float(sketch.keep)
            assert abs(kept / DRAWS - p) <= SE_BOUND * math.sqrt(p * (1 - p) / DRAWS), kept
            continue
        if question.mechanism == "oue" or question.type == "multi":  # each bit on its own
            for i in range(question.k):
                p = float(question.randomizer.p_star if i == truth else question.randomizer.q_star)
                ones = sum(n for out, n in observed.items() if out[i] == "1")
                assert abs(ones / DRAWS - p) <= SE_BOUND * math.sqrt(p * (1 - p) / DRAWS), (i, ones)
            continue
        exact = {o: mech.probability(o, truth) for o in mech.outputs()}
        assert set(observed) <= {str(o) for o in exact}
        for output, probability in exact.items():
            p = float(probability)
            seen = observed.get(str(output), 0) / DRAWS
            assert abs(seen - p) <= SE_BOUND * math.sqrt(p * (1 - p) / DRAWS), (question.id, output)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_browser_without_what_answering_needs_sends_nothing(server: Any, browser: Any) -> None:
    context = browser.new_context()
    context.add_init_script("Object.defineProperty(window, 'indexedDB', {value: undefined});")
    page = context.new_page()
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    try:
        page.goto(f"{server.url}/s/web-page")
        expect(page.locator("#status")).to_contain_text("cannot answer this survey safely")
        expect(page.locator("#status")).to_contain_text("Nothing was sent")
        expect(page.locator("button[type=submit]")).to_be_disabled()
        assert posts == [] and n_reports(server) == 0
    finally:
        context.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_phone_answers_from_the_keyboard_without_cookies(server: Any, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    try:
        response = page.goto(f"{server.url}/s/web-page")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 360  # nothing wider than a small phone
        for qid, value in ANSWERS.items():
            if qid in ("drinks", "age", "city"):  # a number or text input: type it
                page.locator(f'input[name="{qid}"]').focus()
                page.keyboard.type(value)
                continue
            for label in value if isinstance(value, list) else [value]:
                page.locator(f'input[name="{qid}"][value="{label}"]').focus()
                page.keyboard.press("Space")
        page.locator("button[type=submit]").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#receipt-status")).to_contain_text("accepted")
        assert context.cookies() == []
        assert n_reports(server) == 1
    finally:
        context.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_browser_without_ed25519_sends_nothing(server: Any, browser: Any) -> None:
    context = browser.new_context()
    context.add_init_script(
        """const generate = crypto.subtle.generateKey.bind(crypto.subtle);
        crypto.subtle.generateKey = (algorithm, ...rest) =>
          String(algorithm.name || algorithm) === 'Ed25519'
            ? Promise.reject(new DOMException('Unrecognized name', 'NotSupportedError'))
            : generate(algorithm, ...rest);"""
    )
    page = context.new_page()
    try:
        page.goto(f"{server.url}/s/web-page")
        expect(page.locator("#status")).to_contain_text("lacks Ed25519 signatures")
        expect(page.locator("button[type=submit]")).to_be_disabled()
        assert n_reports(server) == 0
    finally:
        context.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_survey_over_the_epsilon_cap_is_refused_before_randomizing(
    server: Any, page: Any
) -> None:
    costly = [
        {"id": f"q{i}", "text": f"Question {i}?", "type": "binary", "epsilon": 1.5}
        for i in range(8)
    ]
    server.create_survey({"id": "costly", "title": "Too costly", "questions": costly})
    page.goto(f"{server.url}/s/costly")
    expect(page.locator("#status")).to_contain_text("over its cap of 10")
    expect(page.locator("button[type=submit]")).to_be_disabled()
    assert n_reports(server, "costly") == 0


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_number_out_of_range_is_refused_and_nothing_is_sent(server: Any, page: Any) -> None:
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(f"{server.url}/s/web-page")
    fill(page)
    page.locator('input[name="drinks"]').fill("25")
    page.locator("button[type=submit]").click()
    expect(page.locator("#status")).to_contain_text("needs a whole number from 0 to 20")
    expect(page.locator("[data-report-id]")).to_be_hidden()
    assert posts == [] and n_reports(server) == 0
    page.locator('input[name="drinks"]').fill("20")
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_contain_text("accepted")
    assert n_reports(server) == 1
