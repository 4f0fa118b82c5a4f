"""Ingestion: check, verify and store reports, with a result per report. No Flask here, and
no HTTP: an outcome says what kind it is, and the web layer answers it with a status
(aggregator/web/statuses.py).

Checks run cheapest first; the signature is verified once, and the whole batch is stored in one
transaction. A report must hold exactly the questions its plain answers make relevant (skip
logic, docs/surveys.md#skip-logic): an answer to a question they skip, or none to one they ask,
is "invalid", naming the question; a survey without conditions pays nothing for the rule. A rejected report changes nothing. A report stored before and sent again with the
same bytes answers "duplicate" whatever else changed since (the survey closed, its sent_at aged),
so a client may always resend its outbox safely.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from threading import Lock
from typing import Any, Literal, NamedTuple

from deniable.aggregator.stats.asked import direct_slots, gated, report_slots, with_asked
from deniable.aggregator.store import (
    PURGED_BODY,
    NewReport,
    Store,
    StoredReport,
    StoreOutcome,
    SurveyRecord,
    resend_outcome,
)
from deniable.aggregator.store.commit import GroupCommitter
from deniable.aggregator.store.survey_cache import SurveyCache
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import ReportError, SurveyError
from deniable.shared.report import (
    answer_pattern,
    answer_support,
    body_pattern,
    check_structure,
    has_text,
    hour_now,
    is_report_id,
    parse_sent_at,
    verified_body,
)
from deniable.shared.survey import Survey

DEFAULT_CLOCK_SKEW = timedelta(days=2)

Result = Literal["accepted", "duplicate", "rejected"]
#: What became of a report, finer than its result: why it was rejected, in a word.
Kind = Literal[
    "accepted",  # stored
    "duplicate",  # stored before (the same report sent again)
    "invalid",  # not a well-formed report, answer, sent_at or signature
    "no-survey",  # no such survey here
    "closed",  # the survey no longer accepts reports
    "stale-survey",  # answers another version of the survey (survey_hash)
    "broken-survey",  # the stored survey no longer parses
    "conflict",  # its report_id names a different report
    "answered",  # its key already answered the survey
    "not-enrolled",  # its key is not enrolled in an invite-only survey
]


class Outcome(NamedTuple):
    """What became of one report: its result, the reason when rejected, and its kind."""

    report_id: str | None
    result: Result
    reason: str | None = None
    kind: Kind = "accepted"

    def to_dict(self) -> dict[str, Any]:
        """The result object of POST /api/v1/reports (reason only when rejected)."""
        found: dict[str, Any] = {"report_id": self.report_id, "result": self.result}
        if self.reason is not None:
            found["reason"] = self.reason
        return found


_PLAIN_ID = re.compile(r"[0-9a-f-]{1,64}")


def results_json(outcomes: list[Outcome]) -> str:
    """A batch's answer, {"results": [...]}, with the common results written directly."""
    parts = []
    for o in outcomes:
        if o.reason is None and o.report_id is not None and _PLAIN_ID.fullmatch(o.report_id):
            parts.append(f'{{"report_id":"{o.report_id}","result":"{o.result}"}}')
        else:
            parts.append(json.dumps(o.to_dict()))
    return '{"results":[' + ",".join(parts) + "]}"


class Rejection(Exception):
    """A report refused before storing: the kind of refusal and the reason."""

    def __init__(self, kind: Kind, reason: str):
        super().__init__(reason)
        self.kind: Kind = kind
        self.reason = reason


_STORED: dict[StoreOutcome, Outcome] = {
    "accepted": Outcome(None, "accepted", None, "accepted"),
    "duplicate": Outcome(None, "duplicate", None, "duplicate"),
    "conflict": Outcome(
        None,
        "rejected",
        "report_id: already used by a different report; a sent report is never changed, "
        "send a new report with a new report_id",
        "conflict",
    ),
    "answered": Outcome(
        None,
        "rejected",
        "public_key: this key already answered this survey; each respondent answers once",
        "answered",
    ),
    "closed": Outcome(None, "rejected", "survey: closed; it no longer accepts reports", "closed"),
}


class RecordCache:
    """Survey records by id, kept `ttl` seconds, for one app's store.

    Safe because the checks before the write transaction are an early answer only: a survey's
    hash never changes, and `add_reports` reads closed_at again inside the transaction, so a
    survey closed within the last `ttl` seconds still refuses the report ("closed")."""

    def __init__(self, ttl: float = 1.0):
        self.ttl = ttl
        self._records: dict[str, tuple[float, SurveyRecord]] = {}
        self._lock = Lock()

    def get(self, store: Store, survey_id: str) -> SurveyRecord | None:
        """The survey's record, from the store at most `ttl` seconds ago."""
        now = time.monotonic()
        with self._lock:
            found = self._records.get(survey_id)
        if found is not None and now - found[0] < self.ttl:
            return found[1]
        record = store.get_survey(survey_id)
        if record is not None:
            with self._lock:
                if len(self._records) > 4096:
                    self._records.clear()
                self._records[survey_id] = (now, record)
        return record


def _report_id_of(value: object) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("report_id"), str):
        return value["report_id"][:128]
    return None


def _closed_reason(record: SurveyRecord, survey: Survey, now: datetime) -> str | None:
    if record.closed:
        return (
            f"survey: {record.id!r} was closed on {record.closed_at}; it no longer accepts reports"
        )
    if survey.is_closed(now):
        return f"survey: {record.id!r} closed at {survey.to_dict()['closes_at']}; it no longer accepts reports"
    return None


class _Checker:
    """The checks of one ingest call, remembering the surveys it looked up."""

    def __init__(
        self,
        store: Store,
        now: datetime,
        skew: timedelta,
        cache: SurveyCache,
        recent: RecordCache | None = None,
    ):
        self.store = store
        self.now = now
        self.skew = skew
        self.cache = cache
        self.recent = recent
        self.records: dict[str, tuple[SurveyRecord, Survey, str | None] | None] = {}
        self.sent_at_ok: dict[str, bool] = {}
        self.asked_slots: dict[str, dict[str, int]] = {}  # stats/asked.py, once a survey
        self.direct_slots: dict[str, dict[str, int]] = {}  # split ballots' direct arms
        self.text: dict[str, bool] = {}  # whether a survey has text questions, once a survey

    def lookup(self, survey_id: str) -> tuple[SurveyRecord, Survey, str | None] | None:
        """The survey's record, parsed survey and why it is closed (None: open), once a call."""
        if survey_id not in self.records:
            if self.recent is not None:
                record = self.recent.get(self.store, survey_id)
            else:
                record = self.store.get_survey(survey_id)
            if record is None:
                self.records[survey_id] = None
            else:
                survey = self.cache.survey(record)
                self.records[survey_id] = (record, survey, _closed_reason(record, survey, self.now))
        return self.records[survey_id]

    def within_skew(self, sent_at: str) -> bool:
        """Whether a (well-formed) sent_at is within the clock skew of now."""
        found = self.sent_at_ok.get(sent_at)
        if found is None:
            found = self.sent_at_ok[sent_at] = abs(parse_sent_at(sent_at) - self.now) <= self.skew
        return found

    def check(self, value: object) -> NewReport:
        """The report ready to store, or Rejection saying why not."""
        try:
            report = check_structure(value)
        except ReportError as exc:
            raise Rejection("invalid", str(exc)) from None
        found = self.lookup(report["survey"])
        if found is None:
            raise Rejection(
                "no-survey",
                f"survey: no survey {report['survey']!r} on this aggregator; check the survey id",
            )
        record, survey, closed = found
        if closed:
            raise Rejection("closed", closed)
        if report["survey_hash"].lower() != record.hash:
            raise Rejection(
                "stale-survey",
                "survey_hash: does not match the survey as published; fetch the survey again "
                "and answer that version",
            )
        arms = report.get("arms")
        try:  # exactly the questions its plain answers make relevant (docs/surveys.md)
            support = answer_support(survey, report["answers"], arms)
        except ReportError as exc:
            raise Rejection("invalid", str(exc)) from None
        slots = self.asked_slots.get(survey.id)
        if slots is None:
            slots = self.asked_slots[survey.id] = gated(survey)
            self.direct_slots[survey.id] = direct_slots(survey)
        directs = self.direct_slots[survey.id]
        if directs:  # split ballots: a direct answer counts in its own slots (stats/asked.py)
            support = report_slots(survey, support, arms or {}, slots, directs)
        elif slots:  # skip logic: each gated question's tally counts the reports that hold it
            support = with_asked(support, slots)
        if not self.within_skew(report["sent_at"]):
            hours = int(self.skew.total_seconds() // 3600)
            raise Rejection(
                "invalid",
                f"sent_at: {report['sent_at']} is more than {hours} hours from the aggregator's "
                f"clock ({hour_now(self.now)}); check the device's clock and send a fresh report",
            )
        try:
            body = verified_body(report)
        except ReportError as exc:
            raise Rejection("invalid", str(exc)) from None
        if survey.enrollment == "invite" and not self.store.is_enrolled(
            survey.id, report["public_key"]
        ):
            raise Rejection(
                "not-enrolled",
                "public_key: not enrolled in this invite-only survey; enroll the key with an "
                "invitation code first",
            )
        text = self.text.get(survey.id)
        if text is None:
            text = self.text[survey.id] = has_text(survey)
        return NewReport(
            report_id=report["report_id"],
            survey_id=survey.id,
            public_key=report["public_key"],
            body=body,
            support=support,
            # What analyses count (docs/architecture.md): cut from the body unless the survey's
            # text answers must be left out.
            pattern=answer_pattern(survey, report["answers"], arms) if text else body_pattern(body),
        )


def ingest(
    store: Store,
    value: object,
    *,
    clock_skew: timedelta = DEFAULT_CLOCK_SKEW,
    now: datetime | None = None,
    cache: SurveyCache | None = None,
    committer: GroupCommitter | None = None,
    records: RecordCache | None = None,
) -> list[Outcome]:
    """Check, verify and store one report (a dict) or a batch (a list); an Outcome per report,
    in order. Valid reports of a batch are stored together even when others are rejected.
    With a committer, they share a transaction with other threads' (group commit); with
    `records`, survey records may be up to its ttl old (see RecordCache). Surveys are parsed
    once per `cache` (the app's), or once per call without one."""
    if cache is None:
        cache = SurveyCache()
    if committer is None:
        return _ingest(store, value, clock_skew, now, cache, records, store.add_reports)
    with committer.arriving() as arrival:

        def add(news: list[NewReport], hour: str) -> list[StoreOutcome]:
            return committer.add_reports(store, news, hour, arrival=arrival)

        return _ingest(store, value, clock_skew, now, cache, records, add)


def _ingest(
    store: Store,
    value: object,
    clock_skew: timedelta,
    now: datetime | None,
    cache: SurveyCache,
    records: RecordCache | None,
    add: Callable[[list[NewReport], str], list[StoreOutcome]],
) -> list[Outcome]:
    items = value if isinstance(value, list) else [value]
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    checker = _Checker(store, moment, clock_skew, cache, records)
    outcomes: list[Outcome | None] = [None] * len(items)
    ready: list[tuple[int, NewReport]] = []
    for i, item in enumerate(items):
        try:
            ready.append((i, checker.check(item)))
        except Rejection as exc:
            outcomes[i] = _resent_or_rejected(store, item, exc)
        except (SurveyError, ValueError) as exc:  # a stored survey that no longer parses
            outcomes[i] = Outcome(
                _report_id_of(item), "rejected", f"survey: {exc}", "broken-survey"
            )
    stored = add([new for _, new in ready], hour_now(moment))
    for (i, new), result in zip(ready, stored, strict=True):
        template = _STORED[result]
        outcomes[i] = Outcome(new.report_id, template.result, template.reason, template.kind)
    return [outcome for outcome in outcomes if outcome is not None]


def _resent_or_rejected(store: Store, item: object, rejection: Rejection) -> Outcome:
    """ "duplicate" if this report was stored before (these exact bytes, or a purged report
    sent again by its key), else the rejection."""
    report_id = _report_id_of(item)
    if is_report_id(report_id):  # nothing else was ever stored (nor fits every store's text)
        stored = store.stored_report(report_id)
        if stored is not None and _resent(stored, item):
            return Outcome(report_id, "duplicate", None, "duplicate")
    return Outcome(report_id, "rejected", rejection.reason, rejection.kind)


def _resent(stored: StoredReport, item: object) -> bool:
    """Whether `item` is the stored report sent again; once purged, only a well-formed report
    whose signature verifies for the stored key counts as it."""
    try:
        if stored.body != PURGED_BODY:
            return stored.body == canonical_json(item).decode("utf-8")
        report = check_structure(item)
        body, key, survey_id = verified_body(report), report["public_key"], report["survey"]
        return resend_outcome(stored, body, key, survey_id) == "duplicate"
    except (ReportError, TypeError, ValueError):  # not a report, or not text
        return False
