"""Skip logic on the respondent page, in Chromium against a real aggregator
(docs/surveys.md#skip-logic): a question whose `relevant` condition is false is hidden, its
inputs disabled and left out of the report; the report holds exactly the questions asked, the
browser's ledger charges only the randomized questions sent, and the page says what this report
spends against the survey's most. The exported page (`deniable page export`) does the same,
pinned, and passes `deniable verify-page`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from deniable.shared.page import PROTOCOL
from deniable.shared.report import verify_report
from deniable.shared.survey import Survey
from tests.static_host import StaticHost

DENIABLE = Path(sys.executable).parent / "deniable"
DOC: dict[str, Any] = {
    "id": "gated",
    "title": "Habits, asked only when they apply",
    "questions": [
        {"id": "ever", "text": "Have you ever smoked?", "type": "binary", "mechanism": "none"},
        {
            "id": "daily",
            "text": "Do you smoke every day?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": "ever == 'yes'",
        },
        {
            "id": "drinks",
            "text": "What do you drink?",
            "type": "multi",
            "options": ["tea", "coffee", "alcohol"],
            "mechanism": "none",
        },
        {
            "id": "binge",
            "text": "Did you binge-drink last month?",
            "type": "binary",
            "epsilon": 0.5,
            "relevant": "'alcohol' in drinks",
        },
        {"id": "general", "text": "Do you exercise?", "type": "binary", "epsilon": 1.0},
    ],
}
GATED = ("daily", "binge")
CACHED = """async () => {
    const cache = await caches.open('deniable-page-v1');
    return (await cache.keys()).map((r) => new URL(r.url).pathname);
}"""


@pytest.fixture
def server(live_server_factory: Any) -> Any:
    server = live_server_factory()
    server.create_survey(DOC)
    return server


def stored_reports(server: Any) -> list[dict[str, Any]]:
    """Every report the aggregator stored for the survey."""
    response = requests.get(
        f"{server.url}/api/v1/surveys/gated/reports.jsonl", headers=server.headers, timeout=30
    )
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def shown(page: Any) -> set[str]:
    """The questions the page shows now (and whose inputs are enabled)."""
    return set(
        page.evaluate(
            """() => [...document.querySelectorAll('[data-item]')]
                .filter((item) => !item.hidden && !item.querySelector('fieldset').disabled)
                .map((item) => item.dataset.item)"""
        )
    )


def spent(page: Any) -> float:
    """The epsilon this browser's ledger has charged (deniable.js, as the page loaded it)."""
    return float(
        page.evaluate(
            """async () => {
                const map = JSON.parse(document.querySelector('script[type=importmap]').textContent);
                return (await import(map.imports.deniable)).epsilonSpent();
            }"""
        )
    )


def gate_and_send(page: Any) -> None:
    """Walk the conditions both ways, then send with `daily` asked and `binge` not."""
    expect(page.locator("button[type=submit]")).to_be_enabled()
    assert shown(page) == {"ever", "drinks", "general"}  # no plain answer yet: gates closed
    expect(page.locator("#cost")).to_have_text("1")
    for qid in GATED:
        expect(page.locator(f'[data-item="{qid}"]')).to_be_hidden()
        expect(page.locator(f'input[name="{qid}"]').first).to_be_disabled()
    page.locator('input[name="ever"][value="yes"]').check()
    expect(page.locator('[data-item="daily"]')).to_be_visible()
    expect(page.locator("#cost")).to_have_text("2")
    page.locator('input[name="drinks"][value="alcohol"]').check()
    expect(page.locator('[data-item="binge"]')).to_be_visible()
    expect(page.locator("#cost")).to_have_text("2.5")
    assert shown(page) == {"ever", "daily", "drinks", "binge", "general"}
    page.locator('input[name="binge"][value="yes"]').check()  # answered, then gated away
    page.locator('input[name="drinks"][value="alcohol"]').uncheck()
    page.locator('input[name="drinks"][value="coffee"]').check()
    expect(page.locator('[data-item="binge"]')).to_be_hidden()
    page.locator('input[name="ever"][value="no"]').check()
    expect(page.locator('[data-item="daily"]')).to_be_hidden()
    page.locator('input[name="ever"][value="yes"]').check()
    expect(page.locator('[data-item="daily"]')).to_be_visible()
    page.locator('input[name="daily"][value="no"]').check()
    page.locator('input[name="general"][value="yes"]').check()
    expect(page.locator("#cost")).to_have_text("2")
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_contain_text("accepted")


def check_report(report: dict[str, Any]) -> None:
    """The report holds exactly the questions asked, with the plain answers as given."""
    verify_report(report)
    survey = Survey.from_dict(DOC)
    assert set(report["answers"]) == {"ever", "daily", "drinks", "general"}
    assert set(survey.relevant({"ever": "yes", "drinks": ["coffee"]})) == set(report["answers"])
    assert report["answers"]["ever"] == survey.questions["ever"].normalize("yes")
    assert report["answers"]["drinks"] == "010"  # plain: coffee marked, as answered


def test_gated_questions_appear_and_only_the_asked_ones_are_sent(server: Any, page: Any) -> None:
    page.goto(f"{server.url}/s/gated")
    expect(page.locator(".cost")).to_contain_text("at most ε = 2.5")
    gate_and_send(page)
    (report,) = stored_reports(server)
    check_report(report)
    assert spent(page) == pytest.approx(2.0)  # daily and general: binge was not sent
    expect(page.locator("#spent")).to_have_text("2.00")
    receipt = page.locator("#receipt-answers").inner_text()
    assert "Do you smoke every day?" in receipt and "binge-drink" not in receipt


@pytest.fixture
def host(tmp_path: Path) -> Iterator[StaticHost]:
    root = tmp_path / "www"
    root.mkdir()
    static = StaticHost(root)
    yield static
    static.close()


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DENIABLE), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DENIABLE_HOME": str(tmp_path / "home")},
    )


def test_the_exported_page_gates_questions_offline_capable_and_verifies(
    live_server_factory: Any, host: StaticHost, tmp_path: Path, page: Any
) -> None:
    server = live_server_factory({"DENIABLE_PAGE_ORIGINS": host.url})
    server.create_survey(DOC)
    folder = host.root / "site"
    exported = run(tmp_path, "page", "export", f"{server.url}/s/gated", str(folder))
    assert exported.returncode == 0, exported.stderr
    assert (folder / "conditions.js").read_bytes() == (
        Path(__file__).resolve().parents[2] / "aggregator" / "web" / "static" / "conditions.js"
    ).read_bytes()
    verified = run(tmp_path, "verify-page", f"{host.url}/site/")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "conditions.js: same" in verified.stdout
    assert "integrity matches (import map)" in verified.stdout

    # One online visit; then offline, the page, conditions.js included, opens from the service
    # worker's cache and still gates its questions; back online, it sends.
    page.goto(f"{host.url}/site/")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    wanted = {
        "/site/",
        "/site/conditions.js",
        "/site/respond.js",
        *(f"/site/{n}" for n in PROTOCOL),
    }
    deadline = time.monotonic() + 15
    while not wanted <= set(page.evaluate(CACHED)):
        assert time.monotonic() < deadline, f"the worker kept only {page.evaluate(CACHED)}"
        page.wait_for_timeout(100)
    page.context.set_offline(True)
    page.reload()
    expect(page.locator("h1")).to_have_text(DOC["title"])
    expect(page.locator("#status")).to_contain_text("Offline")
    page.context.set_offline(False)
    gate_and_send(page)
    (report,) = stored_reports(server)
    check_report(report)
    assert spent(page) == pytest.approx(2.0)
