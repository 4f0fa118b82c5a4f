"""`deniable-aggregator series results ID`: a series of waves' estimates, changes and trend
(docs/surveys.md#waves), through the one service function aggregator/surveys.py."""

from __future__ import annotations

import json

import click
from flask import current_app
from flask.cli import AppGroup

from deniable.aggregator import surveys
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.errors import friendly
from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.params import parse_confidence
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.web.db import existing_store, survey_cache


@click.group("series", cls=AppGroup)
def series_group() -> None:
    """Series of waves: surveys naming one series, each a wave of its own."""


@series_group.command("results")
@click.argument("series_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the series results JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the series results as CSV.")
@click.option("--confidence", default=None, help="Confidence level, e.g. 0.95.")
@friendly
def results_command(series_id: str, as_json: bool, as_csv: bool, confidence: str | None) -> None:
    """Print each wave's estimates, the changes between waves and the trend: a table, or
    --json, or --csv."""
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    doc = surveys.series_results(
        existing_store(),
        series_id,
        who=OPERATOR,
        confidence=parse_confidence(confidence, current_app.config["CONFIDENCE"]),
        limits=Limits.from_config(current_app.config),
        cache=survey_cache(),
    )
    if as_json:
        click.echo(json.dumps(doc.to_dict(), indent=2))
    elif as_csv:
        click.echo(doc.to_csv(), nl=False)
    else:
        click.echo(shown(doc.summary(), lines=True))
