"""Schemathesis against the served OpenAPI document: the document says exactly what the server
accepts (no finding of any check, positive and negative data, stateful links), and no input
makes the server fail."""

from __future__ import annotations

import atexit
import copy
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import NUMBERS_DOC, NUMBERS_TRUTH, SURVEY_DOC
from tests.aggregator.test_text_questions import TEXT_DOC

pytestmark = [
    pytest.mark.slow,
    pytest.mark.own_server,
]  # the fuzzer may reach any survey and account on the server

ROOT = Path(__file__).resolve().parents[2]
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
#: Examples per operation and phase: bounded, so the whole run takes well under a minute.
EXAMPLES = 15
SEED = 20261125


def run_schemathesis(server: Any, *, examples: int, seed: int) -> subprocess.CompletedProcess[str]:
    """`schemathesis run` as a user would, with every check, against a live server (the
    repository's schemathesis.toml applies)."""
    return subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            f"{server.url}/api/v1/openapi.json",
            "--checks",
            "all",
            "--mode",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            str(examples),
            "--seed",
            str(seed),
            "--workers",
            "1",
            "--no-color",
            "--header",
            f"Authorization: Bearer {server.token}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_document_says_exactly_what_the_server_accepts(live_server: Any) -> None:
    live_server.create_survey(copy.deepcopy(SURVEY_DOC))
    invite_only = {**copy.deepcopy(SURVEY_DOC), "id": "invite-only", "enrollment": "invite"}
    live_server.create_survey(invite_only)
    # A survey with every question type and a few reports, so results carry each row's shape.
    numbers = Survey.from_dict(live_server.create_survey(copy.deepcopy(NUMBERS_DOC))["survey"])
    for drinks in (0, 7, 20):
        report = make_report(numbers, {**NUMBERS_TRUTH, "drinks": drinks}, generate_key())
        posted = requests.post(f"{live_server.url}/api/v1/reports", json=report, timeout=10)
        assert posted.status_code == 201, posted.text
    words = Survey.from_dict(live_server.create_survey(copy.deepcopy(TEXT_DOC))["survey"])
    for city in ("Lagos", "Kano", "Jos"):
        report = make_report(words, {"city": city, "app": "mail", "drug": "x"}, generate_key())
        posted = requests.post(f"{live_server.url}/api/v1/reports", json=report, timeout=10)
        assert posted.status_code == 201, posted.text
    result = run_schemathesis(live_server, examples=EXAMPLES, seed=SEED)
    assert result.returncode == 0, result.stdout[-6000:]
    assert "schemathesis.toml" in result.stdout  # the repository's settings were used
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in result.stdout, result.stdout[-3000:]
    counts = re.search(r"(\d+) generated, (\d+) passed", result.stdout)
    assert counts and int(counts[1]) == int(counts[2]) >= 500, result.stdout[-3000:]
    assert requests.get(f"{live_server.url}/healthz", timeout=5).status_code == 200


TOKEN = "schemathesis-token"
DATA = Path(tempfile.mkdtemp(prefix="deniable-schemathesis-"))
atexit.register(shutil.rmtree, DATA, ignore_errors=True)


def _app() -> Any:
    app = create_app({"DATA_DIR": DATA, "MAX_BATCH": 20})
    with app.app_context():
        store = get_store()
        store.add_admin_token(credentials.digest(TOKEN), "schemathesis", "2026-01-01T00:00:00Z")
        create_survey(store, copy.deepcopy(SURVEY_DOC), who=OPERATOR)
        create_survey(store, copy.deepcopy(NUMBERS_DOC), who=OPERATOR)
        create_survey(store, copy.deepcopy(TEXT_DOC), who=OPERATOR)
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
    # In process (fast), with the researcher's token: no 5xx, no traceback, problem+json errors
    # (the bodies uncompressed, to read them: the test client does not decode brotli).
    response = case.call(
        headers={"Authorization": f"Bearer {TOKEN}", "Accept-Encoding": "identity"}
    )
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
