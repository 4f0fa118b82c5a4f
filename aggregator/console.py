"""The `deniable-aggregator` entry point: one clear line when the aggregator's extras are not
installed (a client-only `pip install deniable` still puts the command on the PATH)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """Run the operator CLI, or say which install it needs."""
    try:
        from deniable.aggregator.cli.core import main as cli_main
    except ImportError as exc:
        missing = exc.name or "a dependency"
        sys.stderr.write(
            f"error: the aggregator needs its extras ({missing} is not installed): "
            "pip install 'deniable[aggregator]'\n"
        )
        raise SystemExit(1) from None
    cli_main(argv)
