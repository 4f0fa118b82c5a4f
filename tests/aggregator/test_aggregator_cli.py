"""The `deniable-aggregator` command line, through Flask's CLI runner and as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deniable.aggregator import create_app, credentials
from deniable.aggregator.cli.core import cli
from deniable.aggregator.demo import demo_survey_doc
from deniable.aggregator.web.db import get_store

AGGREGATOR = Path(sys.executable).parent / "deniable-aggregator"


@pytest.fixture
def survey_file(tmp_path, survey_doc) -> Path:
    path = tmp_path / "survey.json"
    path.write_text(json.dumps(survey_doc))
    return path


def invoke(runner, *args: str):
    return runner.invoke(cli, list(args))


def test_create_token_prints_the_token_alone_and_it_works(runner, client):
    result = invoke(runner, "create-token", "--name", "alice")
    assert result.exit_code == 0
    token = result.stdout.strip()
    assert result.stdout == token + "\n" and len(token) >= 40
    assert (
        client.get("/api/v1/surveys", headers={"Authorization": f"Bearer {token}"}).status_code
        == 200
    )


def test_create_survey_prints_its_id(runner, client, survey_file):
    result = invoke(runner, "create-survey", str(survey_file))
    assert (result.exit_code, result.stdout) == (0, "habits\n")
    assert client.get("/api/v1/surveys/habits").status_code == 200
    assert invoke(runner, "create-survey", str(survey_file)).exit_code == 0  # the same again


def test_create_survey_reads_no_more_than_the_body_limit(app, runner, client, survey_doc, tmp_path):
    # The whole file was read, however large (/dev/zero never ends), before any check.
    app.config["MAX_CONTENT_LENGTH"] = 1024
    path = tmp_path / "padded.json"
    path.write_text(json.dumps(survey_doc) + " " * 2048)
    refused = invoke(runner, "create-survey", str(path))
    assert refused.exit_code == 1, refused.output
    assert refused.stderr == f"error: {path}: larger than 1,024 bytes (DENIABLE_MAX_BODY, " + (
        "as for a survey posted to the API); a survey document is far smaller\n"
    )
    assert client.get("/api/v1/surveys/habits").status_code == 404
    assert invoke(runner, "create-survey", "/dev/zero").exit_code == 1


def test_create_survey_with_an_owner(runner, client, survey_file):
    refused = invoke(runner, "create-survey", str(survey_file), "--owner", "nobody")
    assert refused.exit_code == 1 and refused.stderr.startswith("error: no account 'nobody'")
    assert client.get("/api/v1/surveys/habits").status_code == 404  # nothing made
    assert invoke(runner, "account", "create", "alice").exit_code == 0
    made = invoke(runner, "create-survey", str(survey_file), "--owner", "alice")
    assert (made.exit_code, made.stdout) == (0, "habits\n")
    token = invoke(runner, "token", "create", "alice").stdout.strip()
    alice = {"Authorization": f"Bearer {token}"}
    assert client.post("/api/v1/surveys/habits/close", headers=alice).status_code == 200


@pytest.mark.parametrize(
    ("content", "message"),
    [("{", "not valid JSON"), ('{"id": "x"}', "title"), ("[]", "JSON object")],
)
def test_create_survey_explains_a_bad_file(runner, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = invoke(runner, "create-survey", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.output


def test_create_survey_of_a_missing_file(runner, tmp_path):
    result = invoke(runner, "create-survey", str(tmp_path / "none.json"))
    assert result.exit_code == 1 and "no such file" in result.stderr


def test_invite_prints_codes_one_per_line(runner, tmp_path, invite_doc):
    path = tmp_path / "private.json"
    path.write_text(json.dumps(invite_doc))
    invoke(runner, "create-survey", str(path))
    result = invoke(runner, "invite", "private", "5")
    assert result.exit_code == 0
    codes = result.stdout.split()
    assert len(codes) == len(set(codes)) == 5
    refused = invoke(runner, "invite", "nope", "2")
    assert refused.exit_code == 1 and "no survey 'nope'" in refused.stderr
    assert invoke(runner, "invite", "private", "zero").exit_code == 2


def test_results_table_json_and_csv(runner, client, auth, survey_file, report_for):
    invoke(runner, "create-survey", str(survey_file))
    from deniable.shared import Survey

    survey = Survey.from_dict(client.get("/api/v1/surveys/habits").get_json()["survey"])
    client.post("/api/v1/reports", json={"reports": [report_for(survey) for _ in range(20)]})
    table = invoke(runner, "results", "habits")
    assert table.exit_code == 0 and "20 reports" in table.stdout and "smokes" in table.stdout
    as_json = invoke(runner, "results", "habits", "--json")
    api = client.get("/api/v1/surveys/habits/results", headers=auth).get_json()
    assert json.loads(as_json.stdout) == api
    level = json.loads(
        invoke(
            runner, "results", "habits", "--json", "--confidence", "0.8", "--simultaneous"
        ).stdout
    )
    assert level["confidence"] == 0.8 and level["simultaneous"] is True
    as_csv = invoke(runner, "results", "habits", "--csv")
    assert as_csv.stdout == client.get("/api/v1/surveys/habits/results.csv", headers=auth).get_data(
        as_text=True
    )
    assert invoke(runner, "results", "habits", "--json", "--csv").exit_code == 2
    bad = invoke(runner, "results", "habits", "--confidence", "1.5")
    assert bad.exit_code == 1 and "confidence" in bad.stderr
    assert invoke(runner, "results", "nope").exit_code == 1


def test_close(runner, survey_file):
    invoke(runner, "create-survey", str(survey_file))
    result = invoke(runner, "close", "habits")
    assert result.exit_code == 0 and "closed" in result.stdout
    assert invoke(runner, "close", "nope").exit_code == 1


def test_init_db(runner):
    result = invoke(runner, "init-db")
    assert result.exit_code == 0 and "schema version" in result.stdout


def test_demo_fills_once(runner, auth, client):
    first = invoke(runner, "demo", "--no-serve", "--respondents", "120")
    assert first.exit_code == 0, first.output
    assert "http://127.0.0.1:8000" in first.stdout
    labels = [line.split(":")[0] for line in first.stdout.splitlines()]
    assert labels.count("admin token") == labels.count("analyst token") == 1
    survey_id = demo_survey_doc()["id"]
    assert client.get(f"/api/v1/surveys/{survey_id}/results", headers=auth).get_json()["n"] == 120
    numbers = client.get("/api/v1/surveys/demo-numbers/results", headers=auth).get_json()
    assert numbers["n"] == 120 and [q["type"] for q in numbers["questions"]] == [
        "integer",
        "multi",
        "text",
        "integer",
        "categorical",
    ]
    assert "survey:  demo-numbers (120 reports" in first.stdout
    # The XLSForm's survey (docs/xlsform.md): only smokers' reports hold the gated questions.
    form = client.get("/api/v1/surveys/health-multilingual/results", headers=auth).get_json()
    asked = {q["id"]: q["n"] for q in form["questions"]}
    assert form["n"] == 120 and asked["smokes"] == asked["age"] == 120
    assert 0 < asked["cigarettes"] == asked["quit"] < 120
    second = invoke(runner, "demo", "--no-serve", "--respondents", "120")
    assert second.exit_code == 0
    doc = client.get(f"/api/v1/surveys/{survey_id}/results", headers=auth).get_json()
    assert doc["n"] == 120
    token = second.stdout.split("admin token:")[1].split()[0]
    analyst = second.stdout.split("analyst token:")[1].split()[0]
    as_admin = {"Authorization": f"Bearer {token}"}
    as_analyst = {"Authorization": f"Bearer {analyst}"}
    assert client.get("/api/v1/surveys", headers=as_admin).status_code == 200
    listed = client.get("/api/v1/surveys", headers=as_analyst).get_json()
    assert sorted(s["id"] for s in listed["surveys"]) == [
        "demo-habits",
        "demo-numbers",
        "health-multilingual",
    ]
    assert client.get(f"/api/v1/surveys/{survey_id}/results", headers=as_analyst).status_code == 200
    refused = client.post(f"/api/v1/surveys/{survey_id}/close", headers=as_analyst)
    assert refused.status_code == 403  # an analyst reads and changes nothing


def run(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DENIABLE_DATA_DIR": str(tmp_path / "data"), **env}
    return subprocess.run(
        [str(AGGREGATOR), *args], env=environ, capture_output=True, text=True, timeout=60
    )


def test_the_console_script_errors_are_one_line_without_a_traceback(tmp_path):
    missing = run(tmp_path, "results", "nope")  # a mistyped data dir: no new, empty database
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: no survey 'nope' on this aggregator: no database at")
    assert "DENIABLE_DATA_DIR" in missing.stderr and not (tmp_path / "data").exists()
    for command in (["verify", "nope"], ["purge", "--days", "1"], ["backup", str(tmp_path / "b")]):
        result = run(tmp_path, *command)
        assert result.returncode == 1 and "no database at" in result.stderr, command
    assert not (tmp_path / "data").exists() and not (tmp_path / "b").exists()
    assert run(tmp_path, "init-db").returncode == 0
    result = run(tmp_path, "results", "nope")
    assert result.returncode == 1
    assert (
        result.stderr.strip() == "error: no survey 'nope' on this aggregator; check the survey id"
    )
    assert run(tmp_path, "purge", "--days", "99999999999999").returncode == 2
    assert run(tmp_path, "create-token", "--name", " ").returncode == 2
    backup = run(tmp_path, "backup", str(tmp_path / "no" / "dir" / "b.db"))
    assert backup.returncode == 1 and "no such directory" in backup.stderr
    bad_env = run(tmp_path, "init-db", DENIABLE_MAX_BODY="lots")
    assert bad_env.returncode == 1 and bad_env.stderr.startswith("error: DENIABLE_MAX_BODY")
    assert "Traceback" not in bad_env.stderr
    usage = run(tmp_path, "results")
    assert usage.returncode == 2 and "Usage" in usage.stderr
    assert run(tmp_path, "no-such-command").returncode == 2


def test_the_data_dir_defaults_to_deniable_data_in_the_working_directory(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k != "DENIABLE_DATA_DIR"}
    result = subprocess.run(
        [str(AGGREGATOR), "create-token"],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "deniable-data").is_dir()


def test_revoking_a_token_ends_its_access(tmp_path):
    token = run(tmp_path, "create-token", "--name", "alice").stdout.strip()
    other = run(tmp_path, "create-token", "--name", "bob").stdout.strip()
    app = create_app({"DATA_DIR": str(tmp_path / "data")})
    revoked = run(tmp_path, "revoke-token", "alice")
    assert revoked.returncode == 0 and revoked.stdout.strip() == "revoked 1 token(s) named 'alice'"
    with app.app_context():
        live = [t for t in get_store().list_tokens() if t.revoked_at is None]
        assert [t.id for t in live] == [credentials.digest(other)[:12]]
    client = app.test_client()
    assert (
        client.get("/api/v1/surveys", headers={"Authorization": f"Bearer {token}"}).status_code
        == 401
    )
    assert (
        client.get("/api/v1/surveys", headers={"Authorization": f"Bearer {other}"}).status_code
        == 200
    )
    again = run(tmp_path, "revoke-token", "alice")
    assert again.returncode == 1 and again.stderr.startswith("error: no token named 'alice'")
