"""`deniable-aggregator` (its `run` serves requests side by side, as gunicorn's workers do)
starts numpy's BLAS with one thread per pool unless the operator set otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHILD = """
import json, sys
from deniable.aggregator import console
try:
    console.main(["--help"])
except SystemExit:
    pass
import numpy
from threadpoolctl import threadpool_info
print(json.dumps([pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]))
"""


def _blas_threads(**env: str) -> list[int]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return [int(n) for n in done.stdout.strip().splitlines()[-1].strip("[]").split(",") if n]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every pool has one thread")
def test_the_aggregator_cli_runs_blas_on_one_thread_unless_told_otherwise():
    assert set(_blas_threads()) == {1}  # numpy's pool, and scipy's when it brings its own
    assert set(_blas_threads(OPENBLAS_NUM_THREADS="2")) == {2}
