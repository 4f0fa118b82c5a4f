"""Limits on the work one request may ask of the aggregator, checked before the work starts.

Every analysis and every new survey is bounded so that, at the defaults, no single request
needs more than about 1 GB (docs/security.md measures each). A request over a limit is refused
with a `LimitError` that names the limit and how to raise it: on an aggregator (limits read
from its settings, `Limits.from_config`) the setting; offline (the Python API's `limits=`, a
`Limits`) that parameter. The web layer answers it with 413 or 422 by its kind, the CLI with
exit 1, Python with the exception.
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
    """A request asks for more than a documented limit allows; `setting` names the knob (an
    aggregator's setting, or offline the `limits=` field) and `kind` says whether a smaller
    request would do (the web layer maps it to 413 or 422)."""

    def __init__(self, message: str, setting: str, kind: LimitKind = "invalid"):
        super().__init__(message)
        self.setting = setting
        self.kind: LimitKind = kind


@dataclass(frozen=True)
class Limits:
    """The analysis and survey limits in force; each field is the setting of the same name.
    Given to the offline analyses as `limits=`, whose refusals say to pass a larger one."""

    #: Regression: columns of the model matrix (intercept, dummies, interactions).
    max_model_columns: int = 200
    #: Regression: cells of the model matrix (covariate patterns x columns), 8 bytes each.
    max_model_cells: int = 20_000_000
    #: Text results: candidates x (cells a candidate touches + candidates) of the decoders of
    #: one request (stats/sketch_estimate.py decoder_cells: a cell per hash function for cms
    #: and hcms, cohorts x hashes for rappor; 8 bytes each, a small multiple at the peak).
    max_decoder_cells: int = 8_000_000
    #: Text results: bytes of decoders kept between requests (least recently used dropped).
    decoder_cache_bytes: int = 256 * 1024 * 1024
    #: Surveys: questions in one survey (the survey format allows 100; this only lowers it).
    max_questions: int = 100
    #: Surveys: sketch cells (text questions' counters) over all of one survey's questions.
    max_survey_sketch_cells: int = 262_144
    #: Surveys: bytes of one survey as stored (its canonical JSON), which every page and
    #: results request reads: an XLSForm's translations can expand it far past its upload.
    max_survey_bytes: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        """Each limit a whole number (a NaN or a string would let every request through or
        fail deep inside an analysis), from 0 for the cache, from 1 for the rest."""
        for f in fields(self):
            value, low = getattr(self, f.name), 0 if f.name == "decoder_cache_bytes" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"limits.{f.name}: expected a whole number from {low}, got {value!r}"
                )

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Limits:
        """The limits of an app's config (keys are the field names in upper case); their
        refusals name the settings."""
        given = {f.name: config.get(f.name.upper()) for f in fields(cls)}
        return SettingLimits(**{name: value for name, value in given.items() if value is not None})

    def knob(self, name: str) -> str:
        """What raises limit `name`: here the `limits=` parameter's field."""
        return f"limits.{name}"

    def how_to_raise(self, name: str, needed: int) -> str:
        """The end of a refusal: how to let through a request that needs `needed`."""
        return f"ask for less, or pass limits=Limits({name}={needed})"


@dataclass(frozen=True)
class SettingLimits(Limits):
    """The limits of an aggregator, read from its settings: a refusal names the setting."""

    def knob(self, name: str) -> str:
        return SETTING_OF[name]

    def how_to_raise(self, name: str, needed: int) -> str:
        return f"ask for less, or raise {SETTING_OF[name]} on the aggregator"


#: The limits at their defaults, as an aggregator with none of the settings has them (the
#: service functions' default).
DEFAULT_LIMITS: Limits = SettingLimits()

#: The same defaults for the offline analyses (`analyze`, `breakdown`, `crosstab`, `regress`
#: without `limits=`): their refusals name the parameter.
OFFLINE_LIMITS = Limits()

#: Setting (environment variable) of each limit, for messages.
SETTING_OF = {f.name: "DENIABLE_" + f.name.upper() for f in fields(Limits)}


def check(value: int, limits: Limits, name: str, what: str, kind: LimitKind = "invalid") -> None:
    """Refuse `what` (a sentence head, e.g. "the model has 250 columns") if value is over
    limits.<name>, naming the setting or the parameter that raises it."""
    limit = getattr(limits, name)
    if value > limit:
        knob = limits.knob(name)
        raise LimitError(
            f"{what}, over the limit of {limit:,} ({knob}); {limits.how_to_raise(name, value)}",
            knob,
            kind,
        )
