"""Planning a series (aggregator/stats/series_planning.py) against the closed forms of
docs/statistics.md, "Waves": n = ceil(z^2 V1 / m^2) for a wave's share, twice that for a change,
K_T times it for the trend, with V1 = lambda (1 - lambda) / (p* - q*)^2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.aggregator.stats.planning import PlanError
from deniable.aggregator.stats.series_planning import (
    margin_for_change,
    margin_for_share,
    plan_series,
    protocol_for,
    respondents_for_change,
    respondents_for_share,
    respondents_for_trend,
    trend_factor,
    unit_variance,
)
from deniable.aggregator.stats.waves import trend_stats
from deniable.shared.longitudinal import LGRR, LOSUE

Z95 = 1.959963984540054


def closed_v1(p: float, q: float, lam: float) -> float:
    return lam * (1 - lam) / (p - q) ** 2


def test_a_binary_wave_and_a_change_by_hand():
    m = LGRR(2, 2.0, 1.0, binary=True)
    p, q = float(m.p_star), float(m.q_star)
    # Binary: lambda ranges over [q*, p*], which holds 1/2: the worst case is 1/4.
    v1 = closed_v1(p, q, 0.5)
    assert unit_variance(m) == pytest.approx(v1)
    assert respondents_for_share(m, 0.05) == math.ceil(Z95**2 * v1 / 0.05**2) == 1799
    assert respondents_for_change(m, 0.05) == math.ceil(2 * Z95**2 * v1 / 0.05**2) == 3598
    assert margin_for_share(m, 1799) == pytest.approx(Z95 * math.sqrt(v1 / 1799))
    assert margin_for_change(m, 1799) == pytest.approx(Z95 * math.sqrt(2 * v1 / 1799))


def test_at_a_given_share():
    m = LGRR(2, 2.0, 1.0, binary=True)
    p, q = float(m.p_star), float(m.q_star)
    lam = q + 0.1 * (p - q)
    assert unit_variance(m, 0.1) == pytest.approx(closed_v1(p, q, lam))
    assert respondents_for_share(m, 0.05, share=0.1) == math.ceil(
        Z95**2 * closed_v1(p, q, lam) / 0.05**2
    )


def test_many_options_worst_case_is_at_p_star_when_it_is_below_half():
    m = LGRR(10, 3.0, 1.0)
    p, q = float(m.p_star), float(m.q_star)
    assert p < 0.5
    assert unit_variance(m) == pytest.approx(closed_v1(p, q, p))
    o = LOSUE(10, 3.0, 1.0)
    assert unit_variance(o) == pytest.approx(closed_v1(float(o.p_star), float(o.q_star), 0.5))


@pytest.mark.parametrize(("waves", "factor"), [(2, 2.0), (3, 0.5), (5, 0.18)])
def test_trend_factor_closed_forms(waves, factor):
    # T = 2: c = (-1, 1), the change: 1 + 1. T = 3: c = (-1/2, 0, 1/2). T = 5: c = (-2..2)/10.
    assert trend_factor(waves) == pytest.approx(factor)


@pytest.mark.parametrize("m", [1, 2, 5, 20])
def test_trend_factor_for_an_odd_number_of_waves(m):
    # T = 2m + 1: the positive c_t sum to (m (m + 1) / 2) / S with S = T (T^2 - 1) / 12.
    t = 2 * m + 1
    assert trend_factor(t) == pytest.approx(2 * (m * (m + 1) / 2 / (t * (t * t - 1) / 12)) ** 2)


def test_trend_factor_is_the_analysis_variance():
    """n respondents per wave: the planned trend margin is the results' interval half-width."""
    m = LGRR(2, 2.0, 1.0, binary=True)
    n = respondents_for_trend(m, 0.02, 5)
    se = math.sqrt(unit_variance(m) / n)
    _, stderr, low, high = trend_stats([1, 2, 3, 4, 5], np.full(5, 0.5), np.full(5, se), Z95)
    assert (high - low) / 2 <= 0.02
    assert n == math.ceil(0.18 * Z95**2 * unit_variance(m) / 0.02**2)


def test_plan_series():
    plan = plan_series(2, 2.0, 1.0, margin=0.05, change_margin=0.05, trend_margin=0.02, waves=5)
    assert plan.mechanism == "l-grr" and plan.respondents_share == 1799
    assert plan.respondents_change == 3598
    assert plan.respondents == max(1799, 3598, plan.respondents_trend)
    doc = plan.to_dict()
    assert doc["respondents"] == plan.respondents and doc["epsilon_single"] <= 1.0
    assert plan_series(4, 3.0, 1.0, mechanism="l-osue").mechanism == "l-osue"
    assert plan_series(4, 3.0, 1.0, change_margin=None).respondents_change is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: protocol_for("rr", 2, 2.0, 1.0), "mechanism: expected one of"),
        (lambda: protocol_for("l-grr", 1, 2.0, 1.0), "options: expected"),
        (lambda: protocol_for("l-grr", 3, 1.0, 2.0), "epsilon_1: must be below"),
        (lambda: plan_series(2, 2.0, 1.0, margin=0), "margin: expected a positive"),
        (lambda: plan_series(2, 2.0, 1.0, margin=float("nan")), "margin"),
        (lambda: plan_series(2, 2.0, 1.0, margin=1e-9), "would need more than"),
        (lambda: plan_series(2, 2.0, 1.0, confidence=1.0), "confidence"),
        (lambda: plan_series(2, 2.0, 1.0, trend_margin=0.1), "a trend margin needs"),
        (lambda: trend_factor(1), "waves: expected"),
        (lambda: unit_variance(LGRR(2, 2.0, 1.0), 1.5), "share: expected"),
        (lambda: margin_for_share(LGRR(2, 2.0, 1.0), 0), "respondents"),
    ],
)
def test_bad_plans_are_refused(call, message):
    with pytest.raises(PlanError, match=message):
        call()
