"""The researcher's planning and simulation commands of `deniable-aggregator` (no app needed)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from deniable.aggregator import surveys
from deniable.aggregator.cli import simulate_http
from deniable.aggregator.cli.shuffle import SHUFFLE_OPTIONS, plan_shuffle, shuffle_options
from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.params import ParamError, parse_confidence
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.stats import planning, power, series_planning, simulate
from deniable.shared.errors import DeniableError


def _fail(message: str) -> NoReturn:
    """One line on stderr, exit status 1."""
    click.echo(f"error: {shown(str(message), lines=True)}", err=True)
    sys.exit(1)


def _level(text: str) -> float:
    """--confidence parsed as every command and the API parse it (one line, exit 1 if bad)."""
    try:
        return parse_confidence(text, 0.95)
    except ParamError as exc:
        _fail(str(exc))


def test_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The `plan --test` options (power of a hypothesis test, docs/statistics.md "Power")."""
    probability = "a decimal or a fraction like 5/6"
    for option in reversed(
        [
            click.option(
                "--test",
                type=click.Choice(power.TESTS),
                default=None,
                help="Power of a test: one group's share against --null, or two groups' shares.",
            ),
            click.option("--share", default=None, help=f"The share to detect ({probability})."),
            click.option("--control", default=None, help="two-sample: the control group's share."),
            click.option(
                "--null",
                default=None,
                help="The share under the null (one-sample: default 0; two-sample: both groups "
                "at it, default --control).",
            ),
            click.option("--alpha", default="0.05", show_default=True, help="Significance."),
            click.option("--one-sided", is_flag=True, help="A one-sided test (else two-sided)."),
            click.option(
                "--n", type=int, default=None, help="The power N respondents (per group) buy."
            ),
            click.option(
                "--power", "target", default=None, help="The smallest n reaching this power."
            ),
            click.option("--p-star", default=None, help=f"P(yes | true yes), {probability}."),
            click.option("--q-star", default=None, help=f"P(yes | true no), {probability}."),
            click.option("--json", "as_json", is_flag=True, help='Print {"power": ..., "n": ...}.'),
        ]
    ):
        command = option(command)
    return command


#: The `plan --series` options' parameter names.
SERIES_OPTIONS = ("series", "epsilon_perm", "epsilon_1", "change_margin", "trend_margin", "waves")


def series_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The `plan --series` options (a series of waves, docs/statistics.md "Waves")."""
    for option in reversed(
        [
            click.option(
                "--series",
                is_flag=True,
                default=None,
                help="Plan a series of waves: respondents per wave for a memoized question.",
            ),
            # numbers read by aggregator/surveys.py, as the dashboard's form reads them
            click.option("--epsilon-perm", default=None, help="--series: epsilon_perm."),
            click.option("--epsilon-1", default=None, help="--series: epsilon_1."),
            click.option(
                "--change-margin",
                default=None,
                help="--series: margin wanted on the change between two waves.",
            ),
            click.option(
                "--trend-margin",
                default=None,
                help="--series: margin wanted on the linear trend per wave (with --waves).",
            ),
            click.option("--waves", type=int, default=None, help="--series: the number of waves."),
        ]
    ):
        command = option(command)
    return command


@click.command("plan")
@click.option(  # numbers read by aggregator/surveys.py, as the dashboard's form reads them
    "--epsilon",
    default=None,
    help="Privacy budget of the question (required but "
    "with --test and --p-star/--q-star or --mechanism none).",
)
@click.option("--margin", default=None, help="Margin of error wanted, e.g. 0.05.")
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
    # Every name a planner takes: the margin planner's, the power's and the series'.
    type=click.Choice(
        tuple(
            dict.fromkeys(
                (*planning.MECHANISM_NAMES, *power.BINARY, *series_planning.SERIES_MECHANISMS)
            )
        )
    ),
    default=None,
    help="Mechanism (default: rr for 2 options, else auto; onebit for an integer's mean, multi "
    "for each option of a select-all question, hcms or cms for a text candidate's share; "
    "with --test: rr, coins or none; with --series: l-grr (default), l-osue or auto).",
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
@series_options
@shuffle_options
@test_options
def plan_command(
    epsilon: str | None,
    margin: str | None,
    respondents: int | None,
    options: int,
    confidence: str,
    mechanism: str | None,
    width: int | None,
    sketch: str | None,
    **test: Any,
) -> None:
    """Respondents needed for a margin of error at an epsilon (worst case); the number ends the
    output. With --test: the power of a hypothesis test at --n, or the n for a --power. With
    --series: respondents per wave of a series at (--epsilon-perm, --epsilon-1)."""
    series = {name: test.pop(name) for name in SERIES_OPTIONS}
    shuffled = {name: test.pop(name) for name in SHUFFLE_OPTIONS}
    if shuffled.pop("shuffle"):  # docs/anonymity.md: the central epsilon of a relay's batches
        plan_shuffle(test["n"], shuffled["epsilon_0"], shuffled["delta"], test["as_json"])
        return
    if any(value is not None for value in shuffled.values()):
        raise click.UsageError("--epsilon-0 and --delta go with --shuffle")
    if series["series"]:
        if test["test"] is not None or respondents is not None or width is not None or sketch:
            raise click.UsageError("--series takes --margin, --change-margin or --trend-margin, "
                                   "not --test, --respondents, --range or --sketch")  # fmt: skip
        if epsilon is not None:
            raise click.UsageError("--series takes --epsilon-perm and --epsilon-1, not --epsilon")
        _plan_series(margin, options, confidence, mechanism, test["as_json"], **series)
        return
    given = [name for name in SERIES_OPTIONS if series[name] is not None and name != "series"]
    if given:
        raise click.UsageError(f"--{given[0].replace('_', '-')} goes with --series")
    if test["test"] is not None:
        if margin is not None or respondents is not None or width is not None or sketch:
            raise click.UsageError("--test takes --n or --power, not --margin, --respondents, "
                                   "--range or --sketch")  # fmt: skip
        _plan_test(epsilon, mechanism, **test)
        return
    stray = [name for name, value in test.items() if value not in (None, False, "0.05")]
    if stray:
        flag = {"target": "power", "as_json": "json"}.get(stray[0], stray[0])
        raise click.UsageError(f"--{flag.replace('_', '-')} goes with --test")
    if epsilon is None:
        raise click.UsageError("give --epsilon (the question's privacy budget)")
    if margin is None and respondents is None:
        raise click.UsageError(
            "give --margin (respondents needed) or --respondents (margin bought)"
        )
    try:  # parsed and planned as the dashboard's form is (aggregator/surveys.py)
        result = surveys.margin_plan(
            epsilon,
            margin=margin,
            respondents=respondents,
            options=options,
            confidence=confidence,
            mechanism=mechanism,
            width=width,
            sketch=sketch,
        )
    except ActionError as exc:
        _fail(str(exc))
    click.echo(planning.format_plan(result))


def _plan_series(
    margin: str | None,
    options: int,
    confidence: str,
    mechanism: str | None,
    as_json: bool,
    *,
    series: bool,
    epsilon_perm: str | None,
    epsilon_1: str | None,
    change_margin: str | None,
    trend_margin: str | None,
    waves: int | None,
) -> None:
    """`plan --series`: respondents per wave for a margin on a wave's share, on a change
    between waves and (with --waves) on the trend, worst case (docs/statistics.md, "Waves");
    words ending with the number, or the plan as JSON (--json)."""
    if epsilon_perm is None or epsilon_1 is None:
        raise click.UsageError("--series needs --epsilon-perm and --epsilon-1")
    if margin is None and change_margin is None and trend_margin is None:
        raise click.UsageError(
            "--series needs --margin (a wave's share), --change-margin or --trend-margin"
        )
    names = series_planning.SERIES_MECHANISMS
    if mechanism not in (None, *names):
        raise click.UsageError(f"--series takes --mechanism {', '.join(names[:-1])} or {names[-1]}")
    try:  # parsed and planned as the dashboard's form is (aggregator/surveys.py)
        plan = surveys.series_plan(
            options,
            epsilon_perm,
            epsilon_1,
            margin=margin,
            change_margin=change_margin,
            trend_margin=trend_margin,
            waves=waves,
            confidence=confidence,
            mechanism=mechanism,
        )
    except ActionError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(plan.to_dict()))
        return
    click.echo(format_series_plan(plan))


def format_series_plan(plan: series_planning.SeriesPlan) -> str:
    """A series plan in words, one line per margin asked; the respondents per wave end it."""
    lines = [
        f"{plan.mechanism} over {plan.options} options at epsilon_perm {plan.epsilon_perm:g} "
        f"(every wave together, per true answer) and epsilon_1 {plan.epsilon_1:g} (one "
        f"report; p* {plan.p_star:.4f}, q* {plan.q_star:.4f}), {plan.confidence:.0%} "
        "confidence, worst case:"
    ]
    asked = [
        ("a wave's share", plan.margin, plan.respondents_share),
        ("the change between two waves", plan.change_margin, plan.respondents_change),
        (f"the trend over {plan.waves} waves", plan.trend_margin, plan.respondents_trend),
    ]
    for what, margin, n in asked:
        if margin is not None and n is not None:
            lines.append(f"  +/- {margin:g} on {what}: {n:,} respondents per wave")
    lines.append(f"Respondents per wave: {plan.respondents}")
    return "\n".join(lines)


def _plan_test(
    epsilon: str | None,
    mechanism: str | None,
    *,
    test: str,
    share: str | None,
    control: str | None,
    null: str | None,
    alpha: str,
    one_sided: bool,
    n: int | None,
    target: str | None,
    p_star: str | None,
    q_star: str | None,
    as_json: bool,
) -> None:
    """`plan --test`: the power at --n or the smallest n for --power (docs/statistics.md,
    "Power"), as words ending with the number or as {"power", "n"} (--json)."""
    if (n is None) == (target is None):
        raise click.UsageError("give --n (the power it buys) or --power (the n it needs)")
    if share is None:
        raise click.UsageError("give --share, the share under the alternative, like 0.2")
    if (p_star is None) != (q_star is None):
        raise click.UsageError("give --p-star and --q-star together")
    if p_star is not None and (mechanism is not None or epsilon is not None):
        raise click.UsageError("give --p-star/--q-star or --mechanism/--epsilon, not both")
    try:  # parsed and computed as the dashboard's form is (aggregator/surveys.py)
        result = surveys.power_plan(
            test,
            share,
            mechanism=mechanism,
            epsilon=epsilon,
            p_star=p_star,
            q_star=q_star,
            control=control,
            null=null,
            alpha=alpha,
            one_sided=one_sided,
            n=n,
            target=target,
        )
    except ActionError as exc:
        _fail(str(exc))
    click.echo(json.dumps(result.to_dict()) if as_json else power.format_power(result))


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
