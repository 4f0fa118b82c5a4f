"""Refusals below the edges: an ActionError says what kind of refusal it is (a Refusal), never
an HTTP status; the web layer maps kinds to statuses (web/statuses.py), the CLI exits 1."""

from __future__ import annotations

from typing import Literal

from deniable.aggregator.store import Store, SurveyRecord
from deniable.shared.errors import DeniableError
from deniable.shared.survey import SURVEY_ID

#: Why an action was refused. The web layer answers each with its HTTP status
#: (aggregator/web/statuses.py), the CLI with exit 1, Python with the exception.
Refusal = Literal[
    "bad-parameter", "unauthenticated", "forbidden", "not-found", "conflict", "too-large", "invalid"
]


class ActionError(DeniableError):
    """A refused action; `kind` says why (a Refusal), the message what to do."""

    def __init__(self, kind: Refusal, message: str):
        super().__init__(message)
        self.kind = kind


def not_found(survey_id: str) -> ActionError:
    """The refusal of a survey id this aggregator does not have (or does not show the asker)."""
    return ActionError(
        "not-found", f"no survey {survey_id!r} on this aggregator; check the survey id"
    )


def survey_or_404(store: Store, survey_id: str) -> SurveyRecord:
    """The stored survey, or ActionError not-found."""
    record = store.get_survey(survey_id) if SURVEY_ID.fullmatch(survey_id) else None
    if record is None:
        raise not_found(survey_id)
    return record
