"""The researcher's planning and simulation commands of `deniable-aggregator` (no app needed)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from deniable.aggregator.cli import simulate_http
from deniable.aggregator.params import ParamError, parse_confidence
from deniable.aggregator.stats import planning, simulate
from deniable.shared.errors import DeniableError


def _fail(message: str) -> NoReturn:
    """One line on stderr, exit status 1."""
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _level(text: str) -> float:
    """--confidence parsed as every command and the API parse it (one line, exit 1 if bad)."""
    try:
        return parse_confidence(text, 0.95)
    except ParamError as exc:
        _fail(str(exc))


def _sketch_size(text: str | None) -> tuple[int, ...] | None:
    """--sketch KxM (hash functions, columns) or, for rappor, BITSxHASHESxCOHORTS."""
    if text is None:
        return None
    parts = [part.strip() for part in text.lower().split("x")]
    if len(parts) not in (2, 3) or not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise planning.PlanError(
            f"sketch: expected KxM, like 16x1024 (rappor: 32x2x16), got {text!r}"
        )
    return tuple(int(p) for p in parts)


@click.command("plan")
@click.option("--epsilon", type=float, required=True, help="Privacy budget of the question.")
@click.option("--margin", type=float, default=None, help="Margin of error wanted, e.g. 0.05.")
@click.option(
    "--respondents",
    type=int,
    default=None,
    help="Instead of --margin: the margin N respondents buy.",
)
@click.option("--options", type=int, default=2, show_default=True, help="Options of the question.")
@click.option("--confidence", default="0.95", show_default=True, help="Two-sided level.")
@click.option(
    "--mechanism",
    type=click.Choice(planning.MECHANISM_NAMES),
    default=None,
    help="Mechanism (default: rr for 2 options, else auto; onebit for an integer's mean, multi "
    "for each option of a select-all question, hcms or cms for a text candidate's share).",
)
@click.option(
    "--range",
    "width",
    type=int,
    default=None,
    help="With --mechanism onebit: max - min of the integer question; the margin is in its units.",
)
@click.option(
    "--sketch",
    default=None,
    metavar="KxM",
    help="With --mechanism hcms or cms: hash functions x columns (default 16x1024 for hcms, "
    "16x256 for cms); rappor: bits x hashes x cohorts (default 32x2x16, --options candidates). "
    "The margin is a text candidate's share.",
)
def plan_command(
    epsilon: float,
    margin: float | None,
    respondents: int | None,
    options: int,
    confidence: str,
    mechanism: str | None,
    width: int | None,
    sketch: str | None,
) -> None:
    """Respondents needed for a margin of error at an epsilon (worst case); the number ends the output."""
    if margin is None and respondents is None:
        raise click.UsageError(
            "give --margin (respondents needed) or --respondents (margin bought)"
        )
    try:
        result = planning.plan(
            epsilon,
            margin=margin,
            respondents=respondents,
            options=options,
            confidence=_level(confidence),
            mechanism=mechanism,
            width=width,
            sketch=_sketch_size(sketch),
        )
    except (planning.PlanError, ValueError) as exc:
        _fail(str(exc))
    click.echo(planning.format_plan(result))


@click.command("simulate")
@click.argument("survey")
@click.option("--respondents", "-n", type=click.IntRange(1, 1_000_000), required=True)
@click.option("--url", required=True, help="The aggregator, e.g. http://127.0.0.1:8000.")
@click.option(
    "--truth",
    default=None,
    help=(
        "JSON or a JSON file: {question: {option: probability}}; an integer question takes "
        "{value: probability} (adding up to 1), a multi question each option's chance of "
        "being selected."
    ),
)
@click.option("--batch", type=click.IntRange(1, 1000), default=500, show_default=True)
@click.option("--seed", type=int, default=None, help="Seed for the true answers (not the coins).")
@click.option("--confidence", default="0.95", show_default=True, help="Two-sided level.")
@click.option(
    "--token",
    envvar="DENIABLE_TOKEN",
    default=None,
    help="Researcher token (or DENIABLE_TOKEN) to read the server's results.",
)
def simulate_command(
    survey: str,
    respondents: int,
    url: str,
    truth: str | None,
    batch: int,
    seed: int | None,
    confidence: str,
    token: str | None,
) -> None:
    """Post real signed reports from simulated respondents, then show truth beside estimate."""
    from deniable.aggregator.stats.analyze import analyze
    from deniable.client.researcher import Researcher

    level = _level(confidence)
    try:
        api, resolved = simulate_http.fetch_survey(url, survey)
        known = simulate.parse_truth(resolved, truth)
        researcher = Researcher(url, token) if token else None
        before = researcher.results(survey)["n"] if researcher else None
        codes = (
            researcher.invite(survey, respondents)
            if researcher and resolved.enrollment == "invite"
            else None
        )
        with click.progressbar(
            length=respondents, label="reports", file=sys.stderr, show_pos=True
        ) as bar:
            sent = simulate_http.send(
                api,
                resolved,
                known,
                respondents,
                batch=batch,
                seed=seed,
                codes=codes,
                progress=bar.update,
            )
        extra = simulate.truth_candidates(resolved, known)
        if researcher is not None and before == 0:
            results = researcher.results(survey, confidence=level, candidates=extra)
            source = f"server results: n went from {before} to {results['n']}"
        else:
            results = analyze(resolved, sent.accepted_reports, level, candidates=extra)
            source = "estimated from this run's accepted reports"
            if researcher is None:
                source += " (give --token to check the server's count too)"
            else:
                after = researcher.results(survey)["n"]
                source += (
                    f"; server n went from {before} to {after}, and its results also hold"
                    f" {before} earlier reports drawn from another truth"
                )
    except DeniableError as exc:
        _fail(str(exc))
    click.echo(f"{sent.accepted} of {respondents} reports accepted; {source}")
    rows = simulate.comparison(resolved, known, results)
    click.echo(simulate.format_comparison(rows, level))
    if sent.failed:
        _fail(sent.failure_text())
