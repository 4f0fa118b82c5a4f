"""CPU of one results request on a survey at the limits: 100 categorical questions of 256
options at epsilon 0.01 (the display share's EM runs its full 10,000 rounds on each), 300
reports. Prints the whole results document's time beside the EM run one question at a time
(the way it ran before em_shares), in the same process.

    python benchmarks/results_cpu.py
"""

from __future__ import annotations

import time

import numpy as np

from deniable.aggregator.stats.estimate import _pair, em_share, results_document
from deniable.shared import Survey

QUESTIONS, OPTIONS, REPORTS = 100, 256, 300


def main() -> None:
    survey = Survey.from_dict(
        {
            "id": "many-options",
            "title": "Many options",
            "questions": [
                {
                    "id": f"q{i}",
                    "text": "Which?",
                    "type": "categorical",
                    "options": [f"o{j}" for j in range(OPTIONS)],
                    "mechanism": "grr",
                    "epsilon": 0.01,
                }
                for i in range(QUESTIONS)
            ],
        }
    )
    rng = np.random.default_rng(1)
    support = {
        qid: [int(c) for c in rng.multinomial(REPORTS, np.full(OPTIONS, 1 / OPTIONS))]
        for qid in survey.questions
    }
    start = time.perf_counter()
    results_document(survey, REPORTS, support)
    whole = time.perf_counter() - start
    start = time.perf_counter()
    for qid, question in survey.questions.items():
        em_share(support[qid], *_pair(question))
    one_by_one = time.perf_counter() - start
    print(
        f"{QUESTIONS} questions x {OPTIONS} options, {REPORTS} reports: results document "
        f"{whole:.2f} s; the EM one question at a time alone {one_by_one:.2f} s "
        f"({one_by_one / whole:.1f}x)"
    )


if __name__ == "__main__":
    main()
