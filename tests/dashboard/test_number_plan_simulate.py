"""`plan` and `simulate` for integer (onebit) and multi questions, against hand values and a
real server."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from test_plan import run
from test_simulate import WIDE, rows, simulate

from tests.aggregator.conftest import NUMBERS_DOC

pytestmark = pytest.mark.own_server  # each test makes the same survey and counts its reports

Z = 1.959963984540054
GAP = 2 * 0.73105857863 - 1  # p* - q* at epsilon 1 (rr's keep, rounded down)


def test_onebit_plans_a_margin_in_the_questions_units_by_hand() -> None:
    # The mean is min + range * (rr-like estimate): its margin is range times the share's, so
    # n = ceil(z^2 * 1/4 * range^2 / (margin^2 * gap^2)) = ceil(4047.6) for range 30, margin 1.
    assert math.ceil(Z * Z * 0.25 * 30**2 / (1.0 * GAP * GAP)) == 4048
    code, out, _ = run("--epsilon", "1", "--margin", "1", "--mechanism", "onebit", "--range", "30")
    assert code == 0 and out.strip().splitlines()[-1] == "4048"
    assert "a mean over a range of 30" in out
    code, out, _ = run("--epsilon", "1", "--respondents", "4048", "--mechanism", "onebit",
                       "--range", "30")  # fmt: skip
    assert code == 0 and 0.999 < float(out.strip().splitlines()[-1]) <= 1.0


def test_multi_plans_each_option_at_epsilon_over_k() -> None:
    # Three options at epsilon 3: each is rr at epsilon 1, as the binary plan at epsilon 1.
    code, out, _ = run(
        "--epsilon", "3", "--margin", "0.05", "--mechanism", "multi", "--options", "3"
    )
    assert code == 0 and out.strip().splitlines()[-1] == "1799"
    assert "each selected or not at epsilon / 3" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--mechanism", "onebit"), "give the range max - min (--range)"),
        (("--mechanism", "rr", "--range", "10"), "only then"),
        (("--mechanism", "onebit", "--range", "0"), "range"),
        (("--mechanism", "multi", "--options", "20", "--epsilon", "0.01"), "epsilon"),
    ],
)
def test_bad_plans_are_one_line(args: tuple[str, ...], words: str) -> None:
    base = ["--epsilon", "1", "--margin", "1"]
    if "--epsilon" in args:
        base = ["--margin", "0.1"]
    code, out, err = run(*base, *args)
    assert code == 1 and err.startswith("error: ") and words in err, err
    assert len(err.strip().splitlines()) == 1


TRUTH = {
    "drinks": {"0": 0.5, "4": 0.3, "20": 0.2},
    "used": {"cannabis": 0.4, "LSD": 0.1},
    "age": {"30": 0.5, "60": 0.5},
    "apps": {"chat": 0.7},
}


@pytest.mark.slow
def test_simulate_draws_numbers_and_selections_and_covers_the_truth(live_server: Any) -> None:
    live_server.create_survey(copy.deepcopy(NUMBERS_DOC))
    done = simulate(
        live_server, "numbers", "-n", "800", "--truth", json.dumps(TRUTH), "--seed", "3",
        "--confidence", WIDE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert live_server.results("numbers")["n"] == 800
    table = {(r[0], r[1]): r for r in rows(done.stdout)}
    assert float(table["drinks", "mean"][2]) == pytest.approx(0.3 * 4 + 0.2 * 20)
    assert float(table["age", "mean"][2]) == pytest.approx(45)
    assert float(table["used", "cannabis"][2]) == pytest.approx(0.4)
    assert float(table["used", "ecstasy"][2]) == pytest.approx(0.0)
    assert float(table["apps", "chat"][2]) == pytest.approx(0.7)
    assert all(r[6] == "yes" for r in table.values()), done.stdout


@pytest.mark.parametrize(
    ("truth", "words"),
    [
        ({"drinks": {"0": 0.5, "40": 0.5}}, "40"),
        ({"drinks": {"0": 0.5}}, "add up to 0.5, not 1"),
        ({"drinks": {"x": 1.0}}, "whole number"),
        ({"used": {"heroin": 0.5}}, "heroin"),
        ({"used": {"LSD": 1.5}}, "probability"),
    ],
)
def test_simulate_refuses_a_bad_truth_in_one_line(
    live_server: Any, truth: dict[str, Any], words: str
) -> None:
    live_server.create_survey(copy.deepcopy(NUMBERS_DOC))
    done = simulate(live_server, "numbers", "-n", "5", "--truth", json.dumps(truth))
    assert done.returncode == 1 and done.stderr.startswith("error: "), done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr
    assert live_server.results("numbers")["n"] == 0


def test_text_plans_a_candidates_share_and_compares_the_sketches() -> None:
    # hcms: each report's term is +-m/((m - 1)(2 keep - 1)), so at most that squared over n;
    # keep = 0.982013790037 at epsilon 4, m = 1024.
    gap, m = 2 * 0.982013790037 - 1, 1024
    expected = math.ceil(Z * Z * (m / (m - 1)) ** 2 / (gap * gap * 0.01**2))
    code, out, _ = run("--epsilon", "4", "--margin", "0.01", "--mechanism", "hcms")
    assert code == 0 and out.strip().splitlines()[-1] == str(expected)
    assert "16 hash functions x 1024 columns" in out and "cms" in out
    code, out, _ = run("--epsilon", "4", "--margin", "0.01", "--mechanism", "cms",
                       "--sketch", "8x64")  # fmt: skip
    assert code == 0 and "1,024 counters" in out
    code, _, err = run("--epsilon", "4", "--margin", "0.01", "--mechanism", "hcms",
                       "--sketch", "16x1000")  # fmt: skip
    assert code == 1 and "power of two" in err
    code, _, err = run("--epsilon", "1", "--margin", "0.05", "--sketch", "16x64")
    assert code == 1 and "only with --mechanism hcms or cms" in err


def test_rappor_plans_from_its_decoder_and_the_simulated_error_agrees() -> None:
    import numpy as np

    from deniable.aggregator.stats import planning
    from deniable.aggregator.stats.estimate import z_value
    from deniable.aggregator.stats.sketch_estimate import decoder
    from deniable.aggregator.stats.sketch_simulate import simulate_counts

    code, out, _ = run("--epsilon", "2", "--margin", "0.01", "--mechanism", "rappor",
                       "--options", "20")  # fmt: skip
    assert code == 0 and "RAPPOR with 32 bits, 2 hashes, 16 cohorts" in out
    needed = int(out.strip().splitlines()[-1])
    per_report = needed * 0.01**2 / Z**2  # the planned largest variance of one report's term
    sketch = planning.rappor_at(2.0)
    assert sketch.epsilon <= 2.0
    words = [f"candidate {i}" for i in range(20)]
    counts = simulate_counts(sketch, words, np.full(20, 0.05), 5000, 400, seed=5)
    est, *_ = decoder(sketch, words).estimate(5000, counts, z_value(0.95))
    observed = est.var(axis=0, ddof=1) * 5000  # per report, each candidate
    # The plan takes the largest candidate's variance; the simulated ones lie at or below it
    # (400 surveys: a variance is known to about 7%).
    assert observed.max() <= per_report * 1.25 and observed.mean() >= per_report * 0.5
    code, _, err = run("--epsilon", "2", "--margin", "0.01", "--mechanism", "rappor",
                       "--sketch", "4x1x1", "--options", "20")  # fmt: skip
    assert code == 1 and "cannot tell" in err
