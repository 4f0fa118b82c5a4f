"""The dashboard's page of a series of waves (docs/researchers.md, "Series"): a server-drawn
chart of each followed option's estimates by wave with their intervals, the changes and the
trend in a table (the API's numbers), linked from each wave's survey page; 404 when unseen."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.charts import SHARES, series_chart
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.dashboard.conftest import TOKEN


def wave(number: int) -> dict[str, Any]:
    return {
        "id": f"panel-w{number}",
        "title": f"Panel, wave {number}",
        "series": "panel",
        "wave": number,
        "questions": [
            {
                "id": "smokes",
                "text": "Do you smoke?",
                "type": "binary",
                "longitudinal": {"epsilon_perm": 3.0, "epsilon_1": 2.0},
            },
        ],
    }


@pytest.fixture
def series_app(app: Flask) -> Flask:
    """The dashboard app with a series of two waves of 60 reports each."""
    with app.app_context():
        store = get_store()
        for number in (1, 2):
            create_survey(store, wave(number), who=OPERATOR)
            survey = Survey.from_dict(wave(number))
            reports = [
                make_report(survey, {"smokes": i % (number + 1) == 0}, generate_key())
                for i in range(60)
            ]
            assert all(o.result == "accepted" for o in ingest(store, reports))
    return app


def api_doc(client: FlaskClient) -> dict[str, Any]:
    response = client.get(
        "/api/v1/series/panel/results", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_the_series_page_charts_the_waves_and_tables_the_changes_and_trend(
    series_app: Flask, researcher: FlaskClient
) -> None:
    response = researcher.get("/series/panel")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    doc = api_doc(researcher)
    (change,) = doc["changes"]
    (trend,) = doc["trend"]
    assert (change["question"], change["option"]) == ("smokes", "yes")
    assert '<svg class="chart series-chart"' in html
    for w in doc["waves"]:
        (entry,) = w["results"]["questions"]
        yes = next(o for o in entry["options"] if o["option"] == "yes")
        assert f"wave {w['wave']}: estimate {yes['estimate']:.1%}" in html
        assert f'href="/surveys/{w["survey"]}"' in html
    assert "change 1 → 2" in html and "trend per wave" in html
    assert f"{change['estimate']:.4g}" in html and f"{change['stderr']:.4g}" in html
    assert f"{change['ci_low']:.4g} – {change['ci_high']:.4g}" in html
    assert f"{trend['estimate']:.4g}" in html
    assert "largest variance" in html
    assert "/api/v1/series/panel/results" in html


def test_each_wave_links_to_its_series(series_app: Flask, researcher: FlaskClient) -> None:
    html = researcher.get("/surveys/panel-w2").get_data(as_text=True)
    assert re.search(r'id="series-link">Wave 2 of the series <a href="/series/panel">', html)
    assert 'id="series-link"' not in researcher.get("/surveys/habits").get_data(as_text=True)


def test_an_unseen_series_is_the_unknown_page(series_app: Flask, researcher: FlaskClient) -> None:
    assert researcher.get("/series/nothing-here").status_code == 404
    assert researcher.get("/series/Not_An_Id").status_code == 404


def test_nobody_logged_in_sees_no_series(series_app: Flask, client: FlaskClient) -> None:
    response = client.get("/series/panel")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert "panel-w1" not in response.get_data(as_text=True)


def test_the_series_chart_is_accessible_and_escaped() -> None:
    points = [
        {"wave": 1, "estimate": 0.2, "ci_low": 0.1, "ci_high": 0.3},
        {"wave": 3, "estimate": None, "ci_low": None, "ci_high": None},
        {"wave": 4, "estimate": 1.2, "ci_low": 0.9, "ci_high": 1.5},
    ]
    svg = str(series_chart(points, 0.9, "q <b> = yes", SHARES))
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "q &lt;b&gt; = yes" in svg and "<b>" not in svg
    assert "wave 1: estimate 20.0%, 90% interval 10.0% to 30.0%" in svg
    assert "wave 3: no estimate" in svg
    assert svg.count("<circle") == 2 and svg.count('class="whisker"') == 2
    # An estimate beyond the axis is drawn at its edge, never outside the plot.
    ys = [float(y) for y in re.findall(r'cy="([-\d.]+)"', svg)]
    assert all(0 <= y <= 220 for y in ys)
