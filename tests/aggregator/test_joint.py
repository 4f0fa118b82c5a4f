"""breakdown and crosstab: hand-computed values, errors, and the same JSON over HTTP and CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from deniable.aggregator import AnalysisError, breakdown, crosstab
from deniable.aggregator.cli.core import cli
from deniable.aggregator.stats.joint import chi2_sf
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

DOC = {
    "id": "joint",
    "title": "Joint",
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
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
        },
    ],
}
SURVEY = Survey.from_dict(DOC)
#: (smokes, drinks, region) as sent (noisy for the first two).
ROWS = [(1, 1, 0), (1, 0, 0), (0, 0, 0), (1, 1, 1), (0, 1, 1), (0, 0, 1), (0, 0, 1)]
ANSWERS = [{"answers": {"smokes": s, "drinks": d, "region": r}} for s, d, r in ROWS]


def test_breakdown_estimates_each_group_as_its_own_survey():
    doc = breakdown(SURVEY, ANSWERS, "smokes", "region", verify=False)
    north, south = doc["groups"]
    assert (north["group"], north["n"], south["n"], doc["n"]) == ("north", 3, 4, 7)
    # rr at keep 3/4: f = (lambda - 1/4) / (1/2); north: lambda = 2/3, south: 1/4.
    assert north["options"][1]["estimate"] == pytest.approx((2 / 3 - 0.25) / 0.5)
    assert south["options"][1]["estimate"] == pytest.approx(0.0)
    se_n = math.sqrt((2 / 3) * (1 / 3) / (2 * 0.25))
    assert north["options"][1]["stderr"] == pytest.approx(se_n)
    test = doc["test"]
    se_s = math.sqrt(0.25 * 0.75 / (3 * 0.25))
    f = [(2 / 3 - 0.25) / 0.5, 0.0]
    w = [1 / se_n**2, 1 / se_s**2]
    mean = (w[0] * f[0] + w[1] * f[1]) / sum(w)
    assert test["statistic"] == pytest.approx(
        sum(wi * (fi - mean) ** 2 for wi, fi in zip(w, f, strict=True))
    )
    assert test["df"] == 1 and test["p_value"] == pytest.approx(
        math.erfc(math.sqrt(test["statistic"] / 2))
    )


def test_crosstab_is_the_mean_of_the_debiased_products():
    doc = crosstab(SURVEY, ANSWERS, "smokes", "drinks", verify=False)
    assert doc["n"] == 7 and len(doc["cells"]) == 4
    yes_yes = next(c for c in doc["cells"] if (c["first"], c["second"]) == ("yes", "yes"))
    x = [(s - 0.25) * (d - 0.25) / 0.25 for s, d, _ in ROWS]
    mean = sum(x) / 7
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / 6)
    assert yes_yes["estimate"] == pytest.approx(mean)
    assert yes_yes["stderr"] == pytest.approx(sd / math.sqrt(7))
    no_no = next(c for c in doc["cells"] if (c["first"], c["second"]) == ("no", "no"))
    # "no" supports report 0 with the complementary pair (p, q) = (3/4, 1/4) as well.
    x0 = [((1 - s) - 0.25) * ((1 - d) - 0.25) / 0.25 for s, d, _ in ROWS]
    assert no_no["estimate"] == pytest.approx(sum(x0) / 7)
    assert sum(c["estimate"] for c in doc["cells"]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: breakdown(SURVEY, ANSWERS, "nope", "region", verify=False), "no question 'nope'"),
        (lambda: breakdown(SURVEY, ANSWERS, "smokes", "drinks", verify=False), "randomized"),
        (lambda: breakdown(SURVEY, ANSWERS, "region", "region", verify=False), "plain"),
        (lambda: crosstab(SURVEY, ANSWERS, "smokes", "smokes", verify=False), "itself"),
        (lambda: crosstab(SURVEY, ANSWERS[:1], "smokes", "drinks", verify=False), "at least 2"),
        (
            lambda: crosstab(
                SURVEY, [{"answers": {"smokes": 3}}], "smokes", "drinks", verify=False
            ),
            "line 1",
        ),
    ],
)
def test_bad_requests_say_what_to_ask(call, message):
    with pytest.raises(AnalysisError if "line" not in message else Exception, match=message):
        call()


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7])
def test_chi2_survival_matches_scipy(df):
    scipy_stats = pytest.importorskip("scipy.stats")
    for x in (0.1, 1.0, 3.84, 10.0, 40.0):
        assert chi2_sf(x, df) == pytest.approx(scipy_stats.chi2.sf(x, df), rel=1e-9, abs=1e-15)


@pytest.fixture
def stored(app, client, auth):
    """The survey with signed reports of ROWS stored through the API."""
    client.post("/api/v1/surveys", json=DOC, headers=auth)
    reports = [
        make_report(SURVEY, {"smokes": s, "drinks": d, "region": r}, generate_key())
        for s, d, r in ROWS
    ]
    # make_report randomizes: keep what was actually sent.
    response = client.post("/api/v1/reports", json={"reports": reports})
    assert all(r["result"] == "accepted" for r in response.get_json()["results"])
    return reports


def test_http_cli_and_python_give_the_same_json(app, client, auth, stored, tmp_path: Path):
    by_http = client.get(
        "/api/v1/surveys/joint/breakdown?question=smokes&by=region", headers=auth
    ).get_json()
    assert by_http == breakdown(SURVEY, stored, "smokes", "region")
    cross = client.get("/api/v1/surveys/joint/crosstab?first=smokes&second=drinks", headers=auth)
    assert cross.get_json() == crosstab(SURVEY, stored, "smokes", "drinks")
    runner = CliRunner()
    env = {"DENIABLE_DATA_DIR": str(app.config["DATA_DIR"])}
    result = runner.invoke(
        cli, ["breakdown", "joint", "smokes", "--by", "region", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == by_http
    export = tmp_path / "reports.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in stored))
    offline = runner.invoke(
        cli, ["crosstab", "joint", "smokes", "drinks", "--reports", str(export), "--json"], env=env
    )
    assert offline.exit_code == 0 and json.loads(offline.output) == cross.get_json()
    table = runner.invoke(cli, ["breakdown", "joint", "smokes", "--by", "region"], env=env)
    assert table.exit_code == 0 and "region = north" in table.output


def test_offline_csv_of_answers_from_another_study(tmp_path: Path):
    (tmp_path / "survey.json").write_text(json.dumps(DOC))
    lines = ["smokes,drinks,region"] + [f"{s},{d},{r}" for s, d, r in ROWS]
    (tmp_path / "answers.csv").write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    env = {"DENIABLE_DATA_DIR": str(tmp_path / "none")}
    args = ["--survey", str(tmp_path / "survey.json"), "--answers", str(tmp_path / "answers.csv")]
    result = runner.invoke(cli, ["crosstab", "joint", "smokes", "drinks", *args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == crosstab(SURVEY, ANSWERS, "smokes", "drinks", verify=False)
    (tmp_path / "answers.csv").write_text("smokes,drinks,region\n1,x,0\n")
    bad = runner.invoke(cli, ["crosstab", "joint", "smokes", "drinks", *args], env=env)
    assert bad.exit_code == 1 and "expected a whole number" in bad.output


def test_http_errors_are_problems(client, auth, stored):
    for query, status, detail in [
        ("breakdown?question=smokes", 400, "by: missing"),
        ("breakdown?question=smokes&by=drinks", 422, "randomized"),
        ("crosstab?first=smokes&second=nope", 422, "no question 'nope'"),
    ]:
        response = client.get(f"/api/v1/surveys/joint/{query}", headers=auth)
        assert response.status_code == status and detail in response.get_json()["detail"]
    assert (
        client.get("/api/v1/surveys/joint/crosstab?first=smokes&second=drinks").status_code == 401
    )
    assert (
        client.get("/api/v1/surveys/nope/crosstab?first=a&second=b", headers=auth).status_code
        == 404
    )
