"""The exported page (`deniable page export`) of a survey with a relay, in Chromium: hosted by a
plain static server on its own origin, it seals every report (static/ohttp.js, copied from the
installed deniable) and sends it through a real deniable-relay to a real aggregator's gateway,
online and from the offline outbox, never to the aggregator's report endpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from test_exported_page import DOC, answer, export, host, reports  # noqa: F401 (host: a fixture)
from test_offline_page import CACHED, answer_offline
from test_shared_device import SHARED

from deniable.shared.page import WORKER_IMPORTS
from deniable.shared.report import verify_report
from tests.relay_support import RelayProcess
from tests.static_host import StaticHost


@pytest.fixture
def relayed(
    live_server_factory: Callable[..., Any],
    host: StaticHost,  # noqa: F811
) -> Iterator[tuple[Any, RelayProcess]]:
    """An aggregator that lets the static host's origin call it, and a real relay in front of
    its gateway (batches of 2, at most 1 s)."""
    server = live_server_factory({"DENIABLE_PAGE_ORIGINS": host.url})
    relay = RelayProcess(f"{server.url}/ohttp", batch=2, max_delay=1.0)
    yield server, relay
    relay.stop()


def posts(context: Any) -> list[str]:
    """The URL of every POST the pages of `context` (or their worker) make from now on."""
    seen: list[str] = []
    context.on("request", lambda r: seen.append(r.url) if r.method == "POST" else None)
    return seen


def test_the_exported_page_sends_through_the_relay(
    relayed: tuple[Any, RelayProcess],
    host: StaticHost,  # noqa: F811
    tmp_path: Path,
    page: Any,
) -> None:
    server, relay = relayed
    server.create_survey({**DOC, "relay": relay.url})
    folder = export(server, host, tmp_path)
    assert (folder / "ohttp.js").is_file()
    seen = posts(page.context)
    page.goto(f"{host.url}/site/")
    expect(page.locator("[data-relay]")).to_contain_text("cannot read what you send")
    expect(page.locator("[data-relay]")).to_contain_text("do not work together")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    answer(page)
    expect(page.locator("#receipt-status")).to_contain_text("accepted", timeout=20_000)
    (stored,) = reports(server)
    verify_report(stored)  # sealed and signed in the browser, opened and verified in Python
    assert stored["report_id"] == page.locator("[data-report-id]").get_attribute("data-report-id")
    results = server.results("fieldwork")
    assert results["n"] == 1 and results["shuffle"]["n"] == 1
    assert seen and all(url == relay.url for url in seen), seen  # never the aggregator's API


def kept_offline(page: Any, site: str, survey_id: str) -> None:
    """Wait until the exported page's worker keeps the page, its modules (ohttp.js among them)
    and the survey document."""
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    wanted = {f"{site}", f"{site}respond.js", *(f"{site}{name}" for name in WORKER_IMPORTS)}
    deadline = time.monotonic() + 15
    while True:
        have = set(page.evaluate(CACHED))
        paths = {p.split("?")[0] for p in have}
        if wanted <= paths and f"/api/v1/surveys/{survey_id}" in paths:
            return
        assert time.monotonic() < deadline, f"the worker kept only {sorted(have)}"
        page.wait_for_timeout(100)


def test_the_exported_pages_offline_outbox_goes_through_the_relay(
    relayed: tuple[Any, RelayProcess],
    host: StaticHost,  # noqa: F811
    tmp_path: Path,
    browser: Any,
) -> None:
    server, relay = relayed
    server.create_survey({**SHARED, "relay": relay.url})
    export(server, host, tmp_path, "tablet")
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(f"{host.url}/site/?device=shared")
        expect(page.locator("button[type=submit]")).to_be_enabled()
        kept_offline(page, "/site/", "tablet")
        seen = posts(context)
        answer_offline(context, page, 3)  # offline: the page opens from the worker's cache
        assert reports(server, "tablet") == []  # tried offline (to the relay), none arrived
        context.set_offline(False)
        expect(page.locator("[data-sent]")).to_have_text("3", timeout=30_000)
        expect(page.locator("[data-waiting]")).to_have_text("0")
        stored = reports(server, "tablet")
        assert len(stored) == 3 and len({r["report_id"] for r in stored}) == 3  # none lost
        for report in stored:
            verify_report(report)
        assert seen and all(url == relay.url for url in seen), seen
        results = server.results("tablet")
        assert results["n"] == 3 and results["shuffle"]["n"] >= 1
    finally:
        context.close()
