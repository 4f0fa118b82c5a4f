"""The Python client's outbox against a real aggregator behind a fault-injecting front: what the
server asks to retry stays queued and `sync` delivers it (once, not before Retry-After); what it
refuses is kept as rejected with its reason."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from client_support import TRUTH, finished_within, stored_reports

from deniable.client import Client, RejectedError
from deniable.client.ledger import LEDGER_FILE, Ledger
from tests.fault_front import Fault, FaultyFront


def wait_until(retry_at: str) -> None:
    """Sleep until a ledger time (to the second) has passed."""
    when = datetime.strptime(retry_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    time.sleep(max(0.0, when.timestamp() + 1.05 - time.time()))


@pytest.mark.parametrize(
    "fault",
    [
        Fault(503, "the database is unavailable or busy; try again shortly", {"Retry-After": "1"}),
        Fault(429, "too many reports from your address; slow down", {"Retry-After": "1"}),
    ],
    ids=["503", "429"],
)
def test_a_report_the_server_asks_to_retry_is_synced_once(
    live_server: Any, new_survey: Callable[..., str], home: Path, fault: Fault
) -> None:
    survey_id = new_survey()
    with FaultyFront(live_server.url, [fault]) as front, Client(front.url, home) as client:
        receipt = client.answer(survey_id, TRUTH)
        assert receipt.status == "queued" and fault.detail in (receipt.reason or "")
        (waiting,) = Ledger(home).pending()
        assert waiting.entry.retry_at is not None  # Retry-After kept as "not before"
        assert front.posts == [fault.status]  # not retried at once: the server said when
        wait_until(waiting.entry.retry_at)
        (synced,) = client.sync()
        assert front.posts == [fault.status, 201]
    assert (synced.status, synced.report_id) == ("accepted", receipt.report_id)
    (stored,) = stored_reports(live_server, survey_id)
    assert stored["report_id"] == receipt.report_id
    assert Ledger(home).pending() == []


def test_sync_waits_as_long_as_the_server_asked(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    fault = Fault(429, "slow down", {"Retry-After": "3600"})
    with FaultyFront(live_server.url, [fault]) as front, Client(front.url, home) as client:
        queued = finished_within(60, lambda: client.answer(survey_id, TRUTH))  # never an hour
        (later,) = client.sync()
        again = client.answer(survey_id, {})
        assert front.posts == [429]  # neither sync nor answering again sends it before then
        assert later.status == again.status == "queued"
        assert "asked to wait until" in (later.reason or "")
        # an hour later (the ledger's clock set back by one), sync delivers it
        with sqlite3.connect(home / LEDGER_FILE) as conn:
            conn.execute("UPDATE reports SET retry_at = '2000-01-01T00:00:00Z'")
        conn.close()
        (synced,) = client.sync()
        assert front.posts == [429, 201]
    assert synced.status == "accepted" and synced.report_id == queued.report_id
    assert len(stored_reports(live_server, survey_id)) == 1


def test_a_refused_report_is_kept_rejected_with_its_reason(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    fault = Fault(422, "answers: party: 7 is not an option")
    with FaultyFront(live_server.url, [fault]) as front, Client(front.url, home) as client:
        with pytest.raises(RejectedError, match="party: 7 is not an option"):
            client.answer(survey_id, TRUTH)
        assert client.sync() == []
        assert front.posts == [422]
    (entry,) = Ledger(home).entries()
    assert (entry.status, entry.reason) == ("rejected", fault.detail)
    assert stored_reports(live_server, survey_id) == []
