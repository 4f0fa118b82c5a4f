"""Offline re-analysis: tally exported reports and estimate exactly as the service does."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from deniable.aggregator.stats.asked import direct_slots, gated, report_slots, tally_sizes
from deniable.aggregator.stats.estimate import parse_candidates, results_document, z_value
from deniable.aggregator.stats.results import SurveyResults
from deniable.shared import ReportError, Survey, canonical_json
from deniable.shared.ballot import ARM_PREFIX, DIRECT
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.report import arms_of, check_answers, parse_report, verify_report


def as_survey(survey: Survey | Mapping[str, Any]) -> Survey:
    """A Survey from a Survey, a survey document (resolved or not) or {"survey": ..., "survey_hash": ...}."""
    if isinstance(survey, Survey):
        return survey
    doc = dict(survey)
    if isinstance(doc.get("survey"), dict) and "questions" not in doc:
        published = Survey.from_stored(doc["survey"])
        expected = doc.get("survey_hash")
        if expected is not None and expected != published.hash:
            raise ReportError(
                "survey_hash: the published hash does not match the survey it came with"
            )
        return published
    return Survey.from_stored(doc)


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
                yield check_answers(survey, raw["answers"], raw.get("arms"))
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
            checked = check_answers(survey, report["answers"], report.get("arms"))
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
        yield checked


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
    direct: bool = False,
) -> Mapping[tuple[Any, ...], int]:
    """How many reports sent each combination of noisy answers to these questions: from the
    store's database, or by streaming (and checking) the reports given. A question a report
    skipped is None in its combination, as the database gives it; so is a split-ballot
    question's direct answer unless `direct` (the analyses of randomized answers use the
    randomized arm only; `arm_id(qid)` reads the arm itself)."""
    wanted = _with_arms(survey, question_ids, direct)
    if isinstance(reports, StoredAnswers):
        found: Mapping[tuple[Any, ...], int] = reports.counts(wanted)
    else:
        found = Counter(
            _combination(answers, wanted) for answers in answer_rows(survey, reports, verify=verify)
        )
    if len(wanted) == len(question_ids):
        return found
    merged: Counter[tuple[Any, ...]] = Counter()
    for combination, count in _randomized_only(survey, question_ids, found.items()):
        merged[combination] += count
    return merged


def _with_arms(survey: Survey, question_ids: Sequence[str], direct: bool) -> list[str]:
    """The ids to count: these, then the arm of each split-ballot question among them (unless
    `direct`), whose direct answers `_randomized_only` then hides."""
    if direct or not survey.split:
        return list(question_ids)
    split = [qid for qid in question_ids if qid in survey.split]
    return [*question_ids, *(arm_id(qid) for qid in split)] if split else list(question_ids)


def _randomized_only(
    survey: Survey, question_ids: Sequence[str], pairs: Iterable[tuple[tuple[Any, ...], int]]
) -> Iterator[tuple[tuple[Any, ...], int]]:
    """(combination, count) pairs counted with `_with_arms`'s ids, back to `question_ids`'
    width, each split-ballot answer given in the direct arm made None (as if skipped)."""
    width = len(question_ids)
    split = [i for i, qid in enumerate(question_ids) if qid in survey.split]
    for combination, count in pairs:
        values = list(combination[:width])
        for i, arm in zip(split, combination[width:], strict=True):
            if arm == DIRECT:
                values[i] = None
        yield tuple(values), count


def arm_id(qid: str) -> str:
    """The id answer_counts reads a split-ballot question's arm by ("direct", "randomized", or
    None when the report does not hold the question)."""
    return ARM_PREFIX + qid


def _combination(answers: Mapping[str, Any], question_ids: Sequence[str]) -> tuple[Any, ...]:
    """The noisy answers (or, for an arm_id, the arms) of one report to these questions."""
    arms = arms_of(answers)
    return tuple(
        arms.get(qid[len(ARM_PREFIX) :]) if qid.startswith(ARM_PREFIX) else answers.get(qid)
        for qid in question_ids
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
        _combination(answers, question_ids) for answers in islice(rows, REPORTS_AT_ONCE)
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
    wanted = _with_arms(survey, question_ids, False)
    if isinstance(reports, StoredAnswers):
        pairs = reports.store.iter_answer_counts(reports.survey_id, wanted)
    else:
        pairs = _counted_in_batches(survey, reports, wanted, verify)
    if len(wanted) != len(question_ids):  # split ballots: the randomized arm's answers only
        pairs = _randomized_only(survey, question_ids, pairs)
    while chunk := list(islice(pairs, max(1, rows))):
        yield chunk


def tally(
    survey: Survey, reports: Iterable[Any] | str | bytes, *, verify: bool = True
) -> tuple[int, dict[str, list[int]]]:
    """(n, support counts per question) of valid reports, each counted once as the service does
    (see answer_rows for the checks), in the store's layout: a question with a condition has
    one more count, of the reports that hold it (stats/asked.py)."""
    support = {qid: [0] * size for qid, size in tally_sizes(survey).items()}
    slots = gated(survey)
    directs = direct_slots(survey)
    n = 0
    for answers in answer_rows(survey, reports, verify=verify):
        n += 1
        if directs:  # split ballots: the direct arm counts in its own slots (stats/asked.py)
            arms = arms_of(answers)
            chosen = {
                qid: q.arm_question(arms.get(qid)).supports(answers[qid])
                for qid, q in survey.questions.items()
                if qid in answers
            }
            for qid, found in report_slots(survey, chosen, arms, slots, directs).items():
                for v in found:
                    support[qid][v] += 1
            continue
        for qid, question in survey.questions.items():
            if qid not in answers:  # skipped (a report holds exactly the relevant questions)
                continue
            counts = support[qid]
            for v in question.supports(answers[qid]):
                counts[v] += 1
            if qid in slots:
                counts[slots[qid]] += 1
    return n, support


def analyze(
    survey: Survey | Mapping[str, Any],
    reports: Iterable[Any] | str | bytes,
    confidence: float = 0.95,
    simultaneous: bool = False,
    *,
    verify: bool = True,
    candidates: Sequence[str] | str = (),
    weights: Any = None,
    weighted: bool = True,
) -> SurveyResults:
    """The results of a list of reports (e.g. a reports.jsonl export), as the service gives
    them; `verify=False` takes noisy answers from elsewhere (see answer_rows); `candidates` adds
    rows to text questions, as `?candidates=` does; weighted by the survey's design and
    `weights` (a weights table or its CSV) unless `weighted` is false (stats/designed.py)."""
    from deniable.aggregator.stats.designed import weigh_results, weighting_of

    z_value(confidence)
    resolved = as_survey(survey)
    extra = parse_candidates(candidates)
    weighting = weighting_of(resolved, weights, weighted)
    if weighting is not None and not isinstance(reports, str | bytes | list | tuple):
        reports = list(reports)  # read twice: the tallies, then the weighted estimates
    n, support = tally(resolved, reports, verify=verify)
    doc = results_document(
        resolved, n, support, confidence=confidence, simultaneous=simultaneous, candidates=extra
    )
    if weighting is None:
        return doc
    return weigh_results(
        resolved,
        reports,
        doc,
        weighting.table,
        confidence=confidence,
        simultaneous=simultaneous,
        verify=verify,
        candidates=extra,
    )
