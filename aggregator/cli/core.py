"""`deniable-aggregator`: the operator's and researcher's command line (a Flask CLI group).

Exit codes: 0 success, 1 a failure the user can act on (one line on stderr), 2 usage errors.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from flask import current_app
from flask.cli import FlaskGroup

from deniable.aggregator import accounts, demo, surveys
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli import accounts as account_commands
from deniable.aggregator.cli import analysis, export, gateway, maintenance, research
from deniable.aggregator.cli import series as series_commands
from deniable.aggregator.cli import survey as survey_commands
from deniable.aggregator.cli.errors import CLIError, friendly
from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.gateway import keys as gateway_keys
from deniable.aggregator.params import parse_candidates, parse_confidence
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.shuffle_results import shuffle_summary
from deniable.aggregator.web.app import create_app
from deniable.aggregator.web.db import existing_store, get_store, survey_cache
from deniable.aggregator.web.serving import bind, serve
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import DeniableError, SurveyError

F = TypeVar("F", bound=Callable[..., Any])


def _non_empty(value: str, name: str) -> str:
    if not value.strip():
        raise click.BadParameter("give a non-empty label", param_hint=name)
    return value.strip()


cli = FlaskGroup(
    name="deniable-aggregator",
    help=(
        "Run the deniable aggregator and work with its surveys. Data lives under "
        "DENIABLE_DATA_DIR (default ./deniable-data)."
    ),
    create_app=create_app,
    add_default_commands=False,
    add_version_option=False,
    load_dotenv=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
# Flask's own --app, --env-file and --debug would let the command load another app or turn on
# the debugger: this CLI serves deniable's app, configured by DENIABLE_* variables only.
cli.params = [p for p in cli.params if p.name not in ("app", "env_file", "debug")]
click.version_option(package_name="deniable", prog_name="deniable-aggregator")(cli)


@cli.command("run")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@friendly
def run_command(host: str, port: int) -> None:
    """Serve the aggregator (werkzeug's threaded server; see deploy/ for gunicorn)."""
    get_store()  # fail here, with a clear message, if the database cannot be opened
    click.echo(f"deniable aggregator on http://{host}:{port}", err=True)
    serve(current_app._get_current_object(), host, port)  # type: ignore[attr-defined]


@cli.command("init-db")
@friendly
def init_db_command() -> None:
    """Create the database or bring its schema up to date."""
    version = get_store().migrate()
    gateway_keys.ensure_key(get_store())  # the OHTTP gateway's first key (docs/anonymity.md)
    click.echo(f"database ready under {current_app.config['DATA_DIR']} (schema version {version})")


@cli.command("create-token")
@click.option(
    "--name",
    default="researcher",
    show_default=True,
    help="A label for the token.",
    callback=lambda _ctx, _param, value: _non_empty(value, "--name"),
)
@friendly
def create_token_command(name: str) -> None:
    """Make an admin token of the admin account NAME (made if absent) and print it, alone;
    only its hash is stored. `token create ACCOUNT` makes narrower ones."""
    token, _ = accounts.admin_token(get_store(), OPERATOR, name)
    click.echo(token)


@cli.command("revoke-token")
@click.argument("name")
@friendly
def revoke_token_command(name: str) -> None:
    """Revoke the tokens made with `create-token --name NAME`; their dashboard sessions end
    (`token revoke ID` revokes one token)."""
    removed = accounts.revoke_named(existing_store(), OPERATOR, name)
    click.echo(f"revoked {removed} token(s) named {name!r}")


@cli.command("create-survey")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--owner", default=None, metavar="ACCOUNT", help="Make this account an owner of the survey."
)
@friendly
def create_survey_command(file: Path, owner: str | None) -> None:
    """Create a survey from a JSON document and print its id."""
    if owner is not None and get_store().get_account(owner) is None:
        raise CLIError(f"no account {owner!r}; `deniable-aggregator account create` makes one")
    limit = current_app.config["MAX_CONTENT_LENGTH"]  # as for a document POSTed to the API
    try:
        with file.open("rb") as handle:  # never more than the limit read (/dev/zero, say)
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise CLIError(
                f"{file}: larger than {limit:,} bytes (DENIABLE_MAX_BODY, as for a survey "
                "posted to the API); a survey document is far smaller"
            )
        doc = parse_json(data)
    except JSONTextError as exc:
        raise CLIError(f"{file}: not valid JSON ({exc})") from None
    except FileNotFoundError:
        raise CLIError(f"{file}: no such file") from None
    except OSError as exc:
        raise CLIError(f"{file}: {exc.strerror}") from None
    try:
        record, _ = surveys.create_survey(
            get_store(), doc, Limits.from_config(current_app.config), who=OPERATOR
        )
    except SurveyError as exc:
        raise CLIError(f"{file}: {exc}") from None
    if owner is not None:
        accounts.grant(get_store(), OPERATOR, record.id, owner, "owner")
    for notice in surveys.language_notices(record):
        click.echo(f"note: {notice}", err=True)
    click.echo(record.id)


@cli.command("invite")
@click.argument("survey")
@click.argument("count", type=click.IntRange(1))
@friendly
def invite_command(survey: str, count: int) -> None:
    """Make COUNT single-use invitation codes for an invite-only survey, one per line."""
    store = existing_store(survey)
    for code in surveys.invite(
        store, survey, count, limit=sys.maxsize, cache=survey_cache(), who=OPERATOR
    ):
        click.echo(code)


@cli.command("close")
@click.argument("survey")
@friendly
def close_command(survey: str) -> None:
    """Stop accepting reports for a survey."""
    record = surveys.close_survey(existing_store(survey), survey, who=OPERATOR)
    click.echo(f"{record.id} closed at {record.closed_at} with {record.report_count} reports")


@cli.command("results")
@click.argument("survey")
@click.option("--json", "as_json", is_flag=True, help="Print the results JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the results as CSV.")
@click.option("--confidence", default=None, help="Confidence level, e.g. 0.95.")
@click.option("--simultaneous", is_flag=True, help="Intervals that hold for all options at once.")
@click.option(
    "--candidates",
    default=None,
    metavar="A,B",
    help="Text questions: more candidate answers to estimate, separated by commas.",
)
@analysis.weighting_options
@friendly
def results_command(
    survey: str,
    as_json: bool,
    as_csv: bool,
    confidence: str | None,
    simultaneous: bool,
    candidates: str | None,
    **weights: Any,
) -> None:
    """Print a survey's estimates: a table, or --json, or --csv (weighted by the survey's
    design, or --weights FILE.csv, unless --unweighted)."""
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    options = {  # parsed as the API and the dashboard parse them (aggregator/params.py)
        "confidence": parse_confidence(confidence, current_app.config["CONFIDENCE"]),
        "simultaneous": simultaneous,
        "candidates": parse_candidates(candidates),
        "limits": Limits.from_config(current_app.config),
        "cache": survey_cache(),
        "who": OPERATOR,
        **analysis.weighting(weights),
    }
    if as_csv:
        doc = surveys.results(existing_store(survey), survey, action="results.csv", **options)
        click.echo(doc.to_csv(), nl=False)
        return
    doc = surveys.results(existing_store(survey), survey, **options)
    if as_json:
        click.echo(json.dumps(doc.to_dict(), indent=2))
    else:
        click.echo(shown(doc.summary(), lines=True))
        for line in shuffle_summary(doc):  # a relay survey's central epsilon (docs/anonymity.md)
            click.echo(line)


@cli.command("demo")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--respondents",
    default=demo.DEMO_RESPONDENTS,
    show_default=True,
    type=click.IntRange(1),
    help="Simulated respondents, when the demo survey has no reports yet.",
)
@click.option("--no-serve", is_flag=True, help="Prepare the demo data and exit.")
@click.option(
    "--xlsform",
    "xlsforms",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Also a survey from this XLSForm (make demo: a real public one).",
)
@click.option(
    "--drop-unsupported", is_flag=True, help="With --xlsform: leave out what it cannot honour."
)
@friendly
def demo_command(
    host: str,
    port: int,
    respondents: int,
    no_serve: bool,
    xlsforms: tuple[Path, ...],
    drop_unsupported: bool,
) -> None:
    """Serve example surveys answered by simulated respondents; print an admin token and an
    analyst's.

    The respondents go through the real client's HTTP layer to this very server: each signs
    its randomized report with a fresh key and the reports are posted in batches."""
    store = get_store()
    more = [(path.name, survey_commands.read_form(path)) for path in xlsforms]
    docs, notices = demo.demo_survey_docs(more, drop_unsupported=drop_unsupported)
    for notice in notices:
        click.echo(f"note: {notice}", err=True)
    records = [surveys.create_survey(store, doc, who=OPERATOR)[0] for doc in docs]
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    server = bind(app, host, port)
    url = f"http://{host}:{server.port}"
    worker = threading.Thread(target=server.serve_forever, daemon=True)
    worker.start()
    try:
        for record in records:
            if record.report_count == 0:
                click.echo(
                    f"answering {record.id!r} with {respondents} simulated respondents...",
                    err=True,
                )
                sent = demo.fill_over_http(url, record.id, respondents)
                if sent.failed:
                    raise DeniableError(sent.failure_text())
        token, analyst = demo.demo_tokens(store, [record.id for record in records])
        for record in records:
            n = store.get_survey(record.id).report_count  # type: ignore[union-attr]
            click.echo(
                f"survey:  {record.id} ({n} reports; data in {current_app.config['DATA_DIR']})"
            )
        click.echo(f"admin token:   {token}")
        click.echo(f"analyst token: {analyst}   (reads the demo surveys, changes nothing)")
        click.echo(
            f"results: curl -H 'Authorization: Bearer {token}' "
            f"{url}/api/v1/surveys/{records[0].id}/results"
        )
        click.echo(f"url:     {url}/   (dashboard: log in with either token)")
        if not no_serve:
            while worker.is_alive():
                worker.join(0.5)
    finally:
        server.shutdown()
        server.server_close()


cli.add_command(research.plan_command)
cli.add_command(gateway.rotate_command)
for _command in account_commands.COMMANDS:
    cli.add_command(_command)
for _command in maintenance.COMMANDS:
    cli.add_command(_command)
cli.add_command(research.simulate_command)
cli.add_command(analysis.breakdown_command)
cli.add_command(analysis.crosstab_command)
cli.add_command(analysis.regress_command)
cli.add_command(export.export_command)
cli.add_command(survey_commands.survey_group)
cli.add_command(series_commands.series_group)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: run the group, and turn any unexpected failure into one line."""
    try:
        code = cli.main(args=argv, prog_name="deniable-aggregator", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except (DeniableError, sqlite3.Error) as exc:
        click.echo(f"error: {shown(str(exc), lines=True)}", err=True)
        sys.exit(1)
    except Exception as exc:  # the last line of defence: no traceback for the user
        click.echo(
            f"error: unexpected {type(exc).__name__}: {shown(str(exc), lines=True)}", err=True
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
