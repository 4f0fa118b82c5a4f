"""`deniable-aggregator export SURVEY --format csv|dta|sav|r OUT`: a survey's answers for R,
Stata and SPSS, through the same service functions as the API (aggregator/exports.py)."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import with_appcontext

from deniable.aggregator import exports
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.errors import CLIError, friendly
from deniable.aggregator.web.db import existing_store, provider, survey_cache


@click.command("export")
@click.argument("survey_id", metavar="SURVEY")
@click.argument("out", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(exports.FORMATS),
    required=True,
    help="csv: answers.csv (a row per report); dta: Stata; sav: SPSS; r: analysis.R, fitting "
    "--formula with R's rr on answers.csv (without it: each randomized yes/no question's share).",
)
@click.option(
    "--formula",
    default=None,
    help="With --format r: outcome ~ covariates, like smokes ~ I(age / 10) + region.",
)
@with_appcontext
@friendly
def export_command(survey_id: str, out: Path, fmt: str, formula: str | None) -> None:
    """Write a survey's answers (or the R script that analyses them) to OUT."""
    if formula is not None and fmt != "r":
        raise click.UsageError("--formula goes with --format r only")
    store = existing_store(survey_id)
    if fmt == "csv":
        lines = exports.answers_csv(provider(), survey_id, who=OPERATOR)
        rows = -1
        with out.open("w", encoding="utf-8", newline="") as handle:
            for line in lines:
                handle.write(line)
                rows += 1
        click.echo(f"wrote {out} ({rows} reports)", err=True)
        return
    if fmt == "r":
        script = exports.analysis_script(
            store, survey_id, formula, who=OPERATOR, cache=survey_cache()
        )
        out.write_text(script, encoding="utf-8")
        click.echo(f"wrote {out}; run it beside answers.csv: Rscript {out.name}", err=True)
        return
    if fmt not in ("dta", "sav"):
        raise CLIError(f"--format: expected one of {', '.join(exports.FORMATS)}")
    data = exports.stat_file(
        store,
        survey_id,
        fmt,  # type: ignore[arg-type]
        who=OPERATOR,
        cache=survey_cache(),
    )
    out.write_bytes(data)
    click.echo(f"wrote {out} ({len(data):,} bytes)", err=True)
