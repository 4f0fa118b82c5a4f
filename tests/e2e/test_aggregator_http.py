"""The aggregator over real HTTP: a server process on a free port and a real SQLite file."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
import requests

from deniable.aggregator.stats import analyze
from deniable.client import Client
from deniable.shared import Survey, make_report, sign_report
from deniable.shared.signing import generate_key
from tests.postgres_support import SQLITE_ONLY

SURVEY: dict[str, Any] = {
    "id": "e2e-habits",
    "title": "Habits, end to end",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 2.0},
        {
            "id": "cheated",
            "text": "Ever cheated?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.75, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "mechanism": "grr",
            "epsilon": 2.5,
        },
        {
            "id": "region",
            "text": "Where?",
            "type": "categorical",
            "options": ["north", "south", "east", "west", "centre"],
            "mechanism": "oue",
            "epsilon": 2.5,
        },
    ],
}
TRUTH = {
    "smokes": {"no": 0.7, "yes": 0.3},
    "cheated": {"no": 0.6, "yes": 0.4},
    "party": {"A": 0.4, "B": 0.3, "C": 0.2, "D": 0.1},
    "region": {"north": 0.3, "south": 0.25, "east": 0.2, "west": 0.15, "centre": 0.1},
}
ANSWERS = {"smokes": "yes", "cheated": "no", "party": "B", "region": "east"}
PROBLEM = "application/problem+json"


def population(n: int, seed: int = 7) -> list[dict[str, str]]:
    """n respondents whose true answers have exactly TRUTH's shares."""
    rng = random.Random(seed)
    columns = {}
    for qid, shares in TRUTH.items():
        column = [label for label, share in shares.items() for _ in range(round(share * n))]
        rng.shuffle(column)
        columns[qid] = column
    return [{qid: columns[qid][i] for qid in TRUTH} for i in range(n)]


def state(server, survey_id: str) -> tuple[Any, str]:
    """Everything a report could change: the results and the export."""
    export = server.get(f"/api/v1/surveys/{survey_id}/reports.jsonl").text
    return server.results(survey_id), export


@pytest.fixture
def published(live_server) -> Survey:
    body = live_server.create_survey(copy.deepcopy(SURVEY), fresh=True)
    return Survey.from_dict(body["survey"])


def post(server, body: Any) -> requests.Response:
    return requests.post(f"{server.url}/api/v1/reports", json=body, timeout=30)


# PostgreSQL: tests/aggregator/test_store.py, test_ingest.py
@SQLITE_ONLY
@pytest.mark.slow
def test_hundreds_of_clients_recover_the_truth_and_a_restart_keeps_every_count(
    live_server, published, tmp_path
):
    n = 400
    with requests.Session() as session:
        for i, truth in enumerate(population(n)):
            with Client(live_server.url, tmp_path / f"device-{i}", session=session) as client:
                assert client.answer(published.id, truth).status == "accepted"
    doc = live_server.results(published.id)
    assert doc["n"] == n
    for question in doc["questions"]:
        for option in question["options"]:
            true_share = TRUTH[question["id"]][option["option"]]
            # 5.5 standard errors: below 4e-6 for the 11 options together (exact, with oue's skew).
            assert abs(option["estimate"] - true_share) <= 5.5 * option["stderr"], (
                question["id"],
                option,
            )
    export = live_server.get(f"/api/v1/surveys/{published.id}/reports.jsonl").text
    assert analyze(published, export) == doc
    live_server.restart()
    assert live_server.results(published.id) == doc


def test_refused_reports_change_nothing(live_server, published):
    key = generate_key()
    accepted = make_report(published, ANSWERS, key)
    assert post(live_server, accepted).status_code == 201
    before = state(live_server, published.id)

    def signed(**changes: Any) -> dict[str, Any]:
        other = generate_key()
        return sign_report({**make_report(published, ANSWERS, other), **changes}, other)

    tampered = dict(
        accepted, answers={**accepted["answers"], "smokes": 1 - accepted["answers"]["smokes"]}
    )
    cases = {
        "duplicate": (accepted, 200, "duplicate"),
        "replayed": (make_report(published, ANSWERS, key), 409, "rejected"),
        "tampered": (tampered, 422, "rejected"),
        "wrong-hash": (signed(survey_hash="ab" * 32), 409, "rejected"),
        "unknown-question": (signed(answers={**accepted["answers"], "other": 1}), 422, "rejected"),
        "out-of-range": (signed(answers={**accepted["answers"], "party": 9}), 422, "rejected"),
        "float-valued": (signed(answers={**accepted["answers"], "smokes": 1.0}), 422, "rejected"),
    }
    for name, (report, status, result) in cases.items():
        response = post(live_server, report)
        assert response.status_code == status, (name, response.text)
        assert response.json()["result"] == result, name
        if result == "rejected":
            assert response.headers["Content-Type"] == PROBLEM
            assert response.json()["reason"], name
    batch = post(live_server, {"reports": [c[0] for c in cases.values()]})
    assert [r["result"] for r in batch.json()["results"]] == [c[2] for c in cases.values()]
    assert state(live_server, published.id) == before
    closing = requests.post(
        f"{live_server.url}/api/v1/surveys/{published.id}/close",
        headers=live_server.headers,
        timeout=10,
    )
    assert closing.status_code == 200
    after_close = post(live_server, make_report(published, ANSWERS, generate_key()))
    assert after_close.status_code == 409 and after_close.json()["result"] == "rejected"
    assert post(live_server, accepted).status_code == 200  # a resend is still the same report
    assert state(live_server, published.id) == before


def test_an_invite_only_survey_through_the_client(live_server, tmp_path):
    doc = {**copy.deepcopy(SURVEY), "id": "e2e-private", "enrollment": "invite"}
    survey = Survey.from_dict(live_server.create_survey(doc)["survey"])
    codes = live_server.cli("invite", survey.id, "2").stdout.split()
    unenrolled = post(live_server, make_report(survey, ANSWERS, generate_key()))
    assert unenrolled.status_code == 403 and unenrolled.json()["result"] == "rejected"
    with Client(live_server.url, tmp_path / "a") as client:
        assert client.answer(survey.id, ANSWERS, invitation=codes[0]).status == "accepted"
    with Client(live_server.url, tmp_path / "b") as client, pytest.raises(Exception, match="used"):
        client.answer(survey.id, ANSWERS, invitation=codes[0])
    assert live_server.results(survey.id)["n"] == 1


def test_a_second_device_answer_with_the_same_key_is_refused_by_the_client(
    live_server, published, tmp_path
):
    with Client(live_server.url, tmp_path / "device") as client:
        first = client.answer(published.id, ANSWERS)
        again = client.answer(published.id, ANSWERS)  # the stored report, not a new one
    assert first.status == "accepted" and again.status in ("accepted", "duplicate")
    assert live_server.results(published.id)["n"] == 1


MALFORMED = [
    (b"{", {"Content-Type": "application/json"}, 400),
    (b"\x00\xff", {"Content-Type": "application/json"}, 400),
    (b"[NaN]", {"Content-Type": "application/json"}, 400),
    (b"{}", {"Content-Type": "text/plain"}, 415),
    (b"{}", {}, 415),
    (b"[" * 50_000 + b"]" * 50_000, {"Content-Type": "application/json"}, 400),
]


def test_malformed_bodies_get_4xx_problems(live_server):
    for data, headers, status in MALFORMED:
        response = requests.post(
            f"{live_server.url}/api/v1/reports", data=data, headers=headers, timeout=10
        )
        assert response.status_code == status, data[:20]
        assert response.headers["Content-Type"] == PROBLEM
        assert response.json()["status"] == status


def test_a_body_over_the_limit_is_413(live_server_factory):
    server = live_server_factory({"DENIABLE_MAX_BODY": "4096"})
    response = requests.post(
        f"{server.url}/api/v1/reports",
        data=json.dumps({"reports": ["x" * 100] * 100}),
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 413
    assert response.headers["Content-Type"] == PROBLEM
    assert "4096" in response.json()["detail"]
    chunked = requests.post(
        f"{server.url}/api/v1/reports",
        data=(b"x" * 1024 for _ in range(8)),  # no Content-Length: sent chunked
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert chunked.status_code == 413 and chunked.headers["Content-Type"] == PROBLEM
    assert requests.get(f"{server.url}/healthz", timeout=5).status_code == 200


def test_unknown_paths_and_methods(live_server):
    missing = requests.get(f"{live_server.url}/api/v1/nothing", timeout=5)
    assert missing.status_code == 404 and missing.headers["Content-Type"] == PROBLEM
    wrong = requests.put(f"{live_server.url}/api/v1/reports", timeout=5)
    assert wrong.status_code == 405 and wrong.headers["Content-Type"] == PROBLEM
