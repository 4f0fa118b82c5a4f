"""The simulator posts through the client library, whose delivery policy leaves a report queued
when the server says "later" (a busy database's 503 with Retry-After): the simulator sends those
again, so a busy moment is not counted as a failure and no report is stored twice."""

from __future__ import annotations

from typing import Any

import pytest

from deniable.aggregator.cli import simulate_http
from deniable.aggregator.stats import simulate
from tests.fault_front import Fault, FaultyFront

pytestmark = pytest.mark.own_server  # each test makes the same survey and counts its reports

SURVEY = {
    "id": "busy-moment",
    "title": "A busy moment",
    "enrollment": "open",
    "questions": [{"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0}],
}


def test_reports_the_server_asks_to_resend_are_sent_again_and_stored_once(live_server: Any) -> None:
    live_server.create_survey(SURVEY)
    busy = Fault(
        503, "the database is unavailable or busy; try again shortly", {"Retry-After": "1"}
    )
    with FaultyFront(live_server.url, [busy, busy]) as front:
        api, survey = simulate_http.fetch_survey(front.url, SURVEY["id"])
        sent = simulate_http.send(
            api, survey, simulate.parse_truth(survey, None), 30, batch=10, seed=1
        )
        assert front.posts[:2] == [503, 503]
    assert (sent.accepted, sent.failed) == (30, 0)
    assert live_server.results(SURVEY["id"])["n"] == 30


def test_reports_still_refused_after_every_round_are_failures(live_server: Any) -> None:
    live_server.create_survey(SURVEY)
    busy = Fault(
        503, "the database is unavailable or busy; try again shortly", {"Retry-After": "0"}
    )
    rounds = simulate_http.RESEND_ROUNDS + 1
    with FaultyFront(live_server.url, [busy] * rounds) as front:
        api, survey = simulate_http.fetch_survey(front.url, SURVEY["id"])
        sent = simulate_http.send(
            api, survey, simulate.parse_truth(survey, None), 5, batch=5, seed=1
        )
        assert front.posts == [503] * rounds
    assert (sent.accepted, sent.failed) == (0, 5)
    assert "queued" in sent.failure_text()
    assert live_server.results(SURVEY["id"])["n"] == 0
