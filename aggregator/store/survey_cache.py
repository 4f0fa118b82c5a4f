"""Stored surveys parsed once, by hash, shared by ingestion, the services and the exports (none of
them imports another for it): a survey never changes once created, so its hash names its parsed
form. No SQL here: it parses what the store gave."""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from deniable.aggregator.store.records import SurveyRecord
from deniable.shared.survey import Survey


class SurveyCache:
    """Parsed Survey objects by hash: a survey never changes once created, so its hash names it.

    One per app (created with it, see web/db.py), not per process: each app and each command
    has its own."""

    def __init__(self, size: int = 256):
        self._size = size
        self._surveys: OrderedDict[str, Survey] = OrderedDict()
        self._lock = Lock()

    def survey(self, record: SurveyRecord) -> Survey:
        """The parsed survey of a stored record."""
        with self._lock:
            found = self._surveys.get(record.hash)
            if found is not None:
                self._surveys.move_to_end(record.hash)
                return found
        survey = Survey.from_stored(record.resolved)
        with self._lock:
            self._surveys[record.hash] = survey
            while len(self._surveys) > self._size:
                self._surveys.popitem(last=False)
        return survey
