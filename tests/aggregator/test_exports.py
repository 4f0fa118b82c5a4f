"""Exports for R, Stata and SPSS (aggregator/exports.py): answers.csv, .dta and .sav read back
with pyreadstat give the same rows, codes and labels; analysis.R quotes its formula safely and
refuses characters beyond its safe set; the API, the CLI and the service agree."""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyreadstat
import pytest
from flask import Flask

from deniable.aggregator import access, exports
from deniable.aggregator.cli.analysis import read_answers_csv
from deniable.aggregator.cli.core import cli
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

HOSTILE = 'x"); system("touch /tmp/pwned"); ("\\'
DOC: dict[str, Any] = {
    "id": "export-me",
    "title": "Exports of every kind",
    "enrollment": "open",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cheated",
            "text": "Ever cheated?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Where?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "oue",
            "epsilon": 2.0,
        },
        {
            "id": "age-group",
            "text": "Your age group, in years: " + "very long text " * 10,
            "type": "categorical",
            "options": ["18-34", "35-64", HOSTILE],
            "mechanism": "none",
        },
        {
            "id": "age",
            "text": "How old are you?",
            "type": "integer",
            "min": 18,
            "max": 99,
            "mechanism": "none",
        },
        {"id": "member", "text": "Member?", "type": "binary", "mechanism": "none"},
        {
            "id": "used",
            "text": "Which have you used?",
            "type": "multi",
            "options": ["cannabis", "LSD"],
            "epsilon": 2.0,
        },
        {
            "id": "town",
            "text": "Which town?",
            "type": "text",
            "mechanism": "hcms",
            "epsilon": 2.0,
            "hcms": {"k": 4, "m": 64},
        },
    ],
}
SURVEY = Survey.from_dict(DOC)
N = 400
API = f"/api/v1/surveys/{DOC['id']}"


def truth(i: int) -> dict[str, Any]:
    """Respondent i's true answers (seeded: the same every run)."""
    rng = random.Random(i)
    return {
        "smokes": "yes" if rng.random() < 0.3 + 0.3 * (i % 3 == 0) else "no",
        "cheated": ["no", "yes"][i % 3 == 0],
        "party": ["A", "B", "C"][i % 3],
        "region": ["north", "south", "east"][i % 3],
        "age-group": ["18-34", "35-64", HOSTILE][i % 3],
        "age": rng.randint(18, 90),
        "member": ["no", "yes"][rng.random() < 0.4],
        "used": [["cannabis"], [], ["cannabis", "LSD"]][i % 3],
        "town": ["Lagos", "Kano"][i % 2],
    }


@pytest.fixture
def stored(client, auth) -> list[dict[str, Any]]:
    """The survey with N signed reports stored through the API; the reports in order."""
    assert client.post("/api/v1/surveys", json=DOC, headers=auth).status_code == 201
    reports = [make_report(SURVEY, truth(i), generate_key()) for i in range(N)]
    response = client.post("/api/v1/reports", json={"reports": reports})
    assert all(r["result"] == "accepted" for r in response.get_json()["results"])
    return reports


def test_answers_csv_holds_every_report_and_reads_back(client, auth, stored, tmp_path) -> None:
    response = client.get(f"{API}/answers.csv", headers=auth)
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert len(rows) == N
    assert list(rows[0]) == list(SURVEY.questions)
    for row, report in zip(rows, stored, strict=True):
        for qid, answer in report["answers"].items():
            expected = (
                json.dumps(answer, separators=(",", ":"))
                if isinstance(answer, list)
                else str(answer)
            )
            assert row[qid] == expected
    # The file is what `--answers FILE.csv` reads, the text question's sketches included.
    path = tmp_path / "answers.csv"
    path.write_text(response.get_data(as_text=True), encoding="utf-8")
    read = list(read_answers_csv(SURVEY, path))
    assert [r["answers"] for r in read] == [report["answers"] for report in stored]


@pytest.mark.parametrize("fmt", ["dta", "sav"])
def test_stat_files_read_back_with_the_same_rows_codes_and_labels(
    client, auth, stored, tmp_path, fmt: str
) -> None:
    response = client.get(f"{API}/export.{fmt}", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    path = tmp_path / f"export.{fmt}"
    path.write_bytes(response.get_data())
    read = pyreadstat.read_dta if fmt == "dta" else pyreadstat.read_sav
    frame, meta = read(str(path))
    names = exports.variable_names(list(SURVEY.questions))
    assert names["age-group"] == "age_group"
    # Same rows and codes: every report, every question but the text one, in order.
    assert list(frame.columns) == [names[q] for q in SURVEY.questions if q != "town"]
    assert len(frame) == N
    for i, report in enumerate(stored):
        for qid, answer in report["answers"].items():
            if qid == "town":
                continue
            got = frame[names[qid]].iloc[i]
            assert got == (answer if isinstance(answer, str) else float(answer)), (qid, i)
    # Variable labels from the question texts (cut at 80 characters), value labels from options.
    labels = dict(zip(meta.column_names, meta.column_labels, strict=True))
    assert labels["smokes"] == "Do you smoke?"
    assert labels["age_group"].startswith("Your age group, in years:")
    assert len(labels["age_group"]) == 80
    values = meta.variable_value_labels
    assert values["smokes"] == {0: "no", 1: "yes"}
    assert values["party"] == {0: "A", 1: "B", 2: "C"}
    assert values["age_group"] == {0: "18-34", 1: "35-64", 2: HOSTILE}
    assert "age" not in values and "region" not in values  # a number, a string of 0/1
    # The randomization parameters in the notes.
    text = " ".join(meta.notes)
    smokes = SURVEY.questions["smokes"]
    assert f"p* = {smokes.randomizer.p_star}" in text
    assert "smokes: mechanism rr" in text and "age-group (variable age_group)" in text
    assert "town: a text question, left out" in text
    coins = exports.design_of(SURVEY.questions["cheated"])
    assert coins == {"p": 0.5, "p1": 0.25, "p0": 0.25}
    assert "p = 1/2, p1 = 1/4, p0 = 1/4" in text
    assert meta.file_label == "Exports of every kind"


@pytest.mark.parametrize("fmt", ["dta", "sav"])
def test_a_skipped_question_is_missing(tmp_path, fmt: str) -> None:
    bodies = [
        json.dumps({"answers": {"smokes": 1, "region": "010", "age": 40}}),
        json.dumps({"answers": {"smokes": 0}}),  # asked fewer questions (skip logic)
    ]
    path = tmp_path / f"skip.{fmt}"
    exports.write_stat_file(SURVEY, iter(bodies), fmt, str(path))  # type: ignore[arg-type]
    frame, _ = (pyreadstat.read_dta if fmt == "dta" else pyreadstat.read_sav)(str(path))
    assert list(frame["smokes"]) == [1.0, 0.0]
    assert frame["age"].iloc[0] == 40.0 and math.isnan(frame["age"].iloc[1])
    assert list(frame["region"]) == ["010", ""]
    assert exports.csv_text(None) == ""


def test_stat_file_over_the_cell_limit_is_refused_before_the_work(app: Flask, stored) -> None:
    with app.app_context():
        with pytest.raises(ActionError, match="answers.csv instead") as caught:
            exports.stat_file(
                get_store(), DOC["id"], "dta", who=access.OPERATOR, max_cells=N * 8 - 1
            )
        assert caught.value.kind == "too-large"
        assert exports.stat_file(get_store(), DOC["id"], "sav", who=access.OPERATOR)[:4] == b"$FL2"


def _r_strings(script: str) -> list[str]:
    """Every R string literal of a script, decoded, scanning as R's lexer does (a quote ends a
    string unless escaped); the rest of each line must hold no quote of its own."""
    found = []
    for line in script.splitlines():
        if line.startswith("#"):
            continue
        at = 0
        while (start := line.find('"', at)) != -1:
            end = start + 1
            while line[end] != '"':
                end += 2 if line[end] == "\\" else 1
            found.append(codecs.decode(line[start + 1 : end], "unicode_escape"))
            at = end + 1
    return found


def test_analysis_r_fills_in_the_design_and_quotes_everything(client, auth, stored) -> None:
    response = client.get(
        f"{API}/analysis.R", query_string={"formula": "smokes ~ age + `age-group` + member"},
        headers=auth,
    )  # fmt: skip
    assert response.status_code == 200
    script = response.get_data(as_text=True)
    smokes = SURVEY.questions["smokes"]
    p = smokes.randomizer.p_star - smokes.randomizer.q_star
    assert (
        f"p = {p}, p0 = {1 - smokes.randomizer.p_star}, p1 = {smokes.randomizer.q_star}" in script
    )
    assert 'design = "forced-known"' in script
    assert 'read.csv("answers.csv"' in script and "print(summary(fit))" in script
    strings = _r_strings(script)
    assert "smokes ~ age + `age-group` + member" in strings
    assert HOSTILE in strings  # the hostile option label, whole, inside one string
    assert 'system("touch' not in script
    assert "\\u" not in script or all(ord(c) < 128 for c in script)


@pytest.mark.parametrize(
    ("formula", "words"),
    [
        ('smokes ~ age"); system("id', "'\"' is not allowed"),
        ("smokes ~ age\n", "is not allowed"),
        ("smokes ~ age\\", "is not allowed"),
        ("smokes ~ log(age)", "before '('"),
        ("smokes ~ I(age)", "'I' is not allowed"),
        ("smokes ~ age ~ member", "outcome ~ covariates"),
        ("age ~ member", "randomized yes/no"),
        ("party ~ member", "randomized yes/no"),
        ("smokes ~ cheated", "cannot be a covariate"),
        ("smokes ~ (age", "parentheses"),
        ("smokes ~ age)", "parentheses"),
        ("smokes ~ age member", "expected + - * :"),
        ("smokes ~ age +", "ends with an operator"),
        ("smokes ~ + * age", "expected a question id"),
        ("smokes ~ " + " + ".join(["age"] * 200), "at most 500"),
        ("smokes ~ age-group", "no question 'group'"),
        ("smokes ~ `age", "cannot read"),
    ],
)
def test_hostile_or_unfit_formulas_are_refused(formula: str, words: str) -> None:
    with pytest.raises(ActionError, match=re.escape(words)) as caught:
        exports.r_script(SURVEY, formula)
    assert caught.value.kind == "invalid"


def test_r_string_escapes_what_could_end_it() -> None:
    for text in (HOSTILE, "a\nb", "ünï\u202e", "\U0001f600", '\\\\"', "`"):
        literal = exports.r_string(text)
        assert literal.startswith('"') and literal.endswith('"')
        inner = literal[1:-1]
        assert all(32 <= ord(c) < 127 for c in inner)
        assert re.fullmatch(r'(?:[^"\\]|\\.)*', inner)
        assert codecs.decode(inner, "unicode_escape") == text


def test_exports_need_a_token_and_are_audited(client, auth, stored) -> None:
    for path in ("answers.csv", "export.dta", "export.sav", "analysis.R?formula=smokes~age"):
        assert client.get(f"{API}/{path}").status_code == 401
    assert client.get("/api/v1/surveys/nope/answers.csv", headers=auth).status_code == 404
    refused = client.get(f"{API}/analysis.R?formula=smokes~party", headers=auth)
    assert refused.status_code == 422
    assert refused.mimetype == "application/problem+json"
    assert client.get(f"{API}/analysis.R", headers=auth).status_code == 400
    client.get(f"{API}/answers.csv", headers=auth).get_data()
    client.get(f"{API}/export.sav", headers=auth)
    audit = client.get(f"{API}/audit.jsonl", headers=auth).get_data(as_text=True)
    assert '"answers.csv"' in audit and '"export.sav"' in audit


@pytest.mark.parametrize("fmt", ["csv", "dta", "sav", "r"])
def test_cli_export_writes_what_the_api_serves(
    client, auth, stored, runner, tmp_path, fmt: str
) -> None:
    out = tmp_path / f"out.{fmt}"
    extra = ["--formula", "smokes ~ age"] if fmt == "r" else []
    result = runner.invoke(cli, ["export", DOC["id"], "--format", fmt, str(out), *extra])
    assert result.exit_code == 0, result.output
    if fmt == "csv":
        assert out.read_bytes() == client.get(f"{API}/answers.csv", headers=auth).get_data()
    elif fmt == "r":
        served = client.get(f"{API}/analysis.R?formula=smokes%20~%20age", headers=auth)
        assert out.read_text("utf-8") == served.get_data(as_text=True)
    else:
        frame, meta = (pyreadstat.read_dta if fmt == "dta" else pyreadstat.read_sav)(str(out))
        assert len(frame) == N and meta.variable_value_labels["smokes"] == {0: "no", 1: "yes"}


def test_cli_export_bad_input_is_one_line(runner, stored, tmp_path) -> None:
    out = str(tmp_path / "x.R")
    bad = runner.invoke(cli, ["export", DOC["id"], "--format", "r", out, "--formula", "a'b"])
    assert bad.exit_code == 1 and "is not allowed" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    missing = runner.invoke(cli, ["export", DOC["id"], "--format", "r", out])
    assert missing.exit_code == 2
    unknown = runner.invoke(cli, ["export", "nope", "--format", "csv", out])
    assert unknown.exit_code == 1 and "no survey 'nope'" in unknown.stderr


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed (not in CI)")
def test_the_r_script_runs_with_rr_beside_answers_csv(client, auth, stored, tmp_path) -> None:
    """Where R and rr are installed, the script runs as served and prints rrreg's summary."""
    check = subprocess.run(
        ["Rscript", "-e", "library(rr)"], capture_output=True, text=True, timeout=120
    )
    if check.returncode != 0:
        pytest.skip("the rr package is not installed")
    (tmp_path / "answers.csv").write_bytes(
        client.get(f"{API}/answers.csv", headers=auth).get_data()
    )
    formula = {"formula": "smokes ~ age + member + `age-group`"}
    script = client.get(f"{API}/analysis.R", query_string=formula, headers=auth)
    (tmp_path / "analysis.R").write_bytes(script.get_data())
    run = subprocess.run(
        ["Rscript", "analysis.R"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "age" in run.stdout and "member" in run.stdout and "age-group" in run.stdout
    assert not Path("/tmp/pwned").exists()


def test_exports_over_real_http_and_the_cli(live_server, tmp_path) -> None:
    """A real server (SQLite, and PostgreSQL where it runs): the streamed CSV, the .sav over
    HTTP and the CLI's .dta hold the same rows."""
    import requests

    live_server.create_survey(DOC)
    reports = [make_report(SURVEY, truth(i), generate_key()) for i in range(60)]
    posted = requests.post(
        f"{live_server.url}/api/v1/reports", json={"reports": reports}, timeout=30
    )
    assert all(r["result"] == "accepted" for r in posted.json()["results"])
    streamed = live_server.get(f"{API}/answers.csv", stream=True)
    assert streamed.status_code == 200
    rows = list(csv.DictReader(io.StringIO(streamed.text)))
    assert [row["smokes"] for row in rows] == [str(r["answers"]["smokes"]) for r in reports]
    sav = live_server.get(f"{API}/export.sav")
    assert sav.status_code == 200
    (tmp_path / "x.sav").write_bytes(sav.content)
    frame, _ = pyreadstat.read_sav(str(tmp_path / "x.sav"))
    out = tmp_path / "x.dta"
    live_server.cli("export", DOC["id"], "--format", "dta", str(out))
    frame_dta, meta = pyreadstat.read_dta(str(out))
    for got in (frame, frame_dta):
        assert list(got["party"]) == [float(r["answers"]["party"]) for r in reports]
    assert any("rr::rrreg design forced-known" in note for note in meta.notes)


def test_an_empty_cell_reads_back_as_a_skipped_question(tmp_path) -> None:
    gated = Survey.from_dict(
        {
            "id": "gated",
            "title": "Gated",
            "questions": [
                {"id": "smokes", "text": "Smoke?", "type": "binary", "mechanism": "none"},
                {
                    "id": "daily",
                    "text": "Daily?",
                    "type": "binary",
                    "epsilon": 1.0,
                    "relevant": "smokes == 'yes'",
                },
            ],
        }
    )
    path = tmp_path / "answers.csv"
    path.write_text("smokes,daily\n1,0\n0,\n", encoding="utf-8")
    read = [r["answers"] for r in read_answers_csv(gated, path)]
    assert read == [{"smokes": 1, "daily": 0}, {"smokes": 0}]
