"""`deniable-aggregator survey import|export`: surveys as XLSForm spreadsheets (docs/xlsform.md).

`import FORM.xlsx` prints the survey document the form gives and its notices (`--create` also
creates it, as `create-survey` does, through `surveys.create_survey`; `--dry-run` checks it as
that would and creates nothing; `--drop-unsupported` leaves out the rows deniable cannot
honour); `export ID --xlsform OUT.xlsx` writes a survey back as a form that imports to the same
survey (its hash).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from flask import current_app
from flask.cli import AppGroup

from deniable.aggregator import accounts, forms, surveys
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.errors import CLIError, friendly
from deniable.aggregator.cli.terminal import shown, shown_json
from deniable.aggregator.refusals import survey_or_404
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.web.db import existing_store, get_store, survey_cache
from deniable.shared.errors import SurveyError
from deniable.shared.survey import Survey


@click.group("survey", cls=AppGroup)
def survey_group() -> None:
    """Surveys as XLSForm spreadsheets: import one, or export a survey as one."""


def read_form(path: Path) -> bytes:
    """The file's bytes, refusing one over the XLSForm size limit before reading it all."""
    try:
        with path.open("rb") as handle:
            data = handle.read(forms.MAX_FORM_BYTES + 1)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CLIError(f"{path}: a directory, not an .xlsx or .xls file") from None
    except OSError as exc:
        raise CLIError(f"{path}: {exc.strerror}") from None
    if len(data) > forms.MAX_FORM_BYTES:
        raise CLIError(
            f"{path}: larger than {forms.MAX_FORM_BYTES:,} bytes; an XLSForm is far smaller "
            "(docs/xlsform.md#limits)"
        )
    return data


@survey_group.command("import")
@click.argument("form", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--create", is_flag=True, help="Also create the survey (as create-survey does).")
@click.option(
    "--owner", default=None, metavar="ACCOUNT", help="With --create: make this account an owner."
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the document and every notice, check it as --create would, create nothing.",
)
@click.option(
    "--drop-unsupported",
    is_flag=True,
    help="Leave out the rows deniable cannot honour (each named in a notice).",
)
@friendly
def import_command(
    form: Path, create: bool, owner: str | None, dry_run: bool, drop_unsupported: bool
) -> None:
    """Print the survey document of the XLSForm FORM (.xlsx or .xls) as JSON; --create also
    creates it. Notices (what the import leaves out or changes) go to stderr; every problem is
    named in one run, one line each, and nothing is created while any remains."""
    if owner is not None and not create:
        raise click.UsageError("--owner goes with --create")
    data = read_form(form)
    try:
        imported = forms.read_xlsform(data, filename=form.name, drop_unsupported=drop_unsupported)
    except forms.XLSFormError as exc:
        for notice in exc.notices:
            click.echo(f"note: {shown(notice)}", err=True)
        for problem in exc.problems:
            click.echo(f"error: {form}: {shown(problem)}", err=True)
        count = len(exc.problems)
        raise CLIError(
            f"{form}: {count} problem{'s' if count != 1 else ''}; nothing was created"
        ) from None
    doc = imported.document
    click.echo(shown_json(json.dumps(doc, indent=2, ensure_ascii=False)))
    for notice in imported.notices:
        click.echo(f"note: {shown(notice)}", err=True)
    if dry_run:
        try:
            survey = Survey.from_dict(doc)
            surveys.check_survey_limits(survey, Limits.from_config(current_app.config))
        except SurveyError as exc:
            raise CLIError(f"{form}: {exc}") from None
        for notice in surveys.language_notices_of(survey.to_dict()):
            click.echo(f"note: {shown(notice)}", err=True)
        click.echo(f"dry run: survey {doc['id']!r} would be created; nothing was", err=True)
        return
    if not create:
        return
    store = get_store()
    if owner is not None and store.get_account(owner) is None:
        raise CLIError(f"no account {owner!r}; `deniable-aggregator account create` makes one")
    try:
        record, new = surveys.create_survey(
            store, doc, Limits.from_config(current_app.config), who=OPERATOR
        )
    except SurveyError as exc:
        raise CLIError(f"{form}: {exc}") from None
    if owner is not None:
        accounts.grant(store, OPERATOR, record.id, owner, "owner")
    for notice in surveys.language_notices(record):
        click.echo(f"note: {shown(notice)}", err=True)
    if new:
        click.echo(f"created survey {record.id!r}", err=True)
    else:
        click.echo(f"survey {record.id!r} already exists with this very document", err=True)


@survey_group.command("export")
@click.argument("survey")
@click.option(
    "--xlsform",
    "out",
    required=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="OUT.xlsx",
    help="Write the survey as an XLSForm workbook here.",
)
@friendly
def export_command(survey: str, out: Path) -> None:
    """Write SURVEY as an XLSForm (.xlsx) that imports back to the same survey (its hash)."""
    store = existing_store(survey)
    record = survey_or_404(store, survey)
    data = forms.export_xlsform(surveys.parsed(record, survey_cache()))
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise CLIError(f"{out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {out} ({record.id}, {len(record.resolved['questions'])} questions)")
