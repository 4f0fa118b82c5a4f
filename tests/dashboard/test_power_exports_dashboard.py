"""The dashboard's power form (docs/statistics.md, "Power") and its export downloads
(docs/analysis.md, "Exports for R, Stata and SPSS"): the same numbers and files as the
service functions behind the API and the CLI."""

from __future__ import annotations

import re

import pyreadstat
import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import access, exports
from deniable.aggregator.stats import power
from deniable.aggregator.web.db import get_store


def test_power_form_gives_the_power_at_n(researcher: FlaskClient) -> None:
    page = researcher.get(
        "/surveys/new?power_test=one-sample&share=0.2&null=0.05&alpha=0.01&sided=one&n=400"
        "&power_mechanism=rr&power_epsilon=1"
    )
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    p_star, q_star = power.design_of("rr", 1.0)
    expected = power.power(
        "one-sample", 0.2, n=400, null=0.05, alpha=0.01, one_sided=True,
        p_star=p_star, q_star=q_star,
    )  # fmt: skip
    found = re.search(r'id="power-value">([0-9.]+)<', html)
    assert found and found.group(1) == f"{expected.power:.4f}"


def test_power_form_gives_the_smallest_n(researcher: FlaskClient) -> None:
    html = researcher.get(
        "/surveys/new?power_test=two-sample&share=0.4&control=0.3&target=0.9"
        "&power_mechanism=coins&power_epsilon=2"
    ).get_data(as_text=True)
    p_star, q_star = power.design_of("coins", 2.0)
    expected = power.sample_size(
        "two-sample", 0.4, control=0.3, target=0.9, p_star=p_star, q_star=q_star
    )
    found = re.search(r'id="power-n">([0-9,]+)<', html)
    assert found and int(found.group(1).replace(",", "")) == expected.n
    assert "per group" in html


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("share=2", "share: a probability must lie in [0, 1]"),
        ("share=0.2&power_epsilon=abc", "epsilon: expected a number"),
        ("share=0.2&power_mechanism=oue", "mechanism: expected one of"),
        ("share=0.2&n=-3", "n: expected a whole number"),
        ("share=0.2&null=0.2&target=0.8", "not reached"),
    ],
)
def test_power_form_errors_are_said_on_the_page(
    researcher: FlaskClient, query: str, words: str
) -> None:
    page = researcher.get(f"/surveys/new?power_test=one-sample&{query}")
    assert page.status_code == 200
    assert words in page.get_data(as_text=True)


def test_downloads_are_the_services_files(app: Flask, researcher: FlaskClient, tmp_path) -> None:
    survey_page = researcher.get("/surveys/habits").get_data(as_text=True)
    for link in ("/surveys/habits/answers.csv", "/surveys/habits/export.dta",
                 "/surveys/habits/export.sav"):  # fmt: skip
        assert f'href="{link}"' in survey_page
    answers = researcher.get("/surveys/habits/answers.csv")
    assert answers.status_code == 200
    lines = answers.get_data(as_text=True).splitlines()
    assert lines[0] == "smokes,party" and len(lines) == 81
    dta = researcher.get("/surveys/habits/export.dta")
    assert dta.status_code == 200
    path = tmp_path / "habits.dta"
    path.write_bytes(dta.get_data())
    frame, meta = pyreadstat.read_dta(str(path))
    assert len(frame) == 80
    assert meta.variable_value_labels["party"] == {i: f"noisy {x}" for i, x in enumerate("ABCD")}
    with app.app_context():
        served = exports.analysis_script(get_store(), "habits", "smokes ~ 1", who=access.OPERATOR)
    script = researcher.get("/surveys/habits/analysis.R?formula=smokes+~+1")
    assert script.status_code == 200 and script.get_data(as_text=True) == served
    refused = researcher.get("/surveys/habits/analysis.R?formula=smokes+~+party")
    assert refused.status_code == 422
    assert "is randomized, so its true answer is unknown per report" in refused.get_data(
        as_text=True
    )


def test_downloads_need_a_login(client: FlaskClient) -> None:
    for path in ("answers.csv", "export.sav", "analysis.R?formula=smokes+~+1"):
        response = client.get(f"/surveys/habits/{path}")
        assert response.status_code in (302, 303)
