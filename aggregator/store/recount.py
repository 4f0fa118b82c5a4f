"""Verify and repair tallies against the stored reports, and purge old report bodies (retention).

The tallies and answer patterns are what estimates and analyses read; the stored reports are
the evidence. `verify` recounts a survey's n and support counts from its stored report bodies,
plus the totals of reports that retention purged (their bodies are gone, their counts are
kept), so a purge never makes verify "repair" a tally downwards; and its answer patterns from
the stored bodies (a purge takes its reports' patterns away). The counting itself is the statistics' (`stats.analyze.tally`),
given by the caller, so storage does not import the statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Protocol

from deniable.aggregator.store.base import BodyCounter, Recount, Store, StoreError
from deniable.shared.report import body_patterns, hour_now
from deniable.shared.survey import Survey


class Tally(Protocol):
    """Counts reports as the service does: `stats.analyze.tally`."""

    def __call__(
        self, survey: Survey, reports: Iterable[str], *, verify: bool
    ) -> tuple[int, dict[str, list[int]]]: ...


def counter(store: Store, survey_id: str, tally: Tally) -> BodyCounter:
    """Counts report bodies of the survey exactly as ingestion tallies them (with `tally`),
    and their answer patterns as ingestion gives them (`shared.report.answer_pattern`)."""
    record = store.get_survey(survey_id)
    if record is None:
        raise StoreError(f"no survey {survey_id!r} on this aggregator; check the survey id")
    survey = Survey.from_stored(record.resolved)
    pattern_of = body_patterns(survey)

    def count(bodies: Iterable[str]) -> tuple[int, dict[str, list[int]], dict[str, int]]:
        patterns: Counter[str] = Counter()

        def seen() -> Iterator[str]:
            for body in bodies:
                patterns[pattern_of(body)] += 1
                yield body

        n, support = tally(survey, seen(), verify=False)
        return n, support, dict(patterns)

    return count


def verify(store: Store, survey_id: str, tally: Tally, *, repair: bool = False) -> Recount:
    """Recount the survey's n and tallies; with `repair`, make them equal in one transaction."""
    return store.recount(survey_id, counter(store, survey_id, tally), repair=repair)


#: Differing answer patterns `differences` names one by one; beyond, it says how many more.
PATTERN_LINES = 10


def differences(found: Recount) -> list[str]:
    """One line per stored value that differs from the recount (answer patterns: the first
    PATTERN_LINES, then how many more)."""
    lines = []
    if found.stored_n != found.counted_n:
        lines.append(f"n: stored {found.stored_n}, recounted {found.counted_n}")
    for qid, counted in found.counted.items():
        stored = found.stored.get(qid, [])
        for option, value in enumerate(counted):
            have = stored[option] if option < len(stored) else None
            if have != value:
                lines.append(f"{qid}[{option}]: stored {have}, recounted {value}")
    stored_patterns, counted_patterns = found.stored_patterns, found.counted_patterns
    differ = sorted(
        pattern
        for pattern in stored_patterns.keys() | counted_patterns.keys()
        if stored_patterns.get(pattern, 0) != counted_patterns.get(pattern, 0)
    )
    for pattern in differ[:PATTERN_LINES]:
        lines.append(
            f"answer pattern {pattern}: stored {stored_patterns.get(pattern, 0)}, "
            f"recounted {counted_patterns.get(pattern, 0)}"
        )
    if len(differ) > PATTERN_LINES:
        lines.append(f"... and {len(differ) - PATTERN_LINES} more answer patterns differ")
    return lines


def cutoff_hour(days: int, now: datetime | None = None) -> str:
    """The received hour before which reports are older than `days` days."""
    return hour_now((now or datetime.now(UTC)) - timedelta(days=days))


def purge(store: Store, days: int, tally: Tally, *, now: datetime | None = None) -> dict[str, int]:
    """Purge the bodies of reports received more than `days` days ago, survey by survey (one
    transaction each); tallies and n stay. Survey id -> reports purged (only those with any)."""
    before = cutoff_hour(days, now)
    purged = {}
    for record in store.list_surveys():
        n = store.purge_reports(record.id, before, counter(store, record.id, tally))
        if n:
            purged[record.id] = n
    return purged


def fold(store: Store) -> list[str]:
    """Fold every survey's answer pattern shards that need it (PostgreSQL; nothing on SQLite),
    one short transaction each, beside the writers; the surveys folded."""
    return [record.id for record in store.list_surveys() if store.fold_patterns(record.id)]
