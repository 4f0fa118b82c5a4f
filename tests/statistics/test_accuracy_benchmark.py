"""Smoke test of benchmarks/accuracy.py: one small grid point, so the benchmark code is tested.

The deniable-only part always runs; the comparison with pure-ldp and multi-freq-ldpy runs only
where they are installed (pip install --group bench; they are not product dependencies).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "accuracy.py"


def load_benchmark() -> ModuleType:
    """benchmarks/accuracy.py as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("accuracy_benchmark", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = load_benchmark()
POINT = bench.Point("grr", 4, 2.0, 1000, "zipf")


def test_unbiased_mse_matches_the_analytic_variance() -> None:
    """deniable's MSE over 300 trials is the analytic variance within a wide factor."""
    rec = bench.run_point(POINT, seed=7, trials=300, peers=False)
    ratio = rec["estimators"]["deniable.estimate"]["mse"] / rec["analytic_variance"]
    # The relative standard error of the MSE is about sqrt(2 / (3 * 300)) = 5%: 0.6-1.6 is wide.
    assert 0.6 < ratio < 1.6, ratio
    assert 0.93 <= rec["coverage_exact"] <= 0.97
    assert 0.9 <= rec["coverage"] <= 0.99
    assert set(rec["estimators"]) == {"deniable.estimate", "deniable.share"}


def test_truths_are_distributions() -> None:
    """Both true distributions sum to 1 and zipf has its 1% option."""
    for k in (2, 4, 64):
        for name in bench.TRUTHS:
            f = bench.truth_vector(name, k)
            assert f.size == k and abs(f.sum() - 1) < 1e-12 and (f > 0).all()
        assert bench.truth_vector("zipf", k)[-1] == pytest.approx(0.01)


def test_same_numbers_as_the_peers() -> None:
    """With the peers installed: same unbiased estimates, and the count path is their API's."""
    if not bench.peers_available():
        message = "pure-ldp / multi-freq-ldpy not installed (pip install --group bench)"
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(f"CI installs the bench group (make test): {message}")
        pytest.skip(message)
    ok, worst = bench.check_peer_paths(seed=7, n=500)
    assert ok, worst
    rec = bench.run_point(POINT, seed=7, trials=40, peers=True)
    assert rec["ratios"]["estimate/pure-ldp.raw"]["ratio"] == pytest.approx(1.0, abs=1e-6)
    assert rec["ratios"]["share/mfl.IBU"]["ratio"] == pytest.approx(1.0, abs=0.01)


def test_the_numbers_part_measures_the_mean_against_its_analytic_variance() -> None:
    """The onebit mean's and the multi options' MSE is the analytic variance (wide bounds)."""
    for kind, truth in (("onebit", "skewed"), ("multi", "k=4")):
        rec = bench.number_point(kind, 1.0, 1000, truth, trials=400, seed=3)
        # The relative standard error of the MSE over 400 trials is about 7%: 0.6-1.6 is wide.
        assert 0.6 < rec["mse_ratio"] < 1.6, rec
        assert abs(rec["stderr2_ratio"] - 1) < 0.05, rec
        assert 0.92 <= rec["coverage_exact_interior"] <= 0.97, rec
    edge = bench.number_point("onebit", 1.0, 1000, "all at 0", trials=100, seed=3)
    assert edge["coverage_exact_interior"] is None and edge["coverage_exact_edge"] > 0.95


def load_text_benchmark() -> ModuleType:
    """benchmarks/text_accuracy.py as a module."""
    spec = importlib.util.spec_from_file_location(
        "text_accuracy_benchmark", PATH.parent / "text_accuracy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mechanism", ["hcms", "cms", "rappor"])
def test_the_text_part_runs_both_sides_on_the_same_answers(mechanism: str) -> None:
    """deniable and pure-ldp estimate the same surveys; both errors are of the expected size."""
    if not bench.peers_available():
        pytest.fail("pure-ldp is installed with the bench group by make test")
    text = load_text_benchmark()
    rec = text.run_point(mechanism, 2.0, 20, 2000, trials=2, seed=3)
    assert rec["deniable_mse"] < 0.01 and rec["pure_ldp_mse"] < 0.1
    assert 0.5 <= rec["coverage"] <= 1.0
    assert text.ours(mechanism, 2.0).epsilon <= 2.0 + 1e-9
