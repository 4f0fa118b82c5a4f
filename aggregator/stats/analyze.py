"""Offline re-analysis: tally exported reports and estimate exactly as the service does."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from deniable.aggregator.stats.estimate import parse_candidates, results_document, z_value
from deniable.aggregator.stats.results import SurveyResults
from deniable.shared import ReportError, Survey, canonical_json
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.report import check_answers, parse_report, verify_report


def as_survey(survey: Survey | Mapping[str, Any]) -> Survey:
    """A Survey from a Survey, a survey document (resolved or not) or {"survey": ..., "survey_hash": ...}."""
    if isinstance(survey, Survey):
        return survey
    doc = dict(survey)
    if isinstance(doc.get("survey"), dict) and "questions" not in doc:
        published = Survey.from_dict(doc["survey"])
        expected = doc.get("survey_hash")
        if expected is not None and expected != published.hash:
            raise ReportError(
                "survey_hash: the published hash does not match the survey it came with"
            )
        return published
    return Survey.from_dict(doc)


def _records(reports: Iterable[Any] | str | bytes) -> Iterator[tuple[int, Any]]:
    """(line number, report) pairs from dicts, JSON strings, or a whole JSON-lines text."""
    if isinstance(reports, bytes):
        reports = reports.decode("utf-8")
    if isinstance(reports, str):
        reports = reports.splitlines()
    for line, item in enumerate(reports, start=1):
        if isinstance(item, bytes):
            item = item.decode("utf-8")
        if isinstance(item, str):
            if not item.strip():
                continue
            try:
                item = parse_json(item)
            except JSONTextError as exc:
                raise ReportError(f"report on line {line}: not JSON ({exc})") from None
        yield line, item


def answer_rows(
    survey: Survey, reports: Iterable[Any] | str | bytes, *, verify: bool = True
) -> Iterator[dict[str, Any]]:
    """The checked noisy answers of each valid report, once per report, in order.

    With `verify`, every report is checked like ingestion checks it (structure, survey and hash,
    answers, signature) and a report sent again (same report_id, same content) counts once; a
    different report under a seen report_id or public key is an error, since the service would
    never have stored both. With `verify=False` (answers from another study) a report may be
    just {"answers": {...}}: its answers are checked against the survey, nothing else.
    A bad report raises ReportError naming its line (and report_id)."""
    survey_hash = survey.hash
    seen_ids: dict[str, bytes] = {}  # report_id -> sha256 of the canonical report
    seen_keys: set[str] = set()
    for line, raw in _records(reports):
        rid = raw.get("report_id") if isinstance(raw, dict) else None
        where = f"report on line {line}" + (f" ({rid})" if isinstance(rid, str) else "")
        if not verify:
            try:
                if not isinstance(raw, dict) or "answers" not in raw:
                    raise ReportError('expected an object with "answers"')
                yield check_answers(survey, raw["answers"])
            except ReportError as exc:
                raise ReportError(f"{where}: {exc}") from None
            continue
        try:
            # parse_report(report, survey) with the survey hash computed once, not per report.
            report = parse_report(raw, None, verify=False)
            if report["survey"] != survey.id:
                raise ReportError(f"survey: report is for {report['survey']!r}, not {survey.id!r}")
            if report["survey_hash"].lower() != survey_hash:
                raise ReportError("survey_hash: does not match the survey as published")
            check_answers(survey, report["answers"])
            verify_report(report)
        except ReportError as exc:
            raise ReportError(f"{where}: {exc}") from None
        body = hashlib.sha256(canonical_json(report)).digest()
        if rid in seen_ids:
            if seen_ids[rid] == body:
                continue
            raise ReportError(f"{where}: report_id already used by a different report")
        if report["public_key"] in seen_keys:
            raise ReportError(f"{where}: a second report from the same public key")
        seen_ids[rid] = body
        seen_keys.add(report["public_key"])
        yield report["answers"]


class StoredAnswers:
    """A survey's stored reports for the analyses, counted by the store's database (the
    reports were checked and verified when they arrived)."""

    def __init__(self, store: Any, survey_id: str):
        self.store = store
        self.survey_id = survey_id

    def counts(self, question_ids: Sequence[str]) -> Mapping[tuple[Any, ...], int]:
        """Reports per combination of noisy answers to these questions."""
        return self.store.answer_counts(self.survey_id, list(question_ids))


def answer_counts(
    survey: Survey,
    reports: Iterable[Any] | str | bytes | StoredAnswers,
    question_ids: Sequence[str],
    *,
    verify: bool = True,
) -> Mapping[tuple[Any, ...], int]:
    """How many reports sent each combination of noisy answers to these questions: from the
    store's database, or by streaming (and checking) the reports given."""
    if isinstance(reports, StoredAnswers):
        return reports.counts(question_ids)
    return Counter(
        tuple(answers[qid] for qid in question_ids)
        for answers in answer_rows(survey, reports, verify=verify)
    )


#: Reports counted at once when answer_count_chunks streams reports (bounds the memory).
REPORTS_AT_ONCE = 100_000


def _counted_in_batches(
    survey: Survey, reports: Iterable[Any] | str | bytes, question_ids: Sequence[str], verify: bool
) -> Iterator[tuple[tuple[Any, ...], int]]:
    """(combination, count) pairs, counted REPORTS_AT_ONCE reports at a time (a combination
    may come once per batch)."""
    rows = answer_rows(survey, reports, verify=verify)
    while batch := Counter(
        tuple(answers[qid] for qid in question_ids) for answers in islice(rows, REPORTS_AT_ONCE)
    ):
        yield from batch.items()


def answer_count_chunks(
    survey: Survey,
    reports: Iterable[Any] | str | bytes | StoredAnswers,
    question_ids: Sequence[str],
    rows: int,
    *,
    verify: bool = True,
) -> Iterator[list[tuple[tuple[Any, ...], int]]]:
    """answer_counts as lists of at most `rows` (combination, count) pairs, streamed from the
    database or the reports: whoever folds each list into sums and drops it holds memory
    flat in the number of reports and of distinct answers. A combination may be split over
    lists (the counts add up)."""
    if isinstance(reports, StoredAnswers):
        pairs = reports.store.iter_answer_counts(reports.survey_id, list(question_ids))
    else:
        pairs = _counted_in_batches(survey, reports, question_ids, verify)
    while chunk := list(islice(pairs, max(1, rows))):
        yield chunk


def tally(
    survey: Survey, reports: Iterable[Any] | str | bytes, *, verify: bool = True
) -> tuple[int, dict[str, list[int]]]:
    """(n, support counts per question) of valid reports, each counted once as the service does
    (see answer_rows for the checks)."""
    support = {qid: [0] * q.k for qid, q in survey.questions.items()}
    n = 0
    for answers in answer_rows(survey, reports, verify=verify):
        n += 1
        for qid, question in survey.questions.items():
            for v in question.supports(answers[qid]):
                support[qid][v] += 1
    return n, support


def analyze(
    survey: Survey | Mapping[str, Any],
    reports: Iterable[Any] | str | bytes,
    confidence: float = 0.95,
    simultaneous: bool = False,
    *,
    verify: bool = True,
    candidates: Sequence[str] | str = (),
) -> SurveyResults:
    """The results of a list of reports (e.g. a reports.jsonl export), as the service gives
    them; `verify=False` takes noisy answers from elsewhere (see answer_rows); `candidates` adds
    rows to text questions, as `?candidates=` does."""
    z_value(confidence)
    resolved = as_survey(survey)
    extra = parse_candidates(candidates)
    n, support = tally(resolved, reports, verify=verify)
    return results_document(
        resolved, n, support, confidence=confidence, simultaneous=simultaneous, candidates=extra
    )
