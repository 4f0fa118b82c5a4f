"""The aggregator: Flask app factory, storage, ingestion, estimation and the operator CLI."""

from __future__ import annotations

from typing import Any

try:
    from deniable.aggregator.stats.analyze import analyze
    from deniable.aggregator.stats.joint import AnalysisError, breakdown, crosstab
    from deniable.aggregator.stats.regress import regress
    from deniable.aggregator.stats.results import (
        Breakdown,
        Crosstab,
        QuestionResults,
        RegressionResults,
        SurveyResults,
    )
    from deniable.aggregator.web.app import create_app
except ImportError as _missing:  # a client-only install: say what to add, on first use
    _reason = str(_missing)

    def __getattr__(name: str) -> Any:
        raise ImportError(
            f"deniable.aggregator needs its extras ({_reason}): pip install 'deniable[aggregator]'"
        )


__all__ = [
    "AnalysisError",
    "Breakdown",
    "Crosstab",
    "QuestionResults",
    "RegressionResults",
    "SurveyResults",
    "analyze",
    "breakdown",
    "create_app",
    "crosstab",
    "regress",
]
