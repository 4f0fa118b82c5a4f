"""Integer and multi questions at the respondent's end: the CLI's flags and prompts, the library,
`deniable explain`, and bad answers refused before anything is randomized or sent."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from client_support import stored_reports
from test_cli import run

from deniable.client import Client, ClientError, explain_survey
from deniable.shared import Survey
from tests.aggregator.conftest import NUMBERS_DOC

FLAGS = ["--answer", "drinks=3", "--answer", "used=cannabis,LSD", "--answer", "age=40"]


@pytest.fixture
def numbers(live_server: Any) -> Survey:
    created = live_server.create_survey(copy.deepcopy(NUMBERS_DOC), fresh=True)
    return Survey.from_dict(created["survey"])


def test_explain_says_one_bit_leans_towards_the_number_in_plain_words(tmp_path: Path) -> None:
    text = explain_survey(Survey.from_dict(NUMBERS_DOC))
    assert "What is sent: one bit (0 or 1), never your number" in text
    assert "73.1% of the time it leans towards your number" in text
    assert "a mark (selected or not) for each of the 3 options" in text
    assert "2 plain questions are sent exactly as you answer" in text
    (tmp_path / "doc.json").write_text(json.dumps(NUMBERS_DOC))
    result = run(tmp_path / "home", "explain", str(tmp_path / "doc.json"))
    assert result.returncode == 0 and "one bit" in result.stdout


def test_flags_answer_numbers_and_selections(live_server: Any, numbers: Survey, home: Path) -> None:
    flags = [*FLAGS, "--answer", "apps=", "--yes", "--json"]
    result = run(home, "answer", live_server.url, numbers.id, *flags)
    assert result.returncode == 0, result.stderr
    assert "Sent exactly as you answer" in result.stderr  # age and apps, before sending
    receipt = json.loads(result.stdout)
    assert receipt["status"] == "accepted"
    (stored,) = stored_reports(live_server, numbers.id)
    answers = stored["answers"]
    assert answers["age"] == 40 and answers["apps"] == "00"  # plain: as answered
    assert answers["drinks"] in (0, 1) and len(answers["used"]) == 3
    for qid, value in answers.items():
        numbers.questions[qid].validate(value)


def test_a_select_all_answer_may_repeat_the_flag(live_server: Any, numbers: Survey, home: Path):
    flags = ["--answer", "used=cannabis", "--answer", "used=LSD", "--answer", "apps=chat"]
    result = run(home, "answer", live_server.url, numbers.id, *FLAGS[:2], *FLAGS[4:], *flags, "-y")
    assert result.returncode == 0, result.stderr
    (stored,) = stored_reports(live_server, numbers.id)
    assert stored["answers"]["apps"] == "01"


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        (
            "drinks=3.5",
            "question 'drinks': '3.5' is not an answer; give a whole number from 0 to 20",
        ),
        ("drinks=21", "give a whole number from 0 to 20"),
        ("age=forty", "question 'age': 'forty' is not an answer"),
        ("used=heroin", "question 'used': 'heroin' is not an answer; give one of 'cannabis'"),
    ],
)
def test_a_bad_answer_is_one_line_and_nothing_is_sent(
    live_server: Any, numbers: Survey, home: Path, flag: str, words: str
) -> None:
    given = {f.split("=")[0]: f for f in FLAGS[1::2]}
    given[flag.split("=")[0]] = flag
    flags = [part for value in given.values() for part in ("--answer", value)]
    result = run(home, "answer", live_server.url, numbers.id, *flags, "--answer", "apps=", "-y")
    assert result.returncode == 1
    assert words in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert stored_reports(live_server, numbers.id) == []
    assert "Surveys answered: 0" in run(home, "status").stdout


def test_prompts_ask_for_a_number_and_for_options(live_server: Any, numbers: Survey, home: Path):
    # drinks: out of range, then 3; used: "1,LSD"; age: 40; apps: Enter (none); confirm.
    result = run(home, "answer", live_server.url, numbers.id, stdin="25\n3\n1,LSD\n40\n\ny\n")
    assert result.returncode == 0, result.stderr
    assert "a whole number from 0 to 20" in result.stdout
    assert "give a whole number from 0 to 20" in result.stdout + result.stderr
    assert "separated by commas; Enter for none" in result.stdout
    assert "one bit" in result.stdout and ": accepted" in result.stdout
    (stored,) = stored_reports(live_server, numbers.id)
    assert stored["answers"]["age"] == 40 and stored["answers"]["apps"] == "00"


def test_the_library_takes_python_values_and_refuses_bad_ones(
    live_server: Any, numbers: Survey, tmp_path: Path
) -> None:
    with Client(live_server.url, tmp_path / "device") as client:
        with pytest.raises(ClientError, match=r"question 'drinks': 2\.5 is not an answer"):
            client.answer(numbers.id, {"drinks": 2.5, "used": [], "age": 30, "apps": []})
        with pytest.raises(ClientError, match="used"):
            client.answer(numbers.id, {"drinks": 2, "used": ["x"], "age": 30, "apps": []})
        assert client.receipt(numbers.id) is None
        receipt = client.answer(
            numbers.id, {"drinks": 2, "used": {"ecstasy"}, "age": 30, "apps": ("mail", "chat")}
        )
    assert receipt.status == "accepted"
    (stored,) = stored_reports(live_server, numbers.id)
    assert stored["answers"]["apps"] == "11"
