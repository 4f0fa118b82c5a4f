"""Request parameters (confidence, flags, candidates, cuts, the planners' numbers) parsed once,
for the API, the dashboard and the CLI alike: a bad value is a ParamError everywhere, never a
silent default.

Each edge shows a ParamError its own way: a 400 problem on the API (422 for a field of a JSON
body), an error page on the dashboard, one line and exit status 1 on the CLI.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from deniable.aggregator.refusals import ActionError, Refusal
from deniable.aggregator.stats.estimate import parse_candidates as _candidates
from deniable.aggregator.stats.joint import MAX_CUTS


class ParamError(ActionError):
    """A request parameter that is not what it should be: a bad parameter (400 on the API)
    unless it came as a field of a JSON body, which makes the body invalid (422)."""

    def __init__(self, message: str, kind: Refusal = "bad-parameter"):
        super().__init__(kind, message)


def parse_confidence(
    value: object, default: float, *, kind: Refusal = "bad-parameter", text: bool = True
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
            f"confidence: expected a level between 0 and 1, like 0.95, got {value!r}", kind
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


#: A plain decimal number as people type one (not Python's 1_0, nan or full-width digits).
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?")
#: The longest number text read (digits, point and exponent).
MAX_NUMBER_TEXT = 40


def parse_number(value: object, name: str, example: str) -> float | None:
    """A finite number from a form field or a query string ("0.05", "1e-3") or a number given
    as one (a CLI option, a JSON field); None when absent (None or empty text)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**MAX_NUMBER_TEXT:
        return float(value)  # a larger int (a CLI's type=int) would overflow the float
    if isinstance(value, float) and math.isfinite(value):
        return value
    text = value.strip() if isinstance(value, str) else ""
    number = float(text) if len(text) <= MAX_NUMBER_TEXT and _DECIMAL.fullmatch(text) else math.inf
    if not math.isfinite(number):  # 1e999 too
        raise ParamError(f"{name}: expected a number like {example}, got {str(value)[:40]!r}")
    return number


def parse_count(value: object, name: str, example: str, *, digits: int = 12) -> int | None:
    """A whole number of at most `digits` digits from a form field, a query string or a number
    given as one; None when absent. Whether it is in range is the caller's to say."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**digits:
        return value
    text = value.strip() if isinstance(value, str) else ""
    if not re.fullmatch(f"[0-9]{{1,{digits}}}", text):  # a larger int too (a CLI's type=int)
        raise ParamError(f"{name}: expected a whole number like {example}, got {str(value)[:40]!r}")
    return int(text)


def parse_whole(value: str | None) -> int | str:
    """A whole number typed in a form field: its int, or the text as typed, which the action
    then refuses saying what it expects (so the range is checked in one place, the action)."""
    text = (value or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else text


def parse_cuts(value: str | Sequence[object] | None) -> tuple[int, ...]:
    """A breakdown's cuts of a plain integer ("30,50" from a query string or a CLI option, or a
    list of whole numbers): at most MAX_CUTS; () when absent. Whether they increase and fit the
    question's range is the analysis's to say (stats/joint.py)."""
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    if len(items) > MAX_CUTS:
        raise ParamError(f"cuts: at most {MAX_CUTS}, got {len(items)}")
    cuts = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        if isinstance(text, int) and not isinstance(text, bool):
            cuts.append(text)
        elif isinstance(text, str) and re.fullmatch(r"[+-]?[0-9]{1,9}", text):
            cuts.append(int(text))
        else:
            raise ParamError(
                f"cuts: expected whole numbers separated by commas, like 30,50; got {item!r}"
            )
    return tuple(cuts)
