"""The survey's "device" field (docs/surveys.md): "personal" by default, "shared" for one device
passed between respondents; the resolved form carries it only when shared, so every survey
written without it keeps its hash."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from deniable.shared import Survey
from deniable.shared.errors import SurveyError

ROOT = Path(__file__).resolve().parents[2]
#: examples/health-2026.json's hash, computed by the code before the field existed.
HEALTH_HASH = "edb99d40f7a7f7fcedae065b00c0bf9f58cd504d01f97691438a6c4026442b1f"


def health() -> dict:
    return json.loads((ROOT / "examples" / "health-2026.json").read_text("utf-8"))


def test_a_survey_without_the_field_is_personal_and_keeps_its_hash():
    survey = Survey.from_dict(health())
    assert survey.device == "personal"
    assert "device" not in survey.to_dict()
    assert survey.hash == HEALTH_HASH
    personal = Survey.from_dict({**health(), "device": "personal"})
    assert personal.device == "personal" and personal.hash == HEALTH_HASH
    assert "device" not in personal.to_dict()


def test_a_shared_survey_says_so_in_its_resolved_form_and_hash():
    survey = Survey.from_dict({**health(), "device": "shared"})
    assert survey.device == "shared"
    resolved = survey.to_dict()
    assert resolved["device"] == "shared"
    assert list(resolved)[:4] == ["id", "title", "enrollment", "device"]
    assert survey.hash != HEALTH_HASH  # a respondent can tell the two apart by the hash
    again = Survey.from_dict(copy.deepcopy(resolved))  # resolving the resolved form changes nothing
    assert again.device == "shared" and again.hash == survey.hash and again.to_dict() == resolved


@pytest.mark.parametrize(
    "bad", ["Shared", "tablet", "", None, True, 1, ["shared"], {"x": 1}, "x" * 5000]
)
def test_a_bad_device_names_the_field(bad):
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict({**health(), "device": bad})
    message = str(caught.value)
    assert message.startswith("device: expected 'personal'") and "'shared'" in message
    assert len(message) < 250  # a huge value is not echoed whole


def test_the_aggregator_publishes_the_field(tmp_path):
    from deniable.aggregator import create_app, credentials
    from deniable.aggregator.web.db import get_store

    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data"})
    with app.app_context():
        get_store().add_admin_token(credentials.digest("t"), "tests", "2026-01-01T00:00:00Z")
    client = app.test_client()
    auth = {"Authorization": "Bearer t"}
    shared = client.post(
        "/api/v1/surveys", json={**health(), "id": "tablet", "device": "shared"}, headers=auth
    )
    assert shared.status_code == 201
    published = client.get("/api/v1/surveys/tablet").get_json()
    assert published["survey"]["device"] == "shared"
    assert published["survey_hash"] == Survey.from_dict(published["survey"]).hash
    plain = client.post("/api/v1/surveys", json=health(), headers=auth).get_json()
    assert "device" not in plain["survey"] and plain["survey_hash"] == HEALTH_HASH
    refused = client.post(
        "/api/v1/surveys", json={**health(), "id": "x", "device": "kiosk"}, headers=auth
    )
    assert refused.status_code == 422 and "device: expected" in refused.get_json()["detail"]
