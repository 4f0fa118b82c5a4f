"""The `deniable` command: answer, explain, status and sync, for respondents.

Exit codes: 0 success, 1 a failure the user can act on (one line on stderr), 2 usage errors.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from deniable.client.client import DEFAULT_EPSILON_CAP, Client, check_true_answers
from deniable.client.errors import ClientError
from deniable.client.explain import PLAIN_NOTICE, explain_survey, question_lines, total_lines
from deniable.client.export import export_page
from deniable.client.http import client_version
from deniable.client.page import server_of, verify_page
from deniable.client.receipt import Receipt
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import DeniableError, SurveyError
from deniable.shared.mechanisms import Encoded
from deniable.shared.survey import Question, Survey

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    """Print one line on stderr and exit 1."""
    click.echo(f"error: {' '.join(str(message).split())}", err=True)
    sys.exit(1)


def edge(func: F) -> F:
    """Turn every deliberate error into one line on stderr and exit 1 (never a traceback)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except DeniableError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}")
        except Exception as exc:  # the edge: a bug still gets one line, not a traceback
            if os.environ.get("DENIABLE_DEBUG"):
                raise
            fail(f"unexpected {type(exc).__name__}: {exc} (set DENIABLE_DEBUG=1 for details)")

    return wrapper  # type: ignore[return-value]


def make_client(ctx: click.Context, url: str | None = None) -> Client:
    """A Client from the group's --home and --epsilon-cap (or their environment variables)."""
    home, cap = ctx.obj
    return Client(url, home, epsilon_cap=cap)


@click.group(context_settings=CONTEXT)
@click.version_option(client_version(), "--version", "-V", prog_name="deniable")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="DENIABLE_HOME",
    help="Where keys and the ledger live [env DENIABLE_HOME; default: the user data directory].",
)
@click.option(
    "--epsilon-cap",
    type=click.FloatRange(min=0, min_open=True),
    envvar="DENIABLE_EPSILON_CAP",
    help="Most total epsilon to spend over all surveys "
    f"[env DENIABLE_EPSILON_CAP; default {DEFAULT_EPSILON_CAP:g}].",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None, epsilon_cap: float | None) -> None:
    """Answer local-differential-privacy surveys: your device randomizes every answer before
    anything is sent, and keeps a ledger of the privacy (epsilon) you have spent."""
    ctx.obj = (home, epsilon_cap)


def parse_answers(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> dict[str, str]:
    """--answer ID=VALUE pairs as a dict; a question given twice (a multi question's options,
    one per --answer) gets the list of its values."""
    pairs: dict[str, str | list[str]] = {}
    for item in values:
        qid, sep, value = item.partition("=")
        if not sep or not qid.strip():
            raise click.BadParameter(f"expected ID=VALUE, got {item!r}", ctx, param)
        key, value = qid.strip(), value.strip()
        if key in pairs:
            earlier = pairs[key]
            pairs[key] = [*(earlier if isinstance(earlier, list) else [earlier]), value]
        else:
            pairs[key] = value
    return pairs


@cli.command()
@click.argument("url")
@click.argument("survey_id", metavar="SURVEY")
@click.option(
    "--answer",
    "-a",
    "given",
    multiple=True,
    metavar="ID=VALUE",
    callback=parse_answers,
    help=(
        "A true answer: question id and option label (or 0-based index), or a whole number; "
        "a select-all question takes labels separated by commas, or the flag repeated."
    ),
)
@click.option("--yes", "-y", is_flag=True, help="Do not prompt: every answer must be given.")
@click.option("--invitation", metavar="CODE", help="Invitation code, for invite-only surveys.")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON.")
@click.pass_context
@edge
def answer(
    ctx: click.Context,
    url: str,
    survey_id: str,
    given: dict[str, str],
    yes: bool,
    invitation: str | None,
    as_json: bool,
) -> None:
    """Answer SURVEY served at URL (asks for missing answers unless --yes)."""
    with make_client(ctx, url) as client:
        if client.receipt(survey_id) is not None:
            if not as_json:
                click.echo(
                    f"You already answered {survey_id!r} on this device; nothing is randomized "
                    "again: the stored report is used."
                )
            receipt = client.answer(survey_id, {}, invitation)
            try:  # the option labels, if the survey is still the one answered
                shown: Survey | None = client.fetch_survey(survey_id)
            except ClientError:
                shown = None
            if shown is not None and shown.hash != receipt.survey_hash:
                shown = None
            show_receipt(receipt, shown, as_json)
            return
        survey = client.fetch_survey(survey_id)
        unknown = [qid for qid in given if qid not in survey.questions]
        if unknown:
            fail(
                f"survey {survey.id!r} has no question {unknown[0]!r}; "
                f"its questions: {', '.join(survey.questions)}"
            )
        missing = [qid for qid in survey.questions if qid not in given]
        if missing and yes:
            raise click.UsageError(
                f"--yes needs every answer; missing --answer for {', '.join(missing)}"
            )
        truth: dict[str, object] = dict(given)
        if not yes:
            spent = client.status().epsilon_spent
            truth.update(ask(survey, missing))
            click.echo()
            for line in total_lines(survey, spent=spent, cap=client.epsilon_cap):
                click.echo(line)
            click.confirm(
                "Randomize these answers on this device and send them?", default=True, abort=True
            )
        check_true_answers(survey, truth)  # a bad answer is said before anything else
        plain = [q.id for q in survey.questions.values() if q.plain]
        if plain and yes:  # the prompts said it already; say it before sending here too
            click.echo(f"{PLAIN_NOTICE} ({', '.join(plain)})", err=True)
        show_receipt(client.answer(survey_id, truth, invitation, survey=survey), survey, as_json)


def ask(survey: Survey, missing: Sequence[str]) -> dict[str, str]:
    """Prompt for each missing answer, showing options and privacy cost in plain words."""
    click.echo(f"{survey.title} ({survey.id})")
    click.echo(
        "Your device randomizes every answer before anything leaves it; the server only ever "
        "sees the noisy answers."
    )
    answers: dict[str, str] = {}
    for number, qid in enumerate(missing, start=1):
        question = survey.questions[qid]
        click.echo()
        click.echo(f"{number}/{len(missing)}  {question.text}  [{qid}]")
        if question.kind.numbered:
            click.echo(
                "     " + "   ".join(f"{i}) {label}" for i, label in enumerate(question.options, 1))
            )
        for line in question_lines(question):
            click.echo(f"     {line}")
        answers[qid] = click.prompt(
            question.kind.prompt(question),
            default=question.kind.prompt_default,
            show_default=False,
            value_proc=lambda text, q=question: option_of(q, text),
        )
    return answers


def option_of(question: Question, text: str) -> Any:
    """An interactive answer (a 1-based number, a label, or y/n) as the option's label; an
    integer question's number; a multi question's labels (comma-separated, empty for none)."""
    try:
        return question.kind.from_prompt(question, text)
    except SurveyError as exc:
        raise click.BadParameter(str(exc)) from None


def noisy_text(question: Question | None, value: Encoded) -> str:
    """A noisy answer as the respondent should read it ("yes", "C", "0010 (marks C)")."""
    if question is None:
        return str(value)
    return question.kind.noisy_text(question, value)


def show_receipt(receipt: Receipt, survey: Survey | None, as_json: bool) -> None:
    """Print what was sent and what it cost."""
    if as_json:
        click.echo(json.dumps(asdict(receipt), indent=2, sort_keys=True))
        return
    click.echo()
    click.echo(f"Report {receipt.report_id} for {receipt.survey!r}: {receipt.status}")
    if receipt.status == "queued":
        click.echo(
            f"  Not sent yet ({receipt.reason}); it is saved on this device and "
            "`deniable sync` will send it later."
        )
    elif receipt.reason:
        click.echo(f"  Reason: {receipt.reason}")
    click.echo(
        f"Privacy spent: epsilon {receipt.epsilon:.4g} for this survey; "
        f"{receipt.epsilon_spent:.4g} in total."
    )
    click.echo("Noisy answers sent (randomized on this device, not your true answers):")
    questions: Mapping[str, Question] = survey.questions if survey is not None else {}
    order = [qid for qid in questions if qid in receipt.answers]
    order += [qid for qid in receipt.answers if qid not in questions]
    for qid in order:
        click.echo(f"  {qid}: {noisy_text(questions.get(qid), receipt.answers[qid])}")


@cli.command()
@click.argument("target", metavar="URL|FILE.json")
@click.argument("survey_id", metavar="[SURVEY]", required=False)
@click.pass_context
@edge
def explain(ctx: click.Context, target: str, survey_id: str | None) -> None:
    """Explain a survey in plain words: what is sent, how likely your true answer is kept,
    and what its epsilon means for you. Give URL SURVEY, or a local survey FILE.json."""
    if survey_id is not None:
        with make_client(ctx, target) as client:
            click.echo(client.explain(survey_id))
        return
    path = Path(target)
    if not path.is_file():
        raise click.UsageError(f"give URL SURVEY, or a survey file; {target!r} is not a file")
    try:
        doc = parse_json(path.read_bytes())
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")
    except JSONTextError as exc:
        fail(f"cannot read {path}: not valid JSON ({exc})")
    try:
        survey = Survey.from_dict(doc)
    except SurveyError as exc:
        fail(f"{path}: {exc}")
    click.echo(explain_survey(survey))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
@edge
def status(ctx: click.Context, as_json: bool) -> None:
    """Show surveys answered, epsilon spent against your cap, and reports waiting."""
    with make_client(ctx) as client:
        state = client.status()
    if as_json:
        click.echo(json.dumps(asdict(state), indent=2, sort_keys=True))
        return
    click.echo(f"Surveys answered: {state.surveys_answered}")
    click.echo(
        f"Epsilon spent: {state.epsilon_spent:.4g} of your cap of {state.epsilon_cap:.4g} "
        f"({state.epsilon_left:.4g} left)"
    )
    waiting = f"Reports waiting to be sent: {state.pending}"
    click.echo(waiting + (" (run `deniable sync`)" if state.pending else ""))
    if state.rejected:
        click.echo(f"Reports rejected by the server: {state.rejected}")
    for entry in state.entries:
        shown = {"sent": "sent", "pending": "waiting", "rejected": "rejected"}[entry.status]
        reason = f" ({entry.reason})" if entry.reason and entry.status != "sent" else ""
        click.echo(
            f"  {entry.survey} at {entry.server}: epsilon {entry.epsilon:.4g}, "
            f"{shown}{reason}, answered {entry.created_at}"
        )


@cli.command()
@click.pass_context
@edge
def sync(ctx: click.Context) -> None:
    """Send every report waiting in the outbox."""
    with make_client(ctx) as client:
        receipts = client.sync()
    if not receipts:
        click.echo("Nothing to send.")
        return
    for receipt in receipts:
        reason = f" ({receipt.reason})" if receipt.reason else ""
        click.echo(f"{receipt.survey} at {receipt.server}: {receipt.status}{reason}")
    queued = [r for r in receipts if r.status == "queued"]
    if queued:
        fail(
            f"{len(queued)} report(s) could not be sent ({queued[0].reason}); they stay saved: "
            "run `deniable sync` again later"
        )
    rejected = [r for r in receipts if r.status == "rejected"]
    if rejected:
        fail(
            f"the server refused {len(rejected)} report(s) ({rejected[0].reason}); they stay in "
            "the ledger marked rejected (`deniable status`)"
        )


@cli.command("verify-page")
@click.argument("url")
@edge
def verify_page_command(url: str) -> None:
    """Check that a survey page's code is the code in your installed deniable, and that the
    survey it pins is the one its aggregator publishes (URL: the aggregator's /s/SURVEY, or an
    exported page's address wherever it is hosted)."""
    verdict = verify_page(url)
    for check in verdict.checks:
        click.echo(f"{check.name}: {'same' if check.same else 'DIFFERENT'}")
        for line in check.details:
            click.echo(f"  {line}")
    problems = []
    code = sorted({c.name for c in verdict.checks if not c.same and c.kind == "code"})
    if code:
        problems.append(
            f"{', '.join(code)} served by {server_of(verdict.url)} differ from your installed "
            f"deniable {client_version()}: do not answer on that page (another version, or "
            "altered code); use `deniable answer` instead"
        )
    if any(not c.same and c.kind == "survey" for c in verdict.checks):
        problems.append(
            f"the survey the page pins is not the one {verdict.aggregator or 'its aggregator'} "
            "publishes: do not answer on that page (its host should export it again: "
            "`deniable page export`)"
        )
    if problems:
        fail("; ".join(problems))
    click.echo("The page's code is the code you installed.")
    if verdict.aggregator:
        click.echo(
            f"It pins survey {verdict.survey} as {verdict.aggregator} publishes it, and sends "
            "answers there."
        )


@cli.group("page", context_settings=CONTEXT)
def page_group() -> None:
    """Respondent pages you host yourself (docs/fieldwork.md)."""


@page_group.command("export")
@click.argument("url")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Write into DIR even if it is not empty.")
@edge
def page_export_command(url: str, directory: Path, force: bool) -> None:
    """Write the survey page of the respondent link URL (https://aggregator/s/SURVEY) into DIR
    as a static site: the installed modules pinned by their hashes, the survey pinned by its
    hash, answers sent to that aggregator only."""
    done = export_page(url, directory, force=force)
    click.echo(
        f"Exported survey {done.survey.id} (sha256 {done.survey.hash}) of {done.aggregator} "
        f"to {done.directory}: {', '.join(done.files)}"
    )
    click.echo(
        f"Next: serve {done.directory} from any static host (try `python -m http.server 8080 "
        f"-d {done.directory}`), and add that host's origin (e.g. http://localhost:8080) to "
        f"DENIABLE_PAGE_ORIGINS on {done.aggregator}; then check it with `deniable verify-page "
        "ADDRESS`."
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `deniable` console script."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="deniable")


if __name__ == "__main__":
    main()
