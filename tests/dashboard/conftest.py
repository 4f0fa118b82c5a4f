"""Fixtures for the dashboard: an app with a token and a survey holding reports, and a logged-in client."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.surveys import create_survey, utc_now
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

TOKEN = "dashboard-test-token"
SECRET_TITLE = "Secret habits survey"

DOC: dict[str, Any] = {
    "id": "habits",
    "title": SECRET_TITLE,
    "enrollment": "invite",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "epsilon": 2.0,
        },
    ],
}
EMPTY_DOC: dict[str, Any] = {
    "id": "empty",
    "title": "Nobody answered yet",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}


def csrf_of(html: str) -> str:
    """The CSRF token of the first form on a page."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    """An aggregator on a temporary data dir with one token, a survey with 80 reports and an empty one."""
    app = create_app({"DATA_DIR": str(tmp_path / "data"), "TESTING": True})
    with app.app_context():
        store = get_store()
        store.add_admin_token(credentials.digest(TOKEN), "tests", utc_now())
        create_survey(store, DOC, who=OPERATOR)
        create_survey(store, EMPTY_DOC, who=OPERATOR)
        survey = Survey.from_dict(DOC)
        keys = [generate_key() for _ in range(80)]
        # Invite-only: enroll each key directly in the store (as the enrollment endpoint would).
        codes = [f"CODE{i}" for i in range(80)]
        store.add_invitations("habits", [credentials.digest(c) for c in codes], utc_now())
        for key, code in zip(keys, codes, strict=True):
            from deniable.shared.signing import public_key_text

            store.enroll("habits", public_key_text(key), credentials.digest(code))
        reports = [
            make_report(survey, {"smokes": i % 4 == 0, "party": "ABBC"[i % 4]}, key)
            for i, key in enumerate(keys)
        ]
        outcomes = ingest(store, reports)
        assert all(o.result == "accepted" for o in outcomes), outcomes[:3]
    yield app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """A test client, not logged in."""
    return app.test_client()


@pytest.fixture
def researcher(client: FlaskClient) -> FlaskClient:
    """A test client logged in with the researcher token."""
    page = client.get("/login")
    response = client.post(
        "/login", data={"token": TOKEN, "csrf_token": csrf_of(page.get_data(as_text=True))}
    )
    assert response.status_code == 302
    return client
