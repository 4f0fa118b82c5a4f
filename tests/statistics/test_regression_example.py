"""docs/analysis.md's worked regression example runs, and its estimates recover the true model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGGREGATOR = Path(sys.executable).parent / "deniable-aggregator"

pytestmark = pytest.mark.slow


def test_the_worked_example_recovers_the_logistic_truth(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "regression.py"), "--respondents", "4000",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines()[2:]]
    assert [r[0] for r in rows] == [
        "Intercept", "region[T.south]", "region[T.east]", "adult", "school",
    ]  # fmt: skip
    for term, truth, estimate, stderr, *_ in rows:
        # Five standard errors: a correct fit misses about once in 1.7 million per term.
        assert abs(float(estimate) - float(truth)) <= 5 * float(stderr), term
    cli = subprocess.run(
        [str(AGGREGATOR), "regress", "contact", "contact ~ region + adult + school", "--json",
         "--survey", str(tmp_path / "contact-survey.json"),
         "--reports", str(tmp_path / "contact-reports.jsonl")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    fit = json.loads(cli.stdout)
    assert fit["n"] == 4000 and fit["converged"]
    for row, (_, _, estimate, *_rest) in zip(fit["coefficients"], rows, strict=True):
        assert f"{row['estimate']:.3f}" == estimate  # the same fit from the CLI
