"""The respondent page and a series of waves (docs/surveys.md#waves) in Chromium against a real
aggregator: the page keeps each true value's permanent response in its memo (memo.js,
IndexedDB), randomizes it again in each wave, and charges epsilon_perm once per distinct true
value; it shows both epsilons before answering; a shared device keeps refusing such a survey
with the reason, sending and spending nothing."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.own_server  # the tests answer the same waves and count them


def wave(number: int) -> dict[str, Any]:
    return {
        "id": f"panel-w{number}",
        "title": f"Panel, wave {number}",
        "series": "panel",
        "wave": number,
        "questions": [
            {
                "id": "smokes",
                "text": "Do you smoke?",
                "type": "binary",
                "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0},
            },
            {"id": "mood", "text": "Happy today?", "type": "binary", "epsilon": 1.0},
        ],
    }


MEMO_ROWS = """async () => {
    const db = await new Promise((resolve, reject) => {
      const req = indexedDB.open('deniable-memo');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    if (!db.objectStoreNames.contains('memo')) { db.close(); return []; }
    const tx = db.transaction('memo', 'readonly');
    const store = tx.objectStore('memo');
    const [keys, values] = await Promise.all([store.getAllKeys(), store.getAll()].map(
      (req) => new Promise((resolve) => { req.onsuccess = () => resolve(req.result); })));
    db.close();
    return keys.map((key, i) => ({ key, ...values[i] }));
}"""

SPENT = "async () => (await import('/static/deniable.js')).epsilonSpent()"


def answer_wave(page: Any, url: str, number: int, smokes: str) -> dict[str, Any]:
    """Answer wave `number` on the page; the entry the page stored."""
    page.goto(f"{url}/s/panel-w{number}")
    note = page.locator('[data-item="smokes"] [data-waves-note]')
    expect(note).to_contain_text("one report reveals at most epsilon 1")
    expect(note).to_contain_text("every wave together at most 2")
    expect(page.locator("button[type=submit]")).to_be_enabled()
    page.locator(f'input[name="smokes"][value="{smokes}"]').check()
    page.locator('input[name="mood"][value="no"]').check()
    page.locator("button[type=submit]").click()
    expect(page.locator("#receipt-status")).to_contain_text("accepted")
    return page.evaluate(
        """async (id) => (await import('/static/deniable.js')).storedEntry(location.origin, id)""",
        f"panel-w{number}",
    )


def test_waves_reuse_the_permanent_answer_and_charge_epsilon_perm_once(
    live_server: Any, page: Any
) -> None:
    for number in (1, 2, 3):
        live_server.create_survey(wave(number))
    first = answer_wave(page, live_server.url, 1, "yes")
    (row,) = page.evaluate(MEMO_ROWS)
    assert set(row) == {"key", "permanent", "epsilon_perm", "created_at"}  # no true value
    assert row["permanent"] in (0, 1)
    assert first["epsilon"] == pytest.approx(2.0 + 1.0, abs=1e-6)
    assert first["report"]["answers"]["smokes"] in (0, 1)

    second = answer_wave(page, live_server.url, 2, "yes")
    assert page.evaluate(MEMO_ROWS) == [row]  # the same permanent answer, not drawn again
    assert second["epsilon"] == pytest.approx(1.0, abs=1e-6)  # epsilon_perm not charged again
    assert page.evaluate(SPENT) == pytest.approx(4.0, abs=1e-6)
    assert second["report"]["public_key"] != first["report"]["public_key"]  # a key per wave

    third = answer_wave(page, live_server.url, 3, "no")  # a changed true value costs again
    rows = page.evaluate(MEMO_ROWS)
    assert len(rows) == 2 and row in rows
    assert third["epsilon"] == pytest.approx(3.0, abs=1e-6)
    assert page.evaluate(SPENT) == pytest.approx(7.0, abs=1e-6)
    for number in (1, 2, 3):
        assert live_server.results(f"panel-w{number}")["n"] == 1


def test_the_memo_keeps_one_permanent_answer_per_true_value(live_server: Any, page: Any) -> None:
    """Through the page's modules: a true value's permanent response is drawn and charged once
    (memo.js), however many reports it gives; another value has its own."""
    live_server.create_survey(wave(1))
    page.goto(f"{live_server.url}/s/panel-w1")
    got = page.evaluate(
        """async () => {
            const memo = await import('/static/memo.js');
            const m = await import('/static/deniable.js');
            const { survey } = await m.fetchSurvey(location.origin, 'panel-w1');
            const charges = [];
            const reports = [];
            for (let i = 0; i < 50; i += 1) {
              const drawn = await memo.draw(location.origin, survey, { smokes: 'yes' }, ['smokes']);
              charges.push(drawn.epsilon);
              reports.push(drawn.answers.smokes);
            }
            const later = await memo.charge(location.origin, survey, { smokes: 'yes' }, ['smokes']);
            const other = await memo.charge(location.origin, survey, { smokes: 'no' }, ['smokes']);
            return { charges, reports, later, other, size: await memo.memoSize() };
        }"""
    )
    assert got["charges"][0] == pytest.approx(2.0, abs=1e-6)
    assert got["charges"][1:] == [0] * 49
    assert got["later"] == 0 and got["other"] == pytest.approx(2.0, abs=1e-6)
    assert got["size"] == 1
    (row,) = page.evaluate(MEMO_ROWS)
    assert all(report in (0, 1) for report in got["reports"])


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_shared_device_refuses_a_survey_asked_in_waves(live_server: Any, page: Any) -> None:
    live_server.create_survey(wave(1))
    page.goto(f"{live_server.url}/s/panel-w1?device=shared")
    status = page.locator("#status")
    expect(status).to_contain_text("This survey cannot be answered now")
    expect(status).to_contain_text("repeats questions across waves")
    expect(status).to_contain_text("cannot be answered on a shared")
    expect(page.locator("button[type=submit]")).to_be_disabled()
    assert page.evaluate(SPENT) == 0
    assert page.evaluate(MEMO_ROWS) == []
    assert live_server.results("panel-w1")["n"] == 0
