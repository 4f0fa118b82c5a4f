"""Estimation from tallies: unbiased frequencies, standard errors, intervals and a display share.

Everything here reads only n and the support counts, so its cost does not grow with n. The
formulas are docs/statistics.md's: per option v with its own (p*, q*),

    lambda = C_v / n,   estimate = (lambda - q*) / (p* - q*),
    stderr = sqrt(lambda (1 - lambda) / ((n - 1) (p* - q*)^2))    (the sampling term included),

the interval is the Wilson score interval for lambda mapped through the same affine map and
clipped to [0, 1], and `share` is the maximum-likelihood distribution (EM) for display.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from deniable.aggregator.stats.asked import condition_of, direct_counts, is_gated, split
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, LimitKind, Limits, check
from deniable.aggregator.stats.results import CSV_COLUMNS as CSV_COLUMNS
from deniable.aggregator.stats.results import SurveyResults
from deniable.aggregator.stats.sketch_estimate import (
    DECODERS,
    SketchDecodeError,
    decoder_cells,
    rappor_selection,
    touched_cells,
)
from deniable.shared.sketches import RAPPOR, Sketch
from deniable.shared.survey import Question, Survey
from deniable.shared.text import MAX_TEXT_ANSWER, normalize_text

#: EM stops when no entry of the share moves by more than this, or after MAX_ROUNDS rounds.
EM_TOLERANCE = 1e-10
EM_MAX_ROUNDS = 10_000


def z_value(confidence: float, m: int = 1) -> float:
    """The two-sided normal quantile for `confidence`, Bonferroni-corrected over m estimates."""
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0 < confidence < 1
    ):
        raise ValueError(
            f"confidence: expected a number strictly between 0 and 1, got {confidence!r}"
        )
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m: expected a positive number of estimates, got {m!r}")
    return upper_quantile((1.0 - float(confidence)) / m / 2.0)


def upper_quantile(tail: float) -> float:
    """The standard normal z with P(Z > z) = tail. Far in the tail 1 - tail rounds to 1.0
    (confidence 0.9999999999999999), so there z comes from the lower tail instead."""
    if tail > 1e-6:
        return NormalDist().inv_cdf(1.0 - tail)
    return -NormalDist().inv_cdf(tail)


def free_estimates(question: Question, extra: Sequence[str] = ()) -> int:
    """How many estimates of a question are free: k, but 1 for a binary question (no = 1 - yes)
    and for an integer question (its mean), and a text question's candidates."""
    if question.kind.rows == "candidates":
        return max(1, len(text_candidates(question, extra)))
    return 1 if question.kind.rows in ("yes", "mean") else question.k


#: Candidates a results request may add (`?candidates=a,b`), on top of the survey's own.
MAX_EXTRA_CANDIDATES = 50


def parse_candidates(raw: str | Sequence[str] | None) -> tuple[str, ...]:
    """Ad-hoc candidates (comma-separated text or a list): at most MAX_EXTRA_CANDIDATES, each
    at most MAX_TEXT_ANSWER characters as given; normalized, blank ones dropped, distinct.
    ValueError says what is wrong."""
    if raw is None:
        return ()
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    if len(items) > MAX_EXTRA_CANDIDATES:
        raise ValueError(f"candidates: at most {MAX_EXTRA_CANDIDATES} at once, got {len(items)}")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or len(item) > MAX_TEXT_ANSWER:
            raise ValueError(
                f"candidates: each is a word or phrase of at most {MAX_TEXT_ANSWER} characters, "
                f"got {str(item)[:40]!r}"
            )
        text = normalize_text(item)
        if text and text not in out:
            out.append(text)
    return tuple(out)


def text_candidates(question: Question, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The survey's candidates, then the asked-for ones it lacks."""
    own = question.candidates
    return (*own, *(c for c in extra if c not in own))


#: The kind of a results request whose candidates need a decoder over the limit: too large (413),
#: not invalid (422): the candidates are valid (with fewer of them, or a higher limit, the same request
#: works), the request is only larger than this aggregator is set to decode, and the fix is
#: to send a smaller one. 422 stays for candidates no request size makes decodable (a sketch
#: that cannot tell them apart). A new survey over the same limit is a 422 (SurveyError): the
#: document itself must change.
DECODER_LIMIT_KIND: LimitKind = "too-large"


def check_decoder(
    question: Question,
    count: int,
    limits: Limits = DEFAULT_LIMITS,
    kind: LimitKind = DECODER_LIMIT_KIND,
) -> None:
    """LimitError unless `count` candidates of this text question fit max_decoder_cells;
    checked before any decoder is built."""
    sketch = question.randomizer
    cells = decoder_cells(sketch, count)
    check(
        cells,
        limits,
        "max_decoder_cells",
        f"{question.id}: {count:,} candidates, each read at {touched_cells(sketch):,} cells "
        f"of its sketch, need a decoder of {cells:,} cells (candidates x (cells read + "
        "candidates))",
        kind,
    )


def check_decoders(
    survey: Survey,
    extra: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    kind: LimitKind = DECODER_LIMIT_KIND,
) -> None:
    """LimitError unless the decoders of every text question of the survey (its own candidates
    and `extra`) fit max_decoder_cells together: one request builds all of them, so the limit
    bounds a request's memory and time, and a survey's own decoders fit the decoder cache."""
    cells = 0
    for question in survey.questions.values():
        if question.kind.rows == "candidates":
            count = len(text_candidates(question, extra))
            check_decoder(question, count, limits, kind)
            cells += decoder_cells(question.randomizer, count)
    check(
        cells,
        limits,
        "max_decoder_cells",
        f"the survey's text questions need decoders of {cells:,} cells in all (candidates x "
        "(cells read + candidates), summed over its text questions)",
        kind,
    )


def _text_rows(
    question: Question,
    n: int,
    counts: Sequence[int],
    z: float,
    extra: Sequence[str],
    limits: Limits = DEFAULT_LIMITS,
) -> list[dict[str, Any]]:
    """A text question's rows: one per candidate, ranked by estimate (docs/surveys.md: support null,
    share the estimate clipped to [0, 1])."""
    candidates = text_candidates(question, extra)
    if not candidates:
        return []
    sketch = question.randomizer
    assert isinstance(sketch, Sketch)
    check_decoder(question, len(candidates), limits)
    budget = limits.decoder_cache_bytes
    fitted = candidates
    try:
        found = DECODERS.get(sketch, candidates, budget)
    except SketchDecodeError as exc:
        if not isinstance(sketch, RAPPOR) or n == 0:
            raise ValueError(f"{question.id}: {exc}") from None
        # More candidates than the Bloom bits resolve: select first, as the paper does.
        fitted = rappor_selection(sketch, candidates, n, np.asarray(counts))
        found = DECODERS.get(sketch, fitted, budget) if fitted else None
    size = len(fitted)
    if n == 0 or found is None:
        est = stderr = np.full(size, np.nan)
        low, high = np.zeros(size), np.ones(size)
    else:
        est, stderr, low, high = found.estimate(n, np.asarray(counts, dtype=np.float64), z)
    rows = [
        {
            "option": label,
            "support": None,
            "estimate": _num(est[i]),
            "stderr": _num(stderr[i]),
            "ci_low": float(low[i]),
            "ci_high": float(high[i]),
            "count": 0.0 if n == 0 else float(n * est[i]),
            "share": _num(min(max(est[i], 0.0), 1.0)) if n else None,
        }
        for i, label in enumerate(fitted)
    ]
    if n:
        rows.sort(key=lambda row: -row["estimate"])
    # Candidates the selection left out: not detected (zero), with no interval of their own.
    rows += [
        {
            "option": label,
            "support": None,
            "estimate": 0.0,
            "stderr": None,
            "ci_low": 0.0,
            "ci_high": 1.0,
            "count": 0.0,
            "share": 0.0,
        }
        for label in candidates
        if label not in fitted
    ]
    return rows


def option_stats(
    support: np.ndarray, n: np.ndarray | int, p: np.ndarray | float, q: np.ndarray | float, z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, stderr, ci_low, ci_high) arrays for support counts; broadcasts over trials.

    Needs n >= 1; stderr is NaN where n = 1 (the caller turns that into null). Vectorized so the
    statistical tests run the very code the service runs over many simulated tallies at once.
    """
    c = np.asarray(support, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    gap = np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    lam = c / n
    estimate = (lam - q) / gap
    spread = lam * (1.0 - lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = np.sqrt(spread / ((n - 1.0) * gap * gap))
    stderr = np.where(n > 1, stderr, np.nan)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (lam + z2 / (2.0 * n)) / denom
    half = (z / denom) * np.sqrt(spread / n + z2 / (4.0 * n * n))
    low = np.clip(((centre - half) - q) / gap, 0.0, 1.0)
    high = np.clip(((centre + half) - q) / gap, 0.0, 1.0)
    return estimate, stderr, low, high


def em_share(
    support: Sequence[int] | np.ndarray,
    p: float,
    q: float,
    *,
    tolerance: float = EM_TOLERANCE,
    max_rounds: int = EM_MAX_ROUNDS,
) -> np.ndarray:
    """The maximum-likelihood distribution given support counts, by the iterative Bayesian update.

    Exactly docs/statistics.md's: o = C / sum(C), A = (p* - q*) I + q* J, start uniform, repeat
    s_v <- s_v * sum_u A_uv o_u / (A s)_u until no entry moves by more than `tolerance`.
    All-zero counts (possible with oue) carry no information: the share stays uniform.
    """
    c = np.asarray(support, dtype=np.float64)
    k = c.size
    s = np.full(k, 1.0 / k)
    total = c.sum()
    if total <= 0:
        return s
    o = c / total
    gap = p - q
    for _ in range(max_rounds):
        # A s and A^T w without building A: A is gap * I plus q in every entry.
        w = o / (gap * s + q * s.sum())
        new = s * (gap * w + q * w.sum())
        moved = np.max(np.abs(new - s))
        s = new
        if moved <= tolerance:
            break
    return s


def _pair(question: Question) -> tuple[float, float]:
    """(p*, q*) of a pure protocol's options, as floats for the EM."""
    p, q = question.randomizer.option_pairs()[0]
    return float(p), float(q)


def em_shares(
    problems: Sequence[tuple[Sequence[int] | np.ndarray, float, float]],
    *,
    tolerance: float = EM_TOLERANCE,
    max_rounds: int = EM_MAX_ROUNDS,
) -> list[np.ndarray]:
    """em_share of many questions, (counts, p*, q*) each, at once: those with as many options
    iterate together, one numpy call per round for all of them with the same arithmetic per
    row (so the same floats), each stopping when its own entries stop moving. A survey of a
    hundred slowly converging questions then costs about one question's rounds."""
    found: list[np.ndarray] = [np.empty(0)] * len(problems)
    by_size: dict[int, list[int]] = {}
    for i, (counts, _, _) in enumerate(problems):
        by_size.setdefault(len(counts), []).append(i)
    for k, members in by_size.items():
        c = np.array([np.asarray(problems[i][0], dtype=np.float64) for i in members])
        p = np.array([[problems[i][1]] for i in members], dtype=np.float64)
        q = np.array([[problems[i][2]] for i in members], dtype=np.float64)
        s = np.full((len(members), k), 1.0 / k)
        total = c.sum(axis=1, keepdims=True)
        informed = total[:, 0] > 0  # all-zero counts carry no information: uniform
        o = np.divide(c, total, out=np.zeros_like(c), where=total > 0)
        gap = p - q
        rows = np.flatnonzero(informed)
        for _ in range(max_rounds):
            if rows.size == 0:
                break
            now, g, qq = s[rows], gap[rows], q[rows]
            # A s and A^T w without building A: A is gap * I plus q in every entry.
            w = o[rows] / (g * now + qq * now.sum(axis=1, keepdims=True))
            new = now * (g * w + qq * w.sum(axis=1, keepdims=True))
            moved = np.max(np.abs(new - now), axis=1)
            s[rows] = new
            rows = rows[moved > tolerance]
        for row, i in enumerate(members):
            found[i] = s[row]
    return found


def _num(x: float) -> float | None:
    """A plain float for JSON, or None where the value is undefined (never NaN or inf)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _counts(question: Question, n: int, raw: Sequence[int] | None) -> list[int]:
    """The k support counts of a question, checked against n."""
    k = question.k
    if raw is None:
        if n == 0:
            return [0] * k
        raise ValueError(f"{question.id}: no support counts given for n = {n}")
    try:
        counts = [operator.index(c) for c in raw]
    except TypeError:
        raise ValueError(f"{question.id}: support counts must be integers, got {raw!r}") from None
    if len(counts) != k:
        raise ValueError(f"{question.id}: expected {k} support counts, got {len(counts)}")
    if any(not 0 <= c <= n for c in counts):
        raise ValueError(f"{question.id}: every support count must lie in [0, {n}], got {counts}")
    if question.randomizer.one_per_report and sum(counts) != n:
        # Every rr, coins, grr, onebit or plain single answer supports exactly one slot.
        raise ValueError(f"{question.id}: support counts {counts} do not add up to n = {n}")
    return counts


def _exact_estimates(question: Question, n: int, counts: Sequence[int]) -> list[Fraction]:
    """(C_v/n - q*)/(p* - q*) per option with its own pair, in exact arithmetic.

    Exact so the published numbers are the correctly rounded values (0.35 yes with fair coins
    is 0.2, not 0.19999999999999996) and binary no is exactly 1 - yes, as docs/researchers.md says.
    """
    pairs = question.randomizer.option_pairs()
    return [(Fraction(c, n) - q) / (p - q) for c, (p, q) in zip(counts, pairs, strict=True)]


def _row(
    label: str, support: int, f: Fraction | float | None, se: float, low: float, high: float
) -> dict[str, Any]:
    return {
        "option": label,
        "support": int(support),
        "estimate": None if f is None else float(f),
        "stderr": _num(se),
        "ci_low": float(low),
        "ci_high": float(high),
    }


def _mean_row(question: Question, n: int, counts: Sequence[int], z: float) -> dict[str, Any]:
    """An integer question's one row, `mean` (docs/surveys.md): onebit's unbiased mean
    min + (max - min)(lambda - q*)/(p* - q*) with the binary interval scaled, or a plain
    question's sample mean with s / sqrt(n) and a normal interval; clipped to [min, max]."""
    low, high = question.low, question.high
    assert low is not None and high is not None
    width = high - low
    mean: Fraction | None = None
    se, ci = math.nan, (float(low), float(high))
    if n and question.plain:
        values = np.arange(low, high + 1, dtype=np.float64)
        c = np.asarray(counts, dtype=np.float64)
        mean = sum((Fraction(low + i) * int(x) for i, x in enumerate(counts) if x), Fraction(0))
        mean /= n
        if n > 1:
            spread = float(np.sum(c * (values - float(mean)) ** 2)) / (n - 1)
            se = math.sqrt(spread / n)
            ci = (float(mean) - z * se, float(mean) + z * se)
        support = n
    else:
        support = int(counts[1]) if n else 0
        if n:
            p, q = question.randomizer.p_star, question.randomizer.q_star
            mean = low + width * (Fraction(support, n) - q) / (p - q)
            _, s, lo, hi = option_stats(np.float64(support), n, float(p), float(q), z)
            se = float(s) * width
            ci = (low + width * float(lo), low + width * float(hi))
    row = _row("mean", support, mean, se, max(ci[0], low), min(ci[1], high))
    row["count"] = None
    row["share"] = None if mean is None else float(min(max(mean, Fraction(low)), Fraction(high)))
    return row


def question_results(
    question: Question,
    n: int,
    counts: Sequence[int],
    z: float,
    extra: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    share: np.ndarray | None = None,
) -> dict[str, Any]:
    """The results entry of one question from its n and support counts (see results_document);
    `extra` adds candidates to a text question's (within `limits`); `share`, the display share
    when it was already found (em_shares of a whole survey at once)."""
    rows = question.kind.rows
    if rows == "candidates":
        return _entry(question, n, _text_rows(question, n, counts, z, extra, limits))
    if rows == "mean":
        return _entry(question, n, [_mean_row(question, n, counts, z)])
    pairs = question.randomizer.option_pairs()
    c = np.asarray(counts, dtype=np.float64)
    k = question.k
    exact: list[Fraction | None] = [None] * k
    if n == 0:
        stderr = share = np.full(k, np.nan)
        low, high = np.zeros(k), np.ones(k)
    elif rows == "yes":
        exact = list(_exact_estimates(question, n, counts))
        # The interval and stderr of yes; no mirrors them (same stderr, interval 1 - yes's),
        # which is what no's complementary pair (1 - q*, 1 - p*) gives.
        p, q = float(pairs[1][0]), float(pairs[1][1])
        _, se, lo, hi = option_stats(c[1], n, p, q, z)
        stderr = np.array([se, se])
        low, high = np.array([1.0 - hi, lo]), np.array([1.0 - lo, hi])
        yes = min(max(exact[1], Fraction(0)), Fraction(1))
        share = np.array([float(1 - yes), float(yes)])
    elif rows == "marks":
        # Each option is a yes/no of its own (the rows need not sum to 1).
        exact = list(_exact_estimates(question, n, counts))
        p = np.array([float(a) for a, _ in pairs])
        q = np.array([float(b) for _, b in pairs])
        _, stderr, low, high = option_stats(c, n, p, q, z)
        share = np.array([float(min(max(f, Fraction(0)), Fraction(1))) for f in exact])
    else:
        exact = list(_exact_estimates(question, n, counts))
        p = np.array([float(a) for a, _ in pairs])
        q = np.array([float(b) for _, b in pairs])
        _, stderr, low, high = option_stats(c, n, p, q, z)
        # Plain answers are observed as given: their distribution is the sample's own.
        if share is None:
            share = c / n if question.plain else em_share(c, *_pair(question))
    options = []
    for v, label in enumerate(question.options):
        f = exact[v]
        row = _row(label, counts[v], f, stderr[v], low[v], high[v])
        row["count"] = 0.0 if f is None else float(n * f)
        row["share"] = _num(share[v])
        options.append(row)
    return _entry(question, n, options)


def _entry(question: Question, n: int, options: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": question.id,
        "type": question.type,
        "mechanism": question.mechanism,
        "epsilon": None if question.epsilon is None else float(question.epsilon),
        "n": n,
        "p_star": question.p_star,
        "q_star": question.q_star,
        **({"min": question.low, "max": question.high} if question.kind.rows == "mean" else {}),
        "options": options,
    }


def results_document(
    survey: Survey,
    n: int,
    support: Mapping[str, Sequence[int]],
    *,
    confidence: float = 0.95,
    simultaneous: bool = False,
    candidates: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> SurveyResults:
    """The results (docs/researchers.md) from the number of reports and the support counts.

    `candidates` (normalized) adds rows to every text question beside its own candidates;
    every text question's decoder is checked against `limits` before any is built (LimitError,
    kind too-large).

    `support[qid]` holds the k counts by option index (binary: index 0 = reports 0 = "no"),
    then, for a question with a `relevant` condition, the number of reports that asked it: its
    entry's `n`, out of which it is estimated (the sub-population that was asked), and its
    `relevant` says which (docs/statistics.md, "Skipped questions"). A split-ballot question's
    support then ends with its direct arm's counts and direct n (stats/asked.py): its entry is
    estimated from the randomized arm's reports and adds `direct` and `difference`
    (stats/ballot.py; docs/statistics.md, "Split ballot").
    With `simultaneous`, intervals use a Bonferroni level over the question's free estimates:
    alpha/k for a categorical question; none for a binary one, whose single free estimate is
    yes (no = 1 - yes). Edge cases: n = 0 gives null estimate, stderr and share, the interval
    [0, 1] and count 0; n = 1 gives a null stderr (n - 1 = 0) but an estimate and a Wilson
    interval. Every number is a plain float or int (json.dumps works) and never NaN or inf.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n: expected a non-negative integer, got {n!r}")
    z_value(confidence)
    check_decoders(survey, candidates, limits)
    # A question with a condition is estimated on the reports that asked it (stats/asked.py).
    asked, raw = split(survey, n, support)
    counts = {qid: _counts(q, asked[qid], raw[qid]) for qid, q in survey.questions.items()}
    # The maximum-likelihood shares of every randomized categorical question, found together.
    fitted = [
        qid
        for qid, q in survey.questions.items()
        if asked[qid] > 0 and q.kind.rows == "options" and not q.plain
    ]
    shares = dict(
        zip(
            fitted,
            em_shares([(counts[qid], *_pair(survey.questions[qid])) for qid in fitted]),
            strict=True,
        )
    )
    questions = []
    for qid, question in survey.questions.items():
        z = z_value(confidence, free_estimates(question, candidates) if simultaneous else 1)
        entry = question_results(
            question, asked[qid], counts[qid], z, candidates, limits, share=shares.get(qid)
        )
        if is_gated(question):  # the sub-population its estimates are for
            entry["relevant"] = condition_of(question)
        if question.direct_share is not None:  # split ballot: the direct arm and the difference
            from deniable.aggregator.stats.ballot import split_ballot

            direct_n, direct = direct_counts(question, support.get(qid))
            entry.update(split_ballot(entry, question.direct_question, direct_n, direct, z))
        questions.append(entry)
    return SurveyResults(
        {
            "survey": survey.id,
            "survey_hash": survey.hash,
            "n": n,
            "confidence": float(confidence),
            "simultaneous": bool(simultaneous),
            "questions": questions,
        }
    )


def results_csv(doc: Mapping[str, Any]) -> str:
    """The results as CSV, one row per option, in CSV_COLUMNS: SurveyResults.to_csv() of a
    results document (see stats/results.py)."""
    return (doc if isinstance(doc, SurveyResults) else SurveyResults(doc)).to_csv()
