"""The demo: example surveys answered by simulated respondents whose true answers are known
(one of them written as an XLSForm, with skip logic: its reports leave out skipped questions).

Each simulated respondent randomizes and signs on "its device" exactly as a real client does
(make_report), and the reports reach the served aggregator over HTTP through the client's
HTTP layer (see cli/simulate_http.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from deniable.aggregator import accounts, forms
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli import simulate_http
from deniable.aggregator.cli.simulate_http import Sent
from deniable.aggregator.stats import simulate
from deniable.aggregator.store import Store

DEMO_RESPONDENTS = 3000
#: The demo's accounts: an admin, and an analyst of the demo surveys (docs/accounts.md).
DEMO_ADMIN = "demo"
DEMO_ANALYST = "analyst"
BATCH = 1000

#: The true population, per demo survey and question: option shares; for an integer question
#: value -> share; for a multi question each option's chance of being selected.
DEMO_TRUTHS: dict[str, dict[str, dict[str, Any]]] = {
    "demo-habits": {
        "smokes": {"no": 0.8, "yes": 0.2},
        "cheated": {"no": 0.65, "yes": 0.35},
        "commute": {"car": 0.45, "transit": 0.3, "bike": 0.15, "walk": 0.1},
        "screen-time": {"under 1": 0.05, "1-3": 0.25, "3-5": 0.35, "5-8": 0.25, "over 8": 0.1},
    },
    "demo-numbers": {
        "drinks": {"0": 0.3, "2": 0.25, "5": 0.2, "10": 0.15, "20": 0.1},  # mean 5
        "used": {"cannabis": 0.35, "ecstasy": 0.08, "LSD": 0.05, "mushrooms": 0.1},
        "town": {
            "zipf": 1.1,
            "words": ["Lagos", "Kano", "Ibadan", "Abuja", "Port Harcourt", "Jos"],
        },
        "age": {"25": 0.3, "40": 0.3, "60": 0.25, "80": 0.15},
        "region": {"north": 0.3, "south": 0.3, "east": 0.2, "west": 0.2},
    },
    # From the XLSForm (examples/make_xlsform.py): the plain `smokes` gates `cigarettes` and
    # `quit`, so only the smokers' reports hold them (docs/xlsform.md).
    "health-multilingual": {
        "age": {"25": 0.3, "40": 0.3, "60": 0.25, "80": 0.15},
        "region": {"North": 0.3, "South": 0.3, "East": 0.2, "West": 0.2},
        "smokes": {"no": 0.75, "yes": 0.25},
        "cigarettes": {"5": 0.3, "10": 0.4, "20": 0.3},  # mean 11 among smokers
        "quit": {"no": 0.6, "yes": 0.4},
        "alcohol": {
            "Never": 0.3,
            "Monthly or less": 0.3,
            "Every week": 0.25,
            "Every day or nearly": 0.15,
        },
        "used": {"Cannabis": 0.3, "Ecstasy": 0.05, "Cocaine": 0.03},
        "town": {
            "zipf": 1.1,
            "words": ["casablanca", "rabat", "fes", "marrakesh", "tangier", "agadir"],
        },
    },
}
DEMO_FILES = ("examples/demo-survey.json", "examples/demo-numbers.json")
#: Demo surveys written as XLSForms (docs/xlsform.md), imported as `survey import` does.
DEMO_FORMS = ("examples/health-multilingual.xlsx",)


def _doc(name: str) -> dict[str, Any]:
    path = resources.files("deniable.aggregator").joinpath(name)
    return json.loads(path.read_text("utf-8"))


def demo_survey_doc() -> dict[str, Any]:
    """The first example survey (binary and categorical questions)."""
    return _doc(DEMO_FILES[0])


def demo_survey_docs(
    more: Sequence[tuple[str, bytes]] = (), *, drop_unsupported: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every demo survey (the habits survey, one with numbers and select-all questions, the
    multilingual one with skip logic imported from its XLSForm, then one per (file name, bytes)
    of `more`: forms researchers already have, such as `make demo`'s real public one), and the
    notices of the forms' imports."""
    docs = [_doc(name) for name in DEMO_FILES]
    notices: list[str] = []
    for name in DEMO_FORMS:
        path = resources.files("deniable.aggregator").joinpath(name)
        docs.append(forms.import_xlsform(path.read_bytes(), filename=name))
    for name, data in more:
        imported = forms.read_xlsform(data, filename=name, drop_unsupported=drop_unsupported)
        docs.append(imported.document)
        notices += [f"{name}: {notice}" for notice in imported.notices]
    return docs, notices


def fill_over_http(url: str, survey_id: str, respondents: int = DEMO_RESPONDENTS) -> Sent:
    """Answer the served survey with simulated respondents through the client's HTTP layer
    (a survey without a demo truth gets each question type's default truth)."""
    api, survey = simulate_http.fetch_survey(url, survey_id)
    given = DEMO_TRUTHS.get(survey_id)
    truth = simulate.parse_truth(survey, None if given is None else json.dumps(given))
    return simulate_http.send(api, survey, truth, respondents, batch=BATCH, seed=2026)


def demo_tokens(store: Store, survey_ids: Sequence[str]) -> tuple[str, str]:
    """New tokens (admin, analyst): of the admin account "demo", and of the account "analyst"
    granted analyst on the demo surveys (it reads their results and changes nothing)."""
    admin, _ = accounts.admin_token(store, OPERATOR, DEMO_ADMIN)
    if store.get_account(DEMO_ANALYST) is None:
        accounts.create_account(store, OPERATOR, DEMO_ANALYST)
    for survey_id in survey_ids:
        accounts.grant(store, OPERATOR, survey_id, DEMO_ANALYST, "analyst")
    analyst, _ = accounts.create_token(store, OPERATOR, DEMO_ANALYST, name="demo")
    return admin, analyst
