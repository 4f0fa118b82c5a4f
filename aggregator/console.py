"""The `deniable-aggregator` entry point, and which of the aggregator's extras are missing: one
clear line naming them when they are not installed (a client-only `pip install deniable` still
puts the command on the PATH); any other import error surfaces as itself. Importable with no
extra installed: the missing extras are read from the installed package's own metadata
(pyproject.toml is the one list)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from importlib import metadata

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def missing_requirements(extra: str = "aggregator") -> list[str]:
    """The distributions an extra of deniable requires that are not installed; [] when all are
    there or deniable's metadata cannot be read (then nothing can be said of the extras)."""
    try:
        required = metadata.requires("deniable") or []
    except metadata.PackageNotFoundError:
        return []
    missing = []
    for requirement in required:
        name, marker = _NAME.match(requirement), _EXTRA.search(requirement)
        if name is None or marker is None or marker.group(1) != extra:
            continue
        if name.group(0).lower() == "deniable":  # another extra of ours, e.g. deploy's
            continue
        try:
            metadata.distribution(name.group(0))
        except metadata.PackageNotFoundError:
            missing.append(name.group(0))
    return missing


def needs_extras(missing: list[str]) -> str:
    """The one line that says what to install."""
    return (
        f"the aggregator needs its extras ({', '.join(missing)} not installed): "
        "pip install 'deniable[aggregator]'"
    )


#: The settings of numpy's BLAS thread pools; without any, the CLI runs them on one thread.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """One thread per BLAS pool unless the operator set one of BLAS_THREADS (as
    deploy/gunicorn.conf.py does for its workers): an analysis's matrices are small, and `run`
    serves requests side by side, each of which would otherwise start a pool per core."""
    if any(name in os.environ for name in BLAS_THREADS):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")  # numpy is loaded by now: set at run time


def main(argv: Sequence[str] | None = None) -> None:
    """Run the operator CLI, or say which install it needs."""
    try:
        from deniable.aggregator.cli.core import main as cli_main
    except ImportError:
        missing = missing_requirements()
        if not missing:
            raise  # not a missing extra: the real error, as itself
        sys.stderr.write(f"error: {needs_extras(missing)}\n")
        raise SystemExit(1) from None
    one_blas_thread()
    cli_main(argv)
