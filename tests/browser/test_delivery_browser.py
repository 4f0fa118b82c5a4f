"""The web page's outbox against a real aggregator behind a fault-injecting front: what the
server asks to retry is sent again (once accepted, stored once), what it refuses is shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect
from test_respondent_page import DOC, fill_and_send, n_reports

from tests.fault_front import Fault, FaultyFront


@pytest.fixture
def server(live_server_factory: Any) -> Any:
    server = live_server_factory()
    server.create_survey(DOC)
    return server


@pytest.fixture
def front(server: Any, request: pytest.FixtureRequest) -> Iterator[FaultyFront]:
    """The real aggregator behind a front that answers the first report POST with the test's
    fault (given by indirect parametrization). The front passes the Host header on, as a
    reverse proxy does, so the page names the front as its aggregator (data-aggregator) and
    sends its reports through it."""
    with FaultyFront(server.url, [request.param]) as front:
        yield front


def report_ids(page: Any) -> list[str]:
    """Collect the report_id of every report POST the page makes from now on."""
    posted: list[str] = []
    page.on(
        "request",
        lambda r: (
            posted.append(json.loads(r.post_data)["report_id"])
            if r.method == "POST" and r.url.endswith("/api/v1/reports")
            else None
        ),
    )
    return posted


BUSY = Fault(503, "the database is unavailable or busy; try again shortly", {"Retry-After": "1"})
SLOW_DOWN = Fault(429, "too many reports from your address; slow down", {"Retry-After": "1"})
#: Records every text #receipt-status shows, in order (window.shownStatuses): a status shown
#: for a moment only (a report waiting out a Retry-After of 1 s) is read afterwards, never
#: raced by a poll that may come after it is gone.
RECORD_STATUSES = """() => {
    const status = document.getElementById('receipt-status');
    window.shownStatuses = [];
    new MutationObserver(() => window.shownStatuses.push(status.textContent)).observe(
        status, { childList: true, characterData: true, subtree: true });
}"""


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("front", [BUSY, SLOW_DOWN], ids=["503", "429"], indirect=True)
def test_a_report_the_server_asks_to_retry_is_sent_again_and_stored_once(
    server: Any, front: FaultyFront, page: Any
) -> None:
    posted = report_ids(page)
    page.goto(f"{front.url}/s/web-page")
    page.evaluate(RECORD_STATUSES)
    fill_and_send(page)
    status = page.locator("#receipt-status")
    # the timer sends it again once Retry-After has passed; the aggregator takes it
    expect(status).to_contain_text("accepted")
    first = front.posts[0]
    reason = {503: "try again shortly", 429: "slow down"}[first]
    shown = page.evaluate("window.shownStatuses")
    waited = [i for i, text in enumerate(shown) if "waiting to be sent" in text and reason in text]
    accepted = [i for i, text in enumerate(shown) if "accepted" in text]
    assert waited and accepted and waited[0] < accepted[0], shown  # it said so, in that order
    receipt = page.locator("[data-report-id]").get_attribute("data-report-id")
    assert front.posts == [first, 201]
    assert posted == [receipt, receipt]  # the same report, never a second randomization
    assert n_reports(server) == 1
    page.reload()
    expect(page.locator("[data-status]")).to_have_attribute("data-status", "accepted")
    page.wait_for_timeout(300)
    assert posted == [receipt, receipt] and n_reports(server) == 1


REFUSED = Fault(422, "answers: party: 7 is not an option; answer again with the published survey")


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("front", [REFUSED], ids=["422"], indirect=True)
def test_a_refused_report_shows_its_reason_and_is_not_sent_again(
    server: Any, front: FaultyFront, page: Any
) -> None:
    posted = report_ids(page)
    page.goto(f"{front.url}/s/web-page")
    fill_and_send(page)
    status = page.locator("#receipt-status")
    expect(status).to_contain_text(f"refused by the aggregator: {REFUSED.detail}")
    expect(page.locator("[data-status]")).to_have_attribute("data-status", "rejected")
    page.reload()
    page.evaluate("window.dispatchEvent(new Event('online'))")
    expect(status).to_contain_text(REFUSED.detail)
    page.wait_for_timeout(300)
    assert front.posts == [422] and len(posted) == 1
    assert n_reports(server) == 0


LATER = Fault(429, "slow down", {"Retry-After": "3600"})


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("front", [LATER], ids=["429-hour"], indirect=True)
def test_a_report_waits_as_long_as_the_server_asked(
    server: Any, front: FaultyFront, page: Any
) -> None:
    """Retry-After is honoured: neither a reload nor the online event sends it sooner."""
    posted = report_ids(page)
    page.goto(f"{front.url}/s/web-page")
    fill_and_send(page)
    expect(page.locator("#receipt-status")).to_contain_text("Last try: HTTP 429: slow down")
    retry_at = page.evaluate(
        """async () => {
            const { allEntries } = await import('/static/deniable.js');
            return (await allEntries())[0].retry_at - Date.now();
        }"""
    )
    assert 3_500_000 < retry_at <= 3_600_000  # ms from now: the hour the server asked for
    page.reload()
    page.evaluate("window.dispatchEvent(new Event('online'))")
    expect(page.locator("#receipt-status")).to_contain_text("waiting to be sent")
    page.wait_for_timeout(300)
    assert front.posts == [429] and len(posted) == 1
    assert n_reports(server) == 0
