"""Planning a series of waves: respondents per wave for a margin on one wave's share, on the
change between two waves and on the trend, at (epsilon_perm, epsilon_1).

One wave's estimate of an option's share has, at n respondents, the variance of any pure
protocol with the chained channel (shared/longitudinal.py):

    V1 / n,   V1 = lambda (1 - lambda) / (p* - q*)^2,   lambda = q* + f (p* - q*),

worst over f unless a share f is given (Mechanism.worst_variance). The analysis's intervals
(stats/waves.py, docs/statistics.md "Waves") use, for a change, se_s^2 + se_t^2 and, for the
OLS trend over waves 1..T, K_T se^2 with K_T = (sum_{c>0} c)^2 + (sum_{c<0} |c|)^2; so with n
respondents in every wave the half-widths at confidence c (z its two-sided quantile) are

    share   z sqrt(V1 / n)           n = ceil(z^2 V1 / m^2)
    change  z sqrt(2 V1 / n)         n = ceil(2 z^2 V1 / m^2)
    trend   z sqrt(K_T V1 / n)       n = ceil(K_T z^2 V1 / m^2)

The change needs twice a wave's respondents for the same margin: the interval must hold
whatever the (non-negative) correlation memoization gives the waves, which cannot be
measured because reports are not linked across waves.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deniable.aggregator.stats.planning import (
    MAX_OPTIONS,
    MAX_RESPONDENTS,
    PlanError,
    respondents_for_margin,
    z_for,
)
from deniable.aggregator.stats.waves import trend_coefficients
from deniable.shared.longitudinal import PLANNED, Longitudinal

#: The protocols a series plan is asked for by name, the default first (binary questions are
#: L-GRR over 2).
SERIES_MECHANISMS = tuple(PLANNED)
#: At most this many waves in a trend plan.
MAX_PLANNED_WAVES = 1000


def protocol_for(name: str, k: int, epsilon_perm: float, epsilon_1: float) -> Longitudinal:
    """The longitudinal protocol `name` over k options at (epsilon_perm, epsilon_1)."""
    if name not in SERIES_MECHANISMS:
        raise PlanError(f"mechanism: expected one of {', '.join(SERIES_MECHANISMS)}, got {name!r}")
    if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_OPTIONS:
        raise PlanError(f"options: expected a number from 2 to {MAX_OPTIONS}, got {k!r}")
    try:
        return PLANNED[name](k, epsilon_perm, epsilon_1)
    except ValueError as exc:
        raise PlanError(str(exc)) from None


def unit_variance(protocol: Longitudinal, share: float | None = None) -> float:
    """V1: n times the variance of one wave's estimate of an option's share (worst case over
    every distribution, or at the given true share)."""
    if share is None:
        return protocol.worst_variance(1)
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise PlanError(f"share: expected a number from 0 to 1, got {share!r}")
    return protocol.variance(1, float(share), 1 if protocol.binary else 0)


def trend_factor(waves: int) -> float:
    """K_T: the trend's variance bound over waves 1..T in units of one wave's variance."""
    if isinstance(waves, bool) or not isinstance(waves, int) or not 2 <= waves <= MAX_PLANNED_WAVES:
        raise PlanError(
            f"waves: expected a number of waves from 2 to {MAX_PLANNED_WAVES}, got {waves!r}"
        )
    c = trend_coefficients(list(range(1, waves + 1)))
    return float(np.sum(c[c > 0]) ** 2 + np.sum(-c[c < 0]) ** 2)


def _respondents(factor: float, margin: float, confidence: float) -> int:
    if (
        isinstance(margin, bool)
        or not isinstance(margin, int | float)
        or not math.isfinite(margin)
        or margin <= 0
    ):
        raise PlanError(f"margin: expected a positive number like 0.05, got {margin!r}")
    return respondents_for_margin(factor, margin, z_for(confidence), per=" per wave")


def _margin(factor: float, n: int, confidence: float) -> float:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RESPONDENTS:
        raise PlanError(f"respondents: expected a positive whole number, got {n!r}")
    return z_for(confidence) * math.sqrt(factor / n)


def respondents_for_share(
    protocol: Longitudinal, margin: float, confidence: float = 0.95, share: float | None = None
) -> int:
    """Respondents per wave for a half-width `margin` on one wave's share."""
    return _respondents(unit_variance(protocol, share), margin, confidence)


def respondents_for_change(
    protocol: Longitudinal, margin: float, confidence: float = 0.95, share: float | None = None
) -> int:
    """Respondents per wave for a half-width `margin` on the change between two waves."""
    return _respondents(2.0 * unit_variance(protocol, share), margin, confidence)


def respondents_for_trend(
    protocol: Longitudinal,
    margin: float,
    waves: int,
    confidence: float = 0.95,
    share: float | None = None,
) -> int:
    """Respondents per wave for a half-width `margin` on the trend (per wave) over waves 1..T."""
    factor = trend_factor(waves) * unit_variance(protocol, share)
    return _respondents(factor, margin, confidence)


def margin_for_share(protocol: Longitudinal, n: int, confidence: float = 0.95) -> float:
    """The worst-case half-width on one wave's share with n respondents."""
    return _margin(unit_variance(protocol), n, confidence)


def margin_for_change(protocol: Longitudinal, n: int, confidence: float = 0.95) -> float:
    """The worst-case half-width on a change between two waves with n respondents in each."""
    return _margin(2.0 * unit_variance(protocol), n, confidence)


@dataclass(frozen=True)
class SeriesPlan:
    """A series plan: respondents per wave for each margin asked (None when not asked)."""

    mechanism: str
    options: int
    epsilon_perm: float
    epsilon_1: float
    epsilon_single: float
    p_star: float
    q_star: float
    confidence: float
    margin: float | None
    change_margin: float | None
    respondents_share: int | None
    respondents_change: int | None
    waves: int | None = None
    trend_margin: float | None = None
    respondents_trend: int | None = None

    @property
    def respondents(self) -> int:
        """Respondents per wave for every margin asked at once."""
        found = [
            n
            for n in (self.respondents_share, self.respondents_change, self.respondents_trend)
            if n is not None
        ]
        return max(found) if found else 0

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON."""
        return asdict(self) | {"respondents": self.respondents}


def plan_series(
    options: int,
    epsilon_perm: float,
    epsilon_1: float,
    *,
    margin: float | None = 0.05,
    change_margin: float | None = None,
    trend_margin: float | None = None,
    waves: int | None = None,
    confidence: float = 0.95,
    mechanism: str = "l-grr",
) -> SeriesPlan:
    """Respondents per wave for a margin on a wave's share, a change and (with `waves`) the
    trend, worst case over every distribution. PlanError says what is wrong."""
    protocol = protocol_for(mechanism, options, epsilon_perm, epsilon_1)
    if trend_margin is not None and waves is None:
        raise PlanError("waves: a trend margin needs the number of waves")
    return SeriesPlan(
        mechanism=protocol.name,
        options=options,
        epsilon_perm=protocol.epsilon_perm,
        epsilon_1=protocol.epsilon_1,
        epsilon_single=protocol.epsilon_single,
        p_star=float(protocol.p_star),
        q_star=float(protocol.q_star),
        confidence=float(confidence),
        margin=margin,
        change_margin=change_margin,
        respondents_share=None
        if margin is None
        else respondents_for_share(protocol, margin, confidence),
        respondents_change=None
        if change_margin is None
        else respondents_for_change(protocol, change_margin, confidence),
        waves=waves,
        trend_margin=trend_margin,
        respondents_trend=None
        if trend_margin is None or waves is None
        else respondents_for_trend(protocol, trend_margin, waves, confidence),
    )
