"""Text questions at the respondent's end (the CLI and the library) and in the researcher's
`results --candidates`, against a real server."""

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
from tests.aggregator.test_text_questions import TEXT_DOC

FLAGS = ["--answer", "city=Port Harcourt", "--answer", "app=mail", "--answer", "drug=alcohol"]


@pytest.fixture
def cities(live_server: Any) -> Survey:
    return Survey.from_dict(
        live_server.create_survey(copy.deepcopy(TEXT_DOC), fresh=True)["survey"]
    )


def test_explain_says_the_words_never_leave_the_device() -> None:
    text = explain_survey(Survey.from_dict(TEXT_DOC))
    assert text.count("Answer in your own words") == 3
    assert "only one bit of a 64-entry code" in text and "Never your words" in text


def test_a_text_answer_is_sent_as_a_sketch_only(
    live_server: Any, cities: Survey, home: Path
) -> None:
    result = run(home, "answer", live_server.url, cities.id, *FLAGS, "--yes", "--json")
    assert result.returncode == 0, result.stderr
    (stored,) = stored_reports(live_server, cities.id)
    assert "harcourt" not in json.dumps(stored).lower() and "alcohol" not in json.dumps(stored)
    for qid, value in stored["answers"].items():
        cities.questions[qid].validate(value)


def test_prompts_take_words_and_refuse_a_blank(live_server: Any, cities: Survey, home: Path):
    result = run(home, "answer", live_server.url, cities.id, stdin="   \nLagos\nmail\nbeer\ny\n")
    assert result.returncode == 0, result.stderr
    assert "a word or a short phrase" in result.stdout + result.stderr
    assert len(stored_reports(live_server, cities.id)) == 1


def test_the_library_refuses_a_blank_answer_before_anything_is_sent(
    live_server: Any, cities: Survey, tmp_path: Path
) -> None:
    with Client(live_server.url, tmp_path / "device") as client:
        with pytest.raises(ClientError, match="question 'city'"):
            client.answer(cities.id, {"city": "  ", "app": "mail", "drug": "x"})
        assert client.receipt(cities.id) is None
        assert client.answer(cities.id, {"city": "Kano", "app": "chat", "drug": "x"}).ok
    assert len(stored_reports(live_server, cities.id)) == 1


def test_results_take_ad_hoc_candidates_on_the_command_line(
    live_server: Any, cities: Survey, home: Path
) -> None:
    assert run(home, "answer", live_server.url, cities.id, *FLAGS, "--yes").returncode == 0
    table = live_server.cli("results", cities.id, "--candidates", "Port Harcourt,  Jos ")
    assert "port harcourt" in table.stdout and "jos" in table.stdout
    bad = live_server.cli("results", cities.id, "--candidates", ",".join("x" * 60), check=False)
    assert bad.returncode == 1 and "at most 50" in bad.stderr and "Traceback" not in bad.stderr
