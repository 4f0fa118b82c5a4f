"""Fixtures for client tests: fresh data directories and surveys on the real live server."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from client_support import survey_doc


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A respondent's data directory (DENIABLE_HOME) that does not exist yet."""
    return tmp_path / "deniable-home"


@pytest.fixture
def new_survey(live_server: Any) -> Callable[..., str]:
    """Create a fresh survey on the live server; returns its id."""

    def create(enrollment: str = "open") -> str:
        survey_id = f"client-{uuid.uuid4().hex[:12]}"
        live_server.create_survey(survey_doc(survey_id, enrollment=enrollment))
        return survey_id

    return create
