"""Analysis commands of `deniable-aggregator`: breakdown, crosstab and regress, on the stored reports or
offline on a reports.jsonl export (--reports) or a CSV of wire-encoded answers (--answers)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from flask import current_app
from flask.cli import with_appcontext

from deniable.aggregator import stats, surveys
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.errors import CLIError, friendly
from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.params import parse_confidence, parse_cuts
from deniable.aggregator.stats.analyze import as_survey
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.results import Results
from deniable.aggregator.stats.weights_table import MAX_WEIGHTS_BYTES
from deniable.aggregator.web.db import existing_store, survey_cache
from deniable.shared import Survey
from deniable.shared.canonical import parse_json
from deniable.shared.sketches import Sketch

Source = tuple[Survey, Any, bool]


def read_answers_csv(survey: Survey, path: Path) -> Iterator[dict[str, Any]]:
    """Rows of wire-encoded answers (a column per question id) as {"answers": {...}}."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [qid for qid in survey.questions if qid not in (reader.fieldnames or [])]
        if missing:
            raise CLIError(f"{path}: no column for question {missing[0]!r}; one per question id")
        for line, row in enumerate(reader, start=2):
            answers: dict[str, Any] = {}
            for qid, question in survey.questions.items():
                text = (row.get(qid) or "").strip()
                if not text:
                    continue  # a question the report skipped (skip logic): an empty cell
                if isinstance(question.randomizer, Sketch):
                    try:  # a text question's sketch answer, as answers.csv writes it: JSON
                        answers[qid] = parse_json(text.encode("utf-8"))
                    except ValueError as exc:
                        raise CLIError(f"{path}, line {line}: {qid}: {exc}") from None
                elif question.randomizer.bit_string:
                    answers[qid] = text
                elif text.lstrip("-").isdigit():
                    answers[qid] = int(text)
                else:
                    raise CLIError(
                        f"{path}, line {line}: {qid}: expected a whole number, got {text!r}"
                    )
            yield {"answers": answers}


def source(
    survey_id: str, reports: Path | None, survey_file: Path | None, answers: Path | None
) -> Source:
    """(survey, reports, verify) from the offline options: a reports.jsonl file or a CSV (the
    stored reports are analysed by the service functions of aggregator/surveys.py)."""
    if answers is not None:
        if survey_file is None:
            raise click.UsageError("--answers needs --survey FILE.json (the survey they answer)")
        survey = as_survey(parse_json(survey_file.read_bytes()))
        return survey, read_answers_csv(survey, answers), False
    if reports is None:
        raise click.UsageError("give --reports FILE.jsonl or --answers FILE.csv")
    if survey_file is not None:
        survey = as_survey(parse_json(survey_file.read_bytes()))
    else:
        survey = survey_cache().survey(surveys.survey_or_404(existing_store(survey_id), survey_id))
    if survey.id != survey_id:
        raise CLIError(f"--survey holds survey {survey.id!r}, not {survey_id!r}")
    return survey, reports.read_text("utf-8"), True


def offline(options: dict[str, Any]) -> bool:
    """Whether the options name reports to analyse instead of the stored ones."""
    return options["reports"] is not None or options["answers"] is not None


def weighting_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--weights FILE.csv and --unweighted (docs/statistics.md, "Weights and designs")."""
    command = click.option(
        "--unweighted",
        is_flag=True,
        help="The raw (unweighted) estimates of a survey with a design.",
    )(command)
    return click.option(
        "--weights",
        "weights_file",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        help="A weights CSV: plain question ids and a weight column, a row per combination.",
    )(command)


def weighting(options: dict[str, Any]) -> dict[str, Any]:
    """The weights table's text (read within its size limit) and whether to weigh at all."""
    path = options.get("weights_file")
    text = None
    if path is not None:
        if path.stat().st_size > MAX_WEIGHTS_BYTES:
            raise CLIError(f"{path}: a weights table is at most {MAX_WEIGHTS_BYTES:,} bytes")
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise CLIError(f"{path}: not UTF-8 text; save the weights table as UTF-8 CSV") from None
    return {"weights": text, "weighted": not options.get("unweighted", False)}


def offline_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--json, --confidence, the weights and the offline sources, shared by the analysis
    commands."""
    command = weighting_options(command)
    for option in reversed(
        [
            click.option("--json", "as_json", is_flag=True, help="Print the JSON."),
            click.option("--confidence", default=None, help="e.g. 0.95."),
            click.option(
                "--reports",
                type=click.Path(dir_okay=False, exists=True, path_type=Path),
                help="Analyse a reports.jsonl export (signatures checked) instead of the store.",
            ),
            click.option(
                "--survey",
                "survey_file",
                type=click.Path(dir_okay=False, exists=True, path_type=Path),
                help="The survey document (with --answers, or for --reports offline).",
            ),
            click.option(
                "--answers",
                type=click.Path(dir_okay=False, exists=True, path_type=Path),
                help="A CSV of wire-encoded answers, a column per question id (another study's).",
            ),
        ]
    ):
        command = option(command)
    return command


def _print(doc: Results, as_json: bool) -> None:
    """The analysis as JSON (--json) or as its summary table."""
    click.echo(json.dumps(doc.to_dict(), indent=2) if as_json else shown(doc.summary(), lines=True))


def _level(confidence: str | None) -> float:
    """--confidence, or the configured level (a bad one is one line and exit status 1)."""
    return parse_confidence(confidence, current_app.config["CONFIDENCE"])


@click.command("breakdown")
@click.argument("survey_id", metavar="SURVEY")
@click.argument("question")
@click.option("--by", required=True, help="The plain question to group by.")
@click.option(
    "--cuts",
    default=None,
    help="Band a plain integer --by at these numbers, like 30,50: < 30, 30–49, ≥ 50.",
)
@offline_options
@with_appcontext
@friendly
def breakdown_command(
    survey_id: str, question: str, by: str, cuts: str | None, **options: Any
) -> None:
    """A randomized QUESTION's estimates within each group of a plain question (--by; a plain
    integer in bands with --cuts)."""
    level = _level(options["confidence"])
    bands = parse_cuts(cuts)
    if offline(options):
        survey, reports, verify = source(
            survey_id, options["reports"], options["survey_file"], options["answers"]
        )
        doc = stats.breakdown(
            survey,
            reports,
            question,
            by,
            level,
            verify=verify,
            cuts=bands,
            **weighting(options),
        )
    else:
        store = existing_store(survey_id)
        doc = surveys.breakdown(
            store,
            survey_id,
            question,
            by,
            confidence=level,
            cache=survey_cache(),
            who=OPERATOR,
            cuts=bands,
            **weighting(options),
        )
    _print(doc, options["as_json"])


@click.command("crosstab")
@click.argument("survey_id", metavar="SURVEY")
@click.argument("first")
@click.argument("second")
@offline_options
@with_appcontext
@friendly
def crosstab_command(survey_id: str, first: str, second: str, **options: Any) -> None:
    """The joint distribution of questions FIRST and SECOND: a cell per pair of options."""
    level = _level(options["confidence"])
    if offline(options):
        survey, reports, verify = source(
            survey_id, options["reports"], options["survey_file"], options["answers"]
        )
        doc = stats.crosstab(
            survey, reports, first, second, level, verify=verify, **weighting(options)
        )
    else:
        store = existing_store(survey_id)
        doc = surveys.crosstab(
            store,
            survey_id,
            first,
            second,
            confidence=level,
            cache=survey_cache(),
            who=OPERATOR,
            **weighting(options),
        )
    _print(doc, options["as_json"])


@click.command("regress")
@click.argument("survey_id", metavar="SURVEY")
@click.argument("formula")
@offline_options
@with_appcontext
@friendly
def regress_command(survey_id: str, formula: str, **options: Any) -> None:
    """Logistic regression of a randomized answer on plain covariates: FORMULA like
    'smokes ~ region + adult' (R's rr model; covariates must be plain questions). A plain
    outcome with one randomized yes/no term, 'civic ~ age + contact', fits rr's
    rrreg.predictor model: the outcome's and the randomized answer's models, jointly."""
    level = _level(options["confidence"])
    limits = Limits.from_config(current_app.config)
    # The formula is data, never Python: stats/formula.py checks it against the grammar.
    if offline(options):
        survey, reports, verify = source(
            survey_id, options["reports"], options["survey_file"], options["answers"]
        )
        doc = stats.regress(
            survey, reports, formula, level, verify=verify, limits=limits, **weighting(options)
        )
    else:
        store = existing_store(survey_id)
        doc = surveys.regression(
            store,
            survey_id,
            formula,
            confidence=level,
            limits=limits,
            cache=survey_cache(),
            who=OPERATOR,
            **weighting(options),
        )
    if options["as_json"] or doc.converged:
        _print(doc, options["as_json"])
        return
    # The fit's first line on stdout, why it failed as the error (exit code 1).
    headline, _, failure = doc.summary().partition("\n")
    click.echo(headline)
    raise CLIError(failure)
