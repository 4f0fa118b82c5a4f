"""The audit log: every researcher action that reads or changes a survey, appended with when,
who (account and token id, never a token) and with which parameters (never a report's
content), for the API, the dashboard and the CLI alike (docs/accounts.md).

The service functions (surveys.py, accounts.py) append; nothing in the application changes or
deletes an entry, but the retention purge (DENIABLE_AUDIT_RETENTION_DAYS).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from deniable.aggregator.access import Principal
from deniable.aggregator.store import AuditEntry, Store

#: Longest text kept of one parameter's value (a formula, a list of candidates).
MAX_PARAM_CHARS = 2000


def _kept(value: Any) -> Any:
    """A parameter's value as logged: JSON scalars and lists of them, long text cut."""
    if isinstance(value, str):
        return value[:MAX_PARAM_CHARS]
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_kept(v) for v in list(value)[:100]]
    return str(value)[:MAX_PARAM_CHARS]


def record(
    store: Store,
    who: Principal,
    survey: str | None,
    action: str,
    params: Mapping[str, Any] | None = None,
) -> None:
    """Append one entry: now, the principal's account and token id, the survey, the action and
    its parameters (those that are None are left out)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept = {k: _kept(v) for k, v in (params or {}).items() if v is not None}
    store.append_audit(AuditEntry(now, who.account, who.token_id, survey, action, kept))


def lines(entries: Iterator[AuditEntry]) -> Iterator[str]:
    """Entries as JSONL, one object a line."""
    for entry in entries:
        yield json.dumps(entry.to_dict(), sort_keys=False) + "\n"
