"""The results objects (stats/results.py): read-only mappings of their JSON, whose to_dict() is
the HTTP API's JSON byte for byte, to_csv() the CSV and summary() what the CLI prints."""

from __future__ import annotations

import copy
import csv
import io
import json
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from deniable.aggregator import (
    Breakdown,
    Crosstab,
    QuestionResults,
    RegressionResults,
    SurveyResults,
    analyze,
    breakdown,
    crosstab,
    regress,
)
from deniable.aggregator import stats as stats_package
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.stats.analyze import StoredAnswers
from deniable.aggregator.stats.csvsafe import csv_cell
from deniable.aggregator.stats.estimate import CSV_COLUMNS, results_csv
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.results import SUPPORT_NOTE
from deniable.aggregator.surveys import results as survey_results
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import SURVEY_DOC

#: The conftest survey plus two plain questions to group and regress by; one group's label
#: is a spreadsheet formula, which every CSV must neutralize.
DOC: dict[str, Any] = {
    **SURVEY_DOC,
    "id": "objects",
    "questions": [
        *SURVEY_DOC["questions"],
        {"id": "adult", "text": "Adult?", "type": "binary", "mechanism": "none"},
        {
            "id": "grp",
            "text": "Group?",
            "type": "categorical",
            "options": ["=a", "b", "c"],
            "mechanism": "none",
        },
    ],
}
SURVEY = Survey.from_dict(DOC)
N = 600
BREAKDOWN = ("smokes", "grp")
CROSSTAB = ("party", "grp")
#: 300 reports in each cell of adult leave the noisy share of yes near 1/2, far inside
#: (q*, p*) = (0.27, 0.73): the fit converges whatever the secure coins say.
FORMULA = "smokes ~ adult"


def truth(i: int) -> dict[str, Any]:
    return {
        "smokes": "yes" if i % 3 == 0 else "no",
        "cheated": "no",
        "party": "ABCD"[i % 4],
        "region": ["north", "south", "east"][i % 3],
        "adult": "yes" if i % 2 else "no",
        "grp": ["=a", "b", "c"][i % 3],
    }


@pytest.fixture
def stored(client, auth) -> list[dict[str, Any]]:
    """The survey with N reports stored through the API; the reports."""
    assert client.post("/api/v1/surveys", json=DOC, headers=auth).status_code == 201
    reports = [make_report(SURVEY, truth(i), generate_key()) for i in range(N)]
    for start in range(0, N, 500):
        response = client.post("/api/v1/reports", json={"reports": reports[start : start + 500]})
        assert all(r["result"] == "accepted" for r in response.get_json()["results"])
    return reports


@pytest.fixture
def objects(app, stored) -> dict[str, Any]:
    """Each results object, computed as the API computes it (the stored tallies and counts)."""
    with app.app_context():
        store = get_store()
        answers = StoredAnswers(store, DOC["id"])
        return {
            "results": survey_results(store, DOC["id"], confidence=0.95, who=OPERATOR),
            "breakdown": breakdown(SURVEY, answers, *BREAKDOWN, 0.95),
            "crosstab": crosstab(SURVEY, answers, *CROSSTAB, 0.95),
            "regression": regress(
                SURVEY, answers, FORMULA, 0.95, verify=False, limits=Limits.from_config(app.config)
            ),
        }


def api_body(client, auth, name: str) -> bytes:
    path = f"/api/v1/surveys/{DOC['id']}"
    if name == "regression":
        response = client.post(f"{path}/regression", json={"formula": FORMULA}, headers=auth)
    else:
        query = {
            "results": "",
            "breakdown": "?question={}&by={}".format(*BREAKDOWN),
            "crosstab": "?first={}&second={}".format(*CROSSTAB),
        }[name]
        response = client.get(f"{path}/{name}{query}", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.data


KINDS = {
    "results": SurveyResults,
    "breakdown": Breakdown,
    "crosstab": Crosstab,
    "regression": RegressionResults,
}


@pytest.mark.parametrize("name", KINDS)
def test_to_dict_is_the_http_apis_json_byte_for_byte(client, auth, objects, name):
    obj = objects[name]
    assert type(obj) is KINDS[name]
    body = api_body(client, auth, name)
    assert json.dumps(obj.to_dict()).encode() == body
    # json.dumps of the object itself writes the same, as code that dumped the dicts did.
    assert json.dumps(obj).encode() == body
    assert json.loads(body) == obj == obj.to_dict()


def test_analyze_of_the_export_is_the_apis_results(client, auth, stored, objects):
    export = client.get(f"/api/v1/surveys/{DOC['id']}/reports.jsonl", headers=auth)
    offline = analyze(DOC, export.get_data(as_text=True))
    assert isinstance(offline, SurveyResults) and offline == objects["results"]
    assert json.dumps(offline.to_dict()).encode() == api_body(client, auth, "results")


@pytest.mark.parametrize("name", KINDS)
def test_each_object_is_a_read_only_mapping(objects, name):
    obj = objects[name]
    assert isinstance(obj, Mapping)
    assert obj["n"] == obj.n == N and len(obj) == len(list(obj)) == len(obj.to_dict())
    assert dict(obj) == obj and type(dict(obj)) is dict
    mutations: list[Callable[[], Any]] = [
        lambda: obj.__setitem__("n", 1),
        lambda: obj.__delitem__("n"),
        lambda: obj.update(n=1),
        lambda: obj.pop("n"),
        lambda: obj.popitem(),
        lambda: obj.setdefault("extra", 1),
        lambda: obj.clear(),
        lambda: obj.__ior__({"n": 1}),
        lambda: obj.__init__({"n": 1}),
    ]
    for mutate in mutations:
        with pytest.raises(TypeError, match="read-only"):
            mutate()
    with pytest.raises(AttributeError):
        obj.n = 1  # type: ignore[misc]
    assert obj.to_dict()["n"] == N and obj["n"] == N


def test_nested_parts_are_read_only_too(objects):
    res = objects["results"]
    questions = res["questions"]
    row = questions[0]["options"][0]
    for mutate in [
        lambda: row.__setitem__("estimate", 0.0),
        lambda: row.update(estimate=0.0),
        lambda: questions.append({}),
        lambda: questions.extend([{}]),
        lambda: questions.insert(0, {}),
        lambda: questions.__setitem__(0, {}),
        lambda: questions.__delitem__(0),
        lambda: questions.pop(),
        lambda: questions.remove(questions[0]),
        lambda: questions.sort(key=id),
        lambda: questions.reverse(),
        lambda: questions.clear(),
        lambda: questions.__iadd__([{}]),
        lambda: questions.__imul__(2),
        lambda: res["questions"][0]["options"].__setitem__(0, {}),
        lambda: objects["breakdown"]["groups"][0]["options"][1].__setitem__("estimate", 1.0),
        lambda: objects["breakdown"]["test"].__setitem__("p_value", 1.0),
        lambda: objects["crosstab"]["cells"][0].__setitem__("estimate", 1.0),
        lambda: objects["regression"]["outcome"].__setitem__("option", "no"),
        lambda: objects["regression"]["coefficients"].append({}),
    ]:
        with pytest.raises(TypeError, match="read-only"):
            mutate()
    with pytest.raises(TypeError):
        res.questions["smokes"] = res.questions["party"]  # type: ignore[index]
    # A copy to change: to_dict() is plain JSON, and changing it leaves the object alone.
    plain = res.to_dict()
    plain["questions"][0]["options"][0]["estimate"] = 12.0
    plain["questions"].append({})
    assert type(plain["questions"]) is list and type(plain["questions"][0]) is dict
    assert res["questions"][0]["options"][0]["estimate"] != 12.0
    assert len(res["questions"]) == len(DOC["questions"])


@pytest.mark.parametrize("name", KINDS)
def test_json_round_trips_and_pickling_and_copying_keep_the_object(objects, name):
    obj = objects[name]
    assert json.loads(json.dumps(obj.to_dict())) == obj
    again = pickle.loads(pickle.dumps(obj))
    assert type(again) is type(obj) and again == obj
    assert json.dumps(again.to_dict()) == json.dumps(obj.to_dict())
    assert again.summary() == obj.summary() and again.to_csv() == obj.to_csv()
    # Nothing can change it, so a copy is the object itself; dict() gives a plain one.
    assert copy.copy(obj) is obj and copy.deepcopy(obj) is obj
    assert type(obj.copy()) is dict
    # Rebuilt from its JSON (say, an HTTP answer), an object is the same again.
    assert type(obj)(json.loads(json.dumps(obj.to_dict()))) == obj


def test_breakdown_groups_survive_pickling(objects):
    doc = objects["breakdown"]
    again = pickle.loads(pickle.dumps(doc))
    assert dict(again.groups) == dict(doc.groups)
    assert all(entry.type == "binary" for entry in again.groups.values())


def parsed(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def cells(values: list[Any]) -> list[str]:
    return [csv_cell(value) for value in values]


def test_survey_csv_is_the_apis_and_results_csvs(client, auth, objects):
    res = objects["results"]
    response = client.get(f"/api/v1/surveys/{DOC['id']}/results.csv", headers=auth)
    assert res.to_csv() == response.get_data(as_text=True) == results_csv(res)
    assert results_csv(res.to_dict()) == res.to_csv()
    rows = parsed(res.to_csv())
    assert rows[0] == list(CSV_COLUMNS)
    expected = [
        cells([q["id"], *(o[column] for column in CSV_COLUMNS[1:])])
        for q in res["questions"]
        for o in q["options"]
    ]
    assert rows[1:] == expected
    party = res.questions["party"]
    lines = res.to_csv().splitlines(keepends=True)
    assert party.to_csv() == lines[0] + "".join(line for line in lines if line.startswith("party,"))


def test_breakdown_csv_has_a_row_per_group_and_option(objects):
    doc = objects["breakdown"]
    rows = parsed(doc.to_csv())
    assert rows[0] == ["group", "n", *CSV_COLUMNS[1:]]
    assert rows[1:] == [
        cells([g["group"], g["n"], *(o[column] for column in CSV_COLUMNS[1:])])
        for g in doc["groups"]
        for o in g["options"]
    ]
    assert [row[0] for row in rows[1:]] == ["'=a", "'=a", "b", "b", "c", "c"]  # neutralized


def test_crosstab_csv_has_a_row_per_cell(objects):
    doc = objects["crosstab"]
    rows = parsed(doc.to_csv())
    columns = ["first", "second", "estimate", "stderr", "ci_low", "ci_high"]
    assert rows[0] == columns
    assert rows[1:] == [cells([cell[column] for column in columns]) for cell in doc["cells"]]
    assert len(rows) == 1 + 4 * 3 and rows[1][:2] == ["A", "'=a"]
    assert float(rows[1][2]) == doc["cells"][0]["estimate"]


def test_regression_csv_has_a_row_per_term(objects):
    doc = objects["regression"]
    rows = parsed(doc.to_csv())
    columns = ["term", "estimate", "stderr", "z", "p_value", "ci_low", "ci_high"]
    assert rows[0] == columns
    assert [row[0] for row in rows[1:]] == ["Intercept", "adult"]
    assert rows[1:] == [cells([c[column] for column in columns]) for c in doc["coefficients"]]


def cli_stdout(runner, args: list[str]) -> str:
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_summary_is_what_the_cli_prints(runner, objects):
    sid = DOC["id"]
    commands = {
        "results": ["results", sid],
        "breakdown": ["breakdown", sid, BREAKDOWN[0], "--by", BREAKDOWN[1]],
        "crosstab": ["crosstab", sid, *CROSSTAB],
        "regression": ["regress", sid, FORMULA],
    }
    for name, args in commands.items():
        assert cli_stdout(runner, args) == objects[name].summary() + "\n", name
        printed = json.loads(cli_stdout(runner, [*args, "--json"]))
        assert printed == objects[name].to_dict(), name
    assert cli_stdout(runner, ["results", sid, "--csv"]) == objects["results"].to_csv()
    table = objects["results"].summary()
    assert table.startswith(f"survey {sid}: {N} reports, 95% intervals\n\nsmokes  (binary, rr")
    # The table is the questions' blocks, each its QuestionResults' summary, and the legend
    # (what share, estimate, support and count are) once at its end.
    blocks = [q.summary(legend=False) for q in objects["results"].questions.values()]
    assert table.split("\n\n")[1:] == [*blocks, SUPPORT_NOTE.strip()]
    assert "support: the noisy reports that chose the option" in table


def test_attributes(objects):
    res = objects["results"]
    assert list(res.questions) == [q["id"] for q in DOC["questions"]]
    assert res.survey == DOC["id"] and res.survey_hash == SURVEY.hash
    assert res.confidence == 0.95 and res.simultaneous is False
    party = res.questions["party"]
    assert isinstance(party, QuestionResults) and party is res["questions"][2]
    assert (party.id, party.type, party.mechanism, party.n) == ("party", "categorical", "grr", N)
    assert party.epsilon == pytest.approx(2.0) and res.questions["adult"].epsilon is None
    assert party.options == res["questions"][2]["options"]
    assert list(party.estimates) == ["A", "B", "C", "D"]
    assert party.estimates["B"] == party["options"][1]["estimate"]
    assert party.conf_int()["B"] == (party["options"][1]["ci_low"], party["options"][1]["ci_high"])

    doc = objects["breakdown"]
    assert (doc.question, doc.by, doc.confidence) == ("smokes", "grp", 0.95)
    assert list(doc.groups) == ["=a", "b", "c"] and doc.test is doc["test"]
    group = doc.groups["b"]
    assert isinstance(group, QuestionResults)
    assert (group.id, group.type, group.n) == ("smokes", "binary", doc["groups"][1]["n"])
    assert group.options == doc["groups"][1]["options"]
    assert list(group) == [q for q in res.questions["smokes"]]  # an entry's keys, in order

    table = objects["crosstab"]
    assert (table.first, table.second) == CROSSTAB
    assert table.row_labels == ("A", "B", "C", "D") and table.column_labels == ("=a", "b", "c")
    assert table.cell("B", "c") == table["cells"][1 * 3 + 2] and table.cells is table["cells"]
    with pytest.raises(KeyError):
        table.cell("B", "z")

    fit = objects["regression"]
    assert fit.converged is True and fit.message is None and fit.nobs == fit.n == N
    assert fit.formula == FORMULA and list(fit.params) == ["Intercept", "adult"]
    assert fit.coefficients is fit["coefficients"]
    first = fit["coefficients"][1]
    assert fit.params["adult"] == first["estimate"] and fit.bse["adult"] == first["stderr"]
    assert fit.pvalues["adult"] == first["p_value"]
    assert fit.conf_int()["adult"] == (first["ci_low"], first["ci_high"])


def test_classes_are_exported():
    for cls in (SurveyResults, QuestionResults, Breakdown, Crosstab, RegressionResults):
        assert getattr(stats_package, cls.__name__) is cls


#: A survey whose first group always reports yes: its coefficient has no finite estimate.
SEPARATED = {
    "id": "separated",
    "title": "Separated",
    "questions": [
        {"id": "smokes", "text": "?", "type": "binary", "mechanism": "rr", "rr": {"keep": "3/4"}},
        {"id": "grp", "text": "?", "type": "binary", "mechanism": "none"},
    ],
}


def test_a_failed_fit_says_why_in_its_summary_and_the_cli_prints_its_first_line(runner, tmp_path):
    rows = [(1, 0)] * 200 + [(i % 2, 1) for i in range(200)]
    answers = [{"answers": {"smokes": s, "grp": g}} for s, g in rows]
    fit = regress(SEPARATED, answers, "smokes ~ grp", verify=False)
    assert fit.converged is False and "separation" in (fit.message or "")
    headline, failure = fit.summary().split("\n")
    assert headline.startswith("smokes ~ grp: 400 reports, log-likelihood ")
    assert failure == f"the fit failed: {fit.message}"
    assert fit.params == {"Intercept": None, "grp": None}
    assert parsed(fit.to_csv())[1] == ["Intercept", "", "", "", "", "", ""]
    survey_file = tmp_path / "survey.json"
    survey_file.write_text(json.dumps(SEPARATED))
    answers_file = tmp_path / "answers.csv"
    answers_file.write_text("smokes,grp\n" + "".join(f"{s},{g}\n" for s, g in rows))
    options = ["--survey", str(survey_file), "--answers", str(answers_file)]
    result = runner.invoke(cli, ["regress", "separated", "smokes ~ grp", *options])
    assert result.exit_code == 1
    assert result.stdout == headline + "\n"
    assert result.stderr == f"error: {failure}\n"
    as_json = runner.invoke(cli, ["regress", "separated", "smokes ~ grp", *options, "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == fit.to_dict()
