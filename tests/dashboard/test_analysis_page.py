"""The dashboard's analysis page: breakdown charts, the joint table, the regression form."""

from __future__ import annotations

import re

import numpy as np
import pytest

from deniable.aggregator.ingest import ingest
from deniable.aggregator.store.pool import get_store
from deniable.aggregator.surveys import create_survey
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

DOC = {
    "id": "covariates",
    "title": "With covariates",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 2.0},
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
        },
    ],
}


@pytest.fixture
def with_covariates(app):
    rng = np.random.default_rng(0)
    with app.app_context():
        store = get_store()
        create_survey(store, DOC)
        survey = Survey.from_dict(DOC)
        reports = [
            make_report(
                survey,
                {"smokes": int(rng.random() < 0.3), "region": int(rng.integers(2))},
                generate_key(),
            )
            for _ in range(300)
        ]
        assert all(o.result == "accepted" for o in ingest(store, reports))
    return app


def page(client, **query):
    response = client.get("/surveys/covariates/analysis", query_string=query)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_the_survey_page_links_to_the_analysis(researcher, with_covariates):
    html = researcher.get("/surveys/covariates").get_data(as_text=True)
    assert 'id="analysis-link" href="/surveys/covariates/analysis"' in html


def test_a_breakdown_draws_a_chart_per_group_with_the_test(researcher, with_covariates):
    html = page(researcher, question="smokes", by="region")
    assert html.count('<svg class="chart"') == 2
    assert "region = north" in html and "region = south" in html
    assert re.search(r'id="breakdown-test">No difference between groups\?.*p = [0-9.e-]+', html)


def test_the_joint_table_has_a_cell_per_pair(researcher, with_covariates):
    html = page(researcher, first="smokes", second="region")
    table = html.split('id="crosstab-result"', 1)[1].split("</table>", 1)[0]
    assert table.count('<td class="num">') == 4 and "300 reports" in table


def test_the_regression_form_shows_the_coefficients(researcher, with_covariates):
    html = page(researcher, formula="smokes ~ region")
    table = html.split('id="regression-result"', 1)[1].split("</table>", 1)[0]
    assert "Intercept" in table and "region[T.south]" in table


@pytest.mark.parametrize(
    "query, message",
    [
        ({"formula": "region ~ smokes"}, "plain"),
        ({"formula": "smokes ~ nope"}, "no question"),
        ({"first": "smokes", "second": "smokes"}, "itself"),
        ({"question": "region", "by": "region"}, "plain"),
    ],
)
def test_errors_are_shown_on_the_page(researcher, with_covariates, query, message):
    html = page(researcher, **query)
    assert re.search(rf'class="flash error" role="alert">[^<]*{message}', html), message


def test_the_analysis_page_needs_a_login(client, with_covariates):
    response = client.get("/surveys/covariates/analysis")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
