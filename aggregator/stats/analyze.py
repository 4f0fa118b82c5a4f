"""Offline re-analysis: tally exported reports and estimate exactly as the service does."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from deniable.aggregator.stats.asked import direct_slots, gated, report_slots, tally_sizes
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import (
    check_decoders,
    parse_candidates,
    results_document,
    z_value,
)
from deniable.aggregator.stats.limits import OFFLINE_LIMITS, Limits
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
        if type(item) is dict:  # the common case, tested first
            yield line, item
            continue
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


def _pattern_key(answers: Any, arms: Any) -> Any:
    """A key equal for two reports exactly when their answers and arms are the same JSON (so
    one check serves both): their items and each value's type (True == 1 in Python, not in
    JSON). Unhashable when a value is a list or an object (see _json_key); None when the
    report cannot share a check (it is checked alone, and refused)."""
    if type(answers) is not dict or not (arms is None or type(arms) is dict):
        return None
    key = (tuple(answers.items()), tuple(map(type, answers.values())))
    return key if arms is None else (*key, tuple(arms.items()), tuple(map(type, arms.values())))


def _json_key(answers: Any, arms: Any) -> Hashable | None:
    """The key of answers holding a list or an object (a text question's sketch answer): their
    canonical JSON; None when they are not JSON."""
    try:
        return canonical_json([answers, arms])
    except (TypeError, ValueError):
        return None


#: Distinct answer patterns whose checks answer_rows remembers at once (then it starts over),
#: and the bytes of their answers (text answers' sketches are a kilobyte each, and nearly all
#: distinct: the count alone would let 100,000 of them hold hundreds of megabytes).
PATTERNS_REMEMBERED = 100_000
PATTERN_BYTES_REMEMBERED = 8 * 2**20


def answers_bytes(answers: Mapping[str, Any]) -> int:
    """About the bytes an answers object holds (its strings, 64 per value besides): what the
    pattern memo and the pattern lists count against their byte bounds."""
    total = 64 * len(answers)
    for value in answers.values():
        if type(value) is str:
            total += len(value)
        elif type(value) is list:
            total += sum(len(x) if type(x) is str else 8 for x in value)
    return total


def _checked_rows(
    survey: Survey, reports: Iterable[Any] | str | bytes, verify: bool
) -> Iterator[Mapping[str, Any]]:
    """The checked answers of each valid report, once per report, in order (see answer_rows):
    each distinct pattern of answers and arms is checked once (up to PATTERNS_REMEMBERED
    patterns at a time) and comes back as one object, so the work grows with the distinct
    patterns, and signatures (with `verify`) with the reports."""
    survey_hash = survey.hash
    seen_ids: dict[str, bytes] = {}  # report_id -> sha256 of the canonical report
    seen_keys: set[str] = set()
    checked_of: dict[Hashable, Mapping[str, Any]] = {}
    remembered = 0  # bytes of the remembered patterns (their keys and answers: twice theirs)

    def check(answers: Any, arms: Any) -> Mapping[str, Any]:
        nonlocal remembered
        key = _pattern_key(answers, arms)
        try:
            found = checked_of.get(key)
        except TypeError:  # unhashable: a list or an object among the answers
            key = _json_key(answers, arms)
            found = checked_of.get(key)
        if found is None:
            found = check_answers(survey, answers, arms)
            if key is not None:
                size = 2 * answers_bytes(found)
                if (
                    len(checked_of) >= PATTERNS_REMEMBERED
                    or remembered + size > PATTERN_BYTES_REMEMBERED
                ):
                    checked_of.clear()
                    remembered = 0
                checked_of[key] = found
                remembered += size
        return found

    for line, raw in _records(reports):
        if not verify:
            if type(raw) is dict and type(answers := raw.get("answers")) is dict:
                # The common case in line: answers seen before (and their arms, if any).
                arms = raw.get("arms")
                try:
                    found = checked_of.get(
                        (tuple(answers.items()), tuple(map(type, answers.values())))
                        if arms is None
                        else _pattern_key(answers, arms)
                    )
                except TypeError:  # a list or an object among the answers: check() says
                    found = None
                if found is not None:
                    yield found
                    continue
            try:
                if type(raw) is not dict or "answers" not in raw:
                    raise ReportError('expected an object with "answers"')
                yield check(raw["answers"], raw.get("arms"))
            except ReportError as exc:
                raise ReportError(f"{_where(line, raw)}: {exc}") from None
            continue
        try:
            # parse_report(report, survey) with the survey hash computed once, not per report.
            report = parse_report(raw, None, verify=False)
            if report["survey"] != survey.id:
                raise ReportError(f"survey: report is for {report['survey']!r}, not {survey.id!r}")
            if report["survey_hash"].lower() != survey_hash:
                raise ReportError("survey_hash: does not match the survey as published")
            checked = check(report["answers"], report.get("arms"))
            verify_report(report)
        except ReportError as exc:
            raise ReportError(f"{_where(line, raw)}: {exc}") from None
        rid = report["report_id"]
        body = hashlib.sha256(canonical_json(report)).digest()
        if rid in seen_ids:
            if seen_ids[rid] == body:
                continue
            raise ReportError(f"{_where(line, raw)}: report_id already used by a different report")
        if report["public_key"] in seen_keys:
            raise ReportError(f"{_where(line, raw)}: a second report from the same public key")
        seen_ids[rid] = body
        seen_keys.add(report["public_key"])
        yield checked


def _where(line: int, raw: Any) -> str:
    """Which report an error is about: its line, and its report_id when it has one."""
    rid = raw.get("report_id") if isinstance(raw, dict) else None
    return f"report on line {line}" + (f" ({rid})" if isinstance(rid, str) else "")


def answer_rows(
    survey: Survey, reports: Iterable[Any] | str | bytes, *, verify: bool = True
) -> Iterator[Mapping[str, Any]]:
    """The checked noisy answers of each valid report, once per report, in order.

    With `verify`, every report is checked like ingestion checks it (structure, survey and hash,
    answers, signature) and a report sent again (same report_id, same content) counts once; a
    different report under a seen report_id or public key is an error, since the service would
    never have stored both. With `verify=False` (answers from another study) a report may be
    just {"answers": {...}}: its answers are checked against the survey, nothing else. Reports
    with the same answers share one check (and one answers object).
    A bad report raises ReportError naming its line (and report_id)."""
    return _checked_rows(survey, reports, verify)


#: Reports counted at once when reports are streamed into answer patterns, and the bytes of the
#: distinct answers one list may hold (bound the memory; see PATTERN_BYTES_REMEMBERED).
REPORTS_AT_ONCE = 100_000
PATTERN_BYTES_AT_ONCE = 8 * 2**20


def answer_patterns(
    survey: Survey, reports: Iterable[Any] | str | bytes, *, verify: bool = True
) -> Iterator[list[tuple[Mapping[str, Any], int]]]:
    """The valid reports (see answer_rows) as their distinct checked answers and how many sent
    each: a list per REPORTS_AT_ONCE reports (a pattern may come once per list), so what
    folds them holds memory flat in the reports and works in distinct patterns."""
    rows = _checked_rows(survey, reports, verify)
    while True:
        # One object per pattern (see _checked_rows), alive while the list is made: its id
        # tells the patterns apart.
        answers_of: dict[int, Mapping[str, Any]] = {}
        counts: dict[int, int] = {}
        held = 0
        for answers in islice(rows, REPORTS_AT_ONCE):
            key = id(answers)
            n = counts.get(key)
            if n is None:
                answers_of[key] = answers
                counts[key] = 1
                held += answers_bytes(answers)
                if held > PATTERN_BYTES_AT_ONCE:
                    break
            else:
                counts[key] = n + 1
        if not counts:
            return
        yield [(answers_of[key], n) for key, n in counts.items()]


class StoredAnswers:
    """A survey's stored reports for the analyses, as the store's counts of their distinct
    answer patterns (kept in the reports' transactions: the reports are not read); the
    reports were checked and verified when they arrived."""

    def __init__(self, store: Any, survey_id: str):
        self.store = store
        self.survey_id = survey_id

    def counts(self, question_ids: Sequence[str]) -> Mapping[tuple[Any, ...], int]:
        """Reports per combination of noisy answers to these questions."""
        return self.store.answer_counts(self.survey_id, list(question_ids))

    def pairs(
        self, survey: Survey, question_ids: Sequence[str]
    ) -> Iterator[tuple[tuple[Any, ...], int]]:
        """answer_counts' (combination, count) pairs, streamed from the database; a text
        question is refused (patterns leave its sketch answers out)."""
        for qid in question_ids:
            if qid in survey.questions and survey.questions[qid].kind.rows == "candidates":
                raise AnalysisError(
                    f"{qid}: a text question's answers are analysed from its sketch in the "
                    "results, not per report"
                )
        return self.store.iter_answer_counts(self.survey_id, list(question_ids))


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
        found: Mapping[tuple[Any, ...], int] = dict(reports.pairs(survey, wanted))
    else:
        found = Counter()
        for chunk in answer_patterns(survey, reports, verify=verify):
            for answers, count in chunk:
                found[_combination(answers, wanted)] += count
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


def _counted_in_batches(
    survey: Survey, reports: Iterable[Any] | str | bytes, question_ids: Sequence[str], verify: bool
) -> Iterator[tuple[tuple[Any, ...], int]]:
    """(combination, count) pairs, counted REPORTS_AT_ONCE reports at a time (a combination
    may come once per batch)."""
    for chunk in answer_patterns(survey, reports, verify=verify):
        batch: Counter[tuple[Any, ...]] = Counter()
        for answers, count in chunk:
            batch[_combination(answers, question_ids)] += count
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
        pairs = reports.pairs(survey, wanted)
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
    for chunk in answer_patterns(survey, reports, verify=verify):
        for answers, count in chunk:
            n += count
            if directs:  # split ballots: the direct arm counts in its own slots (stats/asked.py)
                arms = arms_of(answers)
                chosen = {
                    qid: q.arm_question(arms.get(qid)).supports(answers[qid])
                    for qid, q in survey.questions.items()
                    if qid in answers
                }
                for qid, found in report_slots(survey, chosen, arms, slots, directs).items():
                    for v in found:
                        support[qid][v] += count
                continue
            for qid, question in survey.questions.items():
                if qid not in answers:  # skipped (a report holds exactly the relevant questions)
                    continue
                counts = support[qid]
                for v in question.supports(answers[qid]):
                    counts[v] += count
                if qid in slots:
                    counts[slots[qid]] += count
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
    limits: Limits = OFFLINE_LIMITS,
) -> SurveyResults:
    """The results of a list of reports (e.g. a reports.jsonl export), as the service gives
    them; `verify=False` takes noisy answers from elsewhere (see answer_rows); `candidates` adds
    rows to text questions, as `?candidates=` does, within `limits` (checked before a report
    is read); weighted by the survey's design and `weights` (a weights table or its CSV)
    unless `weighted` is false (stats/designed.py)."""
    from deniable.aggregator.stats.designed import weigh_results, weighting_of

    z_value(confidence)
    resolved = as_survey(survey)
    extra = parse_candidates(candidates)
    check_decoders(resolved, extra, limits)
    weighting = weighting_of(resolved, weights, weighted)
    if weighting is not None and not isinstance(reports, str | bytes | list | tuple):
        reports = list(reports)  # read twice: the tallies, then the weighted estimates
    n, support = tally(resolved, reports, verify=verify)
    doc = results_document(
        resolved,
        n,
        support,
        confidence=confidence,
        simultaneous=simultaneous,
        candidates=extra,
        limits=limits,
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
