"""Plain questions at the respondent's end: said before anything is sent, sent as answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from client_support import stored_reports
from test_cli import run

from deniable.client import explain_survey
from deniable.shared import Survey

DOC = {
    "id": "covariates",
    "title": "With a plain question",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "none",
        },
    ],
}


def test_explain_says_a_plain_question_is_sent_as_answered(tmp_path: Path) -> None:
    text = explain_survey(Survey.from_dict(DOC))
    assert "Sent exactly as you answer" in text and "not deniable" in text
    assert "1 plain question is sent exactly as you answer" in text
    (tmp_path / "doc.json").write_text(json.dumps(DOC))
    result = run(tmp_path / "home", "explain", str(tmp_path / "doc.json"))
    assert result.returncode == 0 and "Sent exactly as you answer" in result.stdout


def test_answer_warns_before_sending_and_sends_the_plain_answer(
    live_server: Any, home: Path
) -> None:
    live_server.create_survey(DOC)
    flags = ["--answer", "smokes=yes", "--answer", "region=east", "--yes", "--json"]
    result = run(home, "answer", live_server.url, "covariates", *flags)
    assert result.returncode == 0, result.stderr
    assert "Sent exactly as you answer" in result.stderr and "region" in result.stderr
    (stored,) = stored_reports(live_server, "covariates")
    assert stored["answers"]["region"] == 2  # exactly as answered
    region = next(q for q in live_server.results("covariates")["questions"] if q["id"] == "region")
    assert region["epsilon"] is None and region["mechanism"] == "none"
    east = region["options"][2]
    assert (east["support"], east["estimate"], east["share"]) == (1, 1.0, 1.0)
