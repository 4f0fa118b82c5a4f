"""The exported page (`deniable page export`) in Chromium, hosted by a plain static server on
its own origin, talking cross-origin to a real aggregator (docs/fieldwork.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from deniable.shared.report import verify_report
from tests.static_host import StaticHost

DENIABLE = Path(sys.executable).parent / "deniable"
DOC = {
    "id": "fieldwork",
    "title": "Answering on a hosted page",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 1.0,
        },
    ],
}


@pytest.fixture
def host(tmp_path: Path) -> Iterator[StaticHost]:
    """The static host (its origin is not the aggregator's)."""
    root = tmp_path / "www"
    root.mkdir()
    static = StaticHost(root)
    yield static
    static.close()


def export(server: Any, host: StaticHost, tmp_path: Path, survey_id: str = "fieldwork") -> Path:
    """`deniable page export` of the survey into the host's site/ folder."""
    folder = host.root / "site"
    result = subprocess.run(
        [str(DENIABLE), "page", "export", f"{server.url}/s/{survey_id}", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DENIABLE_HOME": str(tmp_path / "home")},
    )
    assert result.returncode == 0, result.stderr
    return folder


@pytest.fixture
def allowing(live_server_factory: Callable[..., Any], host: StaticHost) -> Any:
    """An aggregator that lists the static host's origin in DENIABLE_PAGE_ORIGINS."""
    server = live_server_factory({"DENIABLE_PAGE_ORIGINS": host.url})
    server.create_survey(DOC)
    return server


def reports(server: Any, survey_id: str = "fieldwork") -> list[dict[str, Any]]:
    """Every report the aggregator stored."""
    response = requests.get(
        f"{server.url}/api/v1/surveys/{survey_id}/reports.jsonl", headers=server.headers, timeout=30
    )
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def watch(page: Any) -> tuple[list[str], list[str]]:
    """The report POSTs the page starts and its console messages, as they happen."""
    posts: list[str] = []
    console: list[str] = []
    page.on("request", lambda r: r.method == "POST" and posts.append(r.url))
    page.on("console", lambda m: console.append(m.text))
    return posts, console


def answer(page: Any) -> None:
    page.locator('input[name="smokes"][value="yes"]').check()
    page.locator('input[name="party"][value="B"]').check()
    page.locator("button[type=submit]").click()


def eventually(page: Any, condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Whether `condition` holds within `seconds`, polled while the page runs: waiting with
    Playwright, not time.sleep, so the events `condition` reads (console messages, requests)
    are delivered meanwhile (the sync API hands them over only inside its own calls)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        page.wait_for_timeout(100)
    return condition()


def test_the_hosted_page_sends_to_the_aggregator_that_allows_its_origin(
    allowing: Any, host: StaticHost, tmp_path: Path, page: Any
) -> None:
    export(allowing, host, tmp_path)
    posts, _ = watch(page)
    page.goto(f"{host.url}/site/")
    expect(page.locator("h1")).to_have_text("Answering on a hosted page")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    answer(page)
    expect(page.locator("#receipt-status")).to_contain_text("accepted")
    stored = reports(allowing)
    assert len(stored) == 1
    verify_report(stored[0])  # signed in the browser, verified in Python
    receipt = page.locator("[data-report-id]").get_attribute("data-report-id")
    assert stored[0]["report_id"] == receipt
    assert posts and all(url.startswith(f"{allowing.url}/api/v1/") for url in posts)


def test_an_aggregator_with_another_survey_hash_is_refused(
    allowing: Any,
    live_server_factory: Callable[..., Any],
    host: StaticHost,
    tmp_path: Path,
    page: Any,
) -> None:
    """The same export pointed at an aggregator publishing another version under the id."""
    folder = export(allowing, host, tmp_path)
    other = live_server_factory({"DENIABLE_PAGE_ORIGINS": host.url})
    other.create_survey({**DOC, "title": "Another version, same id"})
    index = folder / "index.html"
    html = index.read_text("utf-8")
    assert html.count(allowing.url) >= 2  # data-aggregator and the page's connect-src
    index.write_text(html.replace(allowing.url, other.url), "utf-8")
    posts, _ = watch(page)
    page.goto(f"{host.url}/site/")
    expect(page.locator("#status")).to_contain_text("another version")
    expect(page.locator("#status")).to_be_visible()
    expect(page.locator("button[type=submit]")).to_be_disabled()
    page.wait_for_timeout(500)
    assert posts == [] and reports(other) == [] and reports(allowing) == []


def test_a_tampered_module_is_blocked_by_its_integrity(
    allowing: Any, host: StaticHost, tmp_path: Path, page: Any
) -> None:
    folder = export(allowing, host, tmp_path)
    module = folder / "deniable.js"
    module.write_bytes(module.read_bytes() + b"\n// and sends the true answers elsewhere\n")
    posts, console = watch(page)
    page.goto(f"{host.url}/site/")
    expect(page.locator("h1")).to_have_text("Answering on a hosted page")
    assert eventually(page, lambda: any("integrity" in text for text in console)), console
    page.locator('input[name="smokes"][value="yes"]').check()
    expect(page.locator("button[type=submit]")).to_be_disabled()  # no module ran to enable it
    page.wait_for_timeout(500)
    assert posts == [] and reports(allowing) == []


def test_an_aggregator_that_does_not_list_the_origin_is_refused_and_the_report_waits(
    live_server_factory: Callable[..., Any], host: StaticHost, tmp_path: Path, page: Any
) -> None:
    closed = live_server_factory()  # DENIABLE_PAGE_ORIGINS empty: no CORS for anyone
    closed.create_survey(DOC)
    export(closed, host, tmp_path)
    _, console = watch(page)
    page.goto(f"{host.url}/site/")
    expect(page.locator("button[type=submit]")).to_be_enabled()  # the pinned survey answers
    answer(page)
    expect(page.locator("#receipt-status")).to_contain_text("waiting to be sent")
    assert eventually(page, lambda: any("CORS" in text for text in console)), console
    assert reports(closed) == []
