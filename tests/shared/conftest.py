from __future__ import annotations

import copy
from typing import Any

import pytest

DOC: dict[str, Any] = {
    "id": "health-2026",
    "title": "Health habits 2026",
    "enrollment": "open",
    "closes_at": "2026-12-31T00:00:00Z",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cannabis",
            "text": "Cannabis in the last 6 months?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Which party would you vote for?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "epsilon": 2.0,
            "mechanism": "auto",
        },
        {
            "id": "region",
            "text": "Where do you live?",
            "type": "categorical",
            "options": [f"region {i}" for i in range(16)],
            "epsilon": 0.5,
            "mechanism": "oue",
        },
    ],
}


@pytest.fixture
def doc() -> dict[str, Any]:
    """A fresh copy of docs/surveys.md's example survey (plus an oue question)."""
    return copy.deepcopy(DOC)
