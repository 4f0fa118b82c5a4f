"""Analysis beyond one question at a time: breakdowns by a plain question, and cross-tabs.

`breakdown` estimates a randomized question within each group of a plain question exactly as
`analyze` would on that group's reports alone. `crosstab` estimates the joint distribution of
two questions: with S_a and T_b a respondent's 0/1 "report supports a / b" and (p1, q1),
(p2, q2) the options' pairs, the mean over respondents of
(S_a - q1)(T_b - q2) / ((p1 - q1)(p2 - q2)) is unbiased for the share answering a and b
(the two questions' noise is independent given the answers); its standard error is a mean's.
Both stream the distinct answers (from the database, or counted from the reports) and fold them
into sums a chunk at a time, so their memory is flat in the number of reports and of distinct
noisy answers; they take `verify=False` for answers from another study. With skip logic they
use the reports that hold every question they need and say how many were left out
(`n_skipped`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.aggregator.stats.analyze import answer_count_chunks, as_survey
from deniable.aggregator.stats.asked import is_gated, skipped
from deniable.aggregator.stats.designed import (
    weighted_breakdown,
    weighted_crosstab,
    weighting_of,
)
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import question_results, z_value
from deniable.aggregator.stats.limits import OFFLINE_LIMITS, Limits
from deniable.aggregator.stats.results import Breakdown, Crosstab
from deniable.aggregator.stats.weights_table import WeightTable
from deniable.shared import Survey
from deniable.shared.survey import Question


class UnknownQuestion(AnalysisError):
    """The analysis names a question the survey does not have."""


def _question(survey: Survey, qid: object, role: str) -> Question:
    if not isinstance(qid, str) or qid not in survey.questions:
        known = ", ".join(survey.questions)
        raise UnknownQuestion(
            f"{role}: no question {qid!r} in survey {survey.id!r}; its questions: {known}"
        )
    question = survey.questions[qid]
    if question.kind.rows == "candidates":
        raise AnalysisError(
            f"{role}: {qid!r} is a text question, estimated per candidate from its sketch in "
            "the results; breakdowns and cross-tabs take binary, categorical, integer and "
            "multi questions"
        )
    return question


def skipped_field(survey: Survey, question_ids: Iterable[str], left_out: int) -> dict[str, int]:
    """`{"n_skipped": ...}`, the reports left out because they skipped a question the analysis
    needs, when one of those questions has a condition (docs/researchers.md); nothing for
    questions every report holds, so analyses without skip logic keep their documents."""
    if any(is_gated(survey.questions[qid]) for qid in question_ids):
        return {"n_skipped": left_out}
    return {}


def chi2_sf(x: float, df: int) -> float:
    """P[chi-square(df) > x], exactly for whole df (the regularized upper gamma function)."""
    if x <= 0:
        return 1.0
    half = x / 2.0
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= half / i
            total += term
        return min(1.0, math.exp(-half) * total)
    total = math.erfc(math.sqrt(half))
    for i in range(1, (df + 1) // 2):
        total += math.exp((i - 0.5) * math.log(half) - half - math.lgamma(i + 0.5))
    return min(1.0, total)


def difference_test(
    estimates: list[float], stderrs: list[float], what: str = "share of yes"
) -> dict[str, Any] | None:
    """Wald test that groups share one value: sum of ((f_g - weighted mean) / se_g)^2 against a
    chi-square with (groups - 1) degrees of freedom; None with fewer than two usable groups."""
    usable = [(f, s) for f, s in zip(estimates, stderrs, strict=True) if s and s > 0]
    if len(usable) < 2:
        return None
    weights = [1.0 / (s * s) for _, s in usable]
    mean = sum(w * f for w, (f, _) in zip(weights, usable, strict=True)) / sum(weights)
    statistic = sum(w * (f - mean) ** 2 for w, (f, _) in zip(weights, usable, strict=True))
    df = len(usable) - 1
    return {
        "name": f"Wald chi-square test that every group has the same {what}",
        "statistic": statistic,
        "df": df,
        "p_value": chi2_sf(statistic, df),
    }


def groups_test(target: Question, groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The difference test of a breakdown's groups (those with n > 1), if `target` has one."""
    if target.kind.compared is None:
        return None
    row, what = target.kind.compared
    rows = [entry["options"][row] for entry in groups if entry["n"] > 1]
    return difference_test([o["estimate"] for o in rows], [o["stderr"] for o in rows], what)


#: Cuts a breakdown by a plain integer may take (`--cuts`, `cuts=`): at most this many bands + 1.
MAX_CUTS = 50


@dataclass(frozen=True)
class Grouping:
    """The groups of a breakdown: a plain question's options, or, with `cuts`, bands of a plain
    integer: `< 30`, `30–49`, `≥ 50` for cuts 30 and 50 (docs/analysis.md)."""

    question: Question
    cuts: tuple[int, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        """Each group's label, in order."""
        if not self.cuts:
            return tuple(self.question.options)
        cuts = self.cuts
        labels = [f"< {cuts[0]}"]
        for low, high in zip(cuts, cuts[1:], strict=False):
            labels.append(str(low) if high - 1 == low else f"{low}–{high - 1}")
        labels.append(f"≥ {cuts[-1]}")
        return tuple(labels)

    def index(self, answer: Any) -> int:
        """The group of a plain answer (a report's wire answer to the question)."""
        if self.cuts:
            return bisect.bisect_right(self.cuts, int(answer))
        return self.question.supports(answer)[0]


def grouping(survey: Survey, by: str, cuts: Sequence[int] | None = None) -> Grouping:
    """The groups of a breakdown by plain question `by` (cut into bands at `cuts`, for a plain
    integer), or AnalysisError saying what `by` and `cuts` may be."""
    group = _question(survey, by, "by")
    if not group.plain:
        raise AnalysisError(
            f"by: {by!r} is randomized; group by a plain question (mechanism none), whose "
            "answers are known per report"
        )
    banded = group.low is not None and group.high is not None  # a number: min..max
    if cuts:
        if not banded:
            raise AnalysisError(
                f"cuts: {by!r} is not a plain integer; cuts band a number (age --cuts 30,50), "
                "a categorical question groups by its options"
            )
        given = tuple(cuts)
        if len(given) > MAX_CUTS:
            raise AnalysisError(f"cuts: at most {MAX_CUTS}, got {len(given)}")
        if any(b <= a for a, b in zip(given, given[1:], strict=False)):
            raise AnalysisError(f"cuts: expected increasing whole numbers, got {list(given)}")
        if given[0] <= group.low or given[-1] > group.high:
            raise AnalysisError(
                f"cuts: {by!r} runs from {group.low} to {group.high}; each cut must be above "
                f"{group.low} and at most {group.high}, got {list(given)}"
            )
        return Grouping(group, given)
    if not group.kind.groups:
        raise AnalysisError(
            f"by: {by!r} is a plain {group.type} question; group by a plain binary or "
            "categorical one"
            + (f", or band it with cuts (--cuts {_example_cuts(group)})" if banded else "")
        )
    return Grouping(group)


def _example_cuts(question: Question) -> str:
    """Two cuts inside a number's range, for the message that suggests cutting it."""
    assert question.low is not None and question.high is not None
    span = question.high - question.low
    return f"{question.low + span // 3 + 1},{question.low + 2 * span // 3 + 1}"


def breakdown(
    survey: Survey | Mapping[str, Any],
    reports: Iterable[Any] | str | bytes,
    question: str,
    by: str,
    confidence: float = 0.95,
    *,
    verify: bool = True,
    weights: WeightTable | str | None = None,
    weighted: bool = True,
    limits: Limits = OFFLINE_LIMITS,
    cuts: Sequence[int] | None = None,
) -> Breakdown:
    """The results of randomized `question` within each group of plain question `by` (a plain
    integer cut into bands at `cuts`: `< 30`, `30–49`, `≥ 50`); weighted by the survey's
    design and/or `weights` unless `weighted` is false (stats/designed.py). `limits` is taken
    as by the other analyses; none of them applies to a breakdown (its memory is flat in the
    reports, its cells a question's options by the groups; text questions are refused)."""
    z = z_value(confidence)
    resolved = as_survey(survey)
    target = _question(resolved, question, "question")
    if target.plain:
        raise AnalysisError(
            f"question: {question!r} is plain (sent as answered); break down a randomized question"
        )
    groups_of = grouping(resolved, by, cuts)
    weighting = weighting_of(resolved, weights, weighted)
    if weighting is not None:
        return weighted_breakdown(
            resolved, reports, target, groups_of, weighting, confidence, verify=verify
        )
    labels = groups_of.labels
    n = [0] * len(labels)
    support = [[0] * target.k for _ in labels]
    left_out = 0
    for chunk in answer_count_chunks(
        resolved, reports, (question, by), ROWS_AT_ONCE, verify=verify
    ):
        for (answer, value), count in chunk:
            if answer is None or value is None:  # a question the report skipped
                left_out += count
                continue
            g = groups_of.index(value)
            n[g] += count
            for v in target.supports(answer):
                support[g][v] += count
    entries = [question_results(target, n[g], support[g], z) for g in range(len(labels))]
    groups = [
        {"group": label, "n": n[g], "options": entries[g]["options"]}
        for g, label in enumerate(labels)
    ]
    test = groups_test(target, groups)
    doc = {
        "survey": resolved.id,
        "survey_hash": resolved.hash,
        "question": question,
        "by": by,
        **({"cuts": list(groups_of.cuts)} if groups_of.cuts else {}),
        "confidence": confidence,
        "n": sum(n),
        **skipped_field(resolved, (question, by), left_out),
        "groups": groups,
        "test": test,
    }
    return Breakdown(doc, entries[0])


#: Distinct answer combinations folded at once (breakdown, and crosstab's upper bound).
ROWS_AT_ONCE = 10_000
#: Cells (rows x k1 x k2) of one crosstab chunk's arrays: 8 MB each, a few alive at once.
CROSSTAB_CHUNK_CELLS = 1_000_000


def _pairs(question: Question) -> tuple[np.ndarray, np.ndarray]:
    pairs = question.randomizer.option_pairs()
    return np.array([float(p) for p, _ in pairs]), np.array([float(q) for _, q in pairs])


def crosstab_sums(
    s: np.ndarray,
    t: np.ndarray,
    first: Question,
    second: Question,
    weights: np.ndarray | None = None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(sum of x, sum of x^2) per cell over rows of 0/1 support matrices s [..., rows, k1] and
    t [..., rows, k2], x = (S_a - q1)(T_b - q2) / ((p1 - q1)(p2 - q2)), each row counted
    `weights` times (once by default); leading axes batch. `start` continues the sums of
    earlier rows, added first: chunk by chunk gives the very floats of one pass."""
    p1, q1 = _pairs(first)
    p2, q2 = _pairs(second)
    a = (s - q1) / (p1 - q1)
    b = (t - q2) / (p2 - q2)
    x = a[..., :, :, None] * b[..., :, None, :]
    w = 1.0 if weights is None else weights[..., :, None, None]
    wx = w * x
    terms = (wx, wx * x)
    if start is not None:
        # The running sum as the first row: numpy adds the rows in order along this axis.
        terms = tuple(
            np.concatenate([np.expand_dims(before, -3), rows], axis=-3)
            for before, rows in zip(start, terms, strict=True)
        )
    return terms[0].sum(axis=-3), terms[1].sum(axis=-3)


def crosstab_cells(
    total: np.ndarray, squares: np.ndarray, n: int | np.ndarray, z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, stderr, ci_low, ci_high) per cell from the running sums of n respondents."""
    n = np.asarray(n, dtype=np.float64)[..., None, None] if np.ndim(n) else float(n)
    estimate = total / n
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.maximum(squares - n * estimate * estimate, 0.0) / (n - 1.0)
        stderr = np.sqrt(variance / n)
    low = np.clip(estimate - z * stderr, 0.0, 1.0)
    high = np.clip(estimate + z * stderr, 0.0, 1.0)
    return estimate, stderr, low, high


def crosstab(
    survey: Survey | Mapping[str, Any],
    reports: Iterable[Any] | str | bytes,
    first: str,
    second: str,
    confidence: float = 0.95,
    *,
    verify: bool = True,
    weights: WeightTable | str | None = None,
    weighted: bool = True,
    limits: Limits = OFFLINE_LIMITS,
) -> Crosstab:
    """The joint distribution of two questions: a cell per pair of options (weighted as
    breakdown is). `limits` is taken as by the other analyses; none of them applies, as a
    cross-tab's memory is flat in the reports and its cells are the two questions' options."""
    z = z_value(confidence)
    resolved = as_survey(survey)
    a = _question(resolved, first, "first")
    b = _question(resolved, second, "second")
    if first == second:
        raise AnalysisError("second: cross a question with another one, not with itself")
    for role, q in (("first", a), ("second", b)):
        if not q.kind.crosses:
            raise AnalysisError(
                f"{role}: {q.id!r} is an integer question; a cross-tab joins options, so cross "
                "binary, categorical or multi questions (break a number down by a group instead)"
            )
    if a.plain and b.plain:
        raise AnalysisError(
            "first, second: both are plain; a cross-tab needs at least one randomized question"
        )
    weighting = weighting_of(resolved, weights, weighted)
    if weighting is not None:
        return weighted_crosstab(resolved, reports, a, b, weighting, confidence, verify=verify)
    # Count the distinct pairs of noisy answers, then weigh each pair's terms: a chunk of
    # pairs at a time (a multi question may have about as many distinct answers as reports).
    n = left_out = 0
    # An answer may be missing (None) with skip logic, or a split ballot's direct arm.
    gated = is_gated(a) or is_gated(b) or bool({a.id, b.id} & set(resolved.split))
    total = np.zeros((a.k, b.k))
    squares = np.zeros((a.k, b.k))
    rows = max(1, min(ROWS_AT_ONCE, CROSSTAB_CHUNK_CELLS // (a.k * b.k)))
    sums: tuple[np.ndarray, np.ndarray] | None = None
    for chunk in answer_count_chunks(resolved, reports, (first, second), rows, verify=verify):
        held = chunk
        if gated:
            held = [(pair, count) for pair, count in chunk if not skipped(pair)]
            left_out += sum(count for pair, count in chunk if skipped(pair))
            if not held:
                continue
        s = np.zeros((len(held), a.k))
        t = np.zeros((len(held), b.k))
        for row, ((answer_a, answer_b), _) in enumerate(held):
            s[row, list(a.supports(answer_a))] = 1.0
            t[row, list(b.supports(answer_b))] = 1.0
        weights = np.array([count for _, count in held], dtype=np.float64)
        n += sum(count for _, count in held)
        sums = crosstab_sums(s, t, a, b, weights, sums)
    if sums is not None:
        total, squares = sums
    if n < 2:
        also = f" ({left_out} more skipped one of the two)" if left_out else ""
        raise AnalysisError(f"a cross-tab needs at least 2 reports, got {n}{also}")
    estimate, stderr, low, high = crosstab_cells(total, squares, n, z)
    cells = [
        {
            "first": label_a,
            "second": label_b,
            "estimate": float(estimate[i, j]),
            "stderr": float(stderr[i, j]),
            "ci_low": float(low[i, j]),
            "ci_high": float(high[i, j]),
        }
        for i, label_a in enumerate(a.options)
        for j, label_b in enumerate(b.options)
    ]
    return Crosstab(
        {
            "survey": resolved.id,
            "survey_hash": resolved.hash,
            "first": first,
            "second": second,
            "n": n,
            **skipped_field(resolved, (first, second), left_out),
            "confidence": confidence,
            "cells": cells,
        }
    )
