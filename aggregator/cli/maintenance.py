"""Operator commands of `deniable-aggregator`: verify (and repair) tallies, purge, backup."""

from __future__ import annotations

from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from deniable.aggregator.cli.errors import friendly
from deniable.aggregator.store import recount
from deniable.aggregator.store.pool import existing_store
from deniable.shared.errors import DeniableError


@click.command("verify")
@click.argument("survey")
@click.option("--repair", is_flag=True, help="Replace differing tallies and n by the recount.")
@with_appcontext
@friendly
def verify_command(survey: str, repair: bool) -> None:
    """Recount SURVEY's n and tallies from its stored reports; exit 1 on any difference.

    Reports purged by retention count by their kept totals. --repair rewrites n and every
    tally in one transaction (exit 0 once repaired)."""
    found = recount.verify(existing_store(survey), survey, repair=repair)
    lines = recount.differences(found)
    purged = f", {found.purged_n} of them purged" if found.purged_n else ""
    for line in lines:
        click.echo(line)
    if not lines:
        click.echo(f"{survey}: n={found.stored_n}{purged}; every tally matches the recount")
        return
    if repair:
        click.echo(f"{survey}: repaired {len(lines)} value(s); n={found.counted_n}{purged}")
        return
    click.echo(
        f"error: {survey}: {len(lines)} value(s) differ from the recount; "
        "`verify --repair` rewrites them",
        err=True,
    )
    raise click.exceptions.Exit(1)


@click.command("purge")
@click.option(
    "--days",
    type=click.IntRange(1, 100_000),
    default=None,
    help="Delete report bodies received more than DAYS days ago (default DENIABLE_RETENTION_DAYS).",
)
@with_appcontext
@friendly
def purge_command(days: int | None) -> None:
    """Delete old raw reports (retention); tallies and n are kept."""
    days = days or current_app.config.get("RETENTION_DAYS")
    if not days:
        raise DeniableError("give --days N or set DENIABLE_RETENTION_DAYS")
    purged = recount.purge(existing_store(), days)
    for survey, n in purged.items():
        click.echo(f"{survey}: purged {n} report(s)")
    click.echo(f"purged {sum(purged.values())} report(s) received over {days} day(s) ago")


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@with_appcontext
@friendly
def backup_command(file: Path) -> None:
    """Copy the database to FILE while the aggregator runs (SQLite's online backup API)."""
    store = existing_store()
    backup = getattr(store, "backup", None)
    if backup is None:
        raise DeniableError("this database has its own backup tools (e.g. pg_dump)")
    if file.exists():
        raise DeniableError(f"{file} exists; choose a new file")
    if not file.parent.is_dir():
        raise DeniableError(f"{file.parent}: no such directory; create it first")
    backup(file)
    click.echo(f"backed up to {file}")


COMMANDS = (verify_command, purge_command, backup_command)
