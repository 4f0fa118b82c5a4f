"""Limits on the work one request may ask of the aggregator, checked before the work starts.

Every analysis and every new survey is bounded so that, at the defaults, no single request
needs more than about 1 GB (docs/security.md measures each). A request over a limit is refused
with a `LimitError` that names the limit and the setting that raises it; the web layer answers
it with 413 or 422 by its kind, the CLI with exit 1, Python with the exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from deniable.aggregator.stats.errors import AnalysisError

#: What a request over a limit is: "too-large" when the same request, smaller, would work (fewer
#: candidates, a higher limit); "invalid" when the input itself must change (a new survey).
LimitKind = Literal["too-large", "invalid"]


class LimitError(AnalysisError):
    """A request asks for more than a documented limit allows; `setting` names the knob and
    `kind` says whether a smaller request would do (the web layer maps it to 413 or 422)."""

    def __init__(self, message: str, setting: str, kind: LimitKind = "invalid"):
        super().__init__(message)
        self.setting = setting
        self.kind: LimitKind = kind


@dataclass(frozen=True)
class Limits:
    """The analysis and survey limits in force; each field is the setting of the same name."""

    #: Regression: columns of the model matrix (intercept, dummies, interactions).
    max_model_columns: int = 200
    #: Regression: cells of the model matrix (covariate patterns x columns), 8 bytes each.
    max_model_cells: int = 20_000_000
    #: Text results: candidates x (sketch counters + candidates) of one question's decoder
    #: (stats/sketch_estimate.py decoder_cells; 8 bytes each, about 40 at the build's peak).
    max_decoder_cells: int = 8_000_000
    #: Text results: bytes of decoders kept between requests (least recently used dropped).
    decoder_cache_bytes: int = 256 * 1024 * 1024
    #: Surveys: questions in one survey (the survey format allows 100; this only lowers it).
    max_questions: int = 100
    #: Surveys: sketch cells (text questions' counters) over all of one survey's questions.
    max_survey_sketch_cells: int = 262_144

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Limits:
        """The limits of an app's config (keys are the field names in upper case)."""
        given = {f.name: config.get(f.name.upper()) for f in fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})


#: The limits at their defaults (Python callers that pass none get these).
DEFAULT_LIMITS = Limits()

#: Setting (environment variable) of each limit, for messages.
SETTING_OF = {f.name: "DENIABLE_" + f.name.upper() for f in fields(Limits)}


def check(value: int, limit: int, name: str, what: str, kind: LimitKind = "invalid") -> None:
    """Refuse `what` (a sentence head, e.g. "the model has 250 columns") if value > limit."""
    if value > limit:
        setting = SETTING_OF[name]
        raise LimitError(
            f"{what}, over the limit of {limit:,} ({setting}); ask for less, or raise "
            f"{setting} on the aggregator",
            setting,
            kind,
        )
