"""Results that read right (docs/researchers.md, "Reading the results"; docs/analysis.md): the
CLI's tables keep every number inside its interval and [0, 1] while the JSON keeps the unbiased
estimate; a failed fit names the collinear terms; a plain integer breaks down in bands
(`--cuts`, `cuts=`) through the one parameter parser, offline, on the server, weighted or not;
the aggregator compresses what it sends (but the dashboard's pages) and lets browsers keep the
respondent page's versioned files for a year."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from deniable.aggregator import breakdown, regress
from deniable.aggregator.cli.core import cli
from deniable.aggregator.params import ParamError, parse_cuts
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import results_document
from deniable.shared import Survey, make_report
from deniable.shared.page import SERVED_ASSETS
from deniable.shared.report import build_report
from deniable.shared.signing import generate_key

DOC: dict[str, Any] = {
    "id": "read-right",
    "title": "Read right",
    "enrollment": "open",
    "questions": [
        {
            "id": "browser",
            "text": "Browser?",
            "type": "categorical",
            "options": ["chrome", "firefox", "ie", "safari"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0},
        {"id": "age", "text": "Age?", "type": "integer", "min": 18, "max": 90, "mechanism": "none"},
        {
            "id": "has_children",
            "text": "Children?",
            "type": "binary",
            "mechanism": "none",
        },
        {
            "id": "hit_child",
            "text": "Ever hit a child?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": "has_children == 'yes'",
        },
    ],
}
SURVEY = Survey.from_dict(DOC)


def reports(n: int = 600) -> list[dict[str, Any]]:
    """n signed reports: ages 18 to 90, half with children (asked hit_child)."""
    out = []
    for i in range(n):
        children = i % 2 == 0
        truth: dict[str, Any] = {
            "browser": ["chrome", "firefox", "safari"][i % 3],
            "smokes": i % 5 == 0,
            "age": 18 + (i * 7) % 73,
            "has_children": children,
        }
        if children:
            truth["hit_child"] = i % 3 == 0
        out.append(make_report(SURVEY, truth, generate_key()))
    return out


REPORTS = reports()


# -- the tables -------------------------------------------------------------------------------
ROW = re.compile(
    r"^  (\S+)\s+(-?[0-9.]+)\s+(-?[0-9.]+)([<> ])\s+\[(-?[0-9.]+), (-?[0-9.]+)\]\s+\S+\s+\S+\s+(\S+)"
)


def test_the_cli_table_keeps_every_number_inside_its_interval() -> None:
    """An option of true share 0 whose unbiased estimate is negative: the JSON keeps it, the
    table shows it at its interval's end, marked and said, the count never negative."""
    counts = {"browser": [200, 100, 25, 75], "smokes": [310, 90], "has_children": [200, 200]}
    plain = Survey.from_dict({**DOC, "questions": DOC["questions"][:4]})
    doc = results_document(plain, 400, {**counts, "age": [0] * 72 + [400]})
    estimates = {q["id"]: [o["estimate"] for o in q["options"]] for q in doc["questions"]}
    assert estimates["browser"][2] < 0 and estimates["smokes"][1] < 0 < estimates["smokes"][0]
    assert estimates["smokes"][0] > 1
    table = doc.summary()
    rows = [ROW.match(line) for line in table.splitlines()]
    shown = [m.groups() for m in rows if m and m.group(1) != "mean"]
    assert len(shown) == 4 + 2 + 2  # browser, smokes, has_children
    for option, share, estimate, _, low, high, count in shown:
        assert 0 <= float(low) <= float(share) <= float(high) <= 1, option
        assert float(low) <= float(estimate) <= float(high), option
        assert not count.startswith("-"), option
    marks = [(m.group(1), m.group(4)) for m in rows if m]
    assert ("ie", "<") in marks and ("yes", "<") in marks and ("no", ">") in marks  # smokes'
    assert ("chrome", " ") in marks
    assert "fell below 0 by chance" in table and "support: the noisy reports" in table
    assert not re.search(r"-[0-9]", table)  # no negative number anywhere in it


# -- collinear terms --------------------------------------------------------------------------
def test_a_failed_fit_names_the_collinear_terms() -> None:
    """hit_child is asked only of those with children: has_children is the same for every
    report fitted, so it and the intercept are collinear, and the message says so by name."""
    fit = regress(SURVEY, REPORTS, "hit_child ~ age + has_children")
    assert not fit.converged
    assert "Intercept" in fit.message and "has_children" in fit.message
    assert "age" not in fit.message.split("drop")[0]  # not one of the collinear set
    assert fit.message.endswith("drop has_children")
    fine = regress(SURVEY, REPORTS, "hit_child ~ age")
    assert fine.converged and fine.n == len(REPORTS) // 2


def test_a_sum_of_terms_and_an_empty_category_are_named() -> None:
    fit = regress(SURVEY, REPORTS, "smokes ~ age + I(age * 2)")
    assert not fit.converged and "age, I(age * 2)" in fit.message
    empty = regress(SURVEY, REPORTS, "smokes ~ C(age) + I(age - age + 1)")  # a constant
    assert not empty.converged and "collinear" in empty.message


# -- a plain integer in bands -----------------------------------------------------------------
def test_cuts_band_a_plain_integer_offline() -> None:
    doc = breakdown(SURVEY, REPORTS, "smokes", "age", cuts=(30, 50))
    assert [g["group"] for g in doc["groups"]] == ["< 30", "30–49", "≥ 50"]
    assert doc["cuts"] == [30, 50]
    ages = [r["answers"]["age"] for r in REPORTS]
    expected = [
        sum(a < 30 for a in ages),
        sum(30 <= a < 50 for a in ages),
        sum(a >= 50 for a in ages),
    ]
    assert [g["n"] for g in doc["groups"]] == expected
    one = breakdown(SURVEY, REPORTS, "smokes", "age", cuts=(30, 31))
    assert [g["group"] for g in one["groups"]] == ["< 30", "30", "≥ 31"]
    plain = breakdown(SURVEY, REPORTS, "smokes", "has_children")
    assert "cuts" not in plain and [g["group"] for g in plain["groups"]] == ["no", "yes"]


@pytest.mark.parametrize(
    ("by", "cuts", "words"),
    [
        ("age", (10,), "each cut must be above 18"),
        ("age", (50, 30), "expected increasing whole numbers"),
        ("age", (30, 95), "at most 90"),
        ("has_children", (1,), "not a plain integer"),
        ("age", None, "band it with cuts (--cuts"),
        ("smokes", (30,), "randomized"),
    ],
)
def test_cuts_that_do_not_fit_are_refused(by: str, cuts: Any, words: str) -> None:
    with pytest.raises(AnalysisError, match=re.escape(words)):
        breakdown(SURVEY, REPORTS, "browser", by, cuts=cuts)


@pytest.mark.parametrize(
    ("raw", "words"),
    [("30,x", "whole numbers"), ("3.5", "whole numbers"), (",".join(["1"] * 51), "at most 50")],
)
def test_the_parameter_parser_reads_cuts(raw: str, words: str) -> None:
    assert parse_cuts("30, 50") == (30, 50) and parse_cuts(None) == () and parse_cuts("") == ()
    assert parse_cuts([30, 50]) == (30, 50)
    with pytest.raises(ParamError, match=words):
        parse_cuts(raw)


def test_cuts_in_a_weighted_breakdown() -> None:
    weighted = {**DOC, "id": "weighted", "design": {"strata": "has_children"}}
    survey = Survey.from_dict(weighted)
    signed = [build_report(survey, r["answers"], generate_key()) for r in REPORTS]
    doc = breakdown(survey, signed, "smokes", "age", cuts=[40])
    assert [g["group"] for g in doc["groups"]] == ["< 40", "≥ 40"] and "weighting" in doc


@pytest.fixture
def stored(client: Any, auth: dict[str, str]) -> None:
    assert client.post("/api/v1/surveys", json=DOC, headers=auth).status_code == 201
    response = client.post("/api/v1/reports", json={"reports": REPORTS})
    assert all(r["result"] == "accepted" for r in response.get_json()["results"])


def test_cuts_over_the_api_and_the_cli(
    client: Any, auth: dict[str, str], runner: Any, stored: None
) -> None:
    api = f"/api/v1/surveys/{DOC['id']}/breakdown"
    doc = client.get(f"{api}?question=smokes&by=age&cuts=30,50", headers=auth).get_json()
    assert [g["group"] for g in doc["groups"]] == ["< 30", "30–49", "≥ 50"]
    assert doc == breakdown(SURVEY, REPORTS, "smokes", "age", cuts=(30, 50)).to_dict()
    bad = client.get(f"{api}?question=smokes&by=age&cuts=30,abc", headers=auth)
    assert bad.status_code == 400 and "cuts" in bad.get_json()["detail"]
    out = client.get(f"{api}?question=smokes&by=age&cuts=10", headers=auth)
    assert out.status_code == 422 and "each cut must be above 18" in out.get_json()["detail"]
    printed = runner.invoke(
        cli, ["breakdown", DOC["id"], "smokes", "--by", "age", "--cuts", "30,50", "--json"]
    )
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout) == doc
    table = runner.invoke(cli, ["breakdown", DOC["id"], "smokes", "--by", "age", "--cuts", "30,50"])
    assert "age = 30–49" in table.stdout
    refused = runner.invoke(cli, ["breakdown", DOC["id"], "smokes", "--by", "age", "--cuts", "a"])
    assert refused.exit_code == 1 and "cuts: expected whole numbers" in refused.stderr


# -- what the aggregator sends ----------------------------------------------------------------
def test_text_responses_are_compressed_but_the_dashboards_pages(
    client: Any, auth: dict[str, str], stored: None
) -> None:
    br = {"Accept-Encoding": "br, gzip"}
    page = client.get(f"/s/{DOC['id']}", headers=br)
    assert page.headers["Content-Encoding"] == "br"
    assert "Accept-Encoding" in page.headers["Vary"]
    gzip = client.get(f"/s/{DOC['id']}", headers={"Accept-Encoding": "gzip"})
    assert gzip.headers["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in client.get(f"/s/{DOC['id']}").headers  # none asked
    results = client.get(f"/api/v1/surveys/{DOC['id']}/results", headers={**auth, **br})
    assert results.headers["Content-Encoding"] == "br"
    # The dashboard's pages carry the session's CSRF token beside text a link can put on them.
    login = client.get("/login", headers=br)
    assert login.status_code == 200 and "Content-Encoding" not in login.headers
    # Streamed answers stay streamed, compressed chunk by chunk.
    answers = client.get(f"/api/v1/surveys/{DOC['id']}/answers.csv", headers={**auth, **br})
    assert answers.is_streamed and answers.headers["Content-Encoding"] == "br"


def test_the_page_files_are_versioned_and_kept_a_year(client: Any, stored: None) -> None:
    html = client.get(f"/s/{DOC['id']}").get_data(as_text=True)
    found = set(re.findall(r'"/static/v/([0-9a-f]{16})/([a-z-]+\.(?:js|css))"', html))
    versions = {version for version, _ in found}
    assert len(versions) == 1 and {name for _, name in found} == set(SERVED_ASSETS)
    (version,) = versions
    for name in SERVED_ASSETS:
        response = client.get(f"/static/v/{version}/{name}", headers={"Accept-Encoding": "br"})
        assert response.status_code == 200, name
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert response.headers["Content-Encoding"] == "br"
        plain = client.get(f"/static/v/{version}/{name}")
        assert plain.get_data() == client.get(f"/static/{name}").get_data()
    assert client.get(f"/static/v/{'0' * 16}/deniable.js").status_code == 404  # another version
    assert client.get(f"/static/v/{version}/sw.js").status_code == 404  # not a page file there
    assert "max-age=31536000" not in client.get("/static/deniable.js").headers.get(
        "Cache-Control", ""
    )
