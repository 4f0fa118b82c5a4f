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
from deniable.client.explain import explain_survey, plain_notice, question_lines, total_lines
from deniable.client.export import export_page
from deniable.client.http import client_version
from deniable.client.page import server_of, verify_page
from deniable.client.receipt import Receipt
from deniable.shared import i18n
from deniable.shared.ballot import DIRECT, direct_notice, split_lines
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import DeniableError, SurveyError
from deniable.shared.languages import SurveyText
from deniable.shared.mechanisms import Encoded
from deniable.shared.survey import Question, Survey
from deniable.shared.terminal import shown


def echo(message: object = "", *, err: bool = False) -> None:
    """Print a line that may hold a server's words (a survey's texts, a reason), with what a
    terminal would act on (controls, bidi overrides) shown as escapes."""
    click.echo(shown(str(message), lines=True), err=err)


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    """Print one line on stderr and exit 1."""
    echo(f"error: {' '.join(str(message).split())}", err=True)
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
    home, cap, _lang = ctx.obj
    return Client(url, home, epsilon_cap=cap)


def language_of(ctx: click.Context, lang: str | None = None) -> str | None:
    """The language asked for: a command's --lang, else the group's (`deniable --lang`)."""
    return lang or (ctx.obj[2] if ctx.obj else None)


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
@click.option(
    "--lang",
    metavar="TAG",
    help="The language to speak (e.g. fr): deniable's own words, and a survey's texts when "
    "the survey has that language [default English].",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None, epsilon_cap: float | None, lang: str | None) -> None:
    """Answer local-differential-privacy surveys: your device randomizes every answer before
    anything is sent, and keeps a ledger of the privacy (epsilon) you have spent."""
    ctx.obj = (home, epsilon_cap, lang)


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
        "a select-all question takes labels separated by commas, or the flag repeated. "
        "Questions the plain answers skip are left out."
    ),
)
@click.option("--yes", "-y", is_flag=True, help="Do not prompt: every answer must be given.")
@click.option("--invitation", metavar="CODE", help="Invitation code, for invite-only surveys.")
@click.option(
    "--lang",
    metavar="TAG",
    help="The survey's language to show (e.g. fr); default: the survey's own language.",
)
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
    lang: str | None,
    as_json: bool,
) -> None:
    """Answer SURVEY served at URL (asks for missing answers unless --yes)."""
    explicit, lang = lang, language_of(ctx, lang)
    _ = i18n.translator(lang)
    with make_client(ctx, url) as client:
        if client.receipt(survey_id) is not None:
            if not as_json:
                echo(
                    _(
                        "You already answered {survey} on this device; nothing is randomized "
                        "again: the stored report is used."
                    ).format(survey=repr(survey_id))
                )
            receipt = client.answer(survey_id, {}, invitation)
            try:  # the option labels, if the survey is still the one answered
                shown: Survey | None = client.fetch_survey(survey_id)
            except ClientError:
                shown = None
            if shown is not None and shown.hash != receipt.survey_hash:
                shown = None
            show_receipt(receipt, shown, as_json, lang=lang)
            return
        survey = client.fetch_survey(survey_id)
        if explicit:  # --lang: the survey must have it
            language = survey_language(survey, explicit)
        else:  # `deniable --lang`, when the survey has it
            language = survey.language_for(lang) or survey.language
        speak = lang or language  # deniable's own words
        _ = i18n.translator(speak)
        words = survey.text_in(language)
        unknown = [qid for qid in given if qid not in survey.questions]
        if unknown:
            fail(
                _("survey {survey} has no question {question}; its questions: {questions}").format(
                    survey=repr(survey.id),
                    question=repr(unknown[0]),
                    questions=", ".join(survey.questions),
                )
            )
        truth: dict[str, object] = {
            qid: from_language(survey.questions[qid], words, value) for qid, value in given.items()
        }
        missing = [qid for qid in survey.relevant(truth) if qid not in truth]
        if missing and yes:
            raise click.UsageError(
                _("--yes needs every answer; missing --answer for {questions}").format(
                    questions=", ".join(missing)
                )
            )
        # Split ballots: each arm is drawn before its question is shown (docs/surveys.md).
        drawn = survey.draw_arms(survey.split)
        if not yes:
            spent = client.status().epsilon_spent
            truth = ask(survey, truth, words, lang=speak, arms=drawn)
            echo()
            for line in total_lines(survey, spent=spent, cap=client.epsilon_cap, lang=speak):
                echo(line)
            for line in skip_lines(survey, truth, lang=speak):
                echo(line)
            given_direct = [
                qid
                for qid, arm in drawn.items()
                if arm == DIRECT and qid in given and qid in survey.relevant(truth)
            ]
            if given_direct:  # answered with --answer: not prompted, so said here
                echo(f"{direct_notice(speak)} ({', '.join(given_direct)})")
            click.confirm(
                _("Randomize these answers on this device and send them?"), default=True, abort=True
            )
        check_true_answers(survey, truth)  # a bad answer is said before anything else
        plain = [qid for qid in truth if survey.questions[qid].plain]
        if plain and yes:  # the prompts said it already; say it before sending here too
            echo(f"{plain_notice(speak)} ({', '.join(plain)})", err=True)
        asked = survey.relevant(truth)
        arms = {qid: arm for qid, arm in drawn.items() if qid in asked}
        direct = [qid for qid, arm in arms.items() if arm == DIRECT]
        if direct and yes:  # the prompts said it already; say it before sending here too
            echo(f"{direct_notice(speak)} ({', '.join(direct)})", err=True)
        receipt = client.answer(survey_id, truth, invitation, survey=survey, arms=arms)
        show_receipt(receipt, survey, as_json, lang=speak, language=language)


def survey_language(survey: Survey, lang: str | None) -> str:
    """The survey's language `--lang` asks for (the default without it); ClientError listing
    the survey's languages when it has none such."""
    if lang is None:
        return survey.language
    found = survey.language_for(lang)
    if found is None:
        _ = i18n.translator(lang)
        raise ClientError(
            _("survey {survey} is not in {language}; its languages: {languages}").format(
                survey=repr(survey.id), language=repr(lang), languages=", ".join(survey.languages)
            )
        )
    return found


def from_language(question: Question, words: SurveyText, value: object) -> object:
    """A typed answer whose option labels may be in the shown language, with the labels the
    survey's wire uses (the default language's); other values as given."""
    shown = words.questions[question.id].options
    if not shown or tuple(shown) == tuple(question.options):
        return value
    folded = {label.casefold(): question.options[i] for i, label in enumerate(shown)}

    def one(item: object) -> object:
        if isinstance(item, str):
            return folded.get(item.strip().casefold(), item)
        return item

    if isinstance(value, list):
        return [one(item) for item in value]
    if isinstance(value, str) and value.strip().casefold() not in folded and "," in value:
        return ",".join(str(one(part)) for part in value.split(","))
    return one(value)


def ask(
    survey: Survey,
    given: Mapping[str, object],
    words: SurveyText,
    *,
    lang: str,
    arms: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Prompt for each missing answer of the questions asked, in order, showing the note,
    options, hint and privacy cost in plain words; a question the plain answers so far skip
    is not asked. A split-ballot question drawn in the direct arm (`arms`) says it is sent
    exactly as answered instead. Returns every answer, the given ones included."""
    arms = arms or {}
    _ = i18n.translator(lang)
    echo(f"{words.title} ({survey.id})")
    echo(
        _(
            "Your device randomizes every answer before anything leaves it; the server only ever "
            "sees the noisy answers."
        )
    )
    truth: dict[str, object] = {}
    number = 0
    for qid, question in survey.questions.items():
        if qid not in survey.relevant(truth):
            if qid in given:  # said now, naming why, rather than after the other prompts
                check_true_answers(survey, {**truth, qid: given[qid]})
            continue
        if qid in given:
            truth[qid] = given[qid]
            continue
        number += 1
        text = words.questions[qid]
        echo()
        if text.note:
            echo(text.note)
        echo(f"{number}.  {text.text}  [{qid}]")
        if question.kind.numbered:
            labels = text.options or tuple(question.options)
            echo("     " + "   ".join(f"{i}) {label}" for i, label in enumerate(labels, 1)))
        if text.hint:
            echo(f"     {text.hint}")
        if arms.get(qid) == DIRECT:  # split ballot, direct arm: said before the answer
            echo(f"     {direct_notice(lang)}")
        else:
            lines = question_lines(question, lang=lang)
            if question.longitudinal is not None:  # both epsilons, before answering
                lines = [question.randomizer.describe(), *lines[1:]]
            for line in lines:
                echo(f"     {line}")
        truth[qid] = click.prompt(
            shown(prompt_text(question, lang)),
            default=question.kind.prompt_default,
            show_default=False,
            value_proc=lambda typed, q=question: option_of(q, str(from_language(q, words, typed))),
        )
    return truth


def prompt_text(question: Question, lang: str) -> str:
    """The prompt for a true answer, in the respondent's language."""
    _ = i18n.translator(lang)
    control = question.kind.control  # the page's input: choice, number, boxes or words
    if control == "number":
        text = _("Your answer (a whole number from {low} to {high})").format(
            low=question.low, high=question.high
        )
    elif control == "boxes":
        text = _("Your answers (numbers or labels, separated by commas; Enter for none)")
    elif control == "words":
        text = _("Your answer (a word or a short phrase)")
    else:
        text = _("Your answer (1-{count})").format(count=question.k)
    return f"     {text}"


def option_of(question: Question, text: str) -> Any:
    """An interactive answer (a 1-based number, a label, or y/n) as the option's label; an
    integer question's number; a multi question's labels (comma-separated, empty for none)."""
    try:
        return question.kind.from_prompt(question, text)
    except SurveyError as exc:  # click.prompt prints it as it is: the survey's labels shown
        raise click.BadParameter(shown(str(exc))) from None


def skip_lines(survey: Survey, truth: Mapping[str, object], *, lang: str) -> list[str]:
    """For a survey with skip logic: what this report spends against the most it can."""
    if not survey.conditional:
        return []
    _ = i18n.translator(lang)
    asked = survey.relevant(truth)
    line = _(
        "Some questions are asked only after certain answers, and a question not asked costs "
        "nothing: this report holds {asked} of the {total} questions and spends epsilon "
        "{spends}, of at most {most} for the survey."
    )
    spends, most = f"{survey.epsilon_of(asked):.4g}", f"{survey.epsilon:.4g}"
    return [line.format(asked=len(asked), total=len(survey.questions), spends=spends, most=most)]


def noisy_text(question: Question | None, value: Encoded) -> str:
    """A noisy answer as the respondent should read it ("yes", "C", "0010 (marks C)")."""
    if question is None:
        return str(value)
    return question.kind.noisy_text(question, value)


def show_receipt(
    receipt: Receipt,
    survey: Survey | None,
    as_json: bool,
    *,
    lang: str | None = None,
    language: str | None = None,
) -> None:
    """Print what was sent and what it cost: deniable's words in `lang`, option labels in the
    survey's language `language` (else `lang`'s, else its default)."""
    if as_json:
        echo(json.dumps(asdict(receipt), indent=2, sort_keys=True))
        return
    _ = i18n.translator(lang)
    echo()
    echo(
        _("Report {report_id} for {survey}: {status}").format(
            report_id=receipt.report_id, survey=repr(receipt.survey), status=receipt.status
        )
    )
    if receipt.status == "queued":
        echo(
            "  "
            + _(
                "Not sent yet ({reason}); it is saved on this device and `deniable sync` will "
                "send it later."
            ).format(reason=receipt.reason)
        )
    elif receipt.reason:
        echo("  " + _("Reason: {reason}").format(reason=receipt.reason))
    echo(
        _("Privacy spent: epsilon {epsilon} for this survey; {total} in total.").format(
            epsilon=f"{receipt.epsilon:.4g}", total=f"{receipt.epsilon_spent:.4g}"
        )
    )
    echo(_("Noisy answers sent (randomized on this device, not your true answers):"))
    questions: Mapping[str, Question] = survey.questions if survey is not None else {}
    words = survey.text_in(language or lang) if survey is not None else None
    order = [qid for qid in questions if qid in receipt.answers]
    order += [qid for qid in receipt.answers if qid not in questions]
    for qid in order:
        value = receipt.answers[qid]
        if receipt.arms.get(qid) == DIRECT:  # a split ballot's direct arm: sent as answered
            asked = questions[qid].direct_question if qid in questions else None
            echo(f"  {qid}: {noisy_text(asked, value)} ({direct_notice(lang)})")
            continue
        shown = words.questions[qid].options if words is not None and qid in questions else ()
        if type(value) is int and 0 <= value < len(shown):  # an option, in the shown language
            echo(f"  {qid}: {shown[value]}")
        else:
            echo(f"  {qid}: {noisy_text(questions.get(qid), value)}")


@cli.command()
@click.argument("target", metavar="URL|FILE.json")
@click.argument("survey_id", metavar="[SURVEY]", required=False)
@click.option("--lang", metavar="TAG", help="The language of deniable's words (e.g. fr).")
@click.pass_context
@edge
def explain(ctx: click.Context, target: str, survey_id: str | None, lang: str | None) -> None:
    """Explain a survey in plain words: what is sent, how likely your true answer is kept,
    and what its epsilon means for you. Give URL SURVEY, or a local survey FILE.json."""
    lang = language_of(ctx, lang)
    if survey_id is not None:
        with make_client(ctx, target) as client:
            echo(client.explain(survey_id, lang=lang))
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
    echo(explain_survey(survey, lang=lang))
    shares = {qid: survey.questions[qid].direct_share for qid in survey.split}
    if shares:  # a split ballot (docs/surveys.md#split-ballot)
        echo("\n" + "\n".join(split_lines(shares, lang)))  # type: ignore[arg-type]


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
@edge
def status(ctx: click.Context, as_json: bool) -> None:
    """Show surveys answered, epsilon spent against your cap, and reports waiting."""
    with make_client(ctx) as client:
        state = client.status()
    if as_json:
        echo(json.dumps(asdict(state), indent=2, sort_keys=True))
        return
    _ = i18n.translator(language_of(ctx))
    echo(_("Surveys answered: {count}").format(count=state.surveys_answered))
    echo(
        _("Epsilon spent: {spent} of your cap of {cap} ({left} left)").format(
            spent=f"{state.epsilon_spent:.4g}",
            cap=f"{state.epsilon_cap:.4g}",
            left=f"{state.epsilon_left:.4g}",
        )
    )
    if state.pending:
        echo(
            _("Reports waiting to be sent: {count} (run `deniable sync`)").format(
                count=state.pending
            )
        )
    else:
        echo(_("Reports waiting to be sent: {count}").format(count=state.pending))
    if state.rejected:
        echo(_("Reports rejected by the server: {count}").format(count=state.rejected))
    words = {"sent": _("sent"), "pending": _("waiting"), "rejected": _("rejected")}
    for entry in state.entries:
        reason = f" ({entry.reason})" if entry.reason and entry.status != "sent" else ""
        echo(
            "  "
            + _(
                "{survey} at {server}: epsilon {epsilon}, {status}{reason}, answered {when}"
            ).format(
                survey=entry.survey,
                server=entry.server,
                epsilon=f"{entry.epsilon:.4g}",
                status=words[entry.status],
                reason=reason,
                when=entry.created_at,
            )
        )


@cli.command()
@click.pass_context
@edge
def sync(ctx: click.Context) -> None:
    """Send every report waiting in the outbox."""
    with make_client(ctx) as client:
        receipts = client.sync()
    _ = i18n.translator(language_of(ctx))
    if not receipts:
        echo(_("Nothing to send."))
        return
    for receipt in receipts:
        reason = f" ({receipt.reason})" if receipt.reason else ""
        echo(f"{receipt.survey} at {receipt.server}: {receipt.status}{reason}")
    queued = [r for r in receipts if r.status == "queued"]
    if queued:
        fail(
            _(
                "{count} report(s) could not be sent ({reason}); they stay saved: run "
                "`deniable sync` again later"
            ).format(count=len(queued), reason=queued[0].reason)
        )
    rejected = [r for r in receipts if r.status == "rejected"]
    if rejected:
        fail(
            _(
                "the server refused {count} report(s) ({reason}); they stay in the ledger marked "
                "rejected (`deniable status`)"
            ).format(count=len(rejected), reason=rejected[0].reason)
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
        echo(f"{check.name}: {'same' if check.same else 'DIFFERENT'}")
        for line in check.details:
            echo(f"  {line}")
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
    echo("The page's code is the code you installed.")
    if verdict.aggregator:
        echo(
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
    echo(
        f"Exported survey {done.survey.id} (sha256 {done.survey.hash}) of {done.aggregator} "
        f"to {done.directory}: {', '.join(done.files)}"
    )
    echo(
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
