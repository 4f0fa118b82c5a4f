"""End-to-end tests run on both store backends; a test that reads the SQLite file, or whose
point is not the store (`tests.postgres_support.SQLITE_ONLY`), pins sqlite."""

from __future__ import annotations

import pytest

from tests.postgres_support import BACKENDS


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each end-to-end test once on SQLite and once on PostgreSQL."""
    return request.param
