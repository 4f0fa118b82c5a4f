"""A series of waves (aggregator/stats/waves.py): a simulated panel of the same people over five
waves with memoized answers, and the series results document.

The panel: n people answer 5 waves; each keeps their true value from one wave to the next with
probability `stay`, else draws it afresh from a drifting distribution (so the true shares have
a trend and some people change). Each person's device memoizes the permanent response per true
value (drawn once, reused whenever that value comes back) and randomizes it again every wave,
with the exact probabilities of shared/longitudinal.py (the device's own draws are checked
against the same channel in tests/shared/test_longitudinal.py). Everything is estimated with
the service's own functions (option_stats, em_share, change_stats, trend_stats). The estimand
is the population's share (people are drawn afresh in each trial), so the intervals must
cover it with the sampling included.

Bounds: 4000 trials; a coverage promised at 0.95 lies within [0.93, 0.97] except with
probability below 1e-8 per check (5.8 standard errors), and a mean within 5.5 standard errors
of the truth except with probability below 4e-8 per entry.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from deniable.aggregator.stats.estimate import em_shares, option_stats, results_document, z_value
from deniable.aggregator.stats.series_results import SERIES_CSV_COLUMNS, SeriesResults
from deniable.aggregator.stats.waves import (
    MAX_WAVES,
    Wave,
    change_stats,
    series_results,
    trend_coefficients,
    trend_stats,
    trend_variance_bound,
    wave_estimates,
)
from deniable.shared.longitudinal import LGRR, LOSUE, Longitudinal
from deniable.shared.survey import Survey

TRIALS = 4000
CHUNK = 500
WAVES = [1, 2, 3, 4, 5]
Z95 = z_value(0.95)


def simulate_panel(
    m: Longitudinal,
    n: int,
    first: list[float],
    drift: list[float],
    stay: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(support counts of shape (TRIALS, waves, k), the true shares of shape (waves, k))."""
    rng = np.random.default_rng(seed)
    k, T = m.k, len(WAVES)
    p1, q1, p2 = float(m.p1), float(m.q1), float(m.p2)
    start = np.array(first)
    counts = np.zeros((TRIALS, T, k))
    shares = np.zeros((T, k))
    for lo in range(0, TRIALS, CHUNK):
        trials = min(CHUNK, TRIALS - lo)
        x = rng.choice(k, size=(trials, n), p=start)
        # The permanent response of each person for each value they might hold: drawn once.
        if m.bit_string:
            own = np.eye(k, dtype=bool)
            memo = (rng.random((trials, n, k, k)) < np.where(own, p1, q1)).astype(np.int8)
        else:
            values = np.arange(k)
            other = rng.integers(0, k - 1, size=(trials, n, k))
            other = other + (other >= values)
            memo = np.where(rng.random((trials, n, k)) < p1, values, other)
        share = start.copy()
        for t in range(T):
            if t:
                target = np.clip(start + np.array(drift) * t, 0, None)
                target /= target.sum()
                move = rng.random((trials, n)) >= stay
                x = np.where(move, rng.choice(k, size=(trials, n), p=target), x)
                share = stay * share + (1 - stay) * target
            shares[t] = share
            if m.bit_string:
                held = np.take_along_axis(memo, x[..., None, None], axis=2)[..., 0, :]
                flip = rng.random(held.shape) >= p2
                counts[lo : lo + trials, t] = np.where(flip, 1 - held, held).sum(axis=1)
            else:
                held = np.take_along_axis(memo, x[..., None], axis=2)[..., 0]
                other = rng.integers(0, k - 1, size=(trials, n))
                other = other + (other >= held)
                report = np.where(rng.random((trials, n)) < p2, held, other)
                for v in range(k):
                    counts[lo : lo + trials, t, v] = (report == v).sum(axis=1)
    return counts, shares


SCENARIOS = {
    "binary l-grr": (LGRR(2, 2.0, 1.0, binary=True), [0.7, 0.3], [-0.03, 0.03], 0.9, 11),
    "categorical l-grr": (LGRR(3, 2.0, 1.0), [0.5, 0.3, 0.2], [-0.04, 0.02, 0.02], 0.8, 12),
    "categorical l-osue": (LOSUE(3, 2.0, 1.0), [0.5, 0.3, 0.2], [-0.04, 0.02, 0.02], 0.8, 13),
    "binary, high epsilons, changing": (
        LGRR(2, 8.0, 5.0, binary=True),
        [0.7, 0.3],
        [-0.03, 0.03],
        0.5,
        14,
    ),
}
N = 1000


@pytest.fixture(scope="module", params=list(SCENARIOS))
def panel(request):
    m, first, drift, stay, seed = SCENARIOS[request.param]
    counts, shares = simulate_panel(m, N, first, drift, stay, seed)
    est, se, low, high = option_stats(counts, N, float(m.p_star), float(m.q_star), Z95)
    return request.param, m, counts, shares, est, se, low, high


def test_each_wave_is_unbiased_with_the_chained_channel(panel):
    _, m, counts, shares, est, *_ = panel
    spread = est.std(axis=0) / np.sqrt(TRIALS)
    assert np.all(np.abs(est.mean(axis=0) - shares) < 5.5 * spread)
    # One round's pair alone (the permanent GRR/OUE at eps_perm) is not this channel: biased.
    wrong, *_ = option_stats(counts, N, float(m.p1), float(m.q1), Z95)
    assert np.max(np.abs(wrong.mean(axis=0) - shares) / spread) > 10


def test_each_waves_interval_covers_as_a_single_survey(panel):
    _, _, _, shares, _, _, low, high = panel
    coverage = ((low <= shares) & (shares <= high)).mean(axis=0)
    assert np.all((coverage >= 0.93) & (coverage <= 0.97)), coverage


def test_memoization_correlates_the_waves_positively(panel):
    _, _, _, _, est, *_ = panel
    first = est[:, :-1, :].reshape(TRIALS, -1)
    second = est[:, 1:, :].reshape(TRIALS, -1)
    for column in range(first.shape[1]):
        r = np.corrcoef(first[:, column], second[:, column])[0, 1]
        # 4000 trials: a correlation's standard error is about 0.016.
        assert r > 0.1, r


def test_changes_cover_at_least_the_confidence(panel):
    _, _, _, shares, est, se, *_ = panel
    d, dse, low, high = change_stats(est[:, :-1], se[:, :-1], est[:, 1:], se[:, 1:], Z95)
    truth = shares[1:] - shares[:-1]
    coverage = ((low <= truth) & (truth <= high)).mean(axis=0)
    assert np.all(coverage >= 0.93), coverage
    # Conservative, as promised: the stated stderr is at least the change's actual spread
    # (the ratio's own standard error is about 1.1% over 4000 trials).
    assert np.all(dse.mean(axis=0) / d.std(axis=0) > 0.95)
    # Any two waves: first to last.
    d, dse, low, high = change_stats(est[:, 0], se[:, 0], est[:, -1], se[:, -1], Z95)
    truth = shares[-1] - shares[0]
    assert np.all(((low <= truth) & (truth <= high)).mean(axis=0) >= 0.93)


def test_the_trend_covers_at_least_the_confidence(panel):
    _, _, _, shares, est, se, *_ = panel
    e, s = np.moveaxis(est, 1, -1), np.moveaxis(se, 1, -1)
    slope, sse, low, high = trend_stats(WAVES, e, s, Z95)
    truth = shares.T @ trend_coefficients(WAVES)
    assert np.all(np.abs(slope.mean(axis=0) - truth) < 5.5 * slope.std(axis=0) / np.sqrt(TRIALS))
    coverage = ((low <= truth) & (truth <= high)).mean(axis=0)
    assert np.all(coverage >= 0.93), coverage
    assert np.all(sse.mean(axis=0) / slope.std(axis=0) > 0.95)


def test_the_independence_variance_is_too_small_for_a_trend_when_people_change():
    """Why the trend uses the bound: with decaying persistence (nearby waves more alike than
    distant ones) sum c_t^2 se_t^2 understates the slope's spread; the bound does not."""
    _, m, _, shares, est, se, *_ = _panel_of("binary, high epsilons, changing")
    e, s = np.moveaxis(est, 1, -1), np.moveaxis(se, 1, -1)
    slope, naive, *_ = trend_stats(WAVES, e, s, Z95, bound=False)
    _, bound, *_ = trend_stats(WAVES, e, s, Z95)
    actual = slope.std(axis=0)
    assert np.all(naive.mean(axis=0) / actual < 0.98)  # measured 0.92
    assert np.all(bound.mean(axis=0) / actual > 1.05)


def _panel_of(name: str):
    m, first, drift, stay, seed = SCENARIOS[name]
    counts, shares = simulate_panel(m, N, first, drift, stay, seed)
    est, se, low, high = option_stats(counts, N, float(m.p_star), float(m.q_star), Z95)
    return name, m, counts, shares, est, se, low, high


def test_the_ml_share_is_the_fit_of_the_chained_channel():
    """The IBU share with (p*, q*) finds the truth; with multi-freq-ldpy's IBU q (p1 q2 + q1 p2,
    not this channel's for k > 2) it does not."""
    _, m, counts, shares, *_ = _panel_of("categorical l-grr")
    wave = counts[:, 2]
    ours = np.array(em_shares([(c, float(m.p_star), float(m.q_star)) for c in wave]))
    lib_q = float(m.p1 * m.q2 + m.q1 * m.p2)
    theirs = np.array(em_shares([(c, float(m.p_star), lib_q) for c in wave]))
    spread = ours.std(axis=0) / np.sqrt(TRIALS)  # about 0.0007
    assert np.all(np.abs(ours.mean(axis=0) - shares[2]) < 5.5 * spread)
    assert np.max(np.abs(theirs.mean(axis=0) - shares[2])) > 0.008  # measured 0.012


def test_wave_estimates_are_the_results_formulas():
    m = LGRR(3, 2.0, 1.0)
    found = wave_estimates(m, 1000, [450, 300, 250])
    p, q = float(m.p_star), float(m.q_star)
    assert np.allclose(found["estimate"], (np.array([0.45, 0.3, 0.25]) - q) / (p - q))
    lam = np.array([0.45, 0.3, 0.25])
    assert np.allclose(found["stderr"], np.sqrt(lam * (1 - lam) / (999 * (p - q) ** 2)))
    assert np.isclose(found["share"].sum(), 1.0) and np.all(found["share"] >= 0)
    assert np.all(found["ci_low"] < found["estimate"]) and np.all(
        found["estimate"] < found["ci_high"]
    )
    binary = wave_estimates(LGRR(2, 2.0, 1.0, binary=True), 10, [10, 0])
    assert binary["share"].tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="n: expected a positive"):
        wave_estimates(m, 0, [0, 0, 0])
    with pytest.raises(ValueError, match="expected 3 support counts"):
        wave_estimates(m, 10, [10, 0])


# -- the variance bound, exactly -----------------------------------------------------------------
def test_the_trend_bound_is_the_largest_variance_of_any_nonnegative_correlation():
    waves, se = [1, 2, 4, 7], np.array([0.02, 0.03, 0.025, 0.04])
    c = trend_coefficients(waves)
    bound = trend_variance_bound(waves, se)
    # Attained by correlation 1 within each side of the mean wave and 0 across.
    side = np.sign(c)
    attained = np.outer(side, side) > 0
    assert np.isclose(bound, c @ (attained * np.outer(se, se)) @ c)
    rng = np.random.default_rng(5)
    for _ in range(2000):
        # A random correlation matrix with non-negative entries: Gram of non-negative vectors.
        v = rng.random((4, 3))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        cov = (v @ v.T) * np.outer(se, se)
        assert c @ cov @ c <= bound + 1e-15
    # For two waves the bound is the independence variance of their change.
    assert np.isclose(trend_variance_bound([3, 5], se[:2]), (se[0] ** 2 + se[1] ** 2) / 4)
    with pytest.raises(ValueError, match="two distinct waves"):
        trend_coefficients([2, 2])


# -- the series results document --------------------------------------------------------------------
SURVEY = {
    "id": "panel-w1",
    "title": "Panel",
    "enrollment": "open",
    "closes_at": "2030-01-01T00:00:00Z",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 1.0,
            "mechanism": "grr",
        },
    ],
}


def wave_results(wave: int, n: int, yes: int, party: list[int], confidence: float = 0.95):
    doc = json.loads(json.dumps(SURVEY))
    doc["id"] = f"panel-w{wave}"
    survey = Survey.from_dict(doc)
    results = results_document(
        survey, n, {"smokes": [n - yes, yes], "party": party}, confidence=confidence
    )
    return Wave(wave, survey.id, results.to_dict())


def test_series_results_has_the_contracts_shape():
    waves = [
        wave_results(2, 1000, 420, [500, 300, 200]),
        wave_results(1, 1000, 400, [520, 280, 200]),
        (3, "panel-w3", wave_results(3, 900, 450, [400, 300, 200]).results),
    ]
    res = series_results("panel", waves)
    assert isinstance(res, SeriesResults)
    doc = res.to_dict()
    assert set(doc) == {"series", "confidence", "waves", "changes", "trend"}
    assert doc["series"] == "panel" and res.series == "panel" and res.confidence == 0.95
    assert [w["wave"] for w in doc["waves"]] == [1, 2, 3]
    assert [w["survey"] for w in doc["waves"]] == ["panel-w1", "panel-w2", "panel-w3"]
    assert doc["waves"][0]["results"]["survey"] == "panel-w1"
    json.dumps(doc)  # plain JSON
    # A change per option (binary: yes only) between consecutive waves.
    keys = [(c["question"], c["option"], c["from_wave"], c["to_wave"]) for c in doc["changes"]]
    assert keys == [
        ("smokes", "yes", 1, 2),
        ("smokes", "yes", 2, 3),
        ("party", "A", 1, 2),
        ("party", "A", 2, 3),
        ("party", "B", 1, 2),
        ("party", "B", 2, 3),
        ("party", "C", 1, 2),
        ("party", "C", 2, 3),
    ]
    by_wave = {w["wave"]: w["results"]["questions"][0]["options"][1] for w in doc["waves"]}
    first = doc["changes"][0]
    assert first["estimate"] == pytest.approx(by_wave[2]["estimate"] - by_wave[1]["estimate"])
    assert first["stderr"] == pytest.approx(np.hypot(by_wave[1]["stderr"], by_wave[2]["stderr"]))
    assert first["ci_low"] == pytest.approx(first["estimate"] - Z95 * first["stderr"])
    # The trend per option over the three waves.
    trend = {(t["question"], t["option"]): t for t in doc["trend"]}
    assert set(trend) == {("smokes", "yes"), ("party", "A"), ("party", "B"), ("party", "C")}
    t = trend[("smokes", "yes")]
    assert t["waves"] == [1, 2, 3]
    assert t["estimate"] == pytest.approx((by_wave[3]["estimate"] - by_wave[1]["estimate"]) / 2)
    ses = [by_wave[w]["stderr"] for w in (1, 2, 3)]
    assert t["stderr"] == pytest.approx(np.sqrt(trend_variance_bound([1, 2, 3], ses)))
    assert t["ci_low"] < t["estimate"] < t["ci_high"]
    # Any two waves.
    c13 = res.change("smokes", "yes", 1, 3)
    assert c13["estimate"] == pytest.approx(by_wave[3]["estimate"] - by_wave[1]["estimate"])
    with pytest.raises(ValueError, match="wave 7 has no estimate"):
        res.change("smokes", "yes", 1, 7)
    assert list(res.waves) == [1, 2, 3] and res.waves[2]["n"] == 1000


def test_series_csv_and_summary():
    res = series_results(
        "panel",
        [wave_results(1, 1000, 400, [520, 280, 200]), wave_results(2, 800, 420, [400, 200, 200])],
    )
    lines = res.to_csv().splitlines()
    assert lines[0] == ",".join(SERIES_CSV_COLUMNS)
    kinds = [line.split(",")[0] for line in lines[1:]]
    assert kinds.count("wave") == 8 and kinds.count("change") == 4 and kinds.count("trend") == 4
    assert lines[1].startswith("wave,smokes,yes,1,1,")
    text = res.summary()
    assert "series panel: 2 waves (1, 2)" in text and "change 1 -> 2" in text
    assert "trend per wave" in text and "smokes = yes" in text


def test_questions_that_change_between_waves_are_not_followed():
    one = wave_results(1, 100, 40, [50, 30, 20])
    other = json.loads(json.dumps(one.results))
    other["questions"][1]["options"][2]["option"] = "D"  # relabelled: not comparable
    res = series_results("s", [one, Wave(2, "panel-w2", other)])
    assert {c["question"] for c in res.changes} == {"smokes"}
    alone = series_results("s", [one])
    assert alone.changes == [] and alone.trend == []
    assert "no question is asked in two or more waves" in alone.summary()


def test_a_wave_without_reports_gives_null_changes():
    res = series_results(
        "s", [wave_results(1, 100, 40, [50, 30, 20]), wave_results(2, 0, 0, [0, 0, 0])]
    )
    change = res.changes[0]
    assert change["estimate"] is None and change["stderr"] is None
    assert (change["ci_low"], change["ci_high"]) == (-1.0, 1.0)
    assert res.trend[0]["estimate"] is None and res.trend[0]["waves"] == [1]


@pytest.mark.parametrize(
    ("waves", "message"),
    [
        ([(0, "s", {})], r"waves\[0\]: a wave number is an integer >= 1"),
        ([(True, "s", {})], r"waves\[0\]: a wave number"),
        ([(1, "s", {}), (1, "t", {})], "each wave number once"),
        ([(1, 5, {})], r"waves\[0\]: expected \(wave, survey id, results\)"),
        ([(1, "s")], r"waves\[0\]: expected \(wave, survey id, results\)"),
        ([(i, "s", {}) for i in range(1, MAX_WAVES + 2)], f"at most {MAX_WAVES}"),
    ],
)
def test_bad_waves_are_refused(waves, message):
    with pytest.raises(ValueError, match=message):
        series_results("s", waves)


def test_waves_must_share_the_confidence():
    with pytest.raises(ValueError, match="wave 2's results are at confidence 0.9"):
        series_results(
            "s",
            [wave_results(1, 100, 40, [50, 30, 20]), wave_results(2, 100, 40, [50, 30, 20], 0.9)],
        )
    with pytest.raises(ValueError, match="confidence"):
        series_results("s", [], confidence=1.5)
    with pytest.raises(ValueError, match="series: expected"):
        series_results("", [])


def test_integer_means_and_multi_marks_are_followed_and_text_is_not():
    def entry(qid, kind, options, **extra):
        return {"id": qid, "type": kind, "options": options, **extra}

    def row(label, estimate, stderr):
        return {"option": label, "estimate": estimate, "stderr": stderr}

    def results(mean, mark):
        return {
            "confidence": 0.95,
            "n": 100,
            "questions": [
                entry("age", "integer", [row("mean", mean, 2.0)], min=0, max=100),
                entry("sports", "multi", [row("run", mark, 0.05), row("swim", 0.2, 0.05)]),
                entry("words", "text", [row("hello", 0.1, 0.01)]),
            ],
        }

    res = series_results("s", [(1, "a", results(40.0, 0.3)), (2, "b", results(90.0, 0.4))])
    keys = {(c["question"], c["option"]) for c in res.changes}
    assert keys == {("age", "mean"), ("sports", "run"), ("sports", "swim")}
    age = next(c for c in res.changes if c["question"] == "age")
    # A mean's change is bounded by max - min, not by 1.
    assert age["estimate"] == 50.0 and age["ci_high"] > 1
    assert res.change("age", "mean", 1, 2)["estimate"] == 50.0


def test_a_single_report_wave_has_an_estimate_but_no_stderr():
    res = series_results(
        "s", [wave_results(1, 100, 40, [50, 30, 20]), wave_results(2, 1, 1, [1, 0, 0])]
    )
    change = res.changes[0]
    assert change["estimate"] is not None and change["stderr"] is None
    assert (change["ci_low"], change["ci_high"]) == (-1.0, 1.0)
