"""One rooted exception hierarchy for everything deniable raises on purpose."""

from __future__ import annotations

#: The longest message an error keeps: a reason quotes the bad value, and a value can be a
#: whole 10,000-question list; a terminal needs the start of it only.
MAX_MESSAGE = 1000


class DeniableError(Exception):
    """Base of every error deniable raises deliberately; its message is a one-line reason."""

    def __init__(self, message: object = "", *args: object) -> None:
        text = str(message)
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 1] + "…"
        super().__init__(text, *args)


class SurveyError(DeniableError, ValueError):
    """A survey document is invalid; the message names the field, the value and what is allowed."""


class ReportError(DeniableError, ValueError):
    """A report is malformed, invalid for its survey, or its signature does not verify."""
