"""Client speed: randomize and sign reports of a 10-question survey, beside bare Ed25519 signing.

Both loops run in the same process, one after the other, for the same time budget; the bare
loop signs messages of the same size as a report's signed bytes. Target: the report rate is at
least half the bare signing rate (randomizing with exact coins must not dominate).

    .venv/bin/python benchmarks/client.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable

from deniable.shared import Survey, build_report, make_report, randomize_answers, signed_bytes
from deniable.shared.signing import generate_key

QUESTIONS = [
    {"id": "smokes", "type": "binary", "epsilon": 1.0},
    {"id": "drinks", "type": "binary", "epsilon": 0.5},
    {"id": "cannabis", "type": "binary", "mechanism": "coins", "coins": {"truth": 0.5, "yes": 0.5}},
    {
        "id": "cheated",
        "type": "binary",
        "mechanism": "coins",
        "coins": {"truth": "2/3", "yes": "1/2"},
    },
    {"id": "party", "type": "categorical", "options": list("ABCD"), "epsilon": 2.0},
    {
        "id": "region",
        "type": "categorical",
        "options": list("NESW"),
        "mechanism": "grr",
        "epsilon": 1.0,
    },
    {
        "id": "age",
        "type": "categorical",
        "options": [f"{d}0s" for d in range(1, 9)],
        "epsilon": 1.0,
    },
    {
        "id": "fruit",
        "type": "categorical",
        "options": [f"f{i}" for i in range(16)],
        "mechanism": "oue",
        "epsilon": 1.0,
    },
    {
        "id": "sport",
        "type": "categorical",
        "options": [f"s{i}" for i in range(32)],
        "mechanism": "oue",
        "epsilon": 2.0,
    },
    {
        "id": "income",
        "type": "categorical",
        "options": [f"band{i}" for i in range(6)],
        "mechanism": "grr",
        "epsilon": 1.5,
    },
]


def survey() -> Survey:
    """A 10-question survey mixing rr, coins, grr and oue."""
    questions = [{"text": f"Question {q['id']}?", **q} for q in QUESTIONS]
    return Survey.from_dict(
        {"id": "bench", "title": "Benchmark", "enrollment": "open", "questions": questions}
    )


def rate(step: Callable[[], object], seconds: float) -> tuple[float, int]:
    """Calls per second of `step`, run for about `seconds`."""
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            step()
        count += 100
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start), count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="time per loop (default 4)")
    args = parser.parse_args()
    bench = survey()
    key = generate_key()
    truth = {qid: 0 for qid in bench.questions}
    message = signed_bytes(make_report(bench, truth, key))
    print(f"$ {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(
        f"python {platform.python_version()} on {platform.machine()}; survey of "
        f"{len(bench.questions)} questions ({', '.join(sorted({q.mechanism for q in bench.questions.values()}))}), "
        f"epsilon {bench.epsilon:.4g}; signed message {len(message)} bytes"
    )
    rate(lambda: key.sign(message), 0.5)  # warm up
    bare, bare_n = rate(lambda: key.sign(message), args.seconds)
    reports, reports_n = rate(lambda: make_report(bench, truth, key), args.seconds)
    noisy = randomize_answers(bench, truth)
    built, _ = rate(lambda: build_report(bench, noisy, key), args.seconds / 2)
    coins, _ = rate(lambda: randomize_answers(bench, truth), args.seconds / 2)
    print(f"bare Ed25519 sign:          {bare:10,.0f} /s  ({bare_n:,} signatures)")
    print(f"randomize + sign a report:  {reports:10,.0f} /s  ({reports_n:,} reports)")
    print(f"  of which build + sign:    {built:10,.0f} /s  (already randomized answers)")
    print(f"  of which randomize:       {coins:10,.0f} /s  (exact secure coins, all 10 questions)")
    for qid, question in bench.questions.items():
        one = {qid: truth[qid]}
        each, _ = rate(lambda q=question, t=one[qid]: q.randomize(t), 0.2)
        print(f"    {qid:<9} {question.mechanism:<5} k={question.k:<3} {each:10,.0f} /s")
    ratio = reports / bare
    verdict = "meets" if ratio >= 0.5 else "MISSES"
    print(f"ratio: {ratio:.2f} ({verdict} the target of at least 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
