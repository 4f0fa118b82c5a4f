"""Request parameters (confidence, flags, candidates) parsed once, for the API, the dashboard and
the CLI alike: a bad value is a ParamError everywhere, never a silent default.

Each edge shows a ParamError its own way: a 400 problem on the API (422 for a field of a JSON
body), an error page on the dashboard, one line and exit status 1 on the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from deniable.aggregator.stats.estimate import parse_candidates as _candidates
from deniable.aggregator.surveys import ActionError


class ParamError(ActionError):
    """A request parameter that is not what it should be; `status` is 400 unless the parameter
    came in a JSON body (422)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(status, message)


def parse_confidence(
    value: object, default: float, *, status: int = 400, text: bool = True
) -> float:
    """A confidence level strictly between 0 and 1 from a query string, a CLI option or a JSON
    number; `default` when it is absent (None or empty text). `text=False` is for a JSON field
    given: a number, not a string or null."""
    if text and (value is None or value == ""):
        return default
    level = math.nan
    if isinstance(value, str) and text:
        try:
            level = float(value)
        except ValueError:
            pass
    elif isinstance(value, int | float) and not isinstance(value, bool):
        level = float(value)
    if not (math.isfinite(level) and 0 < level < 1):
        raise ParamError(
            f"confidence: expected a level between 0 and 1, like 0.95, got {value!r}", status
        )
    return level


def parse_flag(value: object, name: str) -> bool:
    """A true/false parameter: 1/true/yes/on or 0/false/no/off; False when absent."""
    if value is None or value == "" or value is False:
        return False
    if value is True:
        return True
    text = str(value)
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ParamError(f"{name}: expected true or false, got {value!r}")


def parse_candidates(raw: str | Sequence[str] | None) -> tuple[str, ...]:
    """Ad-hoc candidate answers for text questions (comma-separated text or a list), normalized
    and bounded as stats.estimate.parse_candidates says; ParamError if there are too many or
    one is too long."""
    try:
        return _candidates(raw)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
