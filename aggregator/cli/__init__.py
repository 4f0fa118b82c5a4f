"""`deniable-aggregator`, the operator's and researcher's command line: serving and survey
commands (core), maintenance (verify, purge, backup) and research (plan, simulate).

Commands are thin: they parse options, call the store, ingestion or statistics, and turn library
errors into one line on stderr.
"""

from deniable.aggregator.cli.core import cli, main

__all__ = ["cli", "main"]
