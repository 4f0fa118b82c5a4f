"""One rooted exception hierarchy for everything deniable raises on purpose."""

from __future__ import annotations


class DeniableError(Exception):
    """Base of every error deniable raises deliberately; its message is a one-line reason."""


class SurveyError(DeniableError, ValueError):
    """A survey document is invalid; the message names the field, the value and what is allowed."""


class ReportError(DeniableError, ValueError):
    """A report is malformed, invalid for its survey, or its signature does not verify."""
