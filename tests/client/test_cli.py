"""The `deniable` command, run as a real process (exit codes, stdout, one-line stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from client_support import TRUTH, PostsDrop, stored_reports

from deniable.client import Client

ROOT = Path(__file__).resolve().parents[2]
DENIABLE = Path(sys.executable).parent / "deniable"
EXAMPLE = ROOT / "examples" / "health-2026.json"


def run(home: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DENIABLE_HOME": str(home), **env}
    environment.pop("DENIABLE_EPSILON_CAP", None)
    environment.update(env)
    return subprocess.run(
        [str(DENIABLE), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


def answer_flags(truth: dict[str, str]) -> list[str]:
    return [flag for qid, value in truth.items() for flag in ("--answer", f"{qid}={value}")]


def test_version_and_help(home: Path) -> None:
    version = run(home, "--version")
    assert version.returncode == 0 and "deniable" in version.stdout
    for flag in ("-h", "--help"):
        result = run(home, flag)
        assert result.returncode == 0
        for command in ("answer", "explain", "status", "sync"):
            assert command in result.stdout


def test_unreachable_url_exits_1_with_one_line(home: Path) -> None:
    result = run(home, "answer", "http://127.0.0.1:9", "health-2026", *answer_flags(TRUTH), "--yes")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: could not reach http://127.0.0.1:9: connection refused")


def test_usage_errors_exit_2(home: Path) -> None:
    assert run(home, "answer").returncode == 2
    assert run(home, "answer", "http://x", "s", "--answer", "no-equals-sign").returncode == 2
    assert run(home, "explain", str(home / "missing.json")).returncode == 2
    assert run(home, "frobnicate").returncode == 2


def test_explain_a_local_file(home: Path) -> None:
    result = run(home, "explain", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "an observer can be at most 3 times surer you answered yes than no" in result.stdout
    assert "kept with probability 73.1%" in result.stdout
    assert "Total privacy cost: epsilon = 4.099" in result.stdout
    assert not home.exists()  # previewing a file touches no ledger


def test_explain_an_invalid_file_is_one_line(home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"id": "x", "title": "X", "questions": []}))
    result = run(home, "explain", str(broken))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and "questions" in result.stderr
    broken.write_text("{not json")
    result = run(home, "explain", str(broken))
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1


def test_status_and_sync_of_a_fresh_home(home: Path) -> None:
    status = run(home, "status")
    assert status.returncode == 0
    assert "Surveys answered: 0" in status.stdout
    assert "of your cap of 10" in status.stdout
    assert "of your cap of 3 (3 left)" in run(home, "--epsilon-cap", "3", "status").stdout
    assert "of your cap of 2.5" in run(home, "status", DENIABLE_EPSILON_CAP="2.5").stdout
    sync = run(home, "sync")
    assert sync.returncode == 0 and "Nothing to send" in sync.stdout


def test_answer_with_yes_prints_a_receipt(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    result = run(home, "answer", live_server.url, survey_id, *answer_flags(TRUTH), "--yes")
    assert result.returncode == 0, result.stderr
    (stored,) = stored_reports(live_server, survey_id)
    assert f"Report {stored['report_id']}" in result.stdout
    assert ": accepted" in result.stdout
    assert "Privacy spent: epsilon 4.599" in result.stdout
    assert "Noisy answers sent" in result.stdout
    assert f"fruit: {stored['answers']['fruit']} (marks" in result.stdout

    again = run(home, "answer", live_server.url, survey_id, "--yes", "--json")
    assert again.returncode == 0, again.stderr
    receipt = json.loads(again.stdout)
    assert receipt["report_id"] == stored["report_id"] and receipt["repeated"] is True
    assert receipt["status"] == "duplicate"  # sent again, and the server knows it
    plain = run(home, "answer", live_server.url, survey_id, "--yes")
    assert plain.returncode == 0, plain.stderr
    party = "ABCD"[stored["answers"]["party"]]
    assert f"party: {party}" in plain.stdout  # option labels, as the first receipt showed
    assert receipt["answers"] == stored["answers"]

    status = run(home, "status")
    assert "Surveys answered: 1" in status.stdout
    assert "Epsilon spent: 4.599 of your cap of 10" in status.stdout
    assert "Reports waiting to be sent: 0" in status.stdout
    assert run(home, "sync").stdout.strip() == "Nothing to send."


def test_sync_exits_1_when_the_server_refuses_a_report(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    queued = Client(live_server.url, home, session=PostsDrop()).answer(survey_id, TRUTH)
    assert queued.status == "queued"
    live_server.cli("close", survey_id)
    result = run(home, "sync")
    assert result.returncode == 1
    assert f"{survey_id} at {live_server.url}: rejected" in result.stdout
    assert result.stderr.startswith("error: the server refused 1 report(s)")
    assert len(result.stderr.strip().splitlines()) == 1
    status = run(home, "status")
    assert "Reports waiting to be sent: 0" in status.stdout


def test_answer_interactively(live_server: Any, new_survey: Callable[..., str], home: Path) -> None:
    survey_id = new_survey()
    # smokes: 2 (yes); cannabis: "n"; party: a bad number, then "B"; fruit: 4 (fig); confirm
    result = run(home, "answer", live_server.url, survey_id, stdin="2\nn\n9\nB\n4\ny\n")
    assert result.returncode == 0, result.stderr
    assert "1) no   2) yes" in result.stdout
    assert "kept with probability 73.1%" in result.stdout
    assert "3 times surer you answered yes than no" in result.stdout
    assert "give a number from 1 to 4" in result.stdout + result.stderr
    assert "Total privacy cost: epsilon = 4.599" in result.stdout
    assert ": accepted" in result.stdout
    assert len(stored_reports(live_server, survey_id)) == 1


def test_declining_sends_nothing(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    result = run(home, "answer", live_server.url, survey_id, *answer_flags(TRUTH), stdin="n\n")
    assert result.returncode == 1
    assert stored_reports(live_server, survey_id) == []
    assert "Surveys answered: 0" in run(home, "status").stdout


def test_yes_without_every_answer_is_a_usage_error(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    result = run(home, "answer", live_server.url, survey_id, "--answer", "smokes=yes", "--yes")
    assert result.returncode == 2
    assert "missing --answer for cannabis, party, fruit" in result.stderr


@pytest.mark.parametrize(
    ("answer", "message"),
    [("party=E", "'party': 'E' is not an answer"), ("age=3", "no question 'age'")],
)
def test_bad_answers_are_one_line(
    live_server: Any, new_survey: Callable[..., str], home: Path, answer: str, message: str
) -> None:
    survey_id = new_survey()
    flags = answer_flags({k: v for k, v in TRUTH.items() if k != answer.split("=")[0]})
    result = run(home, "answer", live_server.url, survey_id, *flags, "--answer", answer, "--yes")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr


def test_cap_refusal_is_one_line(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    flags = answer_flags(TRUTH)
    result = run(
        home, "answer", live_server.url, survey_id, *flags, "--yes", DENIABLE_EPSILON_CAP="1"
    )
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert "cap of 1" in result.stderr
    assert stored_reports(live_server, survey_id) == []


def test_explain_a_served_survey(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    result = run(home, "explain", live_server.url, survey_id)
    assert result.returncode == 0, result.stderr
    assert "3 times surer you answered yes than no" in result.stdout
    assert "a mark (0 or 1) for each of the 6 options" in result.stdout
