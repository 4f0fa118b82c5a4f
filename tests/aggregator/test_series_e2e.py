"""A series of three waves over a real server, SQLite and PostgreSQL (docs/surveys.md#waves):
many Python clients memoizing their permanent answers, the series results in the contract's
shape through the API, the CLI and the Researcher client, and access per wave."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable.client import Client
from deniable.client.researcher import Researcher
from tests.aggregator.test_openapi import schema_of
from tests.conftest import LiveServer

RESPONDENTS = 40


def wave_doc(series: str, wave: int) -> dict[str, Any]:
    """One wave: a repeated binary (L-GRR k=2), a repeated categorical (L-GRR k=3) and a
    question asked in this wave only."""
    return {
        "id": f"{series}-w{wave}",
        "title": f"Panel, wave {wave}",
        "series": series,
        "wave": wave,
        "questions": [
            {
                "id": "smokes",
                "text": "Do you smoke?",
                "type": "binary",
                "longitudinal": {"epsilon_perm": 3.0, "epsilon_1": 1.5},
            },
            {
                "id": "party",
                "text": "Which party?",
                "type": "categorical",
                "options": ["A", "B", "C"],
                "longitudinal": {"epsilon_perm": 3.0, "epsilon_1": 1.0},
            },
            {"id": f"mood{wave}", "text": "Happy?", "type": "binary", "epsilon": 1.0},
        ],
    }


def truth_of(i: int, wave: int) -> dict[str, str]:
    """Respondent i's true answers in a wave: a few quit smoking in wave 3."""
    smokes = i % 2 == 0 and not (wave == 3 and i % 8 == 0)
    return {
        "smokes": "yes" if smokes else "no",
        "party": "ABC"[i % 3],
        f"mood{wave}": "yes" if i % 4 else "no",
    }


#: The panel answered on each server, by its data directory: the tests only read it.
PANELS: dict[str, str] = {}


@pytest.fixture
def panel(live_server: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Three waves answered by RESPONDENTS devices, once per server; the series id."""
    if str(live_server.data_dir) not in PANELS:
        devices = tmp_path_factory.mktemp("devices")
        PANELS[str(live_server.data_dir)] = answer_panel(live_server, devices)
    return PANELS[str(live_server.data_dir)]


def answer_panel(live_server: LiveServer, tmp_path: Path) -> str:
    """Three waves answered by RESPONDENTS devices; the series id."""
    series = f"panel-{uuid.uuid4().hex[:8]}"
    for wave in (1, 2, 3):
        live_server.create_survey(wave_doc(series, wave))
    for i in range(RESPONDENTS):
        with Client(live_server.url, tmp_path / f"device-{i}", epsilon_cap=20) as device:
            for wave in (1, 2, 3):
                receipt = device.answer(f"{series}-w{wave}", truth_of(i, wave))
                assert receipt.status == "accepted"
            # epsilon_perm (3) once per distinct value of each repeated question (smokes
            # twice when it changed), and the wave-only question (1) in each wave.
            expected = 3.0 * (3 if i % 8 == 0 else 2) + 3 * 1.0
            assert device.ledger.spent() == pytest.approx(expected, abs=1e-6)
    return series


def test_series_results_through_the_api_the_cli_and_the_researcher(
    live_server: LiveServer, panel: str
) -> None:
    response = live_server.get(f"/api/v1/series/{panel}/results")
    assert response.status_code == 200, response.text
    doc = response.json()
    schema_of("SeriesResults").validate(doc)
    assert doc["series"] == panel and doc["confidence"] == 0.95
    assert [w["wave"] for w in doc["waves"]] == [1, 2, 3]
    assert [w["survey"] for w in doc["waves"]] == [f"{panel}-w{i}" for i in (1, 2, 3)]
    for w in doc["waves"]:
        assert w["results"]["survey"] == w["survey"] and w["results"]["n"] == RESPONDENTS
        schema_of("Results").validate(w["results"])
    followed = {(c["question"], c["option"]) for c in doc["changes"]}
    assert followed == {("smokes", "yes"), ("party", "A"), ("party", "B"), ("party", "C")}
    pairs = sorted({(c["from_wave"], c["to_wave"]) for c in doc["changes"]})
    assert pairs == [(1, 2), (2, 3)]
    assert len(doc["changes"]) == 8 and len(doc["trend"]) == 4
    # A change's interval is clipped to what a change of a share can be, -1 to 1; its
    # unbiased estimate is not: with 40 respondents a party change left that range about once
    # in 1,500 panels (|estimate| > 1 when the noisy counts of two waves differ by 15 or
    # more, 3.9 sd). The estimate clipped as the interval is must lie inside it.
    for entry in doc["changes"]:
        assert entry["stderr"] > 0
        assert entry["ci_low"] <= min(max(entry["estimate"], -1.0), 1.0) <= entry["ci_high"]
    for entry in doc["trend"]:  # unclipped
        assert entry["stderr"] > 0
        assert entry["ci_low"] <= entry["estimate"] <= entry["ci_high"]
    # The wave-only questions are in their wave's results and followed by nothing.
    assert not any(c["question"].startswith("mood") for c in doc["changes"])

    out = live_server.cli("series", "results", panel, "--json").stdout
    assert json.loads(out) == doc
    table = live_server.cli("series", "results", panel).stdout
    assert f"series {panel}: 3 waves" in table and "smokes = yes" in table
    csv_text = live_server.cli("series", "results", panel, "--csv").stdout
    assert csv_text.splitlines()[0].startswith("kind,question,option,from_wave,to_wave")

    researcher = Researcher(live_server.url, live_server.token)
    assert researcher.series_results(panel) == doc
    narrower = researcher.series_results(panel, confidence=0.5)
    assert narrower["confidence"] == 0.5


@pytest.mark.own_server  # it makes an account
def test_an_unknown_or_unseen_series_is_404(live_server: LiveServer, panel: str) -> None:
    for series in ("no-such-series", "Bad_Id"):
        response = live_server.get(f"/api/v1/series/{series}/results")
        assert response.status_code == 404, response.text
        assert "no series" in response.json()["detail"]
    live_server.cli("account", "create", "bob")
    bob = live_server.cli("token", "create", "bob", "--read-only").stdout.split()[-1]
    auth = {"Authorization": f"Bearer {bob.strip()}"}
    url = f"{live_server.url}/api/v1/series/{panel}/results"
    assert requests.get(url, headers=auth, timeout=30).status_code == 404
    live_server.cli("grant", f"{panel}-w2", "bob", "--role", "analyst")
    seen = requests.get(url, headers=auth, timeout=30)
    assert seen.status_code == 200, seen.text
    assert [w["wave"] for w in seen.json()["waves"]] == [2]  # only what bob may read
    assert seen.json()["changes"] == [] and seen.json()["trend"] == []
    failed = live_server.cli("series", "results", "no-such-series", check=False)
    assert failed.returncode == 1 and "no series 'no-such-series'" in failed.stderr


def test_a_bad_confidence_is_400(live_server: LiveServer, panel: str) -> None:
    response = live_server.get(f"/api/v1/series/{panel}/results", params={"confidence": "2"})
    assert response.status_code == 400 and "confidence" in response.json()["detail"]
