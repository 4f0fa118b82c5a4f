"""The respondent page offline, in Chromium against a real aggregator: after one online visit
the service worker opens and answers /s/<id> with no network; the outbox (IndexedDB) sends
every report once when the network is back, batched, through failures; on a shared device
nothing of any respondent's answers stays on screen or in storage."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect
from test_shared_device import SHARED, answer_one, stored_reports

from deniable.shared.page import PROTOCOL
from tests.fault_front import Fault, FaultyFront

pytestmark = pytest.mark.own_server  # the tests answer the same survey and count it

CACHED = """async () => {
    const cache = await caches.open('deniable-page-v1');
    return (await cache.keys()).map((r) => new URL(r.url).pathname + new URL(r.url).search);
}"""

#: Everything this origin keeps: IndexedDB (every store), Cache Storage bodies, localStorage.
STORAGE = """async () => {
    const out = { idb: {}, caches: [], local: JSON.stringify({ ...localStorage }) };
    const db = await new Promise((ok, no) => {
      const req = indexedDB.open('deniable', 1);
      req.onsuccess = () => ok(req.result);
      req.onerror = () => no(req.error);
    });
    for (const name of db.objectStoreNames) {
      out.idb[name] = await new Promise((ok) => {
        const req = db.transaction(name).objectStore(name).getAll();
        req.onsuccess = () => ok(req.result);
      });
    }
    db.close();
    for (const name of await caches.keys()) {
      const cache = await caches.open(name);
      for (const request of await cache.keys()) {
        out.caches.push(await (await cache.match(request)).text());
      }
    }
    return out;
}"""


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser profile (its own service workers, caches and IndexedDB)."""
    context = browser.new_context()
    yield context
    context.close()


def first_visit(context: Any, url: str) -> Any:
    """Open the page online and wait until its service worker keeps the page and its files."""
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(url)
    expect(page.locator("button[type=submit]")).to_be_enabled()
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    path = url.split("//", 1)[1].split("/", 1)[1]
    files = {"respond.js", *PROTOCOL, "respond.css"}  # at their versioned /static/ URLs
    deadline = time.monotonic() + 15
    while True:  # polled from here: wait_for_function takes a promise for a true value
        have = set(page.evaluate(CACHED))
        kept = {p.rsplit("/", 1)[1] for p in have if p.startswith("/static/v/")}
        if (
            f"/{path}" in have
            and files <= kept
            and any(p.startswith("/api/v1/surveys/") for p in have)
        ):
            break
        assert time.monotonic() < deadline, f"the worker kept only {sorted(have)}"
        page.wait_for_timeout(100)
    return page


def answer_offline(context: Any, page: Any, count: int) -> None:
    """Offline, reload the page (served by the worker) and answer `count` respondents."""
    context.set_offline(True)
    page.reload()
    expect(page.locator("h1")).to_have_text(SHARED["title"])
    expect(page.locator("#status")).to_contain_text("Offline")
    for i in range(count):
        answer_one(page, i)
        expect(page.locator("[data-thanks]")).to_be_visible()
        expect(page.locator("[data-waiting]")).to_have_text(str(i + 1))
        waiting = "1 answer waiting" if i == 0 else f"{i + 1} answers waiting"  # its plural
        expect(page.locator(".outbox")).to_contain_text(f"{waiting} to be sent from this device.")
        page.locator("[data-next]").click()
        expect(page.locator("#answer")).to_be_visible()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_twenty_respondents_offline_are_sent_once_when_back_online(
    live_server: Any, context: Any
) -> None:
    live_server.create_survey(SHARED)
    page = first_visit(context, f"{live_server.url}/s/tablet?device=shared")
    answer_offline(context, page, 20)
    expect(page.locator("[data-sent]")).to_have_text("0")
    assert stored_reports(live_server, "tablet") == []
    context.set_offline(False)  # the page sends on `online` (and the worker by Background Sync)
    expect(page.locator("[data-sent]")).to_have_text("20", timeout=20_000)
    expect(page.locator("[data-waiting]")).to_have_text("0")
    reports = stored_reports(live_server, "tablet")
    assert len(reports) == 20  # none lost
    assert len({r["report_id"] for r in reports}) == 20
    assert len({r["public_key"] for r in reports}) == 20  # a fresh key per respondent
    storage = page.evaluate(STORAGE)
    entries = storage["idb"]["reports"]
    assert [e["status"] for e in entries] == ["accepted"] * 20  # not one "duplicate"
    assert storage["idb"]["keys"] == []
    kept = json.dumps(storage).lower()
    for i in range(20):
        assert f"hometown{i}" not in kept  # no true answer, ever
        assert f"hometown{i}" not in page.content().lower()
    for report in reports:  # no noisy report once the aggregator has it
        assert report["report_id"] not in json.dumps(storage["caches"])
        assert report["signature"] not in kept and report["public_key"] not in kept
    assert all("report" not in e for e in entries)


@pytest.fixture
def front(live_server: Any) -> Iterator[FaultyFront]:
    """The aggregator behind a front (passing Host on, as a reverse proxy does, so the page
    names the front as its aggregator) that answers the first report POST with a 503."""
    with FaultyFront(live_server.url, [Fault(503, "the database is busy")]) as front:
        yield front


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_503_and_a_network_failure_leave_every_report_queued(
    live_server: Any, front: FaultyFront, context: Any
) -> None:
    live_server.create_survey(SHARED)
    page = first_visit(context, f"{front.url}/s/tablet?device=shared")
    answer_offline(context, page, 4)
    context.set_offline(False)  # the first send meets the 503: all four stay queued
    deadline = time.monotonic() + 15
    while not front.posts:
        assert time.monotonic() < deadline, "nothing was sent when the network came back"
        page.wait_for_timeout(50)
    page.wait_for_timeout(300)
    expect(page.locator("[data-waiting]")).to_have_text("4")
    assert front.posts == [503]  # neither the page nor the worker hits the busy server again
    context.set_offline(True)  # the next try, when its backoff is over, finds no network
    deadline = time.monotonic() + 20
    while not all(
        e["attempts"] == 3  # sent offline at submit, the 503, this one
        and e["status"] == "queued"
        and e["reason"] == "the aggregator could not be reached"
        for e in page.evaluate(STORAGE)["idb"]["reports"]
    ):
        assert time.monotonic() < deadline, json.dumps(
            [
                {k: v for k, v in e.items() if k != "report"}
                for e in page.evaluate(STORAGE)["idb"]["reports"]
            ]
        )
        page.wait_for_timeout(250)
    expect(page.locator("[data-waiting]")).to_have_text("4")
    assert front.posts == [503] and stored_reports(live_server, "tablet") == []
    context.set_offline(False)  # the next send takes each report once, in one batch
    expect(page.locator("[data-sent]")).to_have_text("4", timeout=20_000)
    expect(page.locator("[data-waiting]")).to_have_text("0")
    page.wait_for_timeout(300)
    assert front.posts == [503, 200]
    reports = stored_reports(live_server, "tablet")
    assert len(reports) == 4 and len({r["report_id"] for r in reports}) == 4
    statuses = [e["status"] for e in page.evaluate(STORAGE)["idb"]["reports"]]
    assert statuses == ["accepted"] * 4
