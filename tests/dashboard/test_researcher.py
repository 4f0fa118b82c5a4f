"""deniable.client.Researcher against a real server."""

from __future__ import annotations

from typing import Any

import pytest

from deniable.client import ClientError, NetworkError
from deniable.client.researcher import Researcher
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

DOC = {
    "id": "nb",
    "title": "Notebook",
    "enrollment": "invite",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}


def test_researcher_round_trip(live_server: Any) -> None:
    import requests

    r = Researcher(live_server.url, live_server.token)
    created = r.create_survey(DOC)
    assert created["id"] == "nb"
    assert [s["id"] for s in r.list_surveys()] == ["nb"]
    codes = r.invite("nb", 3)
    assert len(set(codes)) == 3
    survey = Survey.from_dict(r.survey("nb")["survey"])
    doc = {**DOC, "id": "open", "enrollment": "open"}
    r.create_survey(doc)
    opened = Survey.from_dict(r.survey("open")["survey"])
    reports = [make_report(opened, {"q": i % 2 == 0}, generate_key()) for i in range(10)]
    posted = requests.post(
        f"{live_server.url}/api/v1/reports", json={"reports": reports}, timeout=10
    )
    assert posted.status_code == 200
    results = r.results("open", confidence=0.9)
    assert results["n"] == 10 and results["confidence"] == 0.9
    assert r.results_csv("open").startswith("question,option,support")
    streamed = list(r.reports("open"))
    assert {s["report_id"] for s in streamed} == {s["report_id"] for s in reports}
    assert r.close("open")["closed"] is True
    assert survey.id == "nb"


def test_researcher_errors(live_server: Any) -> None:
    with pytest.raises(ClientError, match="refused the token"):
        Researcher(live_server.url, "wrong").list_surveys()
    with pytest.raises(ClientError, match="nosuch"):
        Researcher(live_server.url, live_server.token).results("nosuch")
    with pytest.raises(ClientError):
        Researcher(live_server.url, "")
    with pytest.raises(NetworkError):
        Researcher("http://127.0.0.1:9", live_server.token, timeout=1).list_surveys()
