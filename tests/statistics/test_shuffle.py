"""The central epsilon of shuffled reports (aggregator/stats/shuffle.py): the reference
values, an exact enumeration of the bound's divergence for small n, monotone in n and
epsilon_0, never above epsilon_0; and `plan --shuffle`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import binom

from deniable.aggregator.cli.core import cli
from deniable.aggregator.stats import shuffle

#: The reference values (docs/anonymity.md) at delta = 1e-6: (n, epsilon_0) -> epsilon, each within 5 %.
REFERENCE = {
    (10**4, 1.0): 0.043,
    (10**5, 2.0): 0.033,
    (10**5, 4.0): 0.118,
    (10**6, 4.0): 0.034,
    (10**6, 8.0): 0.304,
}


@pytest.mark.parametrize(("n", "epsilon_0"), sorted(REFERENCE))
def test_reference_values_within_five_percent(n: int, epsilon_0: float) -> None:
    found = shuffle.central_epsilon(n, epsilon_0, 1e-6)
    assert found == pytest.approx(REFERENCE[n, epsilon_0], rel=0.05)


def exact_delta(n: int, epsilon_0: float, epsilon: float) -> float:
    """The divergence of the clone pair by plain enumeration over every (c, k)."""
    e0 = math.exp(epsilon_0)
    a, clone = e0 / (e0 + 1), 2 / (e0 + 1)
    total = 0.0
    for c in range(n):
        b = binom.pmf(np.arange(c + 1), c, 0.5)
        before = np.concatenate([[0.0], b])  # b(k - 1), k = 0..c+1
        at = np.concatenate([b, [0.0]])  # b(k)
        p = a * before + (1 - a) * at
        q = (1 - a) * before + a * at
        total += binom.pmf(c, n - 1, clone) * np.maximum(p - math.exp(epsilon) * q, 0).sum()
    return total


@pytest.mark.parametrize(
    ("n", "epsilon_0", "epsilon"), [(40, 1.0, 0.5), (200, 2.0, 0.6), (300, 0.5, 0.1)]
)
def test_the_divergence_equals_an_exact_enumeration(
    n: int, epsilon_0: float, epsilon: float
) -> None:
    assert shuffle.hockey_stick(n, epsilon_0, epsilon) == pytest.approx(
        exact_delta(n, epsilon_0, epsilon), rel=1e-9, abs=1e-15
    )


def test_runs_of_c_only_raise_the_divergence() -> None:
    """A window wider than BINS is cut into runs counted at their first c: an upper bound,
    and a close one."""
    n, epsilon_0, epsilon = 2_000_000, 1.0, 0.004
    binned = shuffle.hockey_stick(n, epsilon_0, epsilon)
    try:
        shuffle.BINS, saved = 10**7, shuffle.BINS
        full = shuffle.hockey_stick(n, epsilon_0, epsilon)
    finally:
        shuffle.BINS = saved
    assert full <= binned <= full * 1.01 + 1e-12


def test_monotone_in_n_and_epsilon_0_and_never_above_epsilon_0() -> None:
    ns = [1, 2, 10, 100, 1_000, 10_000, 100_000, 1_000_000]
    epsilons = [0.1, 0.5, 1.0, 2.0, 4.0, 8.0]
    table = {(n, e): shuffle.central_epsilon(n, e) for n in ns for e in epsilons}
    for (_, e), value in table.items():
        assert 0 <= value <= e
    for e in epsilons:
        by_n = [table[n, e] for n in ns]
        assert by_n == sorted(by_n, reverse=True), e
        assert by_n[0] == e  # one report hides among none
    for n in ns:
        by_e = [table[n, e] for e in epsilons]
        assert by_e == sorted(by_e), n


def test_more_reports_buy_much_less_epsilon() -> None:
    assert shuffle.central_epsilon(10**6, 1.0) < 0.01 < shuffle.central_epsilon(10**3, 1.0)


@pytest.mark.parametrize(
    ("n", "epsilon_0", "delta", "words"),
    [
        (-1, 1.0, 1e-6, "n must be"),
        (10**11, 1.0, 1e-6, "n must be"),
        (100, 0.0, 1e-6, "epsilon_0 must be"),
        (100, 51.0, 1e-6, "epsilon_0 must be"),
        (100, 1.0, 0.0, "delta must be"),
        (100, 1.0, 0.9, "delta must be"),
    ],
)
def test_parameters_out_of_range_are_refused(
    n: int, epsilon_0: float, delta: float, words: str
) -> None:
    with pytest.raises(shuffle.ShuffleError, match=words):
        shuffle.central_epsilon(n, epsilon_0, delta)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["plan", *args])
    return result.exit_code, result.stdout, result.stderr


def test_plan_shuffle_prints_the_epsilon_as_json() -> None:
    code, out, _ = run("--shuffle", "--n", "100000", "--epsilon-0", "4", "--json")
    assert code == 0
    found = json.loads(out)
    assert list(found) == ["epsilon"]
    assert found["epsilon"] == pytest.approx(0.118, rel=0.05)
    code, out, _ = run("--shuffle", "--n", "10000", "--epsilon-0", "1", "--delta", "1e-6")
    assert code == 0
    assert float(out.strip().splitlines()[-1].split()[-1]) == pytest.approx(0.043, rel=0.05)


def test_plan_shuffle_refuses_bad_input_in_one_line() -> None:
    code, _, err = run("--shuffle", "--n", "100", "--epsilon-0", "1", "--delta", "2")
    assert code == 1
    assert err.strip().count("\n") == 0 and "delta must be" in err
    code, _, err = run("--shuffle", "--epsilon-0", "1")
    assert code == 2 and "--n" in err
    code, _, err = run("--epsilon", "1", "--margin", "0.1", "--epsilon-0", "2")
    assert code == 2 and "go with --shuffle" in err
