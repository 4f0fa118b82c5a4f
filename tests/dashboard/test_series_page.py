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
from deniable.aggregator.stats.series_results import shown_change
from deniable.aggregator.surveys import create_survey, series_results
from deniable.aggregator.web.charts import SHARES, series_chart
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, build_report, make_report
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


def test_a_change_beyond_its_range_is_shown_inside_its_interval() -> None:
    """A change's interval is clipped to ±1 (the JSON keeps the estimate as computed, 1.08
    here, as a few respondents per wave can make it): the table shows it at the interval's end,
    marked, so no shown number lies outside the interval shown beside it."""
    base = {"question": "smokes", "option": "yes", "from_wave": 1, "to_wave": 2}
    over = shown_change(base | {"estimate": 1.08, "stderr": 0.2, "ci_low": 0.69, "ci_high": 1.0})
    assert (over["estimate"], over["clipped"]) == (1.0, "above")
    assert over["ci_low"] <= over["estimate"] <= over["ci_high"]
    under = shown_change(base | {"estimate": -1.2, "stderr": 0.3, "ci_low": -1.0, "ci_high": -0.6})
    assert (under["estimate"], under["clipped"]) == (-1.0, "below")
    inside = shown_change(base | {"estimate": 0.1, "stderr": 0.1, "ci_low": -0.1, "ci_high": 0.3})
    assert (inside["estimate"], inside["clipped"]) == (0.1, None)
    of_a_mean = shown_change(base | {"estimate": 3.5, "stderr": 1.0, "ci_low": 1.5, "ci_high": 5.5})
    assert (of_a_mean["estimate"], of_a_mean["clipped"]) == (3.5, None)
    unknown = shown_change(base | {"estimate": None, "stderr": None, "ci_low": -1, "ci_high": 1})
    assert unknown["estimate"] is None and unknown["clipped"] is None


def test_the_page_shows_a_change_beyond_its_range_at_its_interval_end(
    app: Flask, researcher: FlaskClient
) -> None:
    """Five respondents a wave, all noisy "no" then all noisy "yes": the unbiased change is
    (1 - 2q) / (p - q) = 2.16 at epsilon 1, its interval clipped to ±1. The page shows 1 within
    its interval, marked and explained; the API keeps 2.16."""
    with app.app_context():
        store = get_store()
        for number, noisy in ((1, 0), (2, 1)):
            doc = wave(number) | {"series": "tiny", "id": f"tiny-w{number}"}
            doc["questions"] = [
                {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0}
            ]
            record, _ = create_survey(store, doc, who=OPERATOR)
            survey = Survey.from_dict(record.resolved)
            reports = [build_report(survey, {"smokes": noisy}, generate_key()) for _ in range(5)]
            assert all(o.result == "accepted" for o in ingest(store, reports))
    response = researcher.get(
        "/api/v1/series/tiny/results", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    (change,) = response.get_json()["changes"]
    assert change["estimate"] == pytest.approx(2.164, abs=1e-3) and change["ci_high"] == 1.0
    html = researcher.get("/series/tiny").get_data(as_text=True)
    row = re.search(r'<tr class="change">.*?</tr>', html, re.S)
    assert row is not None
    shown = re.search(r'data-shown="estimate">([^<]+)<sup><a href="#(clipped-\d+)"', row[0])
    assert shown is not None and shown[1] == "1", row[0]
    assert f"{change['ci_low']:.4g} – 1" in row[0] and f'id="{shown[2]}"' in html
    assert "2.164" not in row[0]
    # The CLI's and Python's table (SeriesResults.summary) shows it the same way.
    with app.app_context():
        table = series_results(get_store(), "tiny", who=OPERATOR).summary()
    line = next(line for line in table.splitlines() if "change 1 -> 2" in line)
    assert re.search(r"1\.000>\(0\.000\)\s+\[1\.000, 1\.000\]", line), table
    assert "fell beyond its range" in table
