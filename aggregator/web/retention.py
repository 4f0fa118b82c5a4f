"""Retention while serving: with DENIABLE_RETENTION_DAYS set, purge old raw reports hourly;
with DENIABLE_AUDIT_RETENTION_DAYS set, old audit log entries (docs/accounts.md); on PostgreSQL,
fold the answer patterns' counter shards (store.recount.fold), so analyses read one row per
distinct pattern.

Each server process checks on its first request and then at most once an hour, off the request
(a background thread): the timer ticks in a WSGI layer in front of the whole app, so every
request, the report endpoint's too, passes the same tick; `deniable-aggregator purge` does the
same by hand or from cron. Purging is idempotent, so several workers racing only repeat an
empty purge.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask

from deniable.aggregator import accounts
from deniable.aggregator.stats.analyze import tally
from deniable.aggregator.store import recount
from deniable.aggregator.web.db import EXTENSION as STORES

INTERVAL_SECONDS = 3600.0
#: Where the app keeps its RetentionTimer (when retention is on).
EXTENSION = "deniable.retention"


class RetentionTimer:
    """Runs a purge at most once per interval, in a daemon thread: of the reports older than
    `days` days and of the audit entries older than `audit_days` (None: that one is off)."""

    def __init__(
        self,
        app: Flask,
        days: int | None,
        interval: float = INTERVAL_SECONDS,
        *,
        audit_days: int | None = None,
    ):
        self.app = app
        self.days = days
        self.audit_days = audit_days
        self.interval = interval
        self._due = 0.0
        self._lock = threading.Lock()

    def tick(self) -> None:
        """Start a purge in the background if one is due (cheap when not)."""
        now = time.monotonic()
        if now < self._due:
            return
        with self._lock:
            if now < self._due:
                return
            self._due = now + self.interval
        threading.Thread(target=self.purge, name="deniable-retention", daemon=True).start()

    def purge(self) -> None:
        """Purge now; a failure is logged (without report contents) and retried next interval."""
        try:
            with self.app.app_context(), self.app.extensions[STORES].borrowed() as store:
                purged = recount.purge(store, self.days, tally) if self.days else {}
                entries = accounts.purge_audit(store, self.audit_days) if self.audit_days else 0
                folded = recount.fold(store)
            if purged:
                self.app.logger.info("retention: purged %d report(s)", sum(purged.values()))
            if entries:
                self.app.logger.info("retention: purged %d audit entries", entries)
            if folded:
                self.app.logger.info("retention: folded %d survey(s)' pattern shards", len(folded))
        except Exception as exc:  # the next interval tries again
            self.app.logger.error("retention: purge failed: %s", type(exc).__name__)


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class Ticking:
    """WSGI layer: tick the retention timer on every request, then answer it."""

    def __init__(self, timer: RetentionTimer, wsgi_app: WSGIApp):
        self.timer = timer
        self.wsgi_app = wsgi_app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        self.timer.tick()
        return self.wsgi_app(environ, start_response)


def init_app(app: Flask) -> None:
    """Purge hourly from the serving processes when DENIABLE_RETENTION_DAYS or
    DENIABLE_AUDIT_RETENTION_DAYS is set, and fold pattern shards on PostgreSQL (installed after
    the report endpoint, so that it ticks in front of it too)."""
    days = app.config.get("RETENTION_DAYS")
    audit_days = app.config.get("AUDIT_RETENTION_DAYS")
    if not days and not audit_days and not app.config.get("DATABASE_URL"):
        return
    timer = RetentionTimer(app, days, audit_days=audit_days)
    app.extensions[EXTENSION] = timer
    app.wsgi_app = Ticking(timer, app.wsgi_app)  # type: ignore[method-assign]
