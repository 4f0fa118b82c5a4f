"""The client against a hostile or broken aggregator: it never hangs, never fills memory, never
shows raw server text, never raises anything but ClientError, and never loses a report."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from client_support import TRUTH, FakeAggregator, finished_within, send, survey_doc

from deniable.client import Client, ClientError
from deniable.client.http import Api, make_session
from deniable.client.ledger import Ledger
from deniable.shared import Survey

FAST = (2.0, 2.0)  # (connect, read) seconds: a request ends within 2 + 2 x 2 s


def post_route(fake_id: str = "fake") -> str:
    return "POST /api/v1/reports"


def test_retry_after_never_holds_the_respondent(home: Path) -> None:
    def busy(handler: Any) -> None:
        send(
            handler,
            429,
            b'{"detail": "slow down"}',
            "application/problem+json",
            Retry_After="100000",
        )

    with FakeAggregator({post_route(): busy}) as fake:
        client = Client(fake.url, home, timeout=FAST)
        receipt = finished_within(30, lambda: client.answer("fake", TRUTH))
    assert receipt.status == "queued" and "slow down" in (receipt.reason or "")
    assert Ledger(home).pending()[0].entry.report_id == receipt.report_id  # kept for sync


def test_a_trickled_answer_ends_at_the_deadline(home: Path) -> None:
    def trickle(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        for _ in range(60):  # a byte every 0.25 s: each read is within the read timeout
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.25)

    with FakeAggregator({"GET /api/v1/surveys/fake": trickle}) as fake:
        client = Client(fake.url, home, timeout=(1.0, 1.0))
        with pytest.raises(ClientError, match="timed out"):
            finished_within(30, lambda: client.fetch_survey("fake"))


def trickled_head(handler: Any) -> None:
    """Headers at a byte every 0.25 s for 50 s: each read is within any read timeout."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(200):
        handler.wfile.write(b"a")
        handler.wfile.flush()
        time.sleep(0.25)
    handler.wfile.write(b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")


def test_a_trickled_head_ends_at_the_deadline(home: Path) -> None:
    with FakeAggregator({"GET /api/v1/surveys/fake": trickled_head}) as fake:
        client = Client(fake.url, home, timeout=(1.0, 1.0))
        with pytest.raises(ClientError, match="timed out"):
            finished_within(30, lambda: client.fetch_survey("fake"))


def test_a_report_answered_with_a_trickled_head_stays_queued(home: Path) -> None:
    with FakeAggregator({post_route(): trickled_head}) as fake:
        client = Client(fake.url, home, timeout=(1.0, 1.0))
        receipt = finished_within(30, lambda: client.answer("fake", TRUTH))
    assert receipt.status == "queued" and "timed out" in (receipt.reason or "")
    assert Ledger(home).pending()[0].entry.report_id == receipt.report_id


def test_an_answer_too_large_is_refused_unread(home: Path) -> None:
    huge = b'{"survey": "' + b"x" * (17 * 1024 * 1024) + b'"}'

    with FakeAggregator({"GET /api/v1/surveys/fake": lambda h: send(h, 200, huge)}) as fake:
        client = Client(fake.url, home, timeout=FAST)
        with pytest.raises(ClientError, match="over 16,777,216 bytes"):
            client.fetch_survey("fake")


def test_server_text_is_one_plain_line_in_the_ledger_and_on_screen(home: Path) -> None:
    reason = "bad\x1b]0;owned\x07\r\nSet: x\x00 \u202egnp.exe " + "y" * 5000

    def refuse(handler: Any) -> None:
        report_id = json.loads(handler.body)["report_id"]
        body = {"report_id": report_id, "result": "rejected", "reason": reason}
        send(handler, 409, json.dumps(body).encode(), "application/problem+json")

    with FakeAggregator({post_route(): refuse}) as fake:
        client = Client(fake.url, home, timeout=FAST)
        with pytest.raises(ClientError) as raised:
            client.answer("fake", TRUTH)
    (entry,) = Ledger(home).entries()
    assert entry.status == "rejected"
    for text in (entry.reason or "", str(raised.value)):
        assert text.isprintable() and "\u202e" not in text and "\x1b" not in text
        assert len(text) < 600
    assert (entry.reason or "").startswith("bad ]0;owned Set: x")


@pytest.mark.parametrize(
    "answer",
    [
        lambda h: send(h, 302, b"", "text/plain", Location="http://elsewhere.example/api"),
        lambda h: send(h, 404, b"<html>no such page</html>", "text/html"),
        lambda h: send(h, 200, b"[" * 100_000 + b"]" * 100_000),
        lambda h: send(h, 201, b'{"result": "accepted", "report_id": "someone-else"}'),
        lambda h: send(h, 404, b'{"result": "rejected", "reason": "x"}', "text/html"),
        lambda h: send(h, 201, b"{" + b" " * (17 * 1024 * 1024) + b"}"),
    ],
    ids=["redirect", "proxy-404", "deep-json", "another-report", "not-a-problem", "too-large"],
)
def test_a_reply_that_is_no_result_leaves_the_report_queued(home: Path, answer: Any) -> None:
    with FakeAggregator({post_route(): answer}) as fake:
        client = Client(fake.url, home, timeout=FAST)
        receipt = client.answer("fake", TRUTH)
        assert fake.requests.count(post_route()) >= 1
    assert receipt.status == "queued", receipt
    assert len(Ledger(home).pending()) == 1  # nothing lost, nothing marked refused or sent


def test_batch_results_must_name_their_reports(home: Path) -> None:
    """A batch answer is matched by report_id, not trusted by position."""
    other = Survey.from_dict(survey_doc("fake2"))
    published = json.dumps({"survey": other.to_dict(), "survey_hash": other.hash}).encode()
    down = {
        post_route(): lambda h: send(h, 503, b"{}"),
        "GET /api/v1/surveys/fake2": lambda h: send(h, 200, published),
    }
    with FakeAggregator(down) as fake:
        client = Client(fake.url, home, timeout=FAST)
        assert client.answer("fake", TRUTH).status == "queued"
        assert client.answer("fake2", TRUTH).status == "queued"

    def wrong_ids(handler: Any) -> None:
        sent = json.loads(handler.body)["reports"]
        results = [{"report_id": r["report_id"], "result": "accepted"} for r in sent]
        results.reverse()  # the right ids, in the wrong places
        send(handler, 200, json.dumps({"results": results}).encode())

    with FakeAggregator({post_route(): wrong_ids}) as fake:
        api = Api(fake.url, make_session(), FAST)
        outcomes = api.post_reports([s.report for s in Ledger(home).pending()])
    assert [o.result for o in outcomes] == ["queued", "queued"]


@pytest.mark.parametrize(
    "url",
    ["http://[::1", "http://a..b", "http://127.0.0.1:99999", "http://127.0.0.1:abc", "ftp://x"],
)
def test_a_bad_address_is_a_client_error(home: Path, url: str) -> None:
    with pytest.raises(ClientError):
        Client(url, home, timeout=FAST).fetch_survey("fake")


@pytest.mark.parametrize("value", ["\u00b2", "\u0661", "9" * 5000])
def test_odd_digits_are_a_client_error(home: Path, value: str) -> None:
    with FakeAggregator({}) as fake:
        client = Client(fake.url, home, timeout=FAST)
        with pytest.raises(ClientError, match="party"):
            client.answer("fake", {**TRUTH, "party": value})
    assert Ledger(home).entries() == []
