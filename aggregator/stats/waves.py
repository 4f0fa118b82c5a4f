"""A series of waves: per-wave estimates, changes between waves and a linear trend.

Each wave is a survey of its own, estimated from its own tallies exactly as any survey
(stats/estimate.py) with the chained channel (p*, q*) of its repeated questions
(shared/longitudinal.py): the unbiased estimate, its standard error, the Wilson interval and the
maximum-likelihood (IBU) share. Within a wave the reports come from distinct respondents, so
those are exact as they stand.

Across waves the same people answer with the same memo, so the wave estimates are positively
correlated (docs/statistics.md, "Waves"): the covariance of two waves' estimates is the truth's
persistence plus the memo's variance, both >= 0. The reports cannot be linked across waves (a
fresh key per wave, by design), so that covariance cannot be estimated; this module uses the
largest variance any non-negative correlation between the waves allows:

    change  d = f_t - f_s           Var <= se_s^2 + se_t^2
    trend   b = sum_t c_t f_t       Var <= (sum_{c_t > 0} c_t se_t)^2 + (sum_{c_t < 0} |c_t| se_t)^2

with c_t = (t - mean t) / sum (t - mean t)^2, the ordinary least-squares slope of the wave
estimates on the wave numbers (per wave). The bound is attained by correlation 1 between waves
on the same side of the mean wave and 0 across, so no non-negative correlation exceeds it; for
a change it is the independence variance. Intervals are estimate +- z * stderr.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.aggregator.stats.estimate import em_share, option_stats, z_value
from deniable.aggregator.stats.series_results import SeriesResults
from deniable.shared.mechanisms import Mechanism
from deniable.shared.questions import QUESTION_TYPES

#: At most this many waves in a series' results (checked before any work).
MAX_WAVES = 1000
#: The name of the variance of changes and trends, as docs/statistics.md explains it.
VARIANCE = "largest under non-negative correlation between waves"
#: Results rows whose estimates are followed across waves: a binary question's free estimate
#: is yes (no = 1 - yes); a text question's candidates are not followed.
_FOLLOWED = {"yes", "options", "marks", "mean"}


@dataclass(frozen=True)
class Wave:
    """One wave of a series: its number (>= 1), its survey's id and that survey's results
    JSON (stats/estimate.py's results_document(...).to_dict())."""

    wave: int
    survey: str
    results: Mapping[str, Any]


def wave_estimates(
    mechanism: Mechanism, n: int, counts: Sequence[int], confidence: float = 0.95
) -> dict[str, np.ndarray]:
    """One question's per-option estimates in one wave from its n and support counts with the
    chained (p*, q*): `estimate` (unbiased), `stderr`, `ci_low`/`ci_high` (Wilson) and `share`
    (the IBU maximum-likelihood fit of the chained channel; NaN for a binary question's, which
    is the clipped estimate). The same formulas as results_document; n >= 1."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: expected a positive number of reports, got {n!r}")
    if len(counts) != mechanism.k:
        raise ValueError(f"counts: expected {mechanism.k} support counts, got {len(counts)}")
    z = z_value(confidence)
    c = np.asarray(counts, dtype=np.float64)
    pairs = mechanism.option_pairs()
    p = np.array([float(a) for a, _ in pairs])
    q = np.array([float(b) for _, b in pairs])
    estimate, stderr, low, high = option_stats(c, n, p, q, z)
    if mechanism.binary:
        share = np.clip(estimate, 0.0, 1.0)
    else:
        share = em_share(c, float(mechanism.p_star), float(mechanism.q_star))
    return {
        "estimate": estimate,
        "stderr": stderr,
        "ci_low": low,
        "ci_high": high,
        "share": share,
    }


def change_stats(
    est_a: np.ndarray | float,
    se_a: np.ndarray | float,
    est_b: np.ndarray | float,
    se_b: np.ndarray | float,
    z: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(change, stderr, low, high) of est_b - est_a; broadcasts over simulated trials.

    stderr = sqrt(se_a^2 + se_b^2): exact for independent waves and an upper bound for any
    non-negative covariance, which memoization and a persistent true value give."""
    d = np.asarray(est_b, dtype=np.float64) - np.asarray(est_a, dtype=np.float64)
    se = np.hypot(np.asarray(se_a, dtype=np.float64), np.asarray(se_b, dtype=np.float64))
    return d, se, d - z * se, d + z * se


def trend_coefficients(waves: Sequence[int]) -> np.ndarray:
    """c_t with slope = sum_t c_t f_t: the OLS slope of the estimates on the wave numbers."""
    t = np.asarray(waves, dtype=np.float64)
    if t.size < 2 or np.unique(t).size != t.size:
        raise ValueError(f"waves: a trend needs at least two distinct waves, got {list(waves)}")
    centred = t - t.mean()
    return centred / float(np.sum(centred * centred))


def trend_stats(
    waves: Sequence[int],
    estimates: np.ndarray,
    stderrs: np.ndarray,
    z: float,
    *,
    bound: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(slope per wave, stderr, low, high) of the OLS trend over `waves`; the last axis of
    `estimates` and `stderrs` runs over the waves (so simulated trials broadcast).

    With `bound` (what the results use) the variance is the largest any non-negative
    correlation between the waves allows; without it, the independence variance
    sum c_t^2 se_t^2 (only for comparing the two in docs/statistics.md: it is too small when
    nearby waves are more correlated than distant ones)."""
    c = trend_coefficients(waves)
    f = np.asarray(estimates, dtype=np.float64)
    s = np.asarray(stderrs, dtype=np.float64)
    slope = f @ c
    if bound:
        up = s @ np.where(c > 0, c, 0.0)
        down = s @ np.where(c < 0, -c, 0.0)
        se = np.hypot(up, down)
    else:
        se = np.sqrt((s * s) @ (c * c))
    return slope, se, slope - z * se, slope + z * se


def trend_variance_bound(waves: Sequence[int], stderrs: Sequence[float]) -> float:
    """The bound on Var(slope) alone: (sum_{c>0} c se)^2 + (sum_{c<0} |c| se)^2."""
    c = trend_coefficients(waves)
    s = np.asarray(stderrs, dtype=np.float64)
    return float(
        np.sum(np.where(c > 0, c, 0.0) * s) ** 2 + np.sum(np.where(c < 0, -c, 0.0) * s) ** 2
    )


# -- the series results document -----------------------------------------------------------------
def _waves(raw: Sequence[Wave | tuple[Any, ...]]) -> list[Wave]:
    if len(raw) > MAX_WAVES:
        raise ValueError(f"waves: at most {MAX_WAVES} in a series, got {len(raw)}")
    waves: list[Wave] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Wave) and (not isinstance(item, tuple | list) or len(item) < 3):
            raise ValueError(f"waves[{i}]: expected (wave, survey id, results), got {item!r:.80}")
        wave = item if isinstance(item, Wave) else Wave(*item[:3])
        if isinstance(wave.wave, bool) or not isinstance(wave.wave, int) or wave.wave < 1:
            raise ValueError(f"waves[{i}]: a wave number is an integer >= 1, got {wave.wave!r}")
        if not isinstance(wave.survey, str) or not isinstance(wave.results, Mapping):
            raise ValueError(f"waves[{i}]: expected (wave, survey id, results), got {item!r}")
        waves.append(wave)
    numbers = [w.wave for w in waves]
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"waves: each wave number once, got {sorted(numbers)}")
    return sorted(waves, key=lambda w: w.wave)


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class _Point:
    wave: int
    estimate: float | None
    stderr: float | None


def _followed(waves: Sequence[Wave]) -> dict[tuple[str, str], list[_Point]]:
    """(question, option) -> its estimate in each wave that asked it, in wave order: questions
    with the same id, type and options in two or more waves."""
    shapes: dict[str, tuple[Any, ...] | None] = {}
    points: dict[tuple[str, str], list[_Point]] = {}
    rows_of: dict[str, str] = {}
    for wave in waves:
        for entry in wave.results.get("questions", ()):
            qid = entry["id"]
            labels = tuple(o["option"] for o in entry["options"])
            shape = (entry.get("type"), labels, entry.get("min"), entry.get("max"))
            rows = _rows(entry)
            if rows not in _FOLLOWED:
                continue
            if qid in shapes and shapes[qid] != shape:
                shapes[qid] = None  # changed between waves: not comparable
                continue
            shapes.setdefault(qid, shape)
            rows_of[qid] = rows
            for o in entry["options"]:
                if rows == "yes" and o["option"] != "yes":
                    continue
                points.setdefault((qid, o["option"]), []).append(
                    _Point(wave.wave, o.get("estimate"), o.get("stderr"))
                )
    return {
        key: found
        for key, found in points.items()
        if shapes.get(key[0]) is not None and len(found) >= 2
    }


def _rows(entry: Mapping[str, Any]) -> str | None:
    """The kind of rows of a results entry: its question type's `rows` (None: a type this
    aggregator does not know, never followed)."""
    kind = QUESTION_TYPES.get(entry.get("type"))  # type: ignore[arg-type]
    return None if kind is None else kind.rows


def _limits(key: tuple[str, str], waves: Sequence[Wave]) -> float:
    """How far a change can go: 1 for a share, max - min for an integer's mean."""
    for wave in waves:
        for entry in wave.results.get("questions", ()):
            if entry["id"] == key[0] and "min" in entry:
                return float(entry["max"] - entry["min"])
    return 1.0


def change_entry(
    question: str, option: str, a: _Point, b: _Point, z: float, limit: float = 1.0
) -> dict[str, Any]:
    """One change's entry of the series results: wave b's estimate minus wave a's."""
    entry: dict[str, Any] = {
        "question": question,
        "option": option,
        "from_wave": a.wave,
        "to_wave": b.wave,
    }
    if a.estimate is None or b.estimate is None:
        return entry | {"estimate": None, "stderr": None, "ci_low": -limit, "ci_high": limit}
    d = b.estimate - a.estimate
    if a.stderr is None or b.stderr is None:
        return entry | {"estimate": d, "stderr": None, "ci_low": -limit, "ci_high": limit}
    _, se, low, high = change_stats(a.estimate, a.stderr, b.estimate, b.stderr, z)
    return entry | {
        "estimate": float(d),
        "stderr": _num(se),
        # Both ends within ±limit (a zero stderr beyond the range would give low > high).
        "ci_low": float(min(max(low, -limit), limit)),
        "ci_high": float(max(min(high, limit), -limit)),
    }


def trend_entry(question: str, option: str, points: Sequence[_Point], z: float) -> dict[str, Any]:
    """One trend's entry: the OLS slope per wave over the waves with an estimate and stderr."""
    usable = [p for p in points if p.estimate is not None and p.stderr is not None]
    entry: dict[str, Any] = {
        "question": question,
        "option": option,
        "waves": [p.wave for p in usable],
    }
    if len(usable) < 2:
        return entry | {"estimate": None, "stderr": None, "ci_low": None, "ci_high": None}
    slope, se, low, high = trend_stats(
        [p.wave for p in usable],
        np.array([p.estimate for p in usable]),
        np.array([p.stderr for p in usable]),
        z,
    )
    return entry | {
        "estimate": float(slope),
        "stderr": _num(se),
        "ci_low": _num(low),
        "ci_high": _num(high),
    }


def series_results(
    series_id: str,
    waves: Sequence[Wave | tuple[Any, ...]],
    confidence: float = 0.95,
) -> SeriesResults:
    """The series results (docs/statistics.md, "Waves"): `{"series", "confidence", "waves":
    [{"wave", "survey", "results"}], "changes": [...], "trend": [...]}`.

    `waves` holds Wave(wave, survey id, results JSON) or such tuples, any order; each wave's
    results must be at `confidence`. A question is followed when two or more waves hold it
    with the same id, type and options: a change per option between consecutive waves that
    asked it and an OLS trend per option over them (binary: yes only; text questions are not
    followed). ValueError, naming the field, on bad input; at most MAX_WAVES waves.
    """
    if not isinstance(series_id, str) or not series_id:
        raise ValueError(f"series: expected a series id, got {series_id!r}")
    z = z_value(confidence)
    ordered = _waves(waves)
    for wave in ordered:
        given = wave.results.get("confidence", confidence)
        if not math.isclose(float(given), float(confidence)):
            raise ValueError(
                f"waves: wave {wave.wave}'s results are at confidence {given}, not {confidence}"
            )
    changes: list[dict[str, Any]] = []
    trend: list[dict[str, Any]] = []
    for (qid, option), points in _followed(ordered).items():
        limit = _limits((qid, option), ordered)
        changes += [
            change_entry(qid, option, a, b, z, limit)
            for a, b in zip(points, points[1:], strict=False)
        ]
        trend.append(trend_entry(qid, option, points, z))
    return SeriesResults(
        {
            "series": series_id,
            "confidence": float(confidence),
            "waves": [
                {"wave": w.wave, "survey": w.survey, "results": dict(w.results)} for w in ordered
            ],
            "changes": changes,
            "trend": trend,
        }
    )


def change_between(
    doc: Mapping[str, Any], question: str, option: str, from_wave: int, to_wave: int
) -> dict[str, Any]:
    """The change of one option between any two waves of a series results document, as a
    `changes` entry (for waves that are not consecutive). ValueError if either wave lacks it."""
    z = z_value(float(doc["confidence"]))
    found: dict[int, _Point] = {}
    waves = [Wave(w["wave"], w["survey"], w["results"]) for w in doc["waves"]]
    points = _followed(waves).get((question, option), [])
    for point in points:
        found[point.wave] = point
    for wave in (from_wave, to_wave):
        if wave not in found:
            raise ValueError(
                f"wave {wave} has no estimate of {question!r} option {option!r} to compare"
            )
    return change_entry(
        question, option, found[from_wave], found[to_wave], z, _limits((question, ""), waves)
    )
