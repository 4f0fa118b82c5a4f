"""Weighted results end to end: a survey with a design on a real server (SQLite and
PostgreSQL), signed reports over HTTP, and the same weighted JSON from the API, the command line
and `analyze` on the exported reports; `weighted=false`, a weights table, the dashboard's
"Weighted by" and Deff column, and bad weights refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests

from deniable.aggregator.stats import analyze, breakdown, crosstab, regress
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.postgres_support import SQLITE_ONLY

REGIONS = ["north", "south", "east"]
VILLAGES = ["v00", "v01", "v02", "v10", "v11", "v12", "v13", "v20", "v21"]
#: region initial, village digits, sex, age initial, true smokes (as in tests/statistics).
PEOPLE = (
    "n00fo0 n00fo0 n00fo0 n00mo0 n00fy0 n00fy0 n01mo0 n01mo0 n01fy0 n01fo0 n01mo1 n02mo1 "
    "n02mo0 n02fy0 n02fo0 n02fy0 n02fo0 s10mo1 s10my0 s10fy0 s10mo0 s10mo1 s11fo1 s11fo0 "
    "s11fy0 s11mo0 s12fo0 s12fy0 s12mo1 s12fo1 s12my0 s12mo1 s13fo0 s13fo0 s13fo0 s13fy0 "
    "s13fo1 s13fo0 e20fo1 e20fy0 e20mo0 e21my1 e21mo0 e21my0 e21fy0 e21fo0 e21my0"
).split()


def same(a: Any, b: Any) -> bool:
    """Equal JSON, floats to 1e-9 (the server and this process may sum in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return bool(a == b)


def _plain(qid: str, options: list[str]) -> dict[str, Any]:
    return {"id": qid, "text": qid, "type": "categorical", "options": options, "mechanism": "none"}


def doc_with(survey_id: str, design: dict[str, Any] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": survey_id,
        "title": "Weighted",
        "questions": [
            {
                "id": "smokes",
                "text": "Smoke?",
                "type": "binary",
                "mechanism": "rr",
                "rr": {"keep": "3/4"},
            },
            {
                "id": "drinks",
                "text": "Drink?",
                "type": "binary",
                "mechanism": "rr",
                "rr": {"keep": "3/4"},
            },
            _plain("region", REGIONS),
            _plain("village", VILLAGES),
            _plain("sex", ["f", "m"]),
            _plain("age", ["young", "old"]),
        ],
    }
    if design is not None:
        doc["design"] = design
    return doc


SURVEY_DESIGN = {
    "strata": "region",
    "clusters": "village",
    "population": {"north": 1000, "south": 2000, "east": 500},
    "rake": {"sex": {"f": 0.52, "m": 0.48}},
}


def post_people(server: Any, doc: dict[str, Any]) -> tuple[Survey, list[dict[str, Any]]]:
    """Create the survey and post one signed report per person; the reports as sent."""
    survey = Survey.from_dict(server.create_survey(doc)["survey"])
    reports = []
    for i, code in enumerate(PEOPLE):
        truth = {
            "smokes": code[5] == "1",
            "drinks": i % 3 == 0,
            "region": {"n": "north", "s": "south", "e": "east"}[code[0]],
            "village": f"v{code[1:3]}",
            "sex": code[3],
            "age": {"y": "young", "o": "old"}[code[4]],
        }
        reports.append(make_report(survey, truth, generate_key()))
    response = requests.post(f"{server.url}/api/v1/reports", json={"reports": reports}, timeout=30)
    assert response.status_code == 200, response.text
    assert all(r["result"] == "accepted" for r in response.json()["results"])
    return survey, reports


# weighting reads stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_weighted_results_are_the_same_everywhere(live_server, tmp_path: Path):
    survey, reports = post_people(live_server, doc_with("weighted-e2e", SURVEY_DESIGN))
    base = f"/api/v1/surveys/{survey.id}"
    by_http = live_server.results(survey.id)
    offline = analyze(survey, reports).to_dict()
    assert same(by_http, offline)
    assert by_http["weighting"]["design"] == SURVEY_DESIGN
    yes = by_http["questions"][0]["options"][1]
    assert yes["deff"] is not None and yes["deff"] > 0
    # The raked margin is met exactly.
    sex = next(q for q in by_http["questions"] if q["id"] == "sex")
    assert [o["estimate"] for o in sex["options"]] == pytest.approx([0.52, 0.48], abs=1e-12)
    # Unweighted on request: the tallies' results, with no deff.
    raw = live_server.get(f"{base}/results?weighted=false").json()
    assert "weighting" not in raw and "deff" not in raw["questions"][0]["options"][1]
    assert same(raw, analyze(survey, reports, weighted=False).to_dict())
    # Breakdowns and cross-tabs are weighted too, as offline.
    got = live_server.get(f"{base}/breakdown?question=smokes&by=age").json()
    assert same(got, breakdown(survey, reports, "smokes", "age").to_dict())
    assert all("deff" in row for g in got["groups"] for row in g["options"])
    cross = live_server.get(f"{base}/crosstab?first=smokes&second=drinks").json()
    assert same(cross, crosstab(survey, reports, "smokes", "drinks").to_dict())
    fit = requests.post(
        f"{live_server.url}{base}/regression",
        json={"formula": "smokes ~ age"},
        headers=live_server.headers,
        timeout=30,
    )
    assert fit.status_code == 200, fit.text
    assert same(fit.json(), regress(survey, reports, "smokes ~ age").to_dict())
    assert fit.json()["weighting"]["design"] == SURVEY_DESIGN
    # The command line gives the same JSON, and says how in its table.
    cli = json.loads(live_server.cli("results", survey.id, "--json").stdout)
    assert cli == by_http
    table = live_server.cli("results", survey.id).stdout
    assert "weighted by strata region; population sizes; clusters village; raking to sex" in table
    assert "deff" in table
    unweighted = json.loads(live_server.cli("results", survey.id, "--json", "--unweighted").stdout)
    assert unweighted == raw
    by_cli = live_server.cli("breakdown", survey.id, "smokes", "--by", "age", "--json").stdout
    assert json.loads(by_cli) == got


# weighting reads stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_a_weights_table_over_http_and_the_command_line(live_server, tmp_path: Path):
    survey, reports = post_people(live_server, doc_with("weights-table", {"clusters": "village"}))
    table = (
        "region,sex,weight\nnorth,f,2\nnorth,m,2.5\nsouth,f,4\nsouth,m,3\neast,f,1\neast,m,1.5\n"
    )
    base = f"/api/v1/surveys/{survey.id}"
    by_http = live_server.get(f"{base}/results", params={"weights": table}).json()
    assert same(by_http, analyze(survey, reports, weights=table).to_dict())
    assert by_http["weighting"]["weights"] == ["region", "sex"]
    path = tmp_path / "weights.csv"
    path.write_text(table)
    cli = live_server.cli("results", survey.id, "--json", "--weights", str(path)).stdout
    assert json.loads(cli) == by_http
    fit = requests.post(
        f"{live_server.url}{base}/regression",
        json={"formula": "smokes ~ age", "weights": table},
        headers=live_server.headers,
        timeout=30,
    )
    assert fit.status_code == 200 and fit.json()["weighting"]["weights"] == ["region", "sex"]
    # A bad table: 422 naming the line over HTTP, one line and exit status 1 on the CLI.
    bad = "region,weight\nnorth,2\nwest,1\n"
    response = live_server.get(f"{base}/breakdown?question=smokes&by=age", params={"weights": bad})
    assert response.status_code == 422
    assert "weights, line 3: 'west' is not an option of 'region'" in response.json()["detail"]
    missing = live_server.get(f"{base}/results", params={"weights": "region,weight\nnorth,2\n"})
    assert missing.status_code == 422 and "no row for region=south" in missing.json()["detail"]
    path.write_text(bad)
    result = live_server.cli("results", survey.id, "--weights", str(path), check=False)
    assert result.returncode == 1
    assert "'west' is not an option of 'region'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    flag = live_server.get(f"{base}/results?weighted=maybe")
    assert flag.status_code == 400 and "weighted: expected true or false" in flag.json()["detail"]


# weighting reads stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_a_weights_table_cannot_replace_population_sizes(live_server):
    survey, _ = post_people(live_server, doc_with("weights-conflict", SURVEY_DESIGN))
    response = live_server.get(
        f"/api/v1/surveys/{survey.id}/results", params={"weights": "region,weight\nnorth,1\n"}
    )
    assert response.status_code == 422
    assert "sets the weights from its population sizes" in response.json()["detail"]


# weighting reads stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_a_bad_design_is_refused_at_creation(live_server):
    doc = doc_with("bad-design", {"strata": "smokes"})
    response = requests.post(
        f"{live_server.url}/api/v1/surveys", json=doc, headers=live_server.headers, timeout=10
    )
    assert response.status_code == 422
    assert "design.strata: 'smokes' is randomized" in response.json()["detail"]


# weighting reads stored reports: test_pattern_counts.py on both stores
@SQLITE_ONLY
def test_the_dashboard_says_how_it_weighs(live_server):
    survey, _ = post_people(live_server, doc_with("weighted-page", SURVEY_DESIGN))
    session = requests.Session()
    page = session.get(f"{live_server.url}/login", timeout=10).text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    login = session.post(
        f"{live_server.url}/login",
        data={"token": live_server.token, "csrf_token": csrf.group(1)},
        timeout=10,
    )
    assert login.status_code == 200
    html = session.get(f"{live_server.url}/surveys/{survey.id}", timeout=30).text
    assert "Weighted by strata region; population sizes; clusters village" in html
    assert ">Deff</abbr>" in html
    raw = session.get(f"{live_server.url}/surveys/{survey.id}?weighted=0", timeout=30).text
    assert "Unweighted: the survey's design is ignored" in raw and ">Deff</abbr>" not in raw


def test_a_weights_table_too_long_for_a_query_is_refused_with_the_way_out(client, auth) -> None:
    from deniable.aggregator.web.api import MAX_QUERY_WEIGHTS

    doc = {
        "id": "long-weights",
        "title": "Weights in a query",
        "questions": [
            {"id": "region", "text": "Region?", "type": "binary", "mechanism": "none"},
            {"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0},
        ],
    }
    assert client.post("/api/v1/surveys", json=doc, headers=auth).status_code == 201
    table = "region,weight\n" + "no,1\n" * (MAX_QUERY_WEIGHTS // 5)
    for route in ("results", "results.csv", "breakdown?question=q&by=region"):
        joined = "&" if "?" in route else "?"
        response = client.get(
            f"/api/v1/surveys/long-weights/{route}{joined}weights={quote(table)}", headers=auth
        )
        assert response.status_code == 400, response.get_data(as_text=True)
        detail = response.get_json()["detail"]
        assert f"at most {MAX_QUERY_WEIGHTS:,} characters" in detail and "--weights" in detail
