"""A randomized answer as a predictor on rr's Nigeria data (Table 4 of Blair, Imai and Zhou
2015): our maximum-likelihood fit beside rr's own `rrreg.predictor`, and their speed.

    .venv/bin/python benchmarks/predictor.py [--repeats 20] [--r-repeats 5]

Prints our coefficients and standard errors beside rr's (its documented Table 4 call) and the
log-likelihood of each point, then times, warm, our `regress` on the 2,423 answers (counting
them included) and, when `Rscript` and the R package rr are installed, rr's
`rrreg.predictor` in a child R process (the median of --r-repeats runs after one warm-up), and
prints the ratio (target: ours at least 10 times faster). Without R or rr it says the R run is
skipped and prints rr's numbers as written down in tests/statistics/test_predictor.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from deniable.aggregator.stats import regress
from deniable.shared import Survey

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FORMULA = (
    "civic ~ assets + married + I(age / 10) + I((age / 10) ** 2) + education + female + contact"
)
COLUMNS = {
    "contact": "rr.q1",
    "civic": "civic",
    "assets": "cov.asset.index",
    "married": "cov.married",
    "age": "cov.age",
    "education": "cov.education",
    "female": "cov.female",
}
#: rr 1.4.2's rrreg.predictor on these rows, as written down in tests/statistics/test_predictor.py
#: (estimate, stderr): the outcome's model, then contact's.
RR_OUTCOME = [
    (-2.83808, 0.31178), (0.11211, 0.02271), (0.31915, 0.13342), (0.94090, 0.15851),
    (-0.10259, 0.01676), (0.08606, 0.02513), (-0.02532, 0.08852), (0.38404, 0.15978),
]  # fmt: skip
RR_PREDICTOR = [
    (-0.51932, 0.46869), (0.08683, 0.04069), (-0.32189, 0.24012), (-0.25157, 0.24722),
    (0.03168, 0.02542), (-0.01536, 0.04442), (-0.56205, 0.16242),
]  # fmt: skip
#: The log-likelihood (no priors) at rr's point; ours is at the maximum.
RR_LOG_LIKELIHOOD = -3128.4216

R_SCRIPT = r"""
suppressMessages(library(rr)); data(nigeria)
run <- function() {
  set.seed(44)
  rrreg.predictor(civic ~ cov.asset.index + cov.married + I(cov.age/10) + I((cov.age/10)^2) +
    cov.education + cov.female + rr.q1, rr.item = "rr.q1", parstart = FALSE, estconv = TRUE,
    data = nigeria, verbose = FALSE, optim = TRUE, p = 2/3, p1 = 1/6, p0 = 1/6,
    design = "forced-known")
}
invisible(run())
times <- replicate(REPEATS, system.time(run())[["elapsed"]])
fit <- run()
cat("times", times, "\n")
cat("est.t", fit$est.t, "\n"); cat("se.t", fit$se.t, "\n")
cat("est.b", fit$est.b, "\n"); cat("se.b", fit$se.b, "\n")
"""


def answers() -> list[dict[str, object]]:
    import csv

    with (DATA / "nigeria.csv").open(newline="", encoding="utf-8") as handle:
        return [
            {"answers": {qid: int(row[column]) for qid, column in COLUMNS.items()}}
            for row in csv.DictReader(handle)
        ]


def run_r(repeats: int) -> dict[str, list[float]] | str:
    """rr's fit and its warm times from a child Rscript, or why it was skipped."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return "Rscript is not installed"
    check = subprocess.run(
        [rscript, "-e", "quit(status = !requireNamespace('rr', quietly = TRUE))"],
        capture_output=True,
        timeout=120,
    )
    if check.returncode != 0:
        return "the R package rr is not installed"
    run = subprocess.run(
        [rscript, "-e", R_SCRIPT.replace("REPEATS", str(int(repeats)))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        return f"Rscript failed: {run.stderr.strip().splitlines()[-1:]}"
    found = {}
    for line in run.stdout.splitlines():
        name, *values = line.split()
        found[name] = [float(v) for v in values]
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--r-repeats", type=int, default=5)
    args = ap.parse_args()
    survey = Survey.from_dict(json.loads((DATA / "nigeria-survey.json").read_text("utf-8")))
    rows = answers()
    fit = regress(survey, rows, FORMULA, verify=False)  # warm: imports, formulaic's caches
    times: list[float] = []

    def time_ours() -> None:
        for _ in range(args.repeats):
            start = time.perf_counter()
            regress(survey, rows, FORMULA, verify=False)
            times.append(time.perf_counter() - start)

    # Ours before and after R's runs, so a machine busy with something else weighs on both.
    time_ours()
    r = run_r(args.r_repeats)
    time_ours()
    ours = statistics.median(times)
    if isinstance(r, str):
        print(f"R's rrreg.predictor: skipped ({r}); rr's numbers as written down")
        rr_outcome, rr_predictor = RR_OUTCOME, RR_PREDICTOR
        r_time = None
    else:
        rr_outcome = list(zip(r["est.t"], r["se.t"], strict=True))
        rr_predictor = list(zip(r["est.b"], r["se.b"], strict=True))
        r_time = statistics.median(r["times"])

    print(f"{FORMULA}: n = {fit['n']}, converged: {fit['converged']}")
    print(
        f"log-likelihood: ours {fit['log_likelihood']:.4f} (the maximum), rr's point "
        f"{RR_LOG_LIKELIHOOD:.4f} ({fit['log_likelihood'] - RR_LOG_LIKELIHOOD:.4f} lower)"
    )
    for title, rows_, theirs in (
        ("civic (logistic)", fit["coefficients"], rr_outcome),
        ("contact (randomized, its model)", fit["predictor_model"]["coefficients"], rr_predictor),
    ):
        print(f"\n{title}")
        print(f"  {'term':<22} {'ours':>9} {'(se)':>8}   {'rr':>9} {'(se)':>8}   {'rr - ours':>9}")
        for row, (estimate, stderr) in zip(rows_, theirs, strict=True):
            print(
                f"  {row['term']:<22} {row['estimate']:>9.4f} {row['stderr']:>8.4f}   "
                f"{estimate:>9.4f} {stderr:>8.4f}   {estimate - row['estimate']:>9.4f}"
            )
    print(
        f"\nours, warm: {ours * 1000:.1f} ms (median of {len(times)}, half before and half "
        "after R's; counting the answers included)"
    )
    if r_time is None:
        print("rr's rrreg.predictor: not timed (R or rr missing)")
        return
    ratio = r_time / ours
    verdict = "meets" if ratio >= 10 else "misses"
    print(
        f"rr's rrreg.predictor, warm: {r_time * 1000:.1f} ms (median of {args.r_repeats})\n"
        f"ratio: ours is {ratio:.1f} times faster ({verdict} the target of 10)"
    )


if __name__ == "__main__":
    main()
