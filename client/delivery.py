"""The delivery policy: what an aggregator's answer to POST /api/v1/reports means for a report.

One rule set, the same as `classifyDelivery` in the web page's delivery.js, pinned by
tests/conformance/delivery.json: a 2xx naming the report gives its result; 408, 425, 429, 5xx
and every answer that is not the aggregator's own problem+json leave it queued (to be sent
again after `Retry-After`, at most a day, or a backoff); any other 4xx problem+json rejects it
with its detail. Network failures, which have no answer, leave it queued too (the caller's part).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from deniable.shared.canonical import JSONTextError, parse_json

#: The longest wait a server's Retry-After can impose, in seconds: a hostile or broken server
#: must not park a report for ever.
MAX_RETRY_AFTER = 86_400
#: Client errors that mean "later", not "never".
TRANSIENT_STATUSES = frozenset({408, 425, 429})
#: Server text kept in the ledger or shown to the respondent, at most (characters).
MAX_REASON = 300
OUTCOMES = ("accepted", "duplicate", "queued", "rejected")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_IMF_FIXDATE = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) ([A-Z][a-z]{2}) ([0-9]{4}) "
    r"([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT"
)


@dataclass(frozen=True)
class Delivery:
    """One report's fate by the policy: outcome, reason (server text made plain) and, when
    queued, the seconds the server asked to wait (None: the sender picks a backoff)."""

    outcome: str
    reason: str | None = None
    retry_after: int | None = None


def plain(text: object, limit: int = MAX_REASON) -> str:
    """Server text as a client keeps and shows it: one line, no control or bidirectional
    formatting characters (they could move the cursor or reorder the text), cut short."""
    cleaned = "".join(
        " " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in str(text)
    )
    line = " ".join(cleaned.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _trim(text: str) -> str:
    """HTTP's optional white space (space and tab) off both ends, nothing else."""
    return text.strip(" \t")


def retry_after_seconds(value: str | None, now: float) -> int | None:
    """The seconds a Retry-After value (delay-seconds or an IMF-fixdate) asks to wait, capped
    at MAX_RETRY_AFTER (a date past is 0); None when absent or malformed."""
    if value is None:
        return None
    text = _trim(value)
    if re.fullmatch(r"[0-9]+", text):
        digits = text.lstrip("0") or "0"
        return MAX_RETRY_AFTER if len(digits) > 6 else min(int(digits), MAX_RETRY_AFTER)
    match = _IMF_FIXDATE.fullmatch(text)
    if match is None or match[2] not in _MONTHS:
        return None
    day, year, hour, minute, second = (int(match[i]) for i in (1, 3, 4, 5, 6))
    if year < 1970:  # no server means a date before the epoch
        return None
    try:
        when = datetime(year, _MONTHS.index(match[2]) + 1, day, hour, minute, second, tzinfo=UTC)
    except ValueError:  # 30 February, 24:00, a leap second
        return None
    return min(max(0, math.ceil(when.timestamp() - now)), MAX_RETRY_AFTER)


def is_problem(content_type: str | None) -> bool:
    """Whether a Content-Type is application/problem+json (parameters allowed)."""
    return _trim((content_type or "").split(";")[0]).lower() == "application/problem+json"


def _said(found: Mapping[str, Any]) -> str | None:
    """The first of detail, reason, title that says something, made plain."""
    for key in ("detail", "reason", "title"):
        if isinstance(found.get(key), str) and (text := plain(found[key])):
            return text
    return None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def _json(body: bytes | str) -> Any:
    try:
        return parse_json(body)
    except JSONTextError:
        return None


def classify(
    status: int,
    headers: Mapping[str, str],
    body: bytes | str,
    report_id: str,
    index: int | None = None,
    now: float | None = None,
) -> Delivery:
    """What an answer to POST /api/v1/reports means for the report `report_id`, sent alone
    (`index` None) or as item `index` of a batch, whose answer lists a result per report."""
    found = _json(body)
    if 200 <= status < 300:
        item = found
        if index is not None:
            results = found.get("results") if isinstance(found, dict) else None
            item = results[index] if isinstance(results, list) and index < len(results) else None
        if isinstance(item, dict) and item.get("report_id") == report_id:
            if item.get("result") in ("accepted", "duplicate"):
                return Delivery(item["result"])
            if item.get("result") == "rejected":
                return Delivery("rejected", _said(item) or f"HTTP {status}")
        why = "no result for this report"
    elif is_problem(_header(headers, "Content-Type")) and isinstance(found, dict):
        if 400 <= status < 500 and status not in TRANSIENT_STATUSES:
            return Delivery("rejected", _said(found) or f"HTTP {status}")
        why = _said(found) or "no detail"
    elif 300 <= status < 400:
        why = "a redirect, not the aggregator's answer"
    else:
        why = "not the aggregator's answer"
    now = time.time() if now is None else now
    wait = retry_after_seconds(_header(headers, "Retry-After"), now)
    return Delivery("queued", f"HTTP {status}: {why}", wait)
