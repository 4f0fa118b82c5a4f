"""The audit log's pages (docs/accounts.md): the whole log for admins, a survey's for its
owners and admins, newest entries first (the JSONL download has them all)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from typing import Any

from flask import render_template

from deniable.aggregator import access, accounts
from deniable.aggregator.store import AuditEntry
from deniable.aggregator.web.dashboard.base import bp, principal, survey_nav, survey_or_404
from deniable.aggregator.web.db import get_store

#: The audit pages show the newest entries, this many at most (the JSONL download has all).
AUDIT_PAGE_LIMIT = 500


def _newest(entries: Iterator[AuditEntry]) -> list[AuditEntry]:
    """The newest AUDIT_PAGE_LIMIT entries, newest first (memory bounded by the limit)."""
    return list(reversed(deque(entries, maxlen=AUDIT_PAGE_LIMIT)))


def _params(entry: AuditEntry) -> str:
    return json.dumps(dict(entry.params), ensure_ascii=False, sort_keys=True)


@bp.route("/audit")
def audit_log() -> Any:
    """The whole audit log's newest entries, for admins."""
    who = principal()
    access.require_admin(who)
    entries = _newest(accounts.audit_entries(get_store(), who))
    return render_template(
        "audit.html", entries=entries, params=_params, limit=AUDIT_PAGE_LIMIT, survey=None
    )


@bp.route("/surveys/<survey_id>/audit")
def survey_audit(survey_id: str) -> Any:
    """The survey's audit log, newest entries first, for its owners and admins."""
    record, resolved = survey_or_404(survey_id, "audit")
    entries = _newest(accounts.audit_entries(get_store(), principal(), survey=survey_id))
    return render_template(
        "audit.html",
        entries=entries,
        params=_params,
        limit=AUDIT_PAGE_LIMIT,
        survey=resolved,
        record=record,
        **survey_nav(survey_id),
    )
