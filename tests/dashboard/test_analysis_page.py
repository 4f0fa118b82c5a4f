"""The dashboard's analysis page: breakdown charts, the joint table, the regression form."""

from __future__ import annotations

import re

import numpy as np
import pytest

from deniable.aggregator import regress
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.dashboard.conftest import csrf_of

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
        create_survey(store, DOC, who=OPERATOR)
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


def fit(client, formula, **form):
    """Submit the regression form as a browser does: a POST with the page's CSRF token."""
    csrf = csrf_of(page(client))
    response = client.post(
        "/surveys/covariates/analysis", data={"formula": formula, "csrf_token": csrf, **form}
    )
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
    assert table.count('<td class="num" data-cell>') == 4 and "300 reports" in table


def test_the_regression_form_shows_the_coefficients(researcher, with_covariates):
    html = fit(researcher, "smokes ~ region")
    table = html.split('id="regression-result"', 1)[1].split("</table>", 1)[0]
    assert "Intercept" in table and "region[T.south]" in table


@pytest.mark.parametrize(
    "query, message",
    [
        ({"first": "smokes", "second": "smokes"}, "itself"),
        ({"question": "region", "by": "region"}, "plain"),
    ],
)
def test_errors_are_shown_on_the_page(researcher, with_covariates, query, message):
    html = page(researcher, **query)
    assert re.search(rf'class="flash error" role="alert">[^<]*{message}', html), message


@pytest.mark.parametrize(
    "formula, message",
    [
        ("region ~ smokes", "plain"),
        ("smokes ~ nope", "no question"),
        ("smokes ~ np.exp(region)", "attribute access"),
    ],
)
def test_regression_errors_are_shown_on_the_page(researcher, with_covariates, formula, message):
    html = fit(researcher, formula)
    assert re.search(rf'class="flash error" role="alert">[^<]*{message}', html), message
    assert 'id="regression-result"' not in html


def test_a_get_with_a_formula_fits_nothing_and_only_fills_the_field(researcher, with_covariates):
    html = page(researcher, formula="smokes ~ region")
    assert 'id="regression-result"' not in html and 'role="alert"' not in html
    assert 'value="smokes ~ region"' in html  # prefilled, for the researcher to submit
    form = html.split('id="regression-title"', 1)[1].split("</form>", 1)[0]
    assert 'method="post"' in form and 'name="csrf_token"' in form


def test_a_regression_post_without_the_csrf_token_fits_nothing(researcher, with_covariates):
    response = researcher.post("/surveys/covariates/analysis", data={"formula": "smokes ~ region"})
    assert response.status_code == 400
    assert 'id="regression-result"' not in response.get_data(as_text=True)


def test_the_analysis_page_needs_a_login(client, with_covariates):
    response = client.get("/surveys/covariates/analysis")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_only_a_formula_that_fits_is_suggested_and_a_failed_fit_names_its_terms(
    app, researcher
) -> None:
    """hit_child is asked only of those with children: the suggestion leaves has_children out
    (it would be the same for every report fitted) and fits; a fit with it names the
    collinear terms."""
    from tests.aggregator.test_results_read_right import DOC as READ_RIGHT
    from tests.aggregator.test_results_read_right import REPORTS

    doc = {**READ_RIGHT, "questions": [q for q in READ_RIGHT["questions"] if q["id"] != "smokes"]}
    doc["questions"] = [q for q in doc["questions"] if q["id"] != "browser"]
    with app.app_context():
        store = get_store()
        create_survey(store, doc, who=OPERATOR)
        survey = Survey.from_dict(doc)
        reports = [
            make_report(
                survey,
                {k: v for k, v in r["answers"].items() if k in survey.questions},
                generate_key(),
            )
            for r in REPORTS
        ]
        assert all(o.result == "accepted" for o in ingest(store, reports))
    html = researcher.get(f"/surveys/{doc['id']}/analysis").get_data(as_text=True)
    suggested = re.search(r'id="formula" name="formula"[^>]*value="([^"]*)"', html)
    assert suggested is not None
    formula = suggested.group(1).replace("&#39;", "'")
    assert formula == "hit_child ~ age"
    assert regress(survey, reports, formula).converged
    posted = researcher.post(
        f"/surveys/{doc['id']}/analysis",
        data={"formula": "hit_child ~ age + has_children", "csrf_token": csrf_of(html)},
    ).get_data(as_text=True)
    assert "The fit failed: the covariates are collinear" in posted
    assert "Intercept, has_children" in posted and "drop has_children" in posted
