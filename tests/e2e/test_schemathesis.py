"""Schemathesis against the served OpenAPI document: no 5xx, no traceback, still healthy."""

from __future__ import annotations

import atexit
import copy
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings

from deniable.aggregator import create_app, credentials
from deniable.aggregator.store.pool import get_store
from deniable.aggregator.surveys import create_survey
from tests.aggregator.conftest import SURVEY_DOC

pytestmark = pytest.mark.slow

TOKEN = "schemathesis-token"
DATA = Path(tempfile.mkdtemp(prefix="deniable-schemathesis-"))
atexit.register(shutil.rmtree, DATA, ignore_errors=True)


def _app() -> Any:
    app = create_app({"DATA_DIR": DATA, "MAX_BATCH": 20})
    with app.app_context():
        store = get_store()
        store.add_token(credentials.digest(TOKEN), "schemathesis", "2026-01-01T00:00:00Z")
        create_survey(store, copy.deepcopy(SURVEY_DOC))
    return app


APP = _app()
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", APP)


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_input_yields_a_server_error(case: Any) -> None:
    # With the researcher's token, so the researcher endpoints get past authentication.
    response = case.call(headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code < 500, response.text[:500]
    assert "Traceback" not in response.text
    if response.status_code >= 400 and response.headers.get("Content-Type"):
        content_type = response.headers["Content-Type"]
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith("application/problem+json"), (
            response.status_code,
            content_type,
        )


def test_still_healthy_afterwards() -> None:
    response = APP.test_client().get("/healthz")
    assert response.status_code == 200 and response.json == {"status": "ok"}


def test_nested_and_huge_bodies_over_http(live_server_factory: Any) -> None:
    server = live_server_factory({"DENIABLE_MAX_BODY": "262144"})
    post = lambda data: requests.post(  # noqa: E731
        f"{server.url}/api/v1/reports",
        data=data,
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    nested = post(b"[" * 100_000)
    assert nested.status_code == 400 and "nested too deeply" in nested.json()["detail"]
    huge = post(b'{"reports": [' + b'"xxxxxxxx",' * 30_000 + b"1]}")
    assert huge.status_code == 413
    assert huge.headers["Content-Type"].startswith("application/problem+json")
    assert requests.get(f"{server.url}/healthz", timeout=5).status_code == 200
