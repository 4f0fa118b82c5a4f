"""`deniable-aggregator`, the operator's and researcher's command line: serving and survey
commands (core), accounts (account, token, grant, revoke, audit), maintenance (verify, purge,
backup, migrate-store) and research (plan, simulate; simulate_http posts the simulated
reports).

Commands are thin: they parse options, call the store, ingestion or statistics, and turn library
errors into one line on stderr.
"""

from deniable.aggregator.cli.core import cli, main

__all__ = ["cli", "main"]
