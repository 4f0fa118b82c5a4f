"""The dashboard's survey page in the survey's languages, and its questions' own n.

The page shows the default language and, with `?lang=` (the switcher), another of the
survey's: title, question texts and option labels, `lang`/`dir` on them (Arabic right to
left); the charts and tables keep the options in wire order and the numbers do not change.
A question with a skip-logic condition says it and "n of N reports asked it".
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

DOC: dict[str, Any] = {
    "id": "languages",
    "title": "Smoking habits",
    "language": "en",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "mechanism": "none"},
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["Left", "Centre", "Right"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "quit",
            "text": "Have you tried to quit?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": "smokes == 'yes'",
        },
    ],
    "translations": {
        "fr": {
            "title": "Habitudes tabagiques",
            "questions": {
                "smokes": {"text": "Fumez-vous ?", "options": ["non", "oui"]},
                "party": {"text": "Quel parti ?", "options": ["Gauche", "Centre-fr", "Droite"]},
                "quit": {"text": "Avez-vous essayé d'arrêter ?", "options": ["non", "oui"]},
            },
        },
        "ar": {
            "title": "عادات التدخين",
            "questions": {
                "smokes": {"text": "هل تدخن؟", "options": ["لا", "نعم"]},
                "party": {"text": "أي حزب؟", "options": ["اليسار", "الوسط", "اليمين"]},
                "quit": {"text": "هل حاولت الإقلاع؟", "options": ["لا", "نعم"]},
            },
        },
    },
}
N = 30
SMOKERS = 12


@pytest.fixture
def multilingual(app):
    """The survey with N reports: SMOKERS smokers, the only ones asked `quit`."""
    with app.app_context():
        store = get_store()
        create_survey(store, copy.deepcopy(DOC), who=OPERATOR)
        survey = Survey.from_dict(DOC)
        reports = []
        for i in range(N):
            truth: dict[str, Any] = {"smokes": i < SMOKERS, "party": ["Left", "Right"][i % 2]}
            if i < SMOKERS:
                truth["quit"] = i % 3 == 0
            reports.append(make_report(survey, truth, generate_key()))
        assert all(o.result == "accepted" for o in ingest(store, reports))
    return app


def page(client, **query: str) -> str:
    response = client.get("/surveys/languages", query_string=query)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_data(as_text=True)


def numbers(html: str) -> list[str]:
    """The results tables' numeric cells, in order: the same whatever the language."""
    return re.findall(r'<td class="num[^"]*">([^<]*)</td>', html)


def row_labels(html: str, qid: str) -> list[str]:
    """The option labels heading the rows of one question's table, in order."""
    section = html.split(f'id="q-{qid}"', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<th scope="row"><bdi[^>]*>([^<]*)</bdi></th>', section)


def test_the_default_language_first_with_a_switch_to_the_others(multilingual, researcher):
    html = page(researcher)
    assert "Smoking habits" in html and "Which party?" in html
    assert row_labels(html, "party") == ["Left", "Centre", "Right"]
    switch = re.search(r'<select id="lang" name="lang"[^>]*>(.*?)</select>', html, re.S)
    assert switch, "no language switch on the page"
    offered = re.findall(r'<option value="([^"]+)"', switch.group(1))
    assert offered[0] == "en" and sorted(offered[1:]) == ["ar", "fr"]  # the default first
    assert re.search(r'<option value="en"[^>]*selected', switch.group(1))


def test_another_language_changes_the_words_not_the_numbers(multilingual, researcher):
    english, french = page(researcher), page(researcher, lang="fr")
    assert "Habitudes tabagiques" in french and "Quel parti ?" in french
    assert "Which party?" not in french
    # The same rows in wire order (Left, Centre, Right), named in French.
    assert row_labels(french, "party") == ["Gauche", "Centre-fr", "Droite"]
    assert row_labels(french, "quit") == ["non", "oui"]
    assert numbers(french) == numbers(english)
    chart = french.split('id="q-party"', 1)[1].split("</svg>", 1)[0]
    assert [chart.index(label) for label in ("Gauche", "Centre-fr", "Droite")] == sorted(
        chart.index(label) for label in ("Gauche", "Centre-fr", "Droite")
    )
    assert 'lang="fr"' in french and re.search(r'<option value="fr"[^>]*selected', french)
    # Downloads and the API keep the wire labels: only the page's words change.
    csv = researcher.get("/surveys/languages/results.csv").get_data(as_text=True)
    assert "Left" in csv and "Gauche" not in csv


def test_a_right_to_left_language_is_marked_so(multilingual, researcher):
    arabic = page(researcher, lang="ar")
    assert "عادات التدخين" in arabic
    assert row_labels(arabic, "party") == ["اليسار", "الوسط", "اليمين"]
    assert 'lang="ar" dir="rtl"' in arabic
    assert 'lang="en" dir="ltr"' in page(researcher)


def test_a_language_the_survey_lacks_is_a_clear_error(multilingual, researcher):
    response = researcher.get("/surveys/languages", query_string={"lang": "de"})
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert "lang: the survey &#39;languages&#39; has no &#39;de&#39; text" in text
    assert re.search(r"its languages: en, (fr, ar|ar, fr)", text)
    # A regional tag is served by its language.
    assert "Quel parti ?" in page(researcher, lang="fr-CA")


def test_a_gated_question_says_how_many_reports_asked_it(multilingual, researcher):
    for lang in ("en", "fr"):
        html = page(researcher, lang=lang)
        asked = re.search(r'<p class="asked" id="asked-quit">(.*?)</p>', html, re.S)
        assert asked, "no n of N for the gated question"
        assert f"{SMOKERS} of {N} reports" in asked.group(1)
        assert "smokes == &#39;yes&#39;" in asked.group(1)
        assert 'id="asked-party"' not in html  # every report holds it
        caption = html.split('id="q-quit"', 1)[1].split("</figcaption>", 1)[0]
        assert f"from {SMOKERS} of {N} reports" in caption
