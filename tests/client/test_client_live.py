"""The client against a real aggregator (the `live_server` subprocess): no mocks of our own code."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from client_support import (
    TRUTH,
    CountsPosts,
    PostsDrop,
    researcher,
    stored_reports,
    survey_doc,
)

from deniable.client import (
    Client,
    ClientError,
    EnrollmentError,
    EpsilonCapError,
    RejectedError,
    SurveyClosedError,
)
from deniable.client.keys import KeyStore
from deniable.client.ledger import Ledger
from deniable.shared import hour_now, sign_report


def test_answer_is_accepted_and_what_left_is_what_the_server_stored(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    with Client(live_server.url, home) as client:
        survey = client.fetch_survey(survey_id)
        receipt = client.answer(survey_id, TRUTH)
        state = client.status()
    assert receipt.status == "accepted" and receipt.ok and not receipt.repeated
    assert receipt.epsilon == pytest.approx(survey.epsilon)
    assert receipt.epsilon_spent == pytest.approx(survey.epsilon)
    assert set(receipt.answers) == set(TRUTH)
    assert len(str(receipt.answers["fruit"])) == 6  # oue: one mark per option
    (stored,) = stored_reports(live_server, survey_id)
    assert stored["report_id"] == receipt.report_id
    assert stored["answers"] == dict(receipt.answers)
    assert (state.surveys_answered, state.pending) == (1, 0)


def test_answering_twice_randomizes_once(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    first = Client(live_server.url, home).answer(survey_id, TRUTH)
    other_truth = {"smokes": "no", "cannabis": "yes", "party": "D", "fruit": "apple"}
    again = Client(live_server.url, home).answer(survey_id, other_truth)
    assert again.repeated
    assert (again.report_id, dict(again.answers)) == (first.report_id, dict(first.answers))
    assert again.epsilon_spent == pytest.approx(first.epsilon_spent)  # a repeat costs nothing
    assert len(stored_reports(live_server, survey_id)) == 1
    assert len(Ledger(home).entries()) == 1


def test_two_answers_at_once_randomize_once(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    receipts: list[Any] = []
    barrier = threading.Barrier(4)

    def answer() -> None:
        client = Client(live_server.url, home)
        barrier.wait()
        receipts.append(client.answer(survey_id, TRUTH))

    threads = [threading.Thread(target=answer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(receipts) == 4
    assert len({r.report_id for r in receipts}) == 1
    assert len(stored_reports(live_server, survey_id)) == 1


def test_cap_refuses_before_anything_is_randomized(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    client = Client(live_server.url, home, epsilon_cap=2.0)
    needed = client.fetch_survey(survey_id).epsilon
    with pytest.raises(EpsilonCapError) as caught:
        client.answer(survey_id, TRUTH)
    assert (caught.value.spent, caught.value.cap) == (0, 2.0)
    assert caught.value.needed == pytest.approx(needed)
    assert "cap of 2" in str(caught.value) and "nothing was randomized or sent" in str(caught.value)
    assert Ledger(home).entries() == []
    assert not (home / "keys").exists()
    assert stored_reports(live_server, survey_id) == []


def test_cap_counts_every_survey_answered(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    first, second = new_survey(), new_survey()
    client = Client(live_server.url, home, epsilon_cap=8.0)  # one survey costs about 4.6
    client.answer(first, TRUTH)
    with pytest.raises(EpsilonCapError, match="you have spent 4.599 of your cap of 8"):
        client.answer(second, TRUTH)
    assert client.answer(first, TRUTH).repeated  # a re-send costs nothing: still allowed


def test_a_report_is_stored_before_it_is_sent_and_sync_delivers_it(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_ids = [new_survey(), new_survey()]
    seen_in_ledger: list[int] = []
    network = PostsDrop(on_post=lambda: seen_in_ledger.append(len(Ledger(home).pending())))
    offline = Client(live_server.url, home, session=network)
    queued = [offline.answer(survey_id, TRUTH) for survey_id in survey_ids]
    assert [r.status for r in queued] == ["queued", "queued"]
    assert "the connection failed" in (queued[0].reason or "")
    assert seen_in_ledger[0] == 1  # the report was committed before the first POST
    assert offline.status().pending == 2
    assert offline.sync()[0].status == "queued"  # still offline: stays in the outbox
    # an app restart and a server restart later, the outbox is delivered in one sync
    live_server.restart()
    receipts = Client(live_server.url, home).sync()
    assert [r.status for r in receipts] == ["accepted", "accepted"]
    assert [r.report_id for r in receipts] == [r.report_id for r in queued]
    for survey_id, receipt in zip(survey_ids, queued, strict=True):
        (stored,) = stored_reports(live_server, survey_id)
        assert stored["answers"] == dict(receipt.answers)
    assert Client(live_server.url, home).status().pending == 0
    assert Client(live_server.url, home).sync() == []


def test_answering_again_resends_a_queued_report(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    queued = Client(live_server.url, home, session=PostsDrop()).answer(survey_id, TRUTH)
    again = Client(live_server.url, home).answer(survey_id, {})
    assert (queued.status, again.status) == ("queued", "accepted")
    assert again.report_id == queued.report_id and dict(again.answers) == dict(queued.answers)


def test_answering_again_resends_a_sent_report_which_the_server_knows(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    first = Client(live_server.url, home).answer(survey_id, TRUTH)
    network = CountsPosts()
    again = Client(live_server.url, home, session=network).answer(survey_id, {})
    assert network.posts == 1  # docs/respondents.md: answering again re-sends the stored report
    assert (first.status, again.status) == ("accepted", "duplicate") and again.repeated
    assert again.report_id == first.report_id and dict(again.answers) == dict(first.answers)
    offline = Client(live_server.url, home, session=PostsDrop()).answer(survey_id, {})
    assert offline.status == "duplicate"  # what the server said last stands when offline
    assert Client(live_server.url, home).status().pending == 0
    assert len(stored_reports(live_server, survey_id)) == 1


def test_the_survey_shown_is_the_survey_answered(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    """Given the survey a respondent saw, answer() randomizes against it without fetching it
    again (a server could serve another one the second time)."""
    survey_id = new_survey()
    network = CountsPosts()
    client = Client(live_server.url, home, session=network)
    shown = client.fetch_survey(survey_id)
    receipt = client.answer(survey_id, TRUTH, survey=shown)
    assert receipt.status == "accepted" and (network.gets, network.posts) == (1, 1)
    (stored,) = stored_reports(live_server, survey_id)
    assert stored["survey_hash"] == shown.hash
    with pytest.raises(ClientError, match="not 'other'"):
        client.answer("other", TRUTH, survey=shown)


def test_an_outbox_report_older_than_the_clock_skew_is_stamped_again(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    """Queued for days: the server refuses its sent_at; sync signs it again with this hour,
    with the same answers, key and report_id (nothing randomized again, no epsilon spent)."""
    survey_id = new_survey()
    queued = Client(live_server.url, home, session=PostsDrop()).answer(survey_id, TRUTH)
    ledger = Ledger(home)
    (pending,) = ledger.pending()
    key = KeyStore(home / "keys").key_for(pending.entry.server, survey_id)
    days_ago = hour_now(datetime.now(UTC) - timedelta(days=3))
    ledger.replace_report(
        queued.report_id, sign_report({**pending.report, "sent_at": days_ago}, key)
    )
    hours = {hour_now()}
    (receipt,) = Client(live_server.url, home).sync()
    hours.add(hour_now())  # the hour may turn during the sync
    assert receipt.status == "accepted", receipt.reason
    (stored,) = stored_reports(live_server, survey_id)
    assert stored["sent_at"] in hours
    assert {k: v for k, v in stored.items() if k not in ("sent_at", "signature")} == {
        k: v for k, v in pending.report.items() if k not in ("sent_at", "signature")
    }
    assert Ledger(home).get(pending.entry.server, survey_id).report == stored  # kept as sent
    assert Client(live_server.url, home).status().epsilon_spent == pytest.approx(queued.epsilon)


def test_invitation_enrolls_the_key_first(
    live_server: Any, new_survey: Callable[..., str], tmp_path: Path
) -> None:
    survey_id = new_survey("invite")
    response = researcher(
        live_server, "POST", f"/api/v1/surveys/{survey_id}/invitations", json={"count": 1}
    )
    (code,) = response.json()["codes"]
    with pytest.raises(ClientError, match="by invitation only"):
        Client(live_server.url, tmp_path / "a").answer(survey_id, TRUTH)
    with pytest.raises(EnrollmentError, match="not a valid invitation code"):
        Client(live_server.url, tmp_path / "a").answer(survey_id, TRUTH, invitation="nope-nope")
    assert Ledger(tmp_path / "a").entries() == []
    receipt = Client(live_server.url, tmp_path / "a").answer(survey_id, TRUTH, invitation=code)
    assert receipt.status == "accepted"
    with pytest.raises(EnrollmentError, match="already used"):
        Client(live_server.url, tmp_path / "b").answer(survey_id, TRUTH, invitation=code)
    assert len(stored_reports(live_server, survey_id)) == 1


def test_a_rejected_report_raises_and_is_kept(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    client = Client(live_server.url, home)
    client.fetch_survey(survey_id)
    researcher(live_server, "POST", f"/api/v1/surveys/{survey_id}/close").raise_for_status()
    with pytest.raises(RejectedError, match="closed") as caught:
        client.answer(survey_id, TRUTH)
    assert caught.value.receipt.status == "rejected"
    assert set(caught.value.receipt.answers) == set(TRUTH)
    (entry,) = Ledger(home).entries()
    assert entry.status == "rejected" and "closed" in (entry.reason or "")
    state = client.status()
    assert state.rejected == 1 and state.pending == 0
    assert state.epsilon_spent == pytest.approx(caught.value.receipt.epsilon)  # it left the device


def test_bad_answers_store_nothing(
    live_server: Any, new_survey: Callable[..., str], home: Path
) -> None:
    survey_id = new_survey()
    client = Client(live_server.url, home)
    with pytest.raises(ClientError, match=r"'party': 'E' is not an answer; give one of 'A', 'B'"):
        client.answer(survey_id, {**TRUTH, "party": "E"})
    with pytest.raises(ClientError, match="'fruit'.*has no answer"):
        client.answer(survey_id, {k: v for k, v in TRUTH.items() if k != "fruit"})
    with pytest.raises(ClientError, match="no survey 'no-such-survey'"):
        client.answer("no-such-survey", TRUTH)
    assert Ledger(home).entries() == []


def test_a_survey_past_its_closing_time_is_refused_on_the_device(
    live_server: Any, home: Path
) -> None:
    closes = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    doc = {**survey_doc("client-closing"), "closes_at": closes.strftime("%Y-%m-%dT%H:%M:%SZ")}
    live_server.create_survey(doc)
    time.sleep(max(0.0, (closes - datetime.now(UTC)).total_seconds()) + 0.2)
    with pytest.raises(SurveyClosedError, match="closed at .*no longer takes answers"):
        Client(live_server.url, home).answer("client-closing", TRUTH)
    assert Ledger(home).entries() == []
