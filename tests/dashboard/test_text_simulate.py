"""`simulate` with text questions: a Zipf truth over a named vocabulary, estimated for the
survey's candidates and the truth's other words, against a real server."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from test_simulate import WIDE, rows, simulate

from tests.aggregator.test_text_questions import TEXT_DOC

pytestmark = pytest.mark.own_server  # each test makes the same survey and counts its reports

WORDS = ["lagos", "kano", "abuja", "jos", "ibadan"]


@pytest.mark.slow
def test_simulate_draws_text_from_a_zipf_vocabulary_and_covers_it(live_server: Any) -> None:
    live_server.create_survey(copy.deepcopy(TEXT_DOC))
    truth = {"city": {"zipf": 1.1, "words": WORDS}, "app": {"mail": 0.7, "chat": 0.3}}
    done = simulate(
        live_server, "cities", "-n", "1500", "--truth", json.dumps(truth), "--seed", "4",
        "--confidence", WIDE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = {(r[0], r[1]): r for r in rows(done.stdout)}
    weights = [1 / (i + 1) ** 1.1 for i in range(5)]
    for word, weight in zip(WORDS, weights, strict=True):
        assert float(table["city", word][2]) == pytest.approx(weight / sum(weights), abs=1e-4)
    assert float(table["app", "chat"][2]) == pytest.approx(0.3, abs=1e-4)
    assert all(r[6] == "yes" for r in table.values()), done.stdout


@pytest.mark.parametrize(
    ("truth", "words"),
    [
        ({"city": {"lagos": 0.5}}, "add up to 0.5, not 1"),
        ({"city": {"zipf": -1, "words": ["a"]}}, "exponent"),
        ({"city": {"zipf": 1.1, "words": []}}, "list of answers"),
        ({"city": {"   ": 1.0}}, "is not an answer"),
    ],
)
def test_a_bad_text_truth_is_one_line(live_server: Any, truth: dict, words: str) -> None:
    live_server.create_survey(copy.deepcopy(TEXT_DOC))
    done = simulate(live_server, "cities", "-n", "5", "--truth", json.dumps(truth))
    assert done.returncode == 1 and done.stderr.startswith("error: ") and words in done.stderr
    assert live_server.results("cities")["n"] == 0
