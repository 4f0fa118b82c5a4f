"""Weighted estimation for a survey's sampling design (docs/statistics.md, "Weights and designs").

Respondents come grouped in rows (those sharing a stratum, a cluster, the raking margins' answers
and the analysed answer), so a million reports are a few thousand rows. Per respondent the
unbiased estimate is z_i = (S_i - q*)/(p* - q*); its weighted (Hajek) mean with weights
N_h/n_h (or a weights table's, or equal), raked by iterative proportional fitting to the
margins when the design gives them, estimates the population share. Its variance is the Taylor
linearization of R's `survey` package: svymean's influence u_i = w_i (z_i - mean) / sum w,
calibrated to the margins as svyrecvar does for `rake()` (ten rounds of backfitting), then summed
per primary sampling unit and compared within strata (n_h/(n_h - 1), with the finite
population correction (N_h - n_h)/N_h when the design has population sizes and no clusters).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from deniable.aggregator.stats.errors import AnalysisError

#: Raking stops when every margin's weighted share is within RAKE_TOLERANCE of its target...
RAKE_TOLERANCE = 1e-12
#: ...or fails after this many rounds (one round adjusts every margin once).
RAKE_MAX_ROUNDS = 1000
#: ...and within a budget of rows x margins x rounds (about seconds of CPU), so a design whose
#: margins contradict each other cannot hold a request for minutes; at least RAKE_MIN_ROUNDS.
RAKE_WORK = 400_000_000
RAKE_MIN_ROUNDS = 20
#: Rounds of backfitting the influence values on the margins, as svyrecvar does for raking.
CALIBRATION_ROUNDS = 10


@dataclass
class Frame:
    """Grouped respondents: `count` respondents per row sharing a stratum index, a primary
    sampling unit (`psu`; None when each respondent is their own), the option index of each
    raking margin (`margins`) and a base weight each (`base`)."""

    count: np.ndarray
    stratum: np.ndarray
    psu: np.ndarray | None = None
    margins: list[np.ndarray] = field(default_factory=list)
    base: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return int(self.count.shape[0])


def stratum_sizes(frame: Frame) -> np.ndarray:
    """n_h: respondents per stratum index."""
    strata = int(frame.stratum.max()) + 1 if frame.rows else 0
    return np.bincount(frame.stratum, weights=frame.count, minlength=strata)


def population_weights(frame: Frame, population: Sequence[int]) -> np.ndarray:
    """N_h / n_h per row: each respondent stands for their stratum's share of the population."""
    n_h = stratum_sizes(frame)
    sizes = np.asarray(population, dtype=np.float64)[: n_h.size]
    with np.errstate(divide="ignore", invalid="ignore"):
        per_stratum = np.where(n_h > 0, sizes / n_h, 0.0)
    return per_stratum[frame.stratum]


def rake(
    frame: Frame,
    weights: np.ndarray,
    targets: Sequence[np.ndarray],
    names: Sequence[str] = (),
    *,
    tolerance: float = RAKE_TOLERANCE,
    max_rounds: int = RAKE_MAX_ROUNDS,
) -> tuple[np.ndarray, int]:
    """Iterative proportional fitting: scale the weights, margin after margin, until each
    margin's weighted shares equal its population shares `targets` (within `tolerance`, at
    most `max_rounds` rounds). (weights, rounds); AnalysisError if an option with a positive
    share has no respondents, or if the margins cannot all be met."""
    w = np.asarray(weights, dtype=np.float64).copy()
    total = float(np.sum(frame.count * w))
    if total <= 0:
        raise AnalysisError("raking needs respondents with a positive weight; there are none")
    for m, (index, share) in enumerate(zip(frame.margins, targets, strict=True)):
        have = np.bincount(index, weights=frame.count, minlength=share.size)
        missing = np.flatnonzero((have == 0) & (share > 0))
        if missing.size:
            name = names[m] if m < len(names) else f"margin {m}"
            raise AnalysisError(
                f"rake: no respondent has option {int(missing[0]) + 1} of {name!r}, so the "
                "weights cannot reach its population share; drop that margin or collect more"
            )
    cells = max(1, len(frame.count) * len(frame.margins))
    max_rounds = min(max_rounds, max(RAKE_MIN_ROUNDS, RAKE_WORK // cells))
    for rounds in range(1, max_rounds + 1):
        for index, share in zip(frame.margins, targets, strict=True):
            current = np.bincount(index, weights=frame.count * w, minlength=share.size)
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(current > 0, share * total / current, 0.0)
            w = w * factor[index]
        worst = 0.0
        for index, share in zip(frame.margins, targets, strict=True):
            current = np.bincount(index, weights=frame.count * w, minlength=share.size)
            worst = max(worst, float(np.max(np.abs(current / total - share))))
        if worst <= tolerance:
            return w, rounds
    raise AnalysisError(
        f"rake: the margins could not all be met within {max_rounds} rounds (off by {worst:.2g});"
        " they may contradict each other or the sample; check the population shares"
    )


@dataclass(frozen=True)
class Estimate:
    """Hajek means, their linearized standard errors and design effects (one per column)."""

    n: int
    mean: np.ndarray
    stderr: np.ndarray
    deff: np.ndarray


def linearized(
    frame: Frame,
    weights: np.ndarray,
    y: np.ndarray,
    domain: np.ndarray | None = None,
    *,
    population: Sequence[int] | None = None,
    raked: bool = False,
    srs_without_replacement: bool = False,
) -> Estimate:
    """The weighted mean of each column of y [rows, k] over the rows in `domain` (a 0/1 mask;
    everyone by default), with the variance of R's svymean on the whole design (svyby's for a
    domain): influence values, calibrated when `raked`, summed per PSU, compared within strata
    (with the finite population correction when `population` gives N_h and there are no
    clusters; a stratum with one PSU adds nothing). `deff` divides it by the variance of a
    simple random sample of the same size: with replacement, or without it when
    `srs_without_replacement` (the weights sum to the population)."""
    count = frame.count
    w = np.asarray(weights, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(frame.rows, -1)
    d = np.ones(frame.rows) if domain is None else np.asarray(domain, dtype=np.float64)
    cw = count * w * d
    total_w = float(np.sum(cw))
    n_domain = int(round(float(np.sum(count * d * (w != 0)))))
    k = y.shape[1]
    if total_w <= 0 or n_domain == 0:
        nan = np.full(k, np.nan)
        return Estimate(n_domain, nan, nan, nan)
    mean = (cw @ y) / total_w
    # svymean's influence per respondent (zero outside the domain), for each column.
    u = (w * d)[:, None] * (y - mean) / total_w
    variance = design_variance(frame, w, u, population=population, raked=raked)
    stderr = np.sqrt(np.maximum(variance, 0.0))
    # The simple random sample's variance: svyvar / n (times (N - n)/N without replacement).
    spread = (cw @ ((y - mean) ** 2)) / total_w
    if n_domain > 1:
        spread = spread * n_domain / (n_domain - 1)
    srs = spread / n_domain
    if srs_without_replacement:
        srs = srs * max(total_w - n_domain, 0.0) / total_w
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(srs > 0, variance / srs, np.nan)
    return Estimate(n_domain, mean, stderr, deff)


def design_variance(
    frame: Frame,
    weights: np.ndarray,
    u: np.ndarray,
    *,
    population: Sequence[int] | None = None,
    raked: bool = False,
) -> np.ndarray:
    """The variance of the total of per-respondent influence values u [rows, k] under the
    design (svyrecvar): calibrated to the raking margins when `raked` (ten rounds of
    u <- u - w * mean over the margin's group of u / w, as R does), then between PSUs."""
    count = frame.count
    w = np.asarray(weights, dtype=np.float64)
    k = u.shape[1]
    if raked and frame.margins:
        safe = np.where(w > 0, w, 1.0)
        for _ in range(CALIBRATION_ROUNDS):
            for index in frame.margins:
                groups = int(index.max()) + 1
                people = np.bincount(index, weights=count, minlength=groups)
                scaled = u / safe[:, None]
                sums = np.stack(
                    [
                        np.bincount(index, weights=count * scaled[:, j], minlength=groups)
                        for j in range(k)
                    ],
                    axis=1,
                )
                avg = np.divide(
                    sums, people[:, None], out=np.zeros_like(sums), where=people[:, None] > 0
                )
                u = u - safe[:, None] * avg[index]
    return _between_psus(frame, u, population)


def _between_psus(frame: Frame, u: np.ndarray, population: Sequence[int] | None) -> np.ndarray:
    """sum over strata of n_h/(n_h - 1) sum over its PSUs of (t - mean t)^2, t a PSU's total
    of u (times (N_h - n_h)/N_h with population sizes and no clusters)."""
    count = frame.count
    k = u.shape[1]
    strata = int(frame.stratum.max()) + 1
    variance = np.zeros(k)
    if frame.psu is None:
        # Each respondent is a PSU: rows hold `count` identical ones.
        n_h = np.bincount(frame.stratum, weights=count, minlength=strata)
        for j in range(k):
            col = u[:, j]
            sums = np.bincount(frame.stratum, weights=count * col, minlength=strata)
            with np.errstate(divide="ignore", invalid="ignore"):
                centre = np.where(n_h > 0, sums / n_h, 0.0)
            dev = np.bincount(
                frame.stratum, weights=count * (col - centre[frame.stratum]) ** 2, minlength=strata
            )
            scale = np.where(n_h > 1, n_h / np.maximum(n_h - 1, 1), 0.0)
            if population is not None:
                sizes = np.asarray(population, dtype=np.float64)[:strata]
                scale = scale * np.clip((sizes - n_h) / sizes, 0.0, 1.0)
            variance[j] = float(np.sum(scale * dev))
        return variance
    # Ultimate clusters: each PSU's total, then the spread of totals within its stratum.
    psus, psu_index = np.unique(frame.psu, return_inverse=True)
    psu_stratum = np.zeros(psus.size, dtype=np.int64)
    psu_stratum[psu_index] = frame.stratum
    a_h = np.bincount(psu_stratum, minlength=strata).astype(np.float64)
    scale = np.where(a_h > 1, a_h / np.maximum(a_h - 1, 1), 0.0)
    for j in range(k):
        totals = np.bincount(psu_index, weights=count * u[:, j], minlength=psus.size)
        sums = np.bincount(psu_stratum, weights=totals, minlength=strata)
        with np.errstate(divide="ignore", invalid="ignore"):
            centre = np.where(a_h > 0, sums / a_h, 0.0)
        dev = np.bincount(
            psu_stratum, weights=(totals - centre[psu_stratum]) ** 2, minlength=strata
        )
        variance[j] = float(np.sum(scale * dev))
    return variance


def normal_interval(
    estimate: float, stderr: float, z: float, low: float = 0.0, high: float = 1.0
) -> tuple[float, float]:
    """estimate -+ z stderr, each end clipped to [low, high] (the whole range when undefined)."""
    if not (math.isfinite(estimate) and math.isfinite(stderr)):
        return low, high
    return (
        min(max(low, estimate - z * stderr), high),
        max(min(high, estimate + z * stderr), low),
    )
