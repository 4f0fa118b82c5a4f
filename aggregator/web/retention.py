"""Retention while serving: with DENIABLE_RETENTION_DAYS set, purge old raw reports hourly.

Each server process checks on its first request and then at most once an hour, off the request
(a background thread); `deniable-aggregator purge` does the same by hand or from cron. Purging is
idempotent, so several workers racing only repeat an empty purge.
"""

from __future__ import annotations

import threading
import time

from flask import Flask

from deniable.aggregator.stats.analyze import tally
from deniable.aggregator.store import recount
from deniable.aggregator.web.db import EXTENSION as STORES

INTERVAL_SECONDS = 3600.0
#: Where the app keeps its RetentionTimer (when retention is on).
EXTENSION = "deniable.retention"


class RetentionTimer:
    """Runs a purge at most once per interval, in a daemon thread."""

    def __init__(self, app: Flask, days: int, interval: float = INTERVAL_SECONDS):
        self.app = app
        self.days = days
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
                purged = recount.purge(store, self.days, tally)
            if purged:
                self.app.logger.info("retention: purged %d report(s)", sum(purged.values()))
        except Exception as exc:  # the next interval tries again
            self.app.logger.error("retention: purge failed: %s", type(exc).__name__)


def init_app(app: Flask) -> None:
    """Purge hourly from the serving processes when DENIABLE_RETENTION_DAYS is set."""
    days = app.config.get("RETENTION_DAYS")
    if not days:
        return
    timer = RetentionTimer(app, days)
    app.extensions[EXTENSION] = timer
    app.before_request(timer.tick)
