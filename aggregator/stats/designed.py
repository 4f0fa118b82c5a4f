"""Results, breakdowns and cross-tabs under a survey's sampling design (weighted).

The estimators are stats/weighted.py's; this module reads the answers they need (grouped by the
design's plain questions: a few thousand rows for a million reports), builds the weights (N_h/n_h
from the design's population sizes, a weights table's, or equal; then raked to the design's
margins) and writes the entries in the shapes of the unweighted ones, each option adding `deff`
(docs/statistics.md, "Weights and designs"). Text questions stay unweighted (their sketch is
decoded jointly, not per respondent).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from deniable.aggregator.stats.analyze import (
    StoredAnswers,
    answer_count_chunks,
    answer_patterns,
)
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import free_estimates, question_results, z_value
from deniable.aggregator.stats.results import Breakdown, Crosstab, SurveyResults
from deniable.aggregator.stats.weighted import (
    Estimate,
    Frame,
    linearized,
    normal_interval,
    population_weights,
    rake,
)
from deniable.aggregator.stats.weights_table import WeightTable, parse_weights
from deniable.shared.ballot import DIRECT
from deniable.shared.design import MAX_DESIGN_CELLS, Design, design_cells
from deniable.shared.report import arms_of
from deniable.shared.survey import Question, Survey

if TYPE_CHECKING:
    from deniable.aggregator.stats.joint import Grouping

#: Distinct answer combinations read at once from the store or the reports.
ROWS_AT_ONCE = 50_000


@dataclass(frozen=True)
class Weighting:
    """How estimates are weighted: the survey's design and/or a researcher's weights table."""

    design: Design | None
    table: WeightTable | None = None

    @property
    def questions(self) -> tuple[str, ...]:
        """The plain questions read per report to weigh it."""
        named = (
            *(self.design.questions if self.design else ()),
            *(self.table.questions if self.table else ()),
        )
        return tuple(dict.fromkeys(named))

    def describe(self) -> str:
        """The weighting in a few words ("weighted by ...")."""
        parts = []
        if self.design is not None:
            parts.append(self.design.describe())
        if self.table is not None:
            parts.append(self.table.describe())
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """What the results carry as `weighting`."""
        return {
            "design": None if self.design is None else self.design.to_dict(),
            "weights": None if self.table is None else list(self.table.questions),
            "described": self.describe(),
        }


def weighting_of(
    survey: Survey, table: WeightTable | str | bytes | None = None, weighted: bool = True
) -> Weighting | None:
    """The weighting of an analysis: None when unweighted (no design, no table, or asked so);
    `table` is a weights table or its CSV text."""
    if not weighted:
        return None
    table = table_of(survey, table)
    design = survey.design
    if design is None and table is None:
        return None
    if table is not None:
        named = tuple(dict.fromkeys((*(design.questions if design else ()), *table.questions)))
        cells = design_cells(named, survey.questions)
        if cells > MAX_DESIGN_CELLS:
            raise AnalysisError(
                f"weights: the design and the table's questions have {cells:,} combinations, "
                f"more than {MAX_DESIGN_CELLS:,}; key the weights by fewer questions"
            )
    if table is not None and design is not None and design.population is not None:
        raise AnalysisError(
            "weights: the survey's design sets the weights from its population sizes; a weights "
            "table would replace them: leave the table out, or analyse with weighted=false"
        )
    return Weighting(design, table)


class _Plain:
    """Option indices of plain answers, memoized per question (answers repeat a lot)."""

    def __init__(self, survey: Survey):
        self.survey = survey
        self.memo: dict[tuple[str, Any], int] = {}

    def index(self, qid: str, answer: Any) -> int:
        key = (qid, answer if not isinstance(answer, list) else tuple(answer))
        found = self.memo.get(key)
        if found is None:
            if answer is None:
                raise AnalysisError(
                    f"design: a report has no answer to {qid!r}, which the design needs of "
                    "every report"
                )
            found = self.memo[key] = self.survey.questions[qid].supports(answer)[0]
        return found


def design_weights(
    survey: Survey, weighting: Weighting, keys: np.ndarray, count: np.ndarray
) -> tuple[Frame, np.ndarray, dict[str, Any]]:
    """The frame of grouped respondents and their final weights; keys[rows, j] is the option
    index of weighting.questions[j]."""
    qids = list(weighting.questions)
    design = weighting.design or Design()
    rows = count.shape[0]
    stratum = keys[:, qids.index(design.strata)] if design.strata else np.zeros(rows, np.int64)
    psu = None
    if design.clusters:
        width = len(survey.questions[design.clusters].options)
        psu = stratum * width + keys[:, qids.index(design.clusters)]  # nested in strata
    margins = [keys[:, qids.index(qid)] for qid in (design.rake or {})]
    frame = Frame(count, stratum.astype(np.int64), psu, margins)
    population = None
    if design.population is not None and design.strata:
        population = [design.population[label] for label in survey.questions[design.strata].options]
        base = population_weights(frame, population)
    elif weighting.table is not None:
        table = weighting.table
        at = [qids.index(q) for q in table.questions]
        base = np.empty(rows)
        for r in range(rows):
            key = tuple(int(keys[r, j]) for j in at)
            weight = table.weights.get(key)
            if weight is None:
                labels = ", ".join(
                    f"{q}={survey.questions[q].options[v]}"
                    for q, v in zip(table.questions, key, strict=True)
                )
                raise AnalysisError(
                    f"weights: no row for {labels}, which some reports answered; give every "
                    "combination a weight"
                )
            base[r] = weight
    else:
        base = np.ones(rows)
    frame.base = base
    weights = base
    if design.rake:
        targets = [
            np.array([margin[label] for label in survey.questions[qid].options])
            for qid, margin in design.rake.items()
        ]
        weights, _ = rake(frame, base, targets, list(design.rake))
    options = {
        "population": population if population is not None and psu is None else None,
        "raked": bool(design.rake),
        "srs_without_replacement": population is not None,
    }
    return frame, weights, options


def _combos(
    survey: Survey,
    reports: Any,
    qids: Sequence[str],
    verify: bool,
) -> Iterator[list[tuple[tuple[Any, ...], int]]]:
    yield from answer_count_chunks(survey, reports, tuple(qids), ROWS_AT_ONCE, verify=verify)


def _combination_order(combo: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """A combination's place in the order gather puts them in (a missing answer, None, last;
    one question's answers are all numbers or all strings)."""
    return tuple((value is None, 0 if value is None else value) for value in combo)


def gather(
    survey: Survey,
    weighting: Weighting,
    chunks: Iterable[list[tuple[tuple[Any, ...], int]]],
    extra: int,
) -> tuple[np.ndarray, np.ndarray, list[tuple[Any, ...]]]:
    """(design keys [rows, d], counts, the `extra` analysed answers per row) from combinations
    of (design answers..., analysed answers...): one row per combination, in the combinations'
    order, so that the sums are the same floats however the combinations came (from the
    store's answer patterns or from reports, in any order or chunks)."""
    plain = _Plain(survey)
    qids = weighting.questions
    merged: dict[tuple[Any, ...], int] = {}
    for chunk in chunks:
        for combo, count in chunk:
            merged[combo] = merged.get(combo, 0) + count
    keys: list[list[int]] = []
    counts: list[int] = []
    answers: list[tuple[Any, ...]] = []
    for combo in sorted(merged, key=_combination_order):
        keys.append([plain.index(q, a) for q, a in zip(qids, combo[: len(qids)], strict=True)])
        counts.append(merged[combo])
        answers.append(tuple(combo[len(qids) : len(qids) + extra]))
    if not counts:
        raise AnalysisError("no reports to weigh yet")
    return (
        np.array(keys, dtype=np.int64).reshape(len(counts), len(qids)),
        np.array(counts, dtype=np.float64),
        answers,
    )


def _supports(question: Question, answers: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(0/1 support matrix [rows, k], answered mask) of a question's noisy answers."""
    s = np.zeros((len(answers), question.k))
    answered = np.ones(len(answers))
    memo: dict[Any, tuple[int, ...]] = {}
    for r, answer in enumerate(answers):
        if answer is None:
            answered[r] = 0.0
            continue
        key = tuple(answer) if isinstance(answer, list) else answer
        found = memo.get(key)
        if found is None:
            found = memo[key] = tuple(question.supports(answer))
        s[r, list(found)] = 1.0
    return s, answered


def _unbiased(question: Question, s: np.ndarray) -> np.ndarray:
    """Per respondent unbiased estimates: z = (S - q*)/(p* - q*) per option, or an integer
    question's value (plain) or min + (max - min) z (onebit)."""
    if question.kind.rows == "mean":
        low, high = question.low, question.high
        assert low is not None and high is not None
        if question.plain:
            return (low + s @ np.arange(question.k, dtype=np.float64))[:, None]
        p, q = float(question.randomizer.p_star), float(question.randomizer.q_star)
        return (low + (high - low) * (s[:, 1] - q) / (p - q))[:, None]
    pairs = question.randomizer.option_pairs()
    p = np.array([float(a) for a, _ in pairs])
    q = np.array([float(b) for _, b in pairs])
    return (s - q) / (p - q)


def _num(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def weighted_entry(
    question: Question, counts: Sequence[int], n: int, found: Estimate, z: float
) -> dict[str, Any]:
    """The results entry of a question from its weighted estimate: the unweighted entry's
    shape (support counts as counted), estimates, stderr, normal intervals, count n * estimate,
    share the estimates clipped (and rescaled to sum to 1 for a single-choice question) and
    each option's `deff`."""
    entry = question_results(question, n, list(counts), z)
    if n == 0:
        for row in entry["options"]:
            row["deff"] = None
        return entry
    if question.kind.rows == "mean":
        row = entry["options"][0]
        low, high = float(question.low or 0), float(question.high or 0)
        mean, se = float(found.mean[0]), float(found.stderr[0])
        ci = normal_interval(mean, se, z, low, high)
        row.update(
            estimate=_num(mean),
            stderr=_num(se) if n > 1 else None,
            ci_low=ci[0],
            ci_high=ci[1],
            share=_num(min(max(mean, low), high)),
            deff=_num(found.deff[0]),
        )
        return entry
    clipped = np.clip(found.mean, 0.0, 1.0)
    if question.kind.rows == "options" and clipped.sum() > 0:
        clipped = clipped / clipped.sum()
    for v, row in enumerate(entry["options"]):
        estimate, se = float(found.mean[v]), float(found.stderr[v])
        ci = normal_interval(estimate, se, z)
        row.update(
            estimate=_num(estimate),
            stderr=_num(se) if n > 1 else None,
            ci_low=ci[0],
            ci_high=ci[1],
            count=_num(n * estimate),
            share=_num(clipped[v]),
            deff=_num(found.deff[v]),
        )
    return entry


def _estimate(
    question: Question,
    frame: Frame,
    weights: np.ndarray,
    options: dict[str, Any],
    answers: Sequence[Any],
    domain: np.ndarray | None = None,
) -> tuple[list[int], int, Estimate]:
    s, answered = _supports(question, answers)
    mask = answered if domain is None else answered * domain
    counts = np.rint((frame.count * mask) @ s).astype(np.int64).tolist()
    found = linearized(frame, weights, _unbiased(question, s), mask, **options)
    return counts, found.n, found


def _per_question_chunks(
    survey: Survey, reports: Any, weighting: Weighting, targets: Sequence[str], verify: bool
) -> dict[str, list[list[tuple[tuple[Any, ...], int]]]]:
    """Combinations of (design answers, one question's answer) for every target question:
    one database query each, or one pass over the reports for all of them."""
    qids = weighting.questions
    if isinstance(reports, StoredAnswers):
        return {qid: list(_combos(survey, reports, (*qids, qid), verify)) for qid in targets}
    counters: dict[str, Counter[tuple[Any, ...]]] = {qid: Counter() for qid in targets}
    for chunk in answer_patterns(survey, reports, verify=verify):
        for answers, count in chunk:
            design = tuple(answers.get(q) for q in qids)
            arms = arms_of(answers)  # a split ballot's direct answers: left out, as answer_counts
            for qid in targets:
                answer = answers.get(qid) if arms.get(qid) != DIRECT else None
                key = (*design, tuple(answer) if isinstance(answer, list) else answer)
                counters[qid][key] += count
    return {qid: [list(counter.items())] for qid, counter in counters.items()}


def weighted_results(
    survey: Survey,
    reports: Any,
    doc: SurveyResults,
    weighting: Weighting,
    *,
    confidence: float = 0.95,
    simultaneous: bool = False,
    verify: bool = True,
    candidates: Sequence[str] = (),
) -> SurveyResults:
    """The results `doc` (unweighted, from the tallies) with every question but text ones
    weighted, and `weighting` saying how."""
    targets = [qid for qid, q in survey.questions.items() if q.kind.rows != "candidates"]
    chunks = _per_question_chunks(survey, reports, weighting, targets, verify)
    out = doc.to_dict()
    total = None
    for i, entry in enumerate(out["questions"]):
        qid = entry["id"]
        if qid not in chunks:
            continue
        question = survey.questions[qid]
        if not any(chunks[qid]):  # no reports yet: nothing to weigh
            for row in out["questions"][i]["options"]:
                row["deff"] = None
            continue
        keys, count, answers = gather(survey, weighting, chunks[qid], 1)
        frame, weights, options = design_weights(survey, weighting, keys, count)
        total = int(count.sum())
        z = z_value(confidence, free_estimates(question, candidates) if simultaneous else 1)
        counts, n, found = _estimate(question, frame, weights, options, [a[0] for a in answers])
        weighted = weighted_entry(question, counts, n, found, z)
        for key in entry:  # keep what other parts of the results added (relevant, direct...)
            if key not in weighted:
                weighted[key] = entry[key]
        out["questions"][i] = weighted
    if total is not None:
        out["n"] = total
    out["weighting"] = weighting.to_dict()
    return SurveyResults(out)


def weighted_breakdown(
    survey: Survey,
    reports: Any,
    target: Question,
    grouping: Grouping,
    weighting: Weighting,
    confidence: float,
    *,
    verify: bool = True,
) -> Breakdown:
    """A breakdown whose groups are domains of the design (svyby(~z, ~by, design, svymean)):
    the options of a plain question, or bands of a plain integer (joint.Grouping)."""
    from deniable.aggregator.stats.joint import groups_test

    z = z_value(confidence)
    group = grouping.question
    chunks = _combos(survey, reports, (*weighting.questions, target.id, group.id), verify)
    keys, count, answers = gather(survey, weighting, chunks, 2)
    frame, weights, options = design_weights(survey, weighting, keys, count)
    by = np.array([-1 if a[1] is None else grouping.index(a[1]) for a in answers], dtype=np.int64)
    groups = []
    entries = []
    for g, label in enumerate(grouping.labels):
        counts, n, found = _estimate(
            target, frame, weights, options, [a[0] for a in answers], (by == g).astype(float)
        )
        entry = weighted_entry(target, counts, n, found, z)
        entries.append(entry)
        groups.append({"group": label, "n": n, "options": entry["options"]})
    test = groups_test(target, groups)
    doc = {
        "survey": survey.id,
        "survey_hash": survey.hash,
        "question": target.id,
        "by": group.id,
        **({"cuts": list(grouping.cuts)} if grouping.cuts else {}),
        "confidence": confidence,
        "n": int(count.sum()),
        "groups": groups,
        "test": test,
        "weighting": weighting.to_dict(),
    }
    return Breakdown(doc, entries[0])


def weighted_crosstab(
    survey: Survey,
    reports: Any,
    a: Question,
    b: Question,
    weighting: Weighting,
    confidence: float,
    *,
    verify: bool = True,
) -> Crosstab:
    """A cross-tab whose cells are weighted means of the per-respondent products
    (S_a - q1)(T_b - q2)/((p1 - q1)(p2 - q2)), with the design's linearized variance."""
    z = z_value(confidence)
    chunks = _combos(survey, reports, (*weighting.questions, a.id, b.id), verify)
    keys, count, answers = gather(survey, weighting, chunks, 2)
    frame, weights, options = design_weights(survey, weighting, keys, count)
    s, ok_a = _supports(a, [x[0] for x in answers])
    t, ok_b = _supports(b, [x[1] for x in answers])
    za, zb = _unbiased(a, s), _unbiased(b, t)
    y = (za[:, :, None] * zb[:, None, :]).reshape(frame.rows, a.k * b.k)
    found = linearized(frame, weights, y, ok_a * ok_b, **options)
    if found.n < 2:
        raise AnalysisError(f"a cross-tab needs at least 2 reports, got {found.n}")
    cells = []
    for i, label_a in enumerate(a.options):
        for j, label_b in enumerate(b.options):
            c = i * b.k + j
            estimate, se = float(found.mean[c]), float(found.stderr[c])
            low, high = normal_interval(estimate, se, z)
            cells.append(
                {
                    "first": label_a,
                    "second": label_b,
                    "estimate": estimate,
                    "stderr": se,
                    "ci_low": low,
                    "ci_high": high,
                    "deff": _num(found.deff[c]),
                }
            )
    return Crosstab(
        {
            "survey": survey.id,
            "survey_hash": survey.hash,
            "first": a.id,
            "second": b.id,
            "n": found.n,
            "confidence": confidence,
            "cells": cells,
            "weighting": weighting.to_dict(),
        }
    )


def table_of(survey: Survey, weights: WeightTable | str | bytes | None) -> WeightTable | None:
    """A weights table given as a parsed table or its CSV text (None for none)."""
    if weights is None or isinstance(weights, WeightTable):
        return weights
    if not weights:
        return None
    return parse_weights(weights, survey)


def weigh_results(
    survey: Survey,
    reports: Any,
    doc: SurveyResults,
    weights: WeightTable | str | bytes | None = None,
    weighted: bool = True,
    *,
    confidence: float = 0.95,
    simultaneous: bool = False,
    verify: bool = True,
    candidates: Sequence[str] = (),
) -> SurveyResults:
    """The results weighted by the survey's design and `weights` (a table or its CSV), or `doc`
    as it is when there is nothing to weigh by or `weighted` is false."""
    weighting = weighting_of(survey, weights, weighted)
    if weighting is None:
        return doc
    return weighted_results(
        survey,
        reports,
        doc,
        weighting,
        confidence=confidence,
        simultaneous=simultaneous,
        verify=verify,
        candidates=candidates,
    )
