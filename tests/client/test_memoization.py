"""Memoized randomization on the device (docs/surveys.md#waves): one permanent answer per
(server, series, question, true value) kept in the ledger, re-randomized every wave;
epsilon_perm charged once per distinct value whatever the number of waves."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from client_support import stored_reports

from deniable.client import Client, ClientError
from deniable.client import memo as memo_module
from deniable.client.ledger import Ledger
from deniable.shared.errors import SurveyError
from deniable.shared.report import randomize_answers
from deniable.shared.survey import Survey

SERVER = "http://127.0.0.1:9"
DENIABLE = Path(sys.executable).parent / "deniable"


def wave_doc(survey_id: str, series: str, wave: int, **extra: Any) -> dict[str, Any]:
    """One wave: a repeated binary (L-GRR), a repeated categorical (L-OSUE) and a one-off rr."""
    return {
        "id": survey_id,
        "title": f"Wave {wave}",
        "series": series,
        "wave": wave,
        "questions": [
            {
                "id": "smokes",
                "text": "Do you smoke?",
                "type": "binary",
                "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0},
            },
            {
                "id": "party",
                "text": "Which party?",
                "type": "categorical",
                "options": ["A", "B", "C"],
                "mechanism": "oue",
                "longitudinal": {"epsilon_perm": 3.0, "epsilon_1": 1.0},
            },
            {"id": "mood", "text": "Happy today?", "type": "binary", "epsilon": 0.5},
        ],
        **extra,
    }


def memo_rows(home: Path) -> list[tuple[str, str, float]]:
    """The memo's rows (key, permanent, epsilon_perm)."""
    with sqlite3.connect(home / "ledger.sqlite3") as conn:
        return conn.execute("SELECT key, permanent, epsilon_perm FROM memo ORDER BY key").fetchall()


def draw(home: Path, survey: Survey, truth: dict[str, object]) -> memo_module.Memoized:
    """Randomize a report to `survey` through the ledger's memo, as Client.answer does."""
    with Ledger(home).transaction() as tx:
        noisy = randomize_answers(survey, truth)
        return memo_module.memoized_answers(tx.conn, SERVER, survey, noisy, truth, now="now")


def test_the_permanent_answer_is_drawn_once_and_charged_once(tmp_path: Path) -> None:
    waves = [Survey.from_dict(wave_doc(f"s-w{i}", "s", i)) for i in range(1, 6)]
    truth = {"smokes": 1, "party": 2, "mood": 0}
    smokes, party = waves[0].questions["smokes"], waves[0].questions["party"]
    first = draw(tmp_path, waves[0], truth)
    assert first.epsilon == pytest.approx(smokes.epsilon + party.epsilon + 0.5)
    assert set(first.new_values) == {"smokes", "party"}
    rows = memo_rows(tmp_path)
    assert len(rows) == 2
    for survey in waves[1:]:
        later = draw(tmp_path, survey, truth)
        assert later.epsilon == pytest.approx(0.5)  # only the one-off question
        assert later.new_values == ()
        assert memo_rows(tmp_path) == rows  # the same permanent answers, never drawn again
    # A changed true value costs epsilon_perm again, for that question only.
    changed = draw(tmp_path, waves[2], {**truth, "smokes": 0})
    assert changed.epsilon == pytest.approx(smokes.epsilon + 0.5)
    assert changed.new_values == ("smokes",)
    assert len(memo_rows(tmp_path)) == 3
    # Back to the first value: memoized, nothing more.
    assert draw(tmp_path, waves[3], truth).epsilon == pytest.approx(0.5)


def test_the_memo_never_holds_the_true_value(tmp_path: Path) -> None:
    survey = Survey.from_dict(wave_doc("s-w1", "s", 1))
    draw(tmp_path, survey, {"smokes": 1, "party": 0, "mood": 1})
    with sqlite3.connect(tmp_path / "ledger.sqlite3") as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(memo)")]
    assert columns == ["key", "permanent", "epsilon_perm", "created_at"]
    for key, permanent, _ in memo_rows(tmp_path):
        assert len(key) == 64 and int(key, 16) >= 0  # an HMAC, not the value
        value = json.loads(permanent)
        assert value in (0, 1) or (isinstance(value, str) and len(value) == 3)


def test_another_series_or_server_draws_its_own(tmp_path: Path) -> None:
    truth = {"smokes": 1, "party": 0, "mood": 1}
    draw(tmp_path, Survey.from_dict(wave_doc("a-w1", "a", 1)), truth)
    assert len(memo_rows(tmp_path)) == 2
    other = draw(tmp_path, Survey.from_dict(wave_doc("b-w1", "b", 1)), truth)
    assert len(other.new_values) == 2 and len(memo_rows(tmp_path)) == 4


def test_each_wave_rerandomizes_the_memo_with_the_instantaneous_round(tmp_path: Path) -> None:
    """Over many waves the binary report equals the memo with probability p2 (0.803); fresh
    chained draws would agree with the memo far less often (p* = 0.731 or q* = 0.269). With
    2000 waves the bounds [0.76, 0.85] fail with probability < 1e-5 under p2."""
    waves = 2000
    surveys = [Survey.from_dict(wave_doc(f"s-w{i}", "s", i)) for i in range(1, 3)]
    chain = surveys[0].questions["smokes"].longitudinal
    assert chain is not None
    truth = {"smokes": 1, "party": 0, "mood": 1}
    draw(tmp_path, surveys[0], truth)
    (smokes_row,) = [row for row in memo_rows(tmp_path) if row[1] in ("0", "1")]
    permanent = json.loads(smokes_row[1])
    same = sum(
        draw(tmp_path, surveys[i % 2], truth).answers["smokes"] == permanent for i in range(waves)
    )
    sd = math.sqrt(float(chain.p2 * chain.q2) / waves)
    assert abs(same / waves - float(chain.p2)) < 4.5 * sd
    assert len(memo_rows(tmp_path)) == 2


def test_a_shared_device_cannot_answer_a_longitudinal_survey() -> None:
    with pytest.raises(SurveyError, match="shared device"):
        Survey.from_dict(wave_doc("s-w1", "s", 1, device="shared"))
    survey = Survey.from_dict(wave_doc("s-w1", "s", 1))
    shared = Survey.from_dict(
        {
            **wave_doc("x", "s", 1),
            "questions": [{"id": "mood", "text": "Happy?", "type": "binary", "epsilon": 0.5}],
            "device": "shared",
        }
    )
    memo_module.refuse_shared(shared)  # nothing repeated: fine
    object.__setattr__(survey, "device", "shared")  # as a page in shared mode would see it
    with pytest.raises(ClientError, match="shared device"):
        memo_module.refuse_shared(survey)


def test_the_client_memoizes_across_waves_on_a_live_server(
    live_server: Any, tmp_path: Path
) -> None:
    series = f"s{uuid.uuid4().hex[:10]}"
    ids = [f"{series}-w{i}" for i in range(1, 4)]
    for i, survey_id in enumerate(ids, start=1):
        live_server.create_survey(wave_doc(survey_id, series, i))
    truth = {"smokes": "yes", "party": "B", "mood": "no"}
    with Client(live_server.url, tmp_path) as client:
        receipts = [client.answer(survey_id, truth) for survey_id in ids]
        survey = client.fetch_survey(ids[0])
        perm = survey.questions["smokes"].epsilon + survey.questions["party"].epsilon
        assert [r.status for r in receipts] == ["accepted"] * 3
        assert receipts[0].epsilon == pytest.approx(perm + 0.5)
        assert [r.epsilon for r in receipts[1:]] == pytest.approx([0.5, 0.5])
        assert client.ledger.spent() == pytest.approx(perm + 1.5)
        # Each wave is its own survey with its own key: no report id or key is reused.
        keys = {stored_reports(live_server, s)[0]["public_key"] for s in ids}
        assert len(keys) == 3
    assert len(memo_rows(tmp_path)) == 2


def test_the_client_charges_a_changed_value_again(live_server: Any, tmp_path: Path) -> None:
    series = f"s{uuid.uuid4().hex[:10]}"
    for i in (1, 2):
        live_server.create_survey(wave_doc(f"{series}-w{i}", series, i))
    with Client(live_server.url, tmp_path) as client:
        client.answer(f"{series}-w1", {"smokes": "yes", "party": "B", "mood": "no"})
        second = client.answer(f"{series}-w2", {"smokes": "no", "party": "B", "mood": "no"})
        smokes = client.fetch_survey(f"{series}-w2").questions["smokes"]
        assert second.epsilon == pytest.approx(smokes.epsilon + 0.5)


def test_the_epsilon_cap_counts_only_new_values(live_server: Any, tmp_path: Path) -> None:
    series = f"s{uuid.uuid4().hex[:10]}"
    for i in (1, 2):
        live_server.create_survey(wave_doc(f"{series}-w{i}", series, i))
    truth = {"smokes": "yes", "party": "B", "mood": "no"}
    with Client(live_server.url, tmp_path, epsilon_cap=6.0) as client:
        client.answer(f"{series}-w1", truth)  # 2 + 3 + 0.5
        client.answer(f"{series}-w2", truth)  # 0.5 more: 6.0, exactly the cap
        assert client.ledger.spent() == pytest.approx(6.0, abs=1e-6)


def test_the_command_shows_both_epsilons_and_memoizes(live_server: Any, tmp_path: Path) -> None:
    series = f"s{uuid.uuid4().hex[:10]}"
    for i in (1, 2):
        live_server.create_survey(wave_doc(f"{series}-w{i}", series, i))
    environment = {**os.environ, "DENIABLE_HOME": str(tmp_path)}
    environment.pop("DENIABLE_EPSILON_CAP", None)

    def answer(survey_id: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(DENIABLE), "answer", live_server.url, survey_id],
            input="yes\nB\nno\ny\n",
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
        )

    first = answer(f"{series}-w1")
    assert first.returncode == 0, first.stderr
    survey = Survey.from_dict(wave_doc(f"{series}-w1", series, 1))
    for qid, perm, one in (("smokes", "2", "1"), ("party", "3", "1")):
        words = survey.questions[qid].randomizer.describe()
        assert f"epsilon {one} for one report" in words and f"at most {perm} for every" in words
        assert words in first.stdout.replace("\n     ", " ")
    second = answer(f"{series}-w2")
    assert second.returncode == 0, second.stderr
    (one, two) = sorted(Ledger(tmp_path).entries(), key=lambda e: e.survey)
    assert one.epsilon == pytest.approx(5.5, abs=1e-6)
    assert two.epsilon == pytest.approx(0.5)  # the permanent answers were memoized
    assert len(memo_rows(tmp_path)) == 2
