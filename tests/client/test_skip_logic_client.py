"""A multilingual survey with skip logic answered end to end on a real aggregator: the Python
client and the `deniable` command (--lang), the report holding exactly the questions asked, and
the ledger charging only what was asked (docs/surveys.md#skip-logic, #languages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from client_support import stored_reports

from deniable.client import Client, ClientError, EpsilonCapError
from deniable.client.ledger import Ledger
from deniable.shared import i18n

DENIABLE = Path(sys.executable).parent / "deniable"


def multilingual_doc(survey_id: str) -> dict[str, Any]:
    """English, French and Arabic; a plain gate, a follow-up it skips, a plain age, a party."""
    return {
        "id": survey_id,
        "title": "Smoking",
        "questions": [
            {
                "id": "smokes",
                "text": "Do you smoke?",
                "type": "binary",
                "mechanism": "none",
                "note": "About tobacco only.",
            },
            {
                "id": "freq",
                "text": "Every day?",
                "type": "binary",
                "epsilon": 1.5,
                "relevant": "smokes == 'yes'",
            },
            {
                "id": "age",
                "text": "Age?",
                "type": "integer",
                "min": 0,
                "max": 120,
                "mechanism": "none",
            },
            {
                "id": "party",
                "text": "Which party?",
                "type": "categorical",
                "options": ["Left", "Centre", "Right"],
                "epsilon": 2.0,
                "mechanism": "grr",
                "hint": "The one you would vote for today.",
            },
        ],
        "translations": {
            "fr": {
                "title": "Tabac",
                "questions": {
                    "smokes": {
                        "text": "Fumez-vous ?",
                        "options": ["non", "oui"],
                        "note": "Le tabac seul.",
                    },
                    "freq": {"text": "Chaque jour ?", "options": ["non", "oui"]},
                    "age": {"text": "Votre âge ?"},
                    "party": {
                        "text": "Quel parti ?",
                        "options": ["Gauche", "Centre", "Droite"],
                        "hint": "Celui pour lequel vous voteriez aujourd'hui.",
                    },
                },
            },
            "ar": {
                "title": "التدخين",
                "questions": {
                    "smokes": {"text": "هل تدخن؟", "options": ["لا", "نعم"], "note": "التبغ فقط."},
                    "freq": {"text": "كل يوم؟", "options": ["لا", "نعم"]},
                    "age": {"text": "العمر؟"},
                    "party": {
                        "text": "أي حزب؟",
                        "options": ["اليسار", "الوسط", "اليمين"],
                        "hint": "الذي ستصوت له اليوم.",
                    },
                },
            },
        },
    }


@pytest.fixture
def survey_id(live_server: Any) -> str:
    survey_id = f"langs-{uuid.uuid4().hex[:10]}"
    live_server.create_survey(multilingual_doc(survey_id))
    return survey_id


def run(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DENIABLE_HOME": str(home)}
    environment.pop("DENIABLE_EPSILON_CAP", None)
    return subprocess.run(
        [str(DENIABLE), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


def test_the_client_sends_only_the_questions_asked_and_the_ledger_charges_them(
    live_server: Any, survey_id: str, tmp_path: Path
) -> None:
    with Client(live_server.url, tmp_path / "a") as client:
        survey = client.fetch_survey(survey_id)
        assert survey.epsilon == pytest.approx(3.5)  # the most it can spend
        with pytest.raises(ClientError, match="question 'freq' is not asked when smokes is 'no'"):
            client.answer(survey_id, {"smokes": "no", "freq": "yes", "age": 30, "party": "Left"})
        with pytest.raises(ClientError, match="question 'freq' .* the answers before it make it"):
            client.answer(survey_id, {"smokes": "yes", "age": 30, "party": "Left"})
        assert client.status().surveys_answered == 0  # nothing randomized, stored or sent
        receipt = client.answer(survey_id, {"smokes": "no", "age": 30, "party": "Left"})
        assert receipt.status == "accepted"
        assert set(receipt.answers) == {"smokes", "age", "party"}
        assert receipt.epsilon == pytest.approx(2.0)
        assert client.status().epsilon_spent == pytest.approx(2.0)
    (entry,) = Ledger(tmp_path / "a").entries()
    assert entry.epsilon == pytest.approx(2.0)
    with Client(live_server.url, tmp_path / "b") as client:
        receipt = client.answer(
            survey_id, {"smokes": "yes", "freq": "no", "age": 30, "party": "Right"}
        )
        assert set(receipt.answers) == {"smokes", "freq", "age", "party"}
        assert receipt.epsilon == pytest.approx(3.5)
    stored = {r["report_id"]: set(r["answers"]) for r in stored_reports(live_server, survey_id)}
    assert sorted(map(len, stored.values())) == [3, 4]


def test_the_cap_counts_what_this_respondent_is_asked(
    live_server: Any, survey_id: str, tmp_path: Path
) -> None:
    with Client(live_server.url, tmp_path / "skips", epsilon_cap=2.5) as client:
        assert client.answer(survey_id, {"smokes": "no", "age": 20, "party": "Left"}).ok
    with Client(live_server.url, tmp_path / "asked", epsilon_cap=2.5) as client:
        with pytest.raises(EpsilonCapError) as caught:
            client.answer(survey_id, {"smokes": "yes", "freq": "no", "age": 20, "party": "Left"})
        assert caught.value.needed == pytest.approx(3.5)
        assert client.status().surveys_answered == 0


def test_the_command_asks_in_french_and_skips_what_the_answers_skip(
    live_server: Any, survey_id: str, tmp_path: Path
) -> None:
    home = tmp_path / "fr"
    # non (1), then no follow-up; age 40; the party by its French label; confirm.
    result = run(
        home, "answer", live_server.url, survey_id, "--lang", "fr", stdin="1\n40\nGauche\ny\n"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for text in (
        "Tabac",
        "Le tabac seul.",
        "Fumez-vous ?",
        "1) non   2) oui",
        "Votre âge ?",
        "Quel parti ?",
        "1) Gauche   2) Centre   3) Droite",
        "Celui pour lequel vous voteriez aujourd'hui.",
    ):
        assert text in out, text
    assert "Chaque jour" not in out and "Every day" not in out and "Do you smoke" not in out
    _ = i18n.translator("fr")
    assert _("Randomize these answers on this device and send them?") in out
    assert (
        _(
            "Some questions are asked only after certain answers, and a question not asked costs "
            "nothing: this report holds {asked} of the {total} questions and spends epsilon "
            "{spends}, of at most {most} for the survey."
        ).format(asked=3, total=4, spends="2", most="3.5")
        in out
    )
    (report,) = stored_reports(live_server, survey_id)
    assert set(report["answers"]) == {"smokes", "age", "party"}
    assert report["answers"]["smokes"] == 0 and report["answers"]["age"] == 40
    status = json.loads(run(home, "status", "--json").stdout)
    assert status["epsilon_spent"] == pytest.approx(2.0)


def test_the_command_answers_in_arabic_with_the_follow_up(
    live_server: Any, survey_id: str, tmp_path: Path
) -> None:
    home = tmp_path / "ar"
    result = run(
        home,
        "answer",
        live_server.url,
        survey_id,
        "--lang",
        "ar",
        "--yes",
        "--json",
        "-a",
        "smokes=نعم",
        "-a",
        "freq=لا",
        "-a",
        "age=33",
        "-a",
        "party=الوسط",
    )
    assert result.returncode == 0, result.stderr
    receipt = json.loads(result.stdout)
    assert set(receipt["answers"]) == {"smokes", "freq", "age", "party"}
    assert receipt["answers"]["smokes"] == 1 and receipt["epsilon"] == pytest.approx(3.5)
    shown = run(home, "answer", live_server.url, survey_id, "--lang", "ar")
    assert shown.returncode == 0, shown.stderr
    assert any(
        label in shown.stdout for label in ("  party: اليسار", "  party: الوسط", "  party: اليمين")
    )
    assert "  smokes: نعم" in shown.stdout


def test_the_commands_refusals_are_one_line(
    live_server: Any, survey_id: str, tmp_path: Path
) -> None:
    home = tmp_path / "refusals"
    given = ["-a", "age=20", "-a", "party=Left"]
    wrong = run(
        home,
        "answer",
        live_server.url,
        survey_id,
        "--lang",
        "de",
        "--yes",
        "-a",
        "smokes=no",
        *given,
    )
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.splitlines() == [
        f"error: survey '{survey_id}' is not in 'de'; its languages: en, ar, fr"
    ]
    missing = run(home, "answer", live_server.url, survey_id, "--yes", "-a", "smokes=yes", *given)
    assert missing.returncode == 2 and "missing --answer for freq" in missing.stderr
    skipped = run(
        home,
        "answer",
        live_server.url,
        survey_id,
        "--yes",
        "-a",
        "smokes=no",
        "-a",
        "freq=yes",
        *given,
    )
    assert skipped.returncode == 1
    assert skipped.stderr.splitlines() == [
        "error: question 'freq' is not asked when smokes is 'no' (its condition: smokes == "
        "'yes'); leave its answer out"
    ]
    # `deniable --lang` for every command: a survey without the language is shown in its own.
    fine = run(
        home,
        "--lang",
        "de",
        "answer",
        live_server.url,
        survey_id,
        "--yes",
        "-a",
        "smokes=no",
        *given,
    )
    assert fine.returncode == 0, fine.stderr
    assert "Privacy spent: epsilon 2 for this survey; 2 in total." in fine.stdout
    status = run(home, "--lang", "fr", "status")
    assert status.returncode == 0, status.stderr
    _ = i18n.translator("fr")
    assert _("Surveys answered: {count}").format(count=1) in status.stdout
