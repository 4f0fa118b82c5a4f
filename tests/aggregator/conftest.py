"""Fixtures for the aggregator's own tests: an app on a temporary data dir, its clients, surveys."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.store import Store
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.postgres_support import BACKENDS

TOKEN = "test-researcher-token"

SURVEY_DOC: dict[str, Any] = {
    "id": "habits",
    "title": "Habits",
    "enrollment": "open",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cheated",
            "text": "Ever cheated?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Where?",
            "type": "categorical",
            "options": ["north", "south", "east", "west", "centre"],
            "mechanism": "oue",
            "epsilon": 2.0,
        },
    ],
}

TRUTH = {"smokes": "yes", "cheated": "no", "party": "B", "region": "east"}

#: A survey with the number and select-all types: a randomized mean (onebit), a plain age, a
#: randomized and a plain multi.
NUMBERS_DOC: dict[str, Any] = {
    "id": "numbers",
    "title": "Numbers",
    "questions": [
        {
            "id": "drinks",
            "text": "How many drinks last week?",
            "type": "integer",
            "min": 0,
            "max": 20,
            "epsilon": 1.0,
        },
        {
            "id": "used",
            "text": "Which of these have you ever used?",
            "type": "multi",
            "options": ["cannabis", "ecstasy", "LSD"],
            "epsilon": 3.0,
        },
        {
            "id": "age",
            "text": "How old are you?",
            "type": "integer",
            "min": 18,
            "max": 99,
            "mechanism": "none",
        },
        {
            "id": "apps",
            "text": "Which apps do you use?",
            "type": "multi",
            "options": ["mail", "chat"],
            "mechanism": "none",
        },
    ],
}

NUMBERS_TRUTH: dict[str, Any] = {"drinks": 3, "used": ["cannabis", "LSD"], "age": 40, "apps": []}


@pytest.fixture
def survey_doc() -> dict[str, Any]:
    """A fresh copy of an open survey with rr, coins, grr and oue questions."""
    return copy.deepcopy(SURVEY_DOC)


@pytest.fixture
def invite_doc(survey_doc: dict[str, Any]) -> dict[str, Any]:
    """The same questions as an invite-only survey."""
    return {**survey_doc, "id": "private", "enrollment": "invite"}


@pytest.fixture
def app(tmp_path) -> Iterator[Flask]:
    """An aggregator app on a fresh data directory, with one researcher token."""
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data"})
    with app.app_context():
        get_store().add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
    yield app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@pytest.fixture
def auth() -> dict[str, str]:
    """The researcher's Authorization header."""
    return {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Store-level tests run once on SQLite and once on PostgreSQL."""
    return request.param


@pytest.fixture
def store(tmp_path, database_url: str | None) -> Iterator[Store]:
    """A migrated store: SQLite on its own data directory, or a new PostgreSQL database."""
    if database_url is None:
        store: Store = SQLiteStore.in_data_dir(tmp_path / "store")
    else:
        from deniable.aggregator.store.postgres import PostgresStore, close_pools

        store = PostgresStore(database_url)
    store.migrate()
    yield store
    store.close()
    if database_url is not None:
        close_pools()


@pytest.fixture
def survey(store: Store, survey_doc: dict[str, Any]) -> Survey:
    """The open survey, created in `store`."""
    record, _ = create_survey(store, survey_doc, who=OPERATOR)
    return Survey.from_dict(record.resolved)


@pytest.fixture
def report_for() -> Callable[..., dict[str, Any]]:
    """Make a signed report for a survey (a fresh key unless one is given)."""

    def make(
        survey: Survey,
        key: Ed25519PrivateKey | None = None,
        truth: dict[str, Any] | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        return make_report(survey, truth or TRUTH, key or generate_key(), **kw)

    return make
