"""Analysis speed on stored reports: regress, breakdown and crosstab against a real SQLite store.

    .venv/bin/python benchmarks/analysis.py [--sizes 100000,1000000]

For each size it stores that many reports of a survey with two randomized questions (rr, grr)
and two plain covariates (region, adult) in a fresh SQLite file, then times, in this process:
the baseline (streaming the stored bodies out of SQLite and parsing them, what an analysis
that reads every report in Python pays), breakdown, crosstab and regress as the HTTP API and
CLI run them (the database counts the combinations of answers they need), and regress
streaming the reports through Python (as on an export), with the peak memory each allocates
(tracemalloc, in a second run). Ratios
are printed against the baseline and against the targets (regress on 100,000 reports under
1 s; breakdown and crosstab on 1,000,000 under 2 s).
"""

from __future__ import annotations

import argparse
import json
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
        batch.append(NewReport(rid, survey.id, f"key{i}", body, support))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    survey = Survey.from_dict(DOC)
    rng = np.random.default_rng(1)
    print(
        f"{'reports':>9} {'analysis':<19} {'seconds':>8} {'peak MiB':>9} {'x baseline':>10}  target"
    )
    for n in sizes:
        bench(n, survey, rng)


if __name__ == "__main__":
    main()
