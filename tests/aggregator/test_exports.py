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


#: The columns of the export: a question per column, but a 0/1 column per option for the
#: questions answered with a mark per option (region: oue; used: select-all), and no text one.
COLUMNS = [
    ("smokes", None),
    ("cheated", None),
    ("party", None),
    ("region", 0),
    ("region", 1),
    ("region", 2),
    ("age-group", None),
    ("age", None),
    ("member", None),
    ("used", 0),
    ("used", 1),
]


def column_name(qid: str, option: int | None) -> str:
    return qid.replace("-", "_") if option is None else f"{qid}_{option + 1}"


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
    # Same rows and codes: every report, every question but the text one, in order; a
    # question answered with a mark per option is a 0/1 column per option.
    assert list(frame.columns) == [column_name(qid, k) for qid, k in COLUMNS]
    assert len(frame) == N
    for i, report in enumerate(stored):
        for qid, k in COLUMNS:
            answer = report["answers"][qid]
            got = frame[column_name(qid, k)].iloc[i]
            expected = float(answer) if k is None else float(answer[k] == "1")
            assert got == expected, (qid, k, i)
    # Variable labels from the question texts (cut at 80 characters): a randomized question's
    # say its answers are noisy, and so do its value labels.
    labels = dict(zip(meta.column_names, meta.column_labels, strict=True))
    assert labels["smokes"] == "RANDOMIZED (noisy, not the true answer): Do you smoke?"
    assert labels["age_group"].startswith("Your age group, in years:")
    assert len(labels["age_group"]) == 80
    assert labels["member"] == "Member?"  # plain: as asked
    assert (
        labels["used_1"]
        == "RANDOMIZED (noisy, not the true answer): cannabis: Which have you used?"
    )
    assert labels["used_2"].startswith("RANDOMIZED (noisy, not the true answer): LSD")
    assert labels["region_3"].startswith("RANDOMIZED (noisy, not the true answer): east")
    values = meta.variable_value_labels
    assert values["smokes"] == {0: "noisy no", 1: "noisy yes"}
    assert values["party"] == {0: "noisy A", 1: "noisy B", 2: "noisy C"}
    assert values["used_1"] == values["region_2"] == {0: "noisy no", 1: "noisy yes"}
    assert values["age_group"] == {0: "18-34", 1: "35-64", 2: HOSTILE}
    assert values["member"] == {0: "no", 1: "yes"}
    assert "age" not in values  # a number
    # The randomization parameters in the notes, and that the answers are not estimates.
    text = " ".join(meta.notes)
    smokes = SURVEY.questions["smokes"]
    assert f"p* = {smokes.randomizer.p_star}" in text
    assert "smokes: mechanism rr" in text and "age-group (variable age_group)" in text
    assert "used (variables used_1, used_2, one per option)" in text
    assert "not an estimate" in text
    assert "town: a text question, left out" in text
    coins = exports.design_of(SURVEY.questions["cheated"])
    assert coins == {"p": 0.5, "p1": 0.25, "p0": 0.25}
    assert "p = 1/2, p1 = 1/4, p0 = 1/4" in text
    assert meta.file_label == "Exports of every kind"


@pytest.mark.parametrize("fmt", ["dta", "sav"])
def test_a_naive_tabulation_reads_noisy_labels_never_true_answers(tmp_path, fmt: str) -> None:
    """What a researcher's first `tab smokes` shows: the noisy shares, labelled noisy, beside
    a label that says the question is randomized (the estimate is elsewhere: the results)."""
    bodies = [json.dumps({"answers": {"smokes": i % 2, "used": "10"}}) for i in range(6)]
    path = tmp_path / f"tab.{fmt}"
    exports.write_stat_file(SURVEY, iter(bodies), fmt, str(path))  # type: ignore[arg-type]
    read = pyreadstat.read_dta if fmt == "dta" else pyreadstat.read_sav
    frame, meta = read(str(path), apply_value_formats=True)
    assert set(frame["smokes"]) == {"noisy no", "noisy yes"}
    assert set(frame["used_1"]) == {"noisy yes"} and set(frame["used_2"]) == {"noisy no"}
    labels = dict(zip(meta.column_names, meta.column_labels, strict=True))
    assert all(
        labels[column_name(qid, k)].startswith(exports.RANDOMIZED_LABEL)
        for qid, k in COLUMNS
        if not SURVEY.questions[qid].plain
    )


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
    assert [frame[f"region_{k}"].iloc[0] for k in (1, 2, 3)] == [0.0, 1.0, 0.0]
    assert all(math.isnan(frame[f"region_{k}"].iloc[1]) for k in (1, 2, 3))
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
        ('smokes ~ age"); system("id', "is not accepted (a string)"),
        ("smokes ~ age\\", "is not accepted"),
        ("smokes ~ log(age)", "the only calls are C(id) and I(...)"),
        ("smokes ~ I(age)", "I(age)"),  # fine: the next line refuses it for another reason
        ("smokes ~ age ~ member", "a second '~'"),
        ("age ~ member", "plain (sent as answered)"),
        ("party ~ member", "'party' has several options"),
        ("smokes ~ cheated", "'cheated' is randomized"),
        ("smokes ~ (age", "expected ')'"),
        ("smokes ~ age)", "expected an operator"),
        ("smokes ~ age member", "expected an operator"),
        ("smokes ~ age +", "expected a question id"),
        ("smokes ~ " + " + ".join(["age"] * 400), "over the limit of 2,000"),
        ("smokes ~ age-group", "no question 'group'"),
        ("smokes ~ `age", "an unclosed backtick"),
        ("cheated ~ cheated_arm", "no question 'cheated_arm'"),  # no split ballot here
    ],
)
def test_hostile_or_unfit_formulas_are_refused(formula: str, words: str) -> None:
    """analysis.R refuses what regress refuses, in regress's words (its grammar, its checks)."""
    if formula == "smokes ~ I(age)":
        assert "I(age)" in exports.r_script(SURVEY, formula)  # regress takes it: so does R
        return
    with pytest.raises(ActionError, match=re.escape(words)) as caught:
        exports.r_script(SURVEY, formula)
    assert caught.value.kind == "invalid"


@pytest.mark.parametrize(
    ("formula", "r_formula"),
    [
        ("smokes ~ I(age / 10) + member", "smokes ~ I(age / 10) + member"),
        ("smokes ~ I(age ** 2) + C(member)", "smokes ~ I(age ^ 2) + factor(member)"),
        ("smokes ~ (age + member) ** 2 - 1", "smokes ~ (age + member)^2 - 1"),
        (
            "smokes ~ age * `age-group` - age:`age-group`",
            "smokes ~ age * `age-group` - age:`age-group`",
        ),
        ("party[B] ~ age", "deniable.outcome ~ age"),
        ("smokes[no] ~ age", "deniable.outcome ~ age"),
        ("member ~ age + smokes", "member ~ age + smokes"),
        ("age ~ member + smokes", "age ~ member + smokes"),
    ],
)
def test_every_formula_regress_takes_is_written_in_r(formula: str, r_formula: str) -> None:
    script = exports.r_script(SURVEY, formula)
    assert r_formula in _r_strings(script)
    if SURVEY.questions[formula.split("[")[0].split()[0]].plain:  # a randomized predictor
        assert "rrreg.predictor(formula" in script and 'rr.item = "smokes"' in script
        linear = "linear" if formula.startswith("age") else "logistic"
        assert f'model.outcome = "{linear}"' in script
    else:
        assert "fit <- rrreg(formula" in script
    if formula.startswith("party"):  # the option's own pair, and its 0/1 outcome
        design = exports.design_of(SURVEY.questions["party"], 1)
        assert f"p = {design['p']}, p0 = {design['p0']}" in script
        assert 'answers[["party"]]) == 1)' in script


def test_without_a_formula_the_script_estimates_each_yes_no_share() -> None:
    script = exports.r_script(SURVEY, None)
    for qid in ("smokes", "cheated"):  # the randomized yes/no questions, no other
        design = exports.design_of(SURVEY.questions[qid])
        assert f"fit <- rrreg({qid} ~ 1, data = asked, p = {design['p']}" in script
    assert "rrreg(party" not in script and "rrreg(member" not in script
    assert "plogis(logit)" in script and "print(do.call(rbind, shares))" in script


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
    shares = client.get(f"{API}/analysis.R", headers=auth)  # no formula: every share
    assert shares.status_code == 200 and "rrreg(smokes ~ 1" in shares.get_data(as_text=True)
    assert client.get(f"{API}/analysis.R?formula=", headers=auth).status_code == 400
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
        labels = meta.variable_value_labels
        assert len(frame) == N and labels["smokes"] == {0: "noisy no", 1: "noisy yes"}


def test_cli_export_bad_input_is_one_line(runner, stored, tmp_path) -> None:
    out = str(tmp_path / "x.R")
    bad = runner.invoke(cli, ["export", DOC["id"], "--format", "r", out, "--formula", "a'b"])
    assert bad.exit_code == 1 and "expected 'outcome ~ covariates'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    misplaced = runner.invoke(
        cli, ["export", DOC["id"], "--format", "csv", out, "--formula", "smokes ~ age"]
    )
    assert misplaced.exit_code == 2
    shares = runner.invoke(cli, ["export", DOC["id"], "--format", "r", out])  # as README shows
    assert shares.exit_code == 0 and "rrreg(smokes ~ 1" in Path(out).read_text("utf-8")
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


@pytest.fixture
def rr_installed() -> None:
    """R with its rr package, where installed (CI installs them; scripts/test-deps.sh)."""
    if shutil.which("Rscript") is None:
        pytest.skip("R is not installed")
    check = subprocess.run(
        ["Rscript", "-e", "library(rr)"], capture_output=True, text=True, timeout=120
    )
    if check.returncode != 0:
        pytest.skip("the rr package is not installed")


def run_r(directory: Path, code: str) -> list[dict[str, str]]:
    """Run R code in `directory`; the CSV it writes to stdout, as rows."""
    run = subprocess.run(
        ["Rscript", "-e", code], cwd=directory, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return list(csv.DictReader(io.StringIO(run.stdout[run.stdout.index('"') :])))


def test_analysis_r_fits_the_coefficients_regress_fits(
    client, auth, stored, tmp_path, rr_installed
) -> None:
    """I(age / 10), as the regression takes it, run by R's rr beside answers.csv: the same
    maximum-likelihood coefficients as regress (rr's EM stops at a 1e-8 log-likelihood step)."""
    (tmp_path / "answers.csv").write_bytes(
        client.get(f"{API}/answers.csv", headers=auth).get_data()
    )
    formula = "smokes ~ I(age / 10) + member"
    script = client.get(f"{API}/analysis.R", query_string={"formula": formula}, headers=auth)
    assert script.status_code == 200, script.get_data(as_text=True)
    (tmp_path / "analysis.R").write_bytes(script.get_data())
    rows = run_r(
        tmp_path,
        'sink(nullfile()); source("analysis.R"); sink(); '
        "write.csv(data.frame(term = names(coef(fit)), estimate = coef(fit)), row.names = FALSE)",
    )
    fit = client.post(f"{API}/regression", json={"formula": formula}, headers=auth).get_json()
    assert fit["converged"]
    assert [row["term"] for row in rows] == ["(Intercept)", "I(age/10)", "member"]
    for row, ours in zip(rows, fit["coefficients"], strict=True):
        assert float(row["estimate"]) == pytest.approx(ours["estimate"], abs=1e-3), row


def test_analysis_r_without_a_formula_estimates_the_shares_of_the_results(
    client, auth, stored, tmp_path, rr_installed
) -> None:
    """rr::rrreg(q ~ 1) of each randomized yes/no question: its share is the results' estimate
    (the maximum likelihood of a constant is the unbiased estimate, inside 0 to 1)."""
    (tmp_path / "answers.csv").write_bytes(
        client.get(f"{API}/answers.csv", headers=auth).get_data()
    )
    (tmp_path / "shares.R").write_bytes(client.get(f"{API}/analysis.R", headers=auth).get_data())
    rows = run_r(
        tmp_path,
        'sink(nullfile()); source("shares.R"); sink(); write.csv(do.call(rbind, shares))',
    )
    results = client.get(f"{API}/results", headers=auth).get_json()
    estimates = {
        q["id"]: q["options"][1]["estimate"] for q in results["questions"] if q["type"] == "binary"
    }
    assert {row[""] for row in rows} == {"smokes", "cheated"}
    for row in rows:
        assert float(row["share"]) == pytest.approx(estimates[row[""]], abs=1e-3), row
        assert float(row["ci_low"]) < float(row["share"]) < float(row["ci_high"])


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
