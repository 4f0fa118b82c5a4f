"""Accuracy of text candidates' shares beside pure-ldp's Apple CMS/HCMS and RAPPOR, on the same
true answers, epsilon and sketch sizes.

    python benchmarks/text_accuracy.py [--quick] [--trials T] [--seed S]
    (also: python benchmarks/accuracy.py --text-only)

Per grid point (mechanism, epsilon 0.5 to 4, domain size D, n) it draws T surveys of n
respondents from a Zipf(1.1) truth over D words; every word is a candidate. deniable's
counters are drawn from their exact distribution for those very answers
(aggregator/stats/sketch_simulate.py) and decoded by the service's code (joint decoding for
cms and hcms, RAPPOR's regression); pure-ldp's client randomizes each answer and its server
aggregates and estimates (Apple's estimator; RAPPOR's non-negative regularized regression)
with its own hash functions. Both use the same k and m (RAPPOR: bits, hashes, cohorts), and
the same epsilon (RAPPOR with the permanent response only, p = 0, q = 1, as pure-ldp's: then
both epsilons are 2h ln((1 - f/2)/(f/2))). It prints the MSE of each, their ratio per point,
pooled ratios, and writes benchmarks/results/text-accuracy.md and docs/text-accuracy.svg.
Target: deniable's MSE within 1.1x of pure-ldp's or better, pooled over the grid.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.sketch_estimate import decoder
from deniable.aggregator.stats.sketch_simulate import counts_of, zipf
from deniable.shared.probability import round_up
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PLOT = ROOT / "docs" / "text-accuracy.svg"
SKETCH = (16, 256)  # k hash functions x m columns, for cms and hcms alike
RAPPOR_SIZE = {"bits": 32, "hashes": 2, "cohorts": 16}
FULL = {"epsilon": (0.5, 1.0, 2.0, 4.0), "domain": (20, 100), "n": (5_000, 20_000)}
QUICK = {"epsilon": (1.0, 4.0), "domain": (20,), "n": (5_000,)}


def ours(mechanism: str, epsilon: float) -> Sketch:
    """deniable's mechanism at epsilon, at the benchmark's sizes."""
    k, m = SKETCH
    if mechanism == "hcms":
        return HCMS.from_epsilon(k=k, m=m, epsilon=epsilon)
    if mechanism == "cms":
        return CMS.from_epsilon(k=k, m=m, epsilon=epsilon)
    h = RAPPOR_SIZE["hashes"]
    # pure-ldp's RAPPOR: permanent response only, eps = 2h ln((1 - f/2) / (f/2)).
    f = round_up(2.0 / (1.0 + math.exp(epsilon / (2 * h))))
    return RAPPOR(
        k=RAPPOR_SIZE["bits"],
        h=h,
        m=RAPPOR_SIZE["cohorts"],
        f=f,
        p=Fraction(0),
        q=Fraction(1),
    )


class _Numpy:
    """numpy, with zeros(None) = zeros(0): pure-ldp 1.2's servers without a domain size call
    np.zeros(None), which numpy 2 refuses."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def zeros(shape: Any = None, *args: Any, **kwargs: Any) -> np.ndarray:
        return np.zeros(0 if shape is None else shape, *args, **kwargs)


class _XXHash:
    """xxhash, taking text as its UTF-8 bytes: pure-ldp 1.2 hashes str, which xxhash 3 refuses."""

    def __getattr__(self, name: str) -> Any:
        import xxhash

        return getattr(xxhash, name)

    @staticmethod
    def xxh64(data: Any, seed: int = 0) -> Any:
        import xxhash

        return xxhash.xxh64(data.encode("utf-8") if isinstance(data, str) else data, seed=seed)


def _patch_pure_ldp() -> None:
    """Run pure-ldp 1.2 on today's numpy and xxhash (its code unchanged otherwise)."""
    import pure_ldp.core as core
    import pure_ldp.core._freq_oracle_server as base

    base.np = _Numpy()  # type: ignore[assignment]
    core.xxhash = _XXHash()  # type: ignore[attr-defined]


def peer_estimates(mechanism: str, sketch: Sketch, answers: np.ndarray, domain: int) -> np.ndarray:
    """pure-ldp's estimated shares of the D words, from its own client and server."""
    _patch_pure_ldp()
    words = [f"word {i}" for i in range(domain)]
    n = answers.size
    if mechanism in ("cms", "hcms"):
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer

        k, m = SKETCH
        hadamard = mechanism == "hcms"
        server = CMSServer(sketch.epsilon, k, m, is_hadamard=hadamard)
        client = CMSClient(sketch.epsilon, server.get_hash_funcs(), m, is_hadamard=hadamard)
        for a in answers:
            server.aggregate(client.privatise(words[a]))
        return np.array([server.estimate(w, suppress_warnings=True) for w in words]) / n
    from pure_ldp.frequency_oracles.rappor import RAPPORClient, RAPPORServer

    assert isinstance(sketch, RAPPOR)
    server = RAPPORServer(
        float(sketch.f),
        sketch.k,
        sketch.h,
        domain,
        num_of_cohorts=sketch.m,
        index_mapper=lambda x: x,
    )
    client = RAPPORClient(
        float(sketch.f),
        sketch.k,
        server.get_hash_funcs(),
        num_of_cohorts=sketch.m,
        index_mapper=lambda x: x,
    )
    for a in answers:
        server.aggregate(client.privatise(int(a)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([server.estimate(i, suppress_warnings=True) for i in range(domain)]) / n


def run_point(mechanism: str, epsilon: float, domain: int, n: int, trials: int, seed: int) -> dict:
    """Both estimators' MSE over `trials` surveys with the same true answers."""
    rng = np.random.default_rng(seed)
    random.seed(seed)  # pure-ldp draws from `random` and numpy's global state
    np.random.seed(seed % 2**32)
    sketch = ours(mechanism, epsilon)
    words = [f"word {i}" for i in range(domain)]
    truth = zipf(domain)
    decode = decoder(sketch, words)
    z = z_value(0.95)
    mine, theirs, covered = [], [], []
    for _ in range(trials):
        answers = rng.choice(domain, size=n, p=truth)
        counts = counts_of(sketch, words, answers, rng).astype(np.float64)
        est, _, low, high = decode.estimate(n, counts, z)
        mine.append(np.mean((est - truth) ** 2))
        covered.append(np.mean((low <= truth) & (truth <= high)))
        theirs.append(np.mean((peer_estimates(mechanism, sketch, answers, domain) - truth) ** 2))
    return {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "domain": domain,
        "n": n,
        "trials": trials,
        "deniable_mse": float(np.mean(mine)),
        "pure_ldp_mse": float(np.mean(theirs)),
        "ratio": float(np.mean(mine) / np.mean(theirs)),
        "coverage": float(np.mean(covered)),
    }


def plot(points: list[dict]) -> None:
    """MSE against epsilon per mechanism, deniable beside pure-ldp (D and n pooled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    colors = {"hcms": "tab:blue", "cms": "tab:orange", "rappor": "tab:green"}
    for mech, color in colors.items():
        rows = [p for p in points if p["mechanism"] == mech]
        eps = sorted({p["epsilon"] for p in rows})
        for key, style, who in (
            ("deniable_mse", "-", "deniable"),
            ("pure_ldp_mse", "--", "pure-ldp"),
        ):
            values = [
                math.exp(np.mean([math.log(p[key]) for p in rows if p["epsilon"] == e]))
                for e in eps
            ]
            ax.plot(eps, values, style, color=color, marker="o", label=f"{mech}, {who}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("MSE of a candidate's share (geometric mean over D, n)")
    ax.set_title("Text answers: deniable beside pure-ldp, same answers and sketch sizes")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(PLOT)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small grid (about a minute)")
    ap.add_argument("--trials", type=int, default=None, help="surveys per point (default 20)")
    ap.add_argument("--seed", type=int, default=20261125)
    args = ap.parse_args(argv)
    grid = QUICK if args.quick else FULL
    trials = args.trials or (2 if args.quick else 20)
    started = time.perf_counter()
    points = []
    i = 0
    for mech in ("hcms", "cms", "rappor"):
        for eps in grid["epsilon"]:
            for domain in grid["domain"]:
                for n in grid["n"]:
                    points.append(run_point(mech, eps, domain, n, trials, args.seed + i))
                    i += 1
                    p = points[-1]
                    print(
                        f"{mech:6} eps={eps:<4g} D={domain:<4} n={n:<6} deniable {p['deniable_mse']:.3e}"
                        f"  pure-ldp {p['pure_ldp_mse']:.3e}  ratio {p['ratio']:.3f}"
                        f"  coverage {p['coverage']:.3f}",
                        flush=True,
                    )
    lines = [
        "# Text answers: deniable beside pure-ldp",
        "",
        f"`python benchmarks/text_accuracy.py{' --quick' if args.quick else ''}` (seed "
        f"{args.seed}, {trials} surveys per point, {time.perf_counter() - started:.0f} s). "
        f"cms and hcms: k x m = {SKETCH[0]} x {SKETCH[1]}; rappor: {RAPPOR_SIZE['bits']} bits, "
        f"{RAPPOR_SIZE['hashes']} hashes, {RAPPOR_SIZE['cohorts']} cohorts, permanent response "
        "only. Zipf(1.1) truth over D words, every word a candidate.",
        "",
    ]
    ok = True
    for mech in ("hcms", "cms", "rappor"):
        rows = [p for p in points if p["mechanism"] == mech]
        summed = sum(p["deniable_mse"] for p in rows) / sum(p["pure_ldp_mse"] for p in rows)
        geo = math.exp(np.mean([math.log(p["ratio"]) for p in rows]))
        passed = max(summed, geo) <= 1.1
        ok &= passed
        lines.append(
            f"- **{'PASS' if passed else 'FAIL'}** {mech}: MSE ratio deniable/pure-ldp pooled "
            f"{summed:.3f} (summed MSE), {geo:.3f} (geometric mean over {len(rows)} points); "
            f"deniable's 95% coverage {np.mean([p['coverage'] for p in rows]):.3f}"
        )
    lines += [
        "",
        "| mechanism | eps | D | n | deniable MSE | pure-ldp MSE | ratio | deniable coverage |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p['mechanism']} | {p['epsilon']:g} | {p['domain']} | {p['n']} | "
            f"{p['deniable_mse']:.3e} | {p['pure_ldp_mse']:.3e} | {p['ratio']:.3f} | "
            f"{p['coverage']:.3f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("text-accuracy-quick.md" if args.quick else "text-accuracy.md")).write_text(text)
    if not args.quick:
        plot(points)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
