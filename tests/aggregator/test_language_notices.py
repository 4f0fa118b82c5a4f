"""A survey language without a catalog of the product's words is said at creation, the same
way by the API (`notices`), the dashboard (a flash) and `deniable-aggregator create-survey`
(stderr): the survey is valid, its buttons and explanations are shown in English
(docs/translations.md)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable.aggregator import surveys
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.store import Store
from tests.conftest import LiveServer
from tests.postgres_support import SQLITE_ONLY

NOTICE = (
    "the product's own words (buttons, explanations) have no {} catalog and are shown in English"
)


def doc(survey_id: str, language: str | None, *translated: str) -> dict[str, Any]:
    """A one-question survey in `language`, translated into each of `translated`."""
    document: dict[str, Any] = {
        "id": survey_id,
        "title": "Survey",
        "enrollment": "open",
        "questions": [{"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0}],
    }
    if language is not None:
        document["language"] = language
    if translated:
        document["translations"] = {
            tag: {
                "title": f"Survey ({tag})",
                "questions": {"smokes": {"text": f"Smoke? ({tag})", "options": ["n", "y"]}},
            }
            for tag in translated
        }
    return document


def csrf_of(html: str) -> str:
    """The CSRF token of the first form on a page."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


@pytest.mark.parametrize(
    ("language", "translated", "missing"),
    [
        (None, (), []),
        ("en", ("fr", "es", "ar"), []),
        ("fr-CA", ("es-MX",), []),  # served by the fr and es catalogs
        ("de", ("fr",), ["de"]),
        ("en", ("pt-BR", "sw", "ar"), ["pt-BR", "sw"]),
    ],
)
def test_each_language_without_a_catalog_gets_one_notice(
    store: Store, language: str | None, translated: tuple[str, ...], missing: list[str]
) -> None:
    record, created = surveys.create_survey(store, doc("s", language, *translated), who=OPERATOR)
    assert created
    assert surveys.language_notices(record) == [NOTICE.format(tag) for tag in missing]


# the store part: test_each_language_without_a_catalog_gets_one_notice on both
@SQLITE_ONLY
def test_the_api_answers_the_notices(live_server: LiveServer) -> None:
    german = doc("umfrage", "de", "fr")
    response = requests.post(
        f"{live_server.url}/api/v1/surveys", json=german, headers=live_server.headers, timeout=10
    )
    assert response.status_code == 201, response.text
    assert response.json()["notices"] == [NOTICE.format("de")]
    again = requests.post(
        f"{live_server.url}/api/v1/surveys", json=german, headers=live_server.headers, timeout=10
    )
    assert again.status_code == 200 and again.json()["notices"] == [NOTICE.format("de")]
    french = live_server.create_survey(doc("enquete", "fr", "ar"))
    assert french["notices"] == []
    # The survey is valid all the same: it is served, and the respondent page renders.
    assert requests.get(f"{live_server.url}/api/v1/surveys/umfrage", timeout=10).ok
    page = requests.get(f"{live_server.url}/s/umfrage", timeout=10)
    assert page.status_code == 200


# the store part: test_each_language_without_a_catalog_gets_one_notice on both
@SQLITE_ONLY
def test_the_cli_says_the_notices_on_stderr(live_server: LiveServer, tmp_path: Path) -> None:
    path = tmp_path / "survey.json"
    path.write_text(json.dumps(doc("sondeo", "es", "sw", "ar")), encoding="utf-8")
    made = live_server.cli("create-survey", str(path))
    assert made.stdout.strip() == "sondeo"  # stdout stays the id alone, for scripts
    assert made.stderr.strip().splitlines() == [f"note: {NOTICE.format('sw')}"]
    path.write_text(json.dumps(doc("plain", None)), encoding="utf-8")
    quiet = live_server.cli("create-survey", str(path))
    assert quiet.stdout.strip() == "plain" and "catalog" not in quiet.stderr


# the store part: test_each_language_without_a_catalog_gets_one_notice on both
@SQLITE_ONLY
def test_the_dashboard_flashes_the_notices(live_server: LiveServer) -> None:
    session = requests.Session()
    login = session.get(f"{live_server.url}/login", timeout=10)
    session.post(
        f"{live_server.url}/login",
        data={"token": live_server.token, "csrf_token": csrf_of(login.text)},
        timeout=10,
    )
    form = session.get(f"{live_server.url}/surveys/new", timeout=10)
    assert form.status_code == 200, "not logged in"
    document = copy.deepcopy(doc("bunt", "de", "fr", "xh"))
    made = session.post(
        f"{live_server.url}/surveys/new",
        data={"document": json.dumps(document), "csrf_token": csrf_of(form.text)},
        timeout=10,
    )
    assert made.status_code == 200 and made.url.endswith("/surveys/bunt")
    assert "Survey &#39;bunt&#39; created." in made.text
    for tag in ("de", "xh"):
        assert f"Note: {NOTICE.format(tag)}.".replace("'", "&#39;") in made.text
    assert "no fr catalog" not in made.text
