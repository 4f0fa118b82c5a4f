"""The analyses' error type, in a module of its own so that limits and estimators can raise it
without importing the analyses."""

from __future__ import annotations

from deniable.shared import ReportError


class AnalysisError(ReportError):
    """The analysis asked for cannot be done as asked (a randomized grouping, too few
    reports...); the message says what to ask instead."""
