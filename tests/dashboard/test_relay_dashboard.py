"""A relay survey on the dashboard, in the results table and on the exported page: what the relay
protects against and what it does not, in plain words, with the central epsilon."""

from __future__ import annotations

from html import unescape
from typing import Any

from flask.testing import FlaskCliRunner

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.client.page import installed_script
from deniable.shared.page import MODULES, exported_page, sri
from deniable.shared.survey import Survey

RELAYED = {
    "id": "relayed",
    "title": "Through a relay",
    "relay": "https://relay.example.org/ohttp",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}


def test_the_dashboard_says_what_the_relay_protects_and_not(app: Any, researcher: Any) -> None:
    with app.app_context():
        create_survey(get_store(), RELAYED, who=OPERATOR)
        for _ in range(40):
            get_store().count_in_batch("relayed", "a" * 32, "")
    html = researcher.get("/surveys/relayed").get_data(as_text=True)
    assert 'id="relay"' in html and "https://relay.example.org/ohttp" in html
    assert "only if the relay and this aggregator do not work" in html
    assert "data-shuffle-n>40<" in html
    plain = researcher.get("/surveys/empty").get_data(as_text=True)
    assert 'id="relay"' not in plain  # a survey without a relay says nothing of one


def test_the_results_table_gives_the_central_epsilon(app: Any) -> None:
    with app.app_context():
        create_survey(get_store(), RELAYED, who=OPERATOR)
    result = FlaskCliRunner(app).invoke(cli, ["results", "relayed"])
    assert result.exit_code == 0, result.output
    assert "through a relay" in result.stdout and "collude" in result.stdout


def test_the_exported_page_may_reach_the_relay_and_says_why(app: Any) -> None:
    with app.app_context():
        record, _ = create_survey(get_store(), RELAYED, who=OPERATOR)
    survey = Survey.from_dict(record.resolved)
    html = exported_page(
        survey,
        aggregator="https://agg.example.org",
        closed=False,
        integrity={name: sri(installed_script(name)) for name in MODULES},
        module_sha256="0" * 64,
    )
    assert "connect-src 'self' https://agg.example.org https://relay.example.org;" in unescape(html)
    assert "data-relay" in html and "do not work together" in html
    assert "./ohttp.js" in html  # pinned in the import map
