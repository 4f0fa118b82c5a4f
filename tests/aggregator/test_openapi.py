"""The OpenAPI document in the repository describes exactly the API's routes."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema_rs

import deniable.aggregator
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import NUMBERS_DOC, NUMBERS_TRUTH

DOC = Path(deniable.aggregator.__file__).parent / "web" / "openapi.json"
IGNORED_METHODS = {"HEAD", "OPTIONS"}


def documented() -> set[tuple[str, str]]:
    doc = json.loads(DOC.read_text("utf-8"))
    return {(path, method.upper()) for path, item in doc["paths"].items() for method in item}


def routed(app) -> set[tuple[str, str]]:
    found = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or rule.endpoint.startswith("dashboard."):
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        found |= {(path, method) for method in rule.methods - IGNORED_METHODS}
    return found


def test_every_route_is_documented_and_nothing_else(app):
    assert routed(app) == documented()


def test_the_document_is_served(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    body = response.get_json()
    assert body["openapi"].startswith("3.1") and body == json.loads(DOC.read_text("utf-8"))


def schema_of(name: str) -> Any:
    """A validator for one of the document's component schemas."""
    doc = json.loads(DOC.read_text("utf-8"))
    return jsonschema_rs.validator_for(
        {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    )


def test_every_question_type_is_stated_in_the_document(client, auth):
    survey_schema = schema_of("SurveyDocument")
    survey_schema.validate(NUMBERS_DOC)
    for change in ({"min": 1.5}, {"mechanism": "rr"}, {"options": ["a", "b"]}, {"rr": {}}):
        bad = copy.deepcopy(NUMBERS_DOC)
        bad["questions"][0].update(change)
        assert not survey_schema.is_valid(bad), change
    created = client.post("/api/v1/surveys", json=copy.deepcopy(NUMBERS_DOC), headers=auth)
    assert created.status_code == 201
    schema_of("CreatedSurvey").validate(created.get_json())
    survey = Survey.from_dict(created.get_json()["survey"])
    for drinks in (0, 20):
        report = make_report(survey, {**NUMBERS_TRUTH, "drinks": drinks}, generate_key())
        schema_of("Report").validate(report)
        assert client.post("/api/v1/reports", json=report).status_code == 201
    results = client.get("/api/v1/surveys/numbers/results", headers=auth).get_json()
    schema_of("Results").validate(results)
    assert results["questions"][0]["options"][0]["count"] is None
