"""The dashboard with a text question: ranked candidate rows, a box to estimate any candidate,
and clear errors for a bad one."""

from __future__ import annotations

import copy
import random
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
from tests.aggregator.test_text_questions import TEXT_DOC, answers


@pytest.fixture
def cities(app: Flask) -> Survey:
    with app.app_context():
        store = get_store()
        record, _ = create_survey(store, copy.deepcopy(TEXT_DOC), who=OPERATOR)
        survey = Survey.from_dict(record.resolved)
        rng = random.Random(3)
        reports = [make_report(survey, answers(rng), generate_key()) for _ in range(2000)]
        assert {o.result for o in ingest(store, reports)} == {"accepted"}
    return survey


def test_text_questions_show_ranked_candidates_and_a_box_for_more(
    researcher: FlaskClient, cities: Survey
) -> None:
    html = researcher.get("/surveys/cities").get_data(as_text=True)
    assert 'name="candidates"' in html and "Estimate candidates" in html
    table = re.search(r"Where were you born\?: results.*?</table>", html, flags=re.S)
    assert table is not None
    rows = re.findall(r'<th scope="row"><bdi>([^<]+)</bdi></th>', table.group(0))
    assert rows[0] == "lagos" and set(rows) == {"lagos", "kano", "abuja", "ibadan"}
    assert "hashed on the device" in html
    asked = researcher.get("/surveys/cities?candidates=Jos,+Port+Harcourt").get_data(as_text=True)
    assert "<bdi>jos</bdi>" in asked and "<bdi>port harcourt</bdi>" in asked
    assert "candidates=Jos" in asked  # the CSV link carries them too
    csv_text = researcher.get("/surveys/cities/results.csv?candidates=jos").get_data(as_text=True)
    assert "\ncity,jos," in csv_text


def test_a_bad_candidate_is_said_and_the_page_still_shows(
    researcher: FlaskClient, cities: Survey
) -> None:
    many = ",".join(f"w{i}" for i in range(60))
    response = researcher.get(f"/surveys/cities?candidates={many}")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert 'role="alert"' in html and "at most 50" in html and "<bdi>lagos</bdi>" in html
