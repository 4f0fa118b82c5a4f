"""Accuracy of deniable's estimates beside pure-ldp and multi-freq-ldpy, on the same reports.

    python benchmarks/accuracy.py [--quick] [--trials T] [--seed S] [--jobs J]

Every grid point (mechanism, k, epsilon, n, true distribution) simulates T surveys of n
respondents sampled from the true distribution and randomized with deniable's exact p*, q*.
All estimators of a trial see the same reports (paired trials), so MSE ratios are precise:

- deniable `estimate` (unbiased) and `share` (maximum likelihood), from `results_document`;
- pure-ldp DEServer (grr, and rr as k = 2) / UEServer(use_oue=True): raw, additive
  normalization, simplex projection and threshold cut (its estimate_all normalization 0-3);
- multi-freq-ldpy MI (clip and rescale) and IBU (iterative Bayesian update).

Reports are simulated as support counts drawn from their exact distribution (numpy); the
peers get those counts through their own estimator code (their aggregate step only counts),
and a check at start-up feeds explicit report arrays through the peers' report-level APIs
and confirms the same numbers. Deniable's probabilities are rounded to 12 decimals towards
privacy, the peers' are the floats at nominal epsilon: a relative difference near 1e-12.

T per point is the larger of --trials (default: enough for a 5% relative standard error of
deniable's MSE) and what the "2x any peer" check needs to be decided (up to 3x). Coverage is
reported two ways: over the simulated option-trials, and exactly (the support count of an
option is binomial, so the interval's coverage is a finite sum over the counts).

Writes benchmarks/results/accuracy.md and .json and docs/accuracy.svg (--quick: accuracy-quick.md
and .json, no plot); --report-only re-renders them from the saved .json. Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import sys
import time
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deniable.aggregator.stats.estimate import option_stats, results_document, z_value
from deniable.shared import Survey
from deniable.shared.survey import Question

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PLOT = ROOT / "docs" / "accuracy.svg"

CONFIDENCE = 0.95
DENIABLE = ("deniable.estimate", "deniable.share")
PURE = ("pure-ldp.raw", "pure-ldp.additive", "pure-ldp.simplex", "pure-ldp.threshold")
MFL = ("mfl.MI", "mfl.IBU")
PEERS = PURE + MFL
UNBIASED_PEERS = ("pure-ldp.raw",)  # the peers' estimates without post-processing
IBU_ROUNDS, IBU_TOL = 10_000, 1e-12  # multi-freq-ldpy's defaults

FULL_GRID = {"k": (2, 4, 16, 64), "epsilon": (0.5, 1.0, 2.0, 4.0), "n": (1_000, 10_000, 100_000)}
QUICK_GRID = {"k": (2, 16), "epsilon": (0.5, 2.0), "n": (1_000, 10_000)}
TRUTHS = ("zipf", "uniform")


@dataclass(frozen=True)
class Point:
    """One grid point: a mechanism over k options at epsilon, n respondents, a true distribution."""

    mechanism: str
    k: int
    epsilon: float
    n: int
    truth: str

    @property
    def label(self) -> str:
        """A short name for tables and logs."""
        return f"{self.mechanism} k={self.k} eps={self.epsilon:g} n={self.n} {self.truth}"


def peers_available() -> bool:
    """Whether pure-ldp and multi-freq-ldpy are importable (pip install --group bench)."""
    try:
        import multi_freq_ldpy  # noqa: F401

        pure_ldp_classes()
    except ImportError:
        return False
    return True


def truth_vector(name: str, k: int) -> np.ndarray:
    """The true distribution: "uniform", or "zipf" (p_i ~ 1/i over k-1 options, the last at 1%)."""
    if name == "uniform":
        return np.full(k, 1.0 / k)
    if name != "zipf":
        raise ValueError(f"unknown truth {name!r}")
    head = 1.0 / np.arange(1, k)
    return np.append(0.99 * head / head.sum(), 0.01)


def make_survey(mechanism: str, k: int, epsilon: float) -> Survey:
    """A one-question survey "q" with the mechanism (rr: binary) at epsilon."""
    if mechanism == "rr":
        if k != 2:
            raise ValueError("rr is binary: k must be 2")
        question = {"id": "q", "text": "?", "type": "binary", "mechanism": "rr"}
    else:
        options = [f"o{i}" for i in range(k)]
        question = {"id": "q", "text": "?", "type": "categorical", "options": options}
        question["mechanism"] = mechanism
    question["epsilon"] = epsilon
    return Survey.from_dict({"id": "accuracy", "title": "accuracy", "questions": [question]})


def option_pq(question: Question) -> tuple[np.ndarray, np.ndarray]:
    """Per-option (p*, q*) as float arrays, from the mechanism's exact pairs."""
    pairs = question.randomizer.option_pairs()
    return np.array([float(p) for p, _ in pairs]), np.array([float(q) for _, q in pairs])


def simulate_counts(
    question: Question, f: np.ndarray, n: int, trials: int, rng: np.random.Generator
) -> np.ndarray:
    """(trials, k) support counts of n respondents sampled from f, exactly distributed.

    rr/grr: each report is option u with probability q* + (p* - q*) f_u (multinomial). oue:
    given the n_v true answers, bit v's count is Binomial(n_v, p*) + Binomial(n - n_v, q*).
    """
    p, q = option_pq(question)
    if question.mechanism == "oue":
        true = rng.multinomial(n, f, size=trials)
        return rng.binomial(true, p) + rng.binomial(n - true, q)
    lam = q + (p - q) * f
    return rng.multinomial(n, lam / lam.sum(), size=trials)


def simulate_reports(
    question: Question, f: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """Explicit reports of n respondents: option indices (rr, grr) or an (n, k) bit matrix (oue)."""
    p, q = option_pq(question)
    k = f.size
    true = rng.choice(k, size=n, p=f)
    if question.mechanism == "oue":
        bits = rng.random((n, k)) < q[0]
        bits[np.arange(n), true] = rng.random(n) < p[0]
        return bits.astype(np.int64)
    keep = rng.random(n) < (p[1] if question.mechanism == "rr" else p[0])
    if question.mechanism == "rr":
        return np.where(keep, true, 1 - true)
    other = rng.integers(0, k - 1, size=n)
    return np.where(keep, true, other + (other >= true))


def report_counts(question: Question, reports: np.ndarray) -> np.ndarray:
    """Support counts of explicit reports (per value, or the column sums of a bit matrix)."""
    if question.mechanism == "oue":
        return reports.sum(axis=0)
    return np.bincount(reports, minlength=question.k)


def deniable_estimates(survey: Survey, n: int, counts: np.ndarray) -> dict[str, np.ndarray]:
    """deniable's estimate, share, ci_low and ci_high, (trials, k) each, from results_document."""
    fields = ("estimate", "share", "ci_low", "ci_high")
    out = {name: np.empty(counts.shape) for name in fields}
    for t, row in enumerate(counts):
        doc = results_document(survey, n, {"q": [int(c) for c in row]}, confidence=CONFIDENCE)
        for v, option in enumerate(doc["questions"][0]["options"]):
            for name in fields:
                out[name][t, v] = option[name]
    return out


def pure_ldp_classes() -> tuple[type, type]:
    """pure-ldp's DEServer and UEServer classes.

    pure_ldp.frequency_oracles/__init__ imports every oracle, and its RAPPOR server needs
    scikit-learn, which pure-ldp does not declare; when that import fails, load the package as
    an empty namespace so only the direct-encoding and unary-encoding modules are imported.
    """
    try:
        from pure_ldp.frequency_oracles import DEServer, UEServer
    except ImportError:
        import pure_ldp

        name = "pure_ldp.frequency_oracles"
        package = types.ModuleType(name)
        package.__path__ = [str(Path(pure_ldp.__file__).parent / "frequency_oracles")]
        sys.modules[name] = package
        from pure_ldp.frequency_oracles.direct_encoding import DEServer
        from pure_ldp.frequency_oracles.unary_encoding import UEServer
    return DEServer, UEServer


def pure_ldp_server(mechanism: str, k: int, epsilon: float) -> Any:
    """A fresh pure-ldp server: DEServer (direct encoding = grr) or UEServer(use_oue=True)."""
    DEServer, UEServer = pure_ldp_classes()
    identity: Callable[[int], int] = lambda x: x  # noqa: E731 - options are indices already
    if mechanism == "oue":
        return UEServer(epsilon, k, use_oue=True, index_mapper=identity)
    return DEServer(epsilon, k, index_mapper=identity)


def pure_ldp_from_server(server: Any, k: int) -> dict[str, np.ndarray]:
    """pure-ldp's four estimate_all normalizations from an aggregated server, as frequencies."""
    out = {}
    for norm, name in enumerate(PURE):
        est = server.estimate_all(range(k), suppress_warnings=True, normalization=norm)
        out[name] = np.asarray(est, dtype=np.float64) / server.n
    return out


def pure_ldp_estimates(
    mechanism: str, k: int, epsilon: float, n: int, counts: np.ndarray
) -> dict[str, np.ndarray]:
    """pure-ldp's estimates per trial; its aggregate() only adds reports, so set the sums."""
    out = {name: np.empty(counts.shape) for name in PURE}
    for t, row in enumerate(counts):
        server = pure_ldp_server(mechanism, k, epsilon)
        server.aggregated_data = row.astype(np.float64)
        server.n = n
        for name, est in pure_ldp_from_server(server, k).items():
            out[name][t] = est
    return out


def mfl_parameters(mechanism: str, k: int, epsilon: float) -> tuple[float, float, np.ndarray]:
    """multi-freq-ldpy's (p, q, A) exactly as its GRR_/UE_Aggregator_* functions build them."""
    if mechanism == "oue":
        p, q = 1 / 2, 1 / (np.exp(epsilon) + 1)
    else:
        p = np.exp(epsilon) / (np.exp(epsilon) + k - 1)
        q = (1 - p) / (k - 1)
    a = np.eye(k)
    a[a == 1] = p
    a[a == 0] = q
    return p, q, a


def mfl_estimates(
    mechanism: str, k: int, epsilon: float, n: int, counts: np.ndarray
) -> dict[str, np.ndarray]:
    """multi-freq-ldpy's MI and IBU per trial, from its estimator functions on the counts."""
    from multi_freq_ldpy.estimators.Histogram_estimator import IBU, MI

    p, q, a = mfl_parameters(mechanism, k, epsilon)
    out = {name: np.empty(counts.shape) for name in MFL}
    for t, row in enumerate(counts):
        c = row.astype(np.float64)
        out["mfl.MI"][t] = MI(c, n, p, q)
        out["mfl.IBU"][t] = IBU(k, a, c / c.sum(), IBU_ROUNDS, IBU_TOL, "max_abs")
    return out


def mfl_from_reports(mechanism: str, k: int, epsilon: float, reports: np.ndarray) -> dict:
    """multi-freq-ldpy's report-level API (GRR_/UE_Aggregator_MI and _IBU) on explicit reports."""
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_IBU, GRR_Aggregator_MI
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_IBU, UE_Aggregator_MI

    if mechanism == "oue":
        rows = list(reports)
        return {
            "mfl.MI": UE_Aggregator_MI(rows, epsilon, optimal=True),
            "mfl.IBU": UE_Aggregator_IBU(rows, k, epsilon, optimal=True),
        }
    return {
        "mfl.MI": GRR_Aggregator_MI(reports, k, epsilon),
        "mfl.IBU": GRR_Aggregator_IBU(reports, k, epsilon),
    }


def pure_ldp_from_reports(mechanism: str, k: int, epsilon: float, reports: np.ndarray) -> dict:
    """pure-ldp's estimates after aggregate_all on explicit reports."""
    server = pure_ldp_server(mechanism, k, epsilon)
    server.aggregate_all(reports)
    return pure_ldp_from_server(server, k)


def check_peer_paths(seed: int, n: int = 3_000) -> tuple[bool, float]:
    """Whether the peers' report-level APIs on explicit reports give the count path's numbers."""
    rng = np.random.default_rng([seed, 999_999])
    worst = 0.0
    for mechanism, k in (("rr", 2), ("grr", 5), ("oue", 5)):
        question = make_survey(mechanism, k, 1.0).questions["q"]
        reports = simulate_reports(question, truth_vector("zipf", k), n, rng)
        counts = report_counts(question, reports)[None, :]
        via_counts = pure_ldp_estimates(mechanism, k, 1.0, n, counts)
        via_counts |= mfl_estimates(mechanism, k, 1.0, n, counts)
        via_reports = pure_ldp_from_reports(mechanism, k, 1.0, reports)
        via_reports |= mfl_from_reports(mechanism, k, 1.0, reports)
        for name in PEERS:
            worst = max(worst, float(np.max(np.abs(via_counts[name][0] - via_reports[name]))))
    return worst < 1e-9, worst


def binom_pmf(n: int, lam: float, c: np.ndarray) -> np.ndarray:
    """Binomial(n, lam) probabilities of the counts c."""
    log_choose = np.array(
        [math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in c]
    )
    return np.exp(log_choose + c * math.log(lam) + (n - c) * math.log1p(-lam))


def exact_coverage(question: Question, f: np.ndarray, n: int) -> float:
    """The interval's coverage averaged over options, summed exactly over each binomial count."""
    p, q = option_pq(question)
    z = z_value(CONFIDENCE)
    covered = []
    for v in range(f.size):
        lam = q[v] + (p[v] - q[v]) * f[v]
        sd = math.sqrt(n * lam * (1 - lam))
        lo, hi = max(0, int(n * lam - 14 * sd) - 10), min(n, int(n * lam + 14 * sd) + 10)
        c = np.arange(lo, hi + 1)
        _, _, low, high = option_stats(c, n, p[v], q[v], z)
        inside = (low <= f[v]) & (f[v] <= high)
        covered.append(float(np.sum(binom_pmf(n, lam, c) * inside)))
    return float(np.mean(covered))


def min_trials(point: Point, override: int | None, scale: float = 1.0) -> int:
    """Trials for a 5% relative standard error of deniable's MSE (about 800 / free options)."""
    if override is not None:
        return override
    free = 1 if point.mechanism == "rr" else max(1, point.k - 1)
    return max(round(40 * scale), math.ceil(800 * scale / free))


@dataclass
class Tally:
    """Running sums over trials for one estimator: squared error per trial and error per option."""

    sq: list[np.ndarray]
    err: np.ndarray

    def add(self, est: np.ndarray, f: np.ndarray) -> None:
        """Add a batch of (trials, k) estimates."""
        e = est - f
        self.sq.append(np.sum(e * e, axis=1))
        self.err += e.sum(axis=0)


def ratio_and_se(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """MSE ratio sum(a)/sum(b) of paired per-trial squared errors and its standard error."""
    ma, mb = float(a.mean()), float(b.mean())
    if mb == 0:
        return math.inf, 0.0
    if ma == 0:
        return 0.0, 0.0
    d = a / ma - b / mb
    return ma / mb, ma / mb * float(d.std(ddof=1) / math.sqrt(a.size))


def undecided(sq: dict[str, np.ndarray], names: Iterable[str]) -> bool:
    """Whether a per-point check (share <= 2x a peer) is within 3 standard errors of its bound."""
    for name in names:
        r, se = ratio_and_se(sq["deniable.share"], sq[name])
        if abs(r - 2.0) < 3.0 * se:
            return True
    return False


def run_point(
    point: Point,
    seed: int,
    trials: int | None = None,
    peers: bool | None = None,
    scale: float = 1.0,
) -> dict[str, Any]:
    """Simulate one grid point; MSE, bias and coverage per estimator, ratios, and coverage."""
    t0 = time.perf_counter()
    peers = peers_available() if peers is None else peers
    survey = make_survey(point.mechanism, point.k, point.epsilon)
    question = survey.questions["q"]
    f = truth_vector(point.truth, point.k)
    rng = np.random.default_rng([seed, *map(ord, point.label)])
    names = DENIABLE + (PEERS if peers else ())
    tallies = {name: Tally([], np.zeros(point.k)) for name in names}
    covered = np.zeros(point.k)
    batch = min_trials(point, trials, scale)
    done = 0
    while True:
        counts = simulate_counts(question, f, point.n, batch, rng)
        den = deniable_estimates(survey, point.n, counts)
        covered += np.sum((den["ci_low"] <= f) & (f <= den["ci_high"]), axis=0)
        ests = {"deniable.estimate": den["estimate"], "deniable.share": den["share"]}
        if peers:
            ests |= pure_ldp_estimates(point.mechanism, point.k, point.epsilon, point.n, counts)
            ests |= mfl_estimates(point.mechanism, point.k, point.epsilon, point.n, counts)
        for name, est in ests.items():
            tallies[name].add(est, f)
        done += batch
        sq = {name: np.concatenate(t.sq) for name, t in tallies.items()}
        if not peers or trials is not None or done >= 3 * batch or not undecided(sq, PEERS):
            break
    return summarize_point(point, question, f, done, tallies, covered, time.perf_counter() - t0)


def summarize_point(
    point: Point,
    question: Question,
    f: np.ndarray,
    trials: int,
    tallies: dict[str, Tally],
    covered: np.ndarray,
    seconds: float,
) -> dict[str, Any]:
    """The JSON record of one grid point."""
    sq = {name: np.concatenate(t.sq) for name, t in tallies.items()}
    k = point.k
    variance = np.mean(
        [question.randomizer.variance(point.n, float(x), v) for v, x in enumerate(f)]
    )
    est: dict[str, Any] = {}
    for name, tally in tallies.items():
        bias = tally.err / trials
        est[name] = {
            "mse": float(sq[name].mean() / k),
            "bias_rms": float(np.sqrt(np.mean(bias * bias))),
            "bias_max": float(np.max(np.abs(bias))),
        }
    ratios = {}
    for name in tallies:
        if name.startswith("deniable"):
            continue
        for mine in DENIABLE:
            r, se = ratio_and_se(sq[mine], sq[name])
            ratios[f"{mine.split('.')[1]}/{name}"] = {"ratio": r, "se": se}
    return {
        **asdict(point),
        "trials": trials,
        "seconds": round(seconds, 2),
        "analytic_variance": float(variance),
        "estimators": est,
        "ratios": ratios,
        "coverage": float(covered.sum() / (k * trials)),
        "coverage_exact": exact_coverage(question, f, point.n),
    }


def grid(quick: bool) -> list[Point]:
    """The grid points: rr at k = 2, grr and oue at every k, both truths."""
    g = QUICK_GRID if quick else FULL_GRID
    points = []
    for k in g["k"]:
        for mechanism in (("rr",) if k == 2 else ()) + ("grr", "oue"):
            for epsilon in g["epsilon"]:
                for n in g["n"]:
                    for truth in TRUTHS:
                        points.append(Point(mechanism, k, epsilon, n, truth))
    return points


def _run(args: tuple[Point, int, int | None, float]) -> dict[str, Any]:
    """run_point for a process pool."""
    point, seed, trials, scale = args
    return run_point(point, seed, trials, scale=scale)


def run_grid(
    points: Sequence[Point], seed: int, trials: int | None, jobs: int, scale: float = 1.0
) -> list[dict]:
    """All grid points, in a process pool, in grid order; prints progress."""
    work = [(p, seed, trials, scale) for p in points]
    results: list[dict] = []
    with mp.Pool(jobs) as pool:
        for i, rec in enumerate(pool.imap(_run, work), start=1):
            print(f"  [{i}/{len(work)}] {points[i - 1].label}: T={rec['trials']}", flush=True)
            results.append(rec)
    return results


def rounded(x: Any) -> Any:
    """A JSON-able value with every float to 6 significant digits (a smaller results file)."""
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, dict):
        return {key: rounded(v) for key, v in x.items()}
    if isinstance(x, list | tuple):
        return [rounded(v) for v in x]
    return x


def geo_mean(values: Sequence[float]) -> float:
    """The geometric mean."""
    return float(np.exp(np.mean(np.log(values))))


def checks(results: Sequence[dict], peer_paths: tuple[bool, float] | None) -> list[dict]:
    """The issue's "Must show" checks, each with a PASS/FAIL and the measured figure."""
    out = []

    def add(name: str, ok: bool, detail: str) -> None:
        out.append({"check": name, "pass": bool(ok), "detail": detail})

    if peer_paths is not None:
        add(
            "peers' report-level APIs give the count path's numbers",
            peer_paths[0],
            f"largest difference {peer_paths[1]:.1e}",
        )
    if "estimate/pure-ldp.raw" in results[0]["ratios"]:
        worst = max(r["ratios"][f"estimate/{p}"]["ratio"] for r in results for p in UNBIASED_PEERS)
        add(
            "unbiased MSE <= 1.05 x the best peer's unbiased estimate, every point",
            worst <= 1.05,
            f"largest ratio {worst:.6f}",
        )
        small = [r for r in results if r["epsilon"] <= 2]
        for peer in ("mfl.IBU", "pure-ldp.simplex"):
            key = f"share/{peer}"
            g = geo_mean([r["ratios"][key]["ratio"] for r in small])
            pooled = sum(r["estimators"]["deniable.share"]["mse"] for r in small) / sum(
                r["estimators"][peer]["mse"] for r in small
            )
            add(
                f"share MSE <= 1.05 x {peer} at eps <= 2, pooled",
                g <= 1.05 and pooled <= 1.05,
                f"geometric mean of ratios {g:.3f}, ratio of summed MSE {pooled:.3f}",
            )
        over = [
            (r["ratios"][f"share/{p}"]["ratio"], f"{p} at {point_label(r)}")
            for r in results
            for p in PEERS
        ]
        worst_r, where = max(over)
        above = sorted({w.split(" at ")[1] for x, w in over if x > 2})
        add(
            "share MSE <= 2 x every peer estimate, every point",
            worst_r <= 2,
            f"largest {worst_r:.3f} ({where}); {len(above)} points above 2"
            + (f": {'; '.join(above)}" if above else ""),
        )
    exact = [r["coverage_exact"] for r in results if r["n"] >= 1000]
    add(
        "exact 95% coverage in [0.94, 0.96] at every point with n >= 1000",
        all(0.94 <= c <= 0.96 for c in exact),
        f"range [{min(exact):.4f}, {max(exact):.4f}]",
    )
    sim = [r for r in results if r["n"] >= 1000]
    pooled_cov = sum(r["coverage"] * r["k"] * r["trials"] for r in sim) / sum(
        r["k"] * r["trials"] for r in sim
    )
    add(
        "simulated 95% coverage in [0.94, 0.96], pooled over n >= 1000",
        0.94 <= pooled_cov <= 0.96,
        f"{pooled_cov:.4f}; per point [{min(r['coverage'] for r in sim):.4f}, {max(r['coverage'] for r in sim):.4f}]",
    )
    return out


def point_label(r: dict) -> str:
    """A grid point's label from its record."""
    return Point(r["mechanism"], r["k"], r["epsilon"], r["n"], r["truth"]).label


def fmt(x: float) -> str:
    """A number for the tables: 3 significant digits."""
    return f"{x:.3g}"


def markdown(results: Sequence[dict], check_list: Sequence[dict], meta: dict) -> str:
    """The results as markdown: the checks, then MSE, ratio and bias tables per grid point."""
    lines = [
        "# Accuracy benchmark",
        "",
        f"`{meta['command']}` — seed {meta['seed']}, {meta['points']} grid points, "
        f"{meta['seconds']:.0f} s. Peers: {meta['peers']}.",
        "",
        "## Checks",
        "",
    ]
    lines += [
        f"- **{'PASS' if c['pass'] else 'FAIL'}** {c['check']}: {c['detail']}" for c in check_list
    ]
    names = [n for n in DENIABLE + PEERS if n in results[0]["estimators"]]
    head = ["mechanism", "k", "eps", "n", "truth", "T"]
    lines += ["", "## Summary: geometric means over n and truth of the MSE ratios", ""]
    lines += summary(results)
    lines += ["", "## MSE (mean over options and trials of the squared error)", ""]
    lines += table(
        head + names + ["coverage (sim / exact)"],
        [
            row(r)
            + [fmt(r["estimators"][n]["mse"]) for n in names]
            + [f"{r['coverage']:.3f} / {r['coverage_exact']:.4f}"]
            for r in results
        ],
    )
    peers = [n for n in names if not n.startswith("deniable")]
    if peers:
        lines += ["", "## MSE ratios (paired): deniable's estimate and share over each peer", ""]
        cols = [f"estimate/{p}" for p in UNBIASED_PEERS] + [f"share/{p}" for p in peers]
        lines += table(
            head + cols,
            [row(r) + [f"{r['ratios'][c]['ratio']:.3f}" for c in cols] for r in results],
        )
    lines += ["", "## Bias (root mean square over options of the mean error)", ""]
    lines += table(
        head + names,
        [row(r) + [fmt(r["estimators"][n]["bias_rms"]) for n in names] for r in results],
    )
    return "\n".join(lines) + "\n"


def summary(results: Sequence[dict]) -> list[str]:
    """Per mechanism, k and epsilon: geometric-mean MSE ratios of the share and exact coverage."""
    peers = [
        p
        for p in ("mfl.IBU", "pure-ldp.simplex", "mfl.MI", "pure-ldp.raw")
        if f"share/{p}" in results[0]["ratios"]
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["mechanism"], r["k"], r["epsilon"]), []).append(r)
    rows = []
    for (mechanism, k, eps), rs in groups.items():
        cells = [
            mechanism,
            str(k),
            f"{eps:g}",
            fmt(geo_mean([r["estimators"]["deniable.estimate"]["mse"] * r["n"] for r in rs])),
        ]
        cells += [
            f"{geo_mean([r['ratios'][f'share/{p}']['ratio'] for r in rs]):.3f}" for p in peers
        ]
        cov = [r["coverage_exact"] for r in rs]
        rows.append(cells + [f"{min(cov):.3f}-{max(cov):.3f}"])
    head = (
        ["mechanism", "k", "eps", "n x MSE (estimate)"]
        + [f"share/{p}" for p in peers]
        + ["exact coverage"]
    )
    return table(head, rows)


def row(r: dict) -> list[str]:
    """The leading cells of a grid point's table row."""
    return [
        r["mechanism"],
        str(r["k"]),
        f"{r['epsilon']:g}",
        str(r["n"]),
        r["truth"],
        str(r["trials"]),
    ]


def table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A markdown table."""
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def plot(results: Sequence[dict], path: Path) -> None:
    """MSE ratio of deniable's share to each peer estimate per grid point (log scale), as SVG."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: a smaller, diffable file
    import matplotlib.pyplot as plt

    peers = [n for n in PEERS if f"share/{n}" in results[0]["ratios"]]
    fig, axes = plt.subplots(2, 1, figsize=(13, 8), sharex=True)
    x = np.arange(len(results))
    for name in peers:
        axes[0].plot(
            x, [r["ratios"][f"share/{name}"]["ratio"] for r in results], ".", label=name, ms=4
        )
    axes[0].axhline(1, color="k", lw=0.6)
    axes[0].axhline(2, color="r", lw=0.6, ls="--")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("MSE(deniable share) / MSE(peer)")
    axes[0].legend(ncol=3, fontsize=8)
    axes[1].plot(
        x,
        [r["ratios"]["estimate/pure-ldp.raw"]["ratio"] for r in results],
        ".",
        ms=4,
        label="estimate / pure-ldp raw",
    )
    axes[1].plot(x, [r["coverage_exact"] for r in results], "x", ms=3, label="exact 95% coverage")
    axes[1].axhspan(0.94, 0.96, color="g", alpha=0.1)
    axes[1].set_ylabel("ratio / coverage")
    axes[1].legend(fontsize=8)
    groups = [(i, f"{r['mechanism']} k={r['k']}") for i, r in enumerate(results)]
    starts = [(i, g) for j, (i, g) in enumerate(groups) if j == 0 or groups[j - 1][1] != g]
    for ax in axes:
        for i, _ in starts:
            ax.axvline(i - 0.5, color="0.8", lw=0.5)
    axes[1].set_xticks([i for i, _ in starts], [g for _, g in starts], rotation=30, fontsize=8)
    axes[1].set_xlabel(
        "grid points (within a group: epsilon 0.5 -> 4, n 10^3 -> 10^5, zipf/uniform)"
    )
    fig.suptitle("deniable vs pure-ldp and multi-freq-ldpy on the same simulated reports")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


# -- numbers and select-all: the mean's and each option's error against the analytic variance --

NUMBER_EPSILONS = (0.5, 1.0, 2.0, 4.0)
NUMBER_NS = (1_000, 10_000, 100_000)
#: Distributions over 0..20 for the onebit mean: their names and probability vectors.
NUMBER_VALUES = np.arange(21)
NUMBER_TRUTHS = {
    "uniform": np.full(21, 1 / 21),
    "skewed": 0.7**NUMBER_VALUES / np.sum(0.7**NUMBER_VALUES),
    "all at 0": np.where(NUMBER_VALUES == 0, 1.0, 0.0),
}
#: Each option's chance of being selected, for a multi question of 4 options.
MULTI_TRUTH = np.array([0.5, 0.2, 0.05, 0.0])


def number_question(kind: str, epsilon: float) -> Question:
    """An integer question over 0..20 (onebit) or a 4-option multi question (rr at eps/4)."""
    doc: dict[str, Any] = (
        {"type": "integer", "min": 0, "max": 20, "epsilon": epsilon}
        if kind == "onebit"
        else {"type": "multi", "options": ["a", "b", "c", "d"], "epsilon": epsilon}
    )
    survey = Survey.from_dict(
        {"id": "acc", "title": "accuracy", "questions": [{"id": "q", "text": "?", **doc}]}
    )
    return survey.questions["q"]


def number_point(kind: str, epsilon: float, n: int, truth: str, trials: int, seed: int) -> dict:
    """One grid point: the empirical MSE of the mean (onebit) or of each option (multi) over
    `trials` simulated surveys, beside the analytic variance W^2 lambda (1 - lambda) /
    (n (p* - q*)^2), the mean squared stderr, and the simulated and exact 95% coverage."""
    q = number_question(kind, epsilon)
    p_star, q_star = float(q.p_star), float(q.q_star)
    gap, z = p_star - q_star, z_value(CONFIDENCE)
    rng = np.random.default_rng(seed)
    if kind == "onebit":
        dist = NUMBER_TRUTHS[truth]
        target = np.array([float(np.dot(NUMBER_VALUES, dist))])
        width = 20.0
        sigma2 = float(np.dot(NUMBER_VALUES**2, dist)) - target[0] ** 2
    else:
        target, width = MULTI_TRUTH, 1.0
        sigma2 = float(np.mean(target * (1 - target)))
    share = target / width
    lam = q_star + gap * share
    ones = rng.binomial(n, lam, size=(trials, lam.size))
    est, se, low, high = option_stats(ones, n, p_star, q_star, z)
    est, se, low, high = (width * x for x in (est, se, low, high))
    err2 = (est - target) ** 2
    analytic = width**2 * lam * (1 - lam) / (n * gap * gap)
    exact = []
    for v in range(lam.size):
        sd = math.sqrt(n * lam[v] * (1 - lam[v]))
        lo = max(0, int(n * lam[v] - 14 * sd) - 10)
        hi = min(n, int(n * lam[v] + 14 * sd) + 10)
        c = np.arange(lo, hi + 1)
        _, _, cl, ch = option_stats(c, n, p_star, q_star, z)
        inside = (width * cl <= target[v]) & (target[v] <= width * ch)
        exact.append(float(np.sum(binom_pmf(n, float(lam[v]), c) * inside)))
    interior = [v for v in range(lam.size) if 0 < share[v] < 1]
    return {
        "kind": kind,
        "epsilon": epsilon,
        "n": n,
        "truth": truth,
        "trials": trials,
        "mse": float(err2.mean()),
        "analytic_variance": float(analytic.mean()),
        "mse_ratio": float(err2.mean() / analytic.mean()),
        "mse_ratio_se": float(math.sqrt(2.0 / (trials * lam.size))),
        "stderr2_ratio": float((se**2).mean() / analytic.mean()),
        "bias_z": float(
            np.max(np.abs((est - target).mean(axis=0)) / (np.sqrt(analytic) / math.sqrt(trials)))
        ),
        "coverage": float(np.mean((low <= target) & (target <= high))),
        "coverage_exact_interior": float(np.mean([exact[v] for v in interior]))
        if interior
        else None,
        "coverage_exact_edge": float(
            np.mean([exact[v] for v in range(lam.size) if v not in interior])
        )
        if len(interior) < lam.size
        else None,
        # What the same n would give without privacy: the privacy cost as a variance factor.
        "privacy_factor": float(analytic.mean() / (sigma2 / n)) if sigma2 > 0 else None,
    }


def number_grid(quick: bool, seed: int) -> list[dict]:
    """Every numbers point: onebit over three truths, multi at k = 4."""
    eps = (0.5, 2.0) if quick else NUMBER_EPSILONS
    ns = (1_000, 10_000) if quick else NUMBER_NS
    trials = 400 if quick else 4_000
    out = []
    for i, (e, n) in enumerate((e, n) for e in eps for n in ns):
        for j, truth in enumerate(NUMBER_TRUTHS):
            out.append(number_point("onebit", e, n, truth, trials, seed + 100 * i + j))
        out.append(number_point("multi", 2 * e, n, "k=4", trials, seed + 100 * i + 50))
    return out


def number_checks(points: Sequence[dict]) -> list[dict]:
    """The mean's and the options' MSE is the analytic variance; intervals cover."""
    worst = max(points, key=lambda r: abs(r["mse_ratio"] - 1) / r["mse_ratio_se"])
    worst_z = abs(worst["mse_ratio"] - 1) / worst["mse_ratio_se"]
    stderr = [r["stderr2_ratio"] for r in points]
    cover = [r["coverage_exact_interior"] for r in points if r["coverage_exact_interior"]]
    edge = [r["coverage_exact_edge"] for r in points if r["coverage_exact_edge"]]
    bias = max(r["bias_z"] for r in points)
    return [
        {
            "check": "numbers: empirical MSE = analytic variance within 4.5 standard errors",
            "pass": worst_z <= 4.5,
            "detail": f"largest deviation {worst_z:.2f} se (ratio {worst['mse_ratio']:.3f} at "
            f"{worst['kind']} eps={worst['epsilon']:g} n={worst['n']} {worst['truth']})",
        },
        {
            "check": "numbers: mean squared stderr = analytic variance within 3%",
            "pass": all(abs(x - 1) <= 0.03 for x in stderr),
            "detail": f"range [{min(stderr):.4f}, {max(stderr):.4f}]",
        },
        {
            "check": "numbers: no bias beyond 4.5 standard errors",
            "pass": bias <= 4.5,
            "detail": f"largest {bias:.2f}",
        },
        {
            "check": "numbers: exact 95% coverage in [0.94, 0.96] for truths inside the range",
            "pass": all(0.94 <= c <= 0.96 for c in cover),
            "detail": f"range [{min(cover):.4f}, {max(cover):.4f}]; at the range's end (clipped "
            f"onto the truth when it misses on the far side) [{min(edge):.4f}, {max(edge):.4f}]",
        },
    ]


def number_markdown(points: Sequence[dict], check_list: Sequence[dict], command: str) -> str:
    """The numbers table: one row per point."""
    lines = [
        "# Accuracy of the onebit mean and of multi options",
        "",
        f"`{command}`: onebit over 0..20 (W = 20) and multi with 4 options (selected with "
        "probability 0.5, 0.2, 0.05, 0; rr at eps/4 each), counts drawn from their exact "
        "binomial distribution, estimates by `option_stats` (the service's code) scaled by W.",
        "`MSE/var`: the empirical MSE over the analytic variance W^2 lambda (1 - lambda) / "
        "(n (p* - q*)^2) (its standard error in brackets); `se^2/var`: the mean squared "
        "stderr over the same; `privacy x`: the analytic variance over the sample mean's "
        "sigma^2 / n, i.e. how many times more respondents the same margin costs with privacy.",
        "",
    ]
    for c in check_list:
        lines.append(f"- **{'PASS' if c['pass'] else 'FAIL'}** {c['check']}: {c['detail']}")
    lines += [
        "",
        "| question | eps | n | truth | trials | sqrt(MSE) | MSE/var | se^2/var | coverage "
        "| exact coverage | privacy x |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in points:
        exact = r["coverage_exact_interior"] or r["coverage_exact_edge"]
        factor = "-" if r["privacy_factor"] is None else f"{r['privacy_factor']:.0f}"
        lines.append(
            f"| {r['kind']} | {r['epsilon']:g} | {r['n']} | {r['truth']} | {r['trials']} | "
            f"{math.sqrt(r['mse']):.4g} | {r['mse_ratio']:.3f} ({r['mse_ratio_se']:.3f}) | "
            f"{r['stderr2_ratio']:.4f} | {r['coverage']:.4f} | {exact:.4f} | {factor} |"
        )
    return "\n".join(lines) + "\n"


def run_numbers(quick: bool, seed: int) -> int:
    """Run, print and save the numbers part; 1 if one of its checks fails."""
    t0 = time.perf_counter()
    points = number_grid(quick, seed)
    command = "python benchmarks/accuracy.py --numbers-only" + (" --quick" if quick else "")
    check_list = number_checks(points)
    text = number_markdown(points, check_list, command)
    text += f"\n{len(points)} points, {time.perf_counter() - t0:.1f} s, seed {seed}\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "accuracy-numbers-quick" if quick else "accuracy-numbers"
    (RESULTS / f"{stem}.md").write_text(text)
    for c in check_list:
        print(f"{'PASS' if c['pass'] else 'FAIL'}: {c['check']} ({c['detail']})")
    return 0 if all(c["pass"] for c in check_list) else 1


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small grid and few trials (~1 minute)")
    ap.add_argument(
        "--trials", type=int, default=None, help="trials per grid point (default: adaptive)"
    )
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--jobs", type=int, default=min(2, mp.cpu_count()), help="worker processes")
    ap.add_argument("--report-only", action="store_true", help="re-render the saved .json only")
    ap.add_argument(
        "--text-only",
        action="store_true",
        help="only text answers beside pure-ldp (benchmarks/text_accuracy.py)",
    )
    ap.add_argument(
        "--numbers-only",
        action="store_true",
        help="only the onebit mean and multi options against their analytic variance",
    )
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid, print and save the tables, the plot and the checks; 1 if a check fails."""
    args = parse_args(argv)
    if args.report_only:
        saved = json.loads((RESULTS / "accuracy.json").read_text())
        return report(saved["points"], saved["meta"], peer_paths=None, saved_checks=saved["checks"])
    if args.text_only:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import text_accuracy

        return text_accuracy.main(["--quick"] if args.quick else [])
    numbers = run_numbers(args.quick, args.seed)
    if args.numbers_only:
        return numbers
    t0 = time.perf_counter()
    peers = peers_available()
    if not peers:
        print("pure-ldp / multi-freq-ldpy not installed (pip install --group bench): deniable only")
    points = grid(args.quick)
    print(f"{len(points)} grid points, {args.jobs} jobs")
    peer_paths = check_peer_paths(args.seed) if peers else None
    results = run_grid(points, args.seed, args.trials, args.jobs, 0.25 if args.quick else 1.0)
    command = "python benchmarks/accuracy.py" + (" --quick" if args.quick else "")
    command += f" --trials {args.trials}" if args.trials is not None else ""
    meta = {
        "command": command,
        "seed": args.seed,
        "points": len(points),
        "seconds": time.perf_counter() - t0,
        "peers": "pure-ldp, multi-freq-ldpy" if peers else "none installed",
    }
    stem = "accuracy-quick" if args.quick else "accuracy"
    return max(report(results, meta, peer_paths, stem=stem), numbers)


def report(
    results: list[dict],
    meta: dict,
    peer_paths: tuple[bool, float] | None,
    saved_checks: list[dict] | None = None,
    stem: str = "accuracy",
) -> int:
    """Check, print and save the tables, the JSON and the plot; 1 if a check fails."""
    check_list = checks(results, peer_paths)
    if saved_checks is not None:  # keep the start-up check of the peers' report-level APIs
        check_list = [c for c in saved_checks if c["check"].startswith("peers'")] + check_list
    peers = "estimate/pure-ldp.raw" in results[0]["ratios"]
    text = markdown(results, check_list, meta)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.md").write_text(text)
    doc = {"meta": meta, "checks": check_list, "points": results}
    (RESULTS / f"{stem}.json").write_text(json.dumps(rounded(doc), separators=(",", ":")) + "\n")
    if peers and stem == "accuracy":  # a --quick run leaves the published plot alone
        plot(results, PLOT)
    for c in check_list:
        print(f"{'PASS' if c['pass'] else 'FAIL'}: {c['check']} ({c['detail']})")
    return 0 if all(c["pass"] for c in check_list) else 1


if __name__ == "__main__":
    sys.exit(main())
