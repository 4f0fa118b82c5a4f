"""The OpenAPI document in the repository describes exactly the API's routes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import deniable.aggregator

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
