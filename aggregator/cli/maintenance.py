"""Operator commands of `deniable-aggregator`: verify (and repair) tallies, purge (reports and
the audit log), backup, and migrate-store (SQLite into PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from deniable.aggregator import accounts
from deniable.aggregator.cli.errors import friendly
from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.stats.analyze import tally
from deniable.aggregator.store import recount
from deniable.aggregator.store.migrate import migrate
from deniable.aggregator.web.db import existing_store
from deniable.shared.errors import DeniableError


@click.command("verify")
@click.argument("survey")
@click.option(
    "--repair", is_flag=True, help="Replace differing tallies, n and patterns by the recount."
)
@with_appcontext
@friendly
def verify_command(survey: str, repair: bool) -> None:
    """Recount SURVEY's n, tallies and answer patterns from its stored reports; exit 1 on any
    difference.

    Reports purged by retention count by their kept totals (their answer patterns are gone
    with them). --repair rewrites n, every tally and the patterns in one transaction (exit 0
    once repaired)."""
    found = recount.verify(existing_store(survey), survey, tally, repair=repair)
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
@click.option(
    "--audit-days",
    type=click.IntRange(1, 100_000),
    default=None,
    help="Delete audit log entries older than this (default DENIABLE_AUDIT_RETENTION_DAYS).",
)
@with_appcontext
@friendly
def purge_command(days: int | None, audit_days: int | None) -> None:
    """Delete old raw reports and old audit log entries (retention); tallies and n are kept."""
    days = days or current_app.config.get("RETENTION_DAYS")
    audit_days = audit_days or current_app.config.get("AUDIT_RETENTION_DAYS")
    if not days and not audit_days:
        raise DeniableError(
            "give --days N or set DENIABLE_RETENTION_DAYS (reports), or --audit-days N or "
            "DENIABLE_AUDIT_RETENTION_DAYS (the audit log)"
        )
    store = existing_store()
    if days:
        purged = recount.purge(store, days, tally)
        for survey, n in purged.items():
            click.echo(f"{survey}: purged {n} report(s)")
        click.echo(f"purged {sum(purged.values())} report(s) received over {days} day(s) ago")
    if audit_days:
        entries = accounts.purge_audit(store, audit_days)
        click.echo(f"purged {entries} audit log entries over {audit_days} day(s) old")


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


@click.command("migrate-store")
@click.option(
    "--to",
    "url",
    required=True,
    metavar="URL",
    help="The PostgreSQL database to copy into (postgresql://user:password@host/db); it must be empty.",
)
@with_appcontext
def migrate_store_command(url: str) -> None:
    """Copy this SQLite deployment (DENIABLE_DATA_DIR) into PostgreSQL and verify it by recount.

    Surveys, reports, tallies, report counts, retention totals, researcher tokens, invitations
    and enrollments are copied in one transaction. Stop the aggregator first (reports that
    arrive during the copy would not be copied); then set DENIABLE_DATABASE_URL=URL."""
    try:
        copied = migrate(Path(current_app.config["DATA_DIR"]), url, tally)
    except DeniableError as exc:
        click.echo(f"error: {shown(str(exc), lines=True)}", err=True)
        raise click.exceptions.Exit(1) from None
    for survey, n in copied.surveys.items():
        click.echo(f"{survey}: n={n}; every tally matches the recount and the source")
    summary = ", ".join(f"{n} {table}" for table, n in copied.rows.items())
    click.echo(f"copied {summary}")
    click.echo("now set DENIABLE_DATABASE_URL to that URL to use it")


COMMANDS = (verify_command, purge_command, backup_command, migrate_store_command)
