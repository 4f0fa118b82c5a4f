"""The `deniable-aggregator` entry point: one clear line naming what is missing when the
aggregator's extras are not installed (a client-only `pip install deniable` still puts the
command on the PATH); any other import error surfaces as itself."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from deniable.aggregator.extras import missing_requirements, needs_extras


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
    cli_main(argv)
