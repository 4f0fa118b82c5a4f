"""Analysis speed on stored reports: regress, breakdown and crosstab against a real SQLite store;
and offline regress on rr's Nigeria data beside R's rr::rrreg.

    .venv/bin/python benchmarks/analysis.py [--sizes 100000,1000000] [--copies 40] [--repeats 9]

For each size it stores that many reports of a survey with two randomized questions (rr, grr)
and two plain covariates (region, adult) in a fresh SQLite file, then times, in this process:
the baseline (streaming the stored bodies out of SQLite and parsing them, what an analysis
that reads every report in Python pays), breakdown, crosstab and regress as the HTTP API and
CLI run them (the database counts the combinations of answers they need), and regress
streaming the reports through Python (as on an export), with the peak memory each allocates
(tracemalloc, in a second run). Ratios
are printed against the baseline and against the targets (regress on 100,000 reports under
1 s; breakdown and crosstab on 1,000,000 under 2 s).

Then offline: `regress` with the randomized answer as the outcome on rr's Nigeria data
(tests/data/nigeria.csv, 2,423 rows) taken --copies times (96,920 rows at 40; a few thousand
distinct answer patterns), as `regress --survey S --answers FILE.csv` reads them (verify=False:
each distinct pattern's answers are checked once), warm, the median of --repeats runs half
before and half after R's; beside it, when `Rscript` and the R package rr are installed, rr's
`rrreg` on the same rows and model in a child R process (its median of 3 warm runs). Target:
ours at least 15 times faster. BLAS runs one thread (OPENBLAS_NUM_THREADS=1, as
deploy/gunicorn.conf.py sets), as Debian's R does.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see the docstring

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deniable.aggregator import breakdown, crosstab, regress
from deniable.aggregator.stats.analyze import StoredAnswers
from deniable.aggregator.store import NewReport
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.shared import Survey
from deniable.shared.canonical import canonical_json, parse_json
from deniable.shared.report import body_pattern

DOC = {
    "id": "bench",
    "title": "Analysis benchmark",
    "questions": [
        {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east", "west"],
            "mechanism": "none",
        },
        {"id": "adult", "text": "Over 40?", "type": "binary", "mechanism": "none"},
    ],
}
TARGETS = {"regress": (100_000, 1.0), "breakdown": (1_000_000, 2.0), "crosstab": (1_000_000, 2.0)}


def fill(store: SQLiteStore, survey: Survey, n: int, rng: np.random.Generator) -> None:
    """n stored reports with noisy answers drawn through the survey's own mechanisms."""
    store.create_survey(
        survey.id,
        json.dumps(survey.to_dict()),
        survey.hash,
        {qid: q.k for qid, q in survey.questions.items()},
        "2026-01-01T00:00:00Z",
    )
    batch: list[NewReport] = []
    for i in range(n):
        answers = {
            "smokes": survey.questions["smokes"].randomize(int(rng.random() < 0.3)),
            "party": survey.questions["party"].randomize(int(rng.integers(4))),
            "region": int(rng.integers(4)),
            "adult": int(rng.integers(2)),
        }
        rid = str(uuid.UUID(int=i + 1, version=4))
        # A stored body as ingestion writes it: the canonical JSON of the whole signed report
        # (the key and signature are stand-ins of the real lengths; nothing here verifies them).
        body = canonical_json(
            {
                "answers": answers,
                "public_key": f"{i:043d}",
                "report_id": rid,
                "sent_at": "2026-11-25T12:00:00Z",
                "signature": f"{i:086d}",
                "survey": survey.id,
                "survey_hash": survey.hash,
                "v": 1,
            }
        ).decode("utf-8")
        support = {qid: survey.questions[qid].supports(a) for qid, a in answers.items()}
        batch.append(NewReport(rid, survey.id, f"key{i}", body, support, body_pattern(body)))
        if len(batch) == 5000:
            store.add_reports(batch, "2026-01-01T00")
            batch.clear()
    if batch:
        store.add_reports(batch, "2026-01-01T00")


def measure(run: Callable[[], Any]) -> tuple[float, float]:
    """(seconds, peak MiB allocated): timed alone, then run again under tracemalloc (which
    slows Python down several times) for the memory."""
    started = time.perf_counter()
    run()
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak / 2**20


def bench(n: int, survey: Survey, rng: np.random.Generator) -> None:
    """Store n reports in a fresh SQLite file and print each analysis's time and memory."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "bench.db")
        store.migrate()
        started = time.perf_counter()
        fill(store, survey, n, rng)
        print(f"(stored {n:,} reports in {time.perf_counter() - started:.1f} s)")

        def rows() -> Any:
            return (parse_json(body) for body in store.iter_report_bodies(survey.id))

        stored = StoredAnswers(store, survey.id)  # as the HTTP API and CLI analyse
        runs: dict[str, Callable[[], Any]] = {
            "baseline": lambda: sum(1 for _ in rows()),
            "breakdown": lambda: breakdown(survey, stored, "smokes", "region"),
            "crosstab": lambda: crosstab(survey, stored, "smokes", "party"),
            "regress": lambda: regress(survey, stored, "smokes ~ region + adult"),
            "regress (streamed)": lambda: regress(
                survey, rows(), "smokes ~ region + adult", verify=False
            ),
        }
        regress(survey, stored, "smokes ~ region")  # import formulaic first
        base = None
        for name, run in runs.items():
            seconds, peak = measure(run)
            base = base or seconds
            target = ""
            if name in TARGETS and TARGETS[name][0] == n:
                limit = TARGETS[name][1]
                verdict = "met" if seconds < limit else "NOT met"
                target = f"< {limit:g} s: {verdict} ({seconds / limit:.2f} of it)"
            print(
                f"{n:>9,} {name:<19} {seconds:>8.2f} {peak:>9.1f} {seconds / base:>10.2f}  {target}"
            )
        store.close()


DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
#: rr's Nigeria columns by our question ids (tests/data/nigeria-survey.json).
NIGERIA = {
    "contact": "rr.q1",
    "civic": "civic",
    "assets": "cov.asset.index",
    "married": "cov.married",
    "age": "cov.age",
    "education": "cov.education",
    "female": "cov.female",
}
NIGERIA_FORMULA = "contact ~ civic + assets + married + age + education + female"
NIGERIA_TARGET = 15.0
R_RRREG = r"""
suppressMessages(library(rr))
d <- read.csv(FILE)
d <- d[rep(seq_len(nrow(d)), COPIES), ]
run <- function() {
  set.seed(1)  # rrreg starts from random values, and some starts fail ("not monotonically")
  rrreg(rr.q1 ~ civic + cov.asset.index + cov.married + cov.age + cov.education + cov.female,
    data = d, p = 2/3, p1 = 1/6, p0 = 1/6, design = "forced-known")
}
invisible(run())
times <- replicate(3, system.time(run())[["elapsed"]])
fit <- run()
cat("times", times, "\n")
cat("coef", fit$est, "\n")
"""


def nigeria_rows(copies: int) -> list[dict[str, Any]]:
    """The Nigeria rows, `copies` times, as {"answers": {...}} (an answers CSV's rows)."""
    with (DATA / "nigeria.csv").open(newline="", encoding="utf-8") as handle:
        rows = [
            {"answers": {qid: int(row[column]) for qid, column in NIGERIA.items()}}
            for row in csv.DictReader(handle)
        ]
    return [{"answers": dict(row["answers"])} for _ in range(copies) for row in rows]


def run_rrreg(copies: int) -> dict[str, list[float]] | str:
    """rr's rrreg on the same rows: its warm times and estimates, or why it was skipped."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return "Rscript is not installed"
    script = R_RRREG.replace("FILE", json.dumps(str(DATA / "nigeria.csv"))).replace(
        "COPIES", str(int(copies))
    )
    done = subprocess.run(
        [rscript, "-e", script], capture_output=True, text=True, timeout=1800, check=False
    )
    if done.returncode != 0:
        return f"Rscript failed: {done.stderr.strip().splitlines()[-1:]}"
    found = {}
    for line in done.stdout.splitlines():
        name, *values = line.split()
        found[name] = [float(v) for v in values]
    return found


def nigeria(copies: int, repeats: int) -> None:
    """Offline regress on the Nigeria data beside rr::rrreg, and the ratio."""
    survey = Survey.from_dict(json.loads((DATA / "nigeria-survey.json").read_text("utf-8")))
    rows = nigeria_rows(copies)
    fit = regress(survey, rows, NIGERIA_FORMULA, verify=False)  # warm: imports, caches
    times: list[float] = []

    def ours(count: int) -> None:
        for _ in range(count):
            started = time.perf_counter()
            regress(survey, rows, NIGERIA_FORMULA, verify=False)
            times.append(time.perf_counter() - started)

    ours(repeats // 2 + 1)
    theirs = run_rrreg(copies)
    ours(repeats // 2)
    median = statistics.median(times)
    print(f"\nNigeria x {copies} ({len(rows):,} rows): {NIGERIA_FORMULA}")
    print(f"  ours, offline regress: {median * 1000:.0f} ms (median of {len(times)})")
    if isinstance(theirs, str):
        print(f"  rr::rrreg: skipped ({theirs})")
        return
    r_time = statistics.median(theirs["times"])
    ratio = r_time / median
    verdict = "met" if ratio >= NIGERIA_TARGET else "NOT met"
    print(f"  rr::rrreg: {r_time * 1000:.0f} ms (median of {len(theirs['times'])})")
    print(f"  ratio: ours {ratio:.1f} times faster (target >= {NIGERIA_TARGET:g}: {verdict})")
    estimates = [row["estimate"] for row in fit["coefficients"]]
    gap = max(abs(a - b) for a, b in zip(estimates, theirs["coef"], strict=True))
    print(f"  largest difference from rr's coefficients: {gap:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--copies", type=int, default=40, help="Nigeria rows taken this often")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    survey = Survey.from_dict(DOC)
    rng = np.random.default_rng(1)
    print(
        f"{'reports':>9} {'analysis':<19} {'seconds':>8} {'peak MiB':>9} {'x baseline':>10}  target"
    )
    for n in sizes:
        bench(n, survey, rng)
    if args.copies:
        nigeria(args.copies, args.repeats)


if __name__ == "__main__":
    main()
