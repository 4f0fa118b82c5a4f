"""The dashboard with integer and multi questions: a mean on the question's own scale, a bar per
option of a select-all question, and the analysis page's lists."""

from __future__ import annotations

import copy
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import NUMBERS_DOC


@pytest.fixture
def numbers(app: Flask) -> Survey:
    """The numbers survey with 60 reports: drinks 0..19, two options used, ages 20..79."""
    with app.app_context():
        store = get_store()
        record, _ = create_survey(store, copy.deepcopy(NUMBERS_DOC), who=OPERATOR)
        survey = Survey.from_dict(record.resolved)
        reports = [
            make_report(
                survey,
                {"drinks": i % 20, "used": ["cannabis"] if i % 2 else [], "age": 20 + i,
                 "apps": ["mail"]},
                generate_key(),
            )
            for i in range(60)
        ]  # fmt: skip
        assert all(o.result == "accepted" for o in ingest(store, reports))
    return survey


def test_the_survey_page_draws_a_mean_on_its_scale_and_a_bar_per_option(
    researcher: FlaskClient, numbers: Survey
) -> None:
    html = researcher.get("/surveys/numbers").get_data(as_text=True)
    assert html.count("<svg") == 4
    charts = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    drinks, used, age, apps = charts
    # The mean's axis runs from min to max in the question's units: one bar, the mean within
    # them, and the unbiased mean's mark.
    assert ">0<" in drinks and ">20<" in drinks and drinks.count("bar-share") == 1
    assert "mean: share" in drinks and "mean: unbiased estimate" in drinks
    assert ">18<" in age and ">99<" in age and "mean: unbiased estimate 49.5" in age
    for option in ("cannabis", "ecstasy", "LSD"):  # each its own yes/no: a bar each
        assert f"{option}: unbiased estimate" in used
    assert used.count("bar-share") == 3 and "apps" not in used
    assert "mail: unbiased estimate 100.0%" in apps
    assert "one bit" in html or "leans towards" in html


def test_the_analysis_page_offers_only_what_each_analysis_takes(
    researcher: FlaskClient, numbers: Survey
) -> None:
    response = researcher.get("/surveys/numbers/analysis")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    # A plain integer groups in bands of the cuts a researcher types (this survey has no other
    # plain question).
    by = re.search(r'<select id="by".*?</select>', html, flags=re.S)
    assert by is not None and 'value="age"' in by.group(0) and "give cuts" in by.group(0)
    assert 'id="cuts"' in html
    first = re.search(r'<select id="first".*?</select>', html, flags=re.S)
    assert first is not None
    assert 'value="used"' in first.group(0) and 'value="apps"' in first.group(0)
    assert 'value="drinks"' not in first.group(0) and 'value="age"' not in first.group(0)
    assert "used[LSD] ~ age" in html  # the example formula fits this survey


def test_a_breakdown_of_a_mean_is_drawn_on_its_scale(app: Flask, researcher: FlaskClient) -> None:
    doc = copy.deepcopy(NUMBERS_DOC)
    doc["id"] = "grouped"
    doc["questions"].append(
        {"id": "sex", "text": "Sex?", "type": "categorical", "options": ["f", "m"],
         "mechanism": "none"}
    )  # fmt: skip
    with app.app_context():
        store = get_store()
        record, _ = create_survey(store, doc, who=OPERATOR)
        survey = Survey.from_dict(record.resolved)
        truth = {"drinks": 5, "used": [], "age": 30, "apps": []}
        reports = [
            make_report(survey, {**truth, "sex": "fm"[i % 2]}, generate_key()) for i in range(40)
        ]
        assert all(o.result == "accepted" for o in ingest(store, reports))
    html = researcher.get("/surveys/grouped/analysis?question=drinks&by=sex").get_data(as_text=True)
    chart = re.search(r"<svg.*?</svg>", html, flags=re.S)
    assert chart is not None
    assert ">0<" in chart.group(0) and ">20<" in chart.group(0)  # the mean's own axis
    assert "mean: share" in chart.group(0) and not re.search(r">[0-9.]+%<", chart.group(0))


def test_the_planner_form_plans_a_mean_in_the_questions_units(researcher: FlaskClient) -> None:
    url = "/surveys/new?epsilon=1&margin=1&options=2&confidence=0.95&mechanism=onebit&range=30"
    html = researcher.get(url).get_data(as_text=True)
    assert re.search(r'id="plan-n">4,048<', html)  # as `plan --mechanism onebit --range 30`
    missing = researcher.get(url.replace("&range=30", "")).get_data(as_text=True)
    assert 'role="alert"' in missing and "range" in missing
    multi = "/surveys/new?epsilon=3&margin=0.05&options=3&confidence=0.95&mechanism=multi"
    assert re.search(r'id="plan-n">1,799<', researcher.get(multi).get_data(as_text=True))
