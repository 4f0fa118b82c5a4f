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
except ImportError:  # a client-only install: say what to add, on first use
    from deniable.aggregator.console import missing_requirements, needs_extras

    _missing = missing_requirements()
    if not _missing:
        raise  # not a missing extra: the real error, as itself

    def __getattr__(name: str) -> Any:
        raise ImportError(f"deniable.aggregator: {needs_extras(_missing)}")


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
