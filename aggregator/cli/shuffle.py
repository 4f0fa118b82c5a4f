"""`deniable-aggregator plan --shuffle`: the central epsilon a relay's shuffling buys
(docs/anonymity.md#the-central-epsilon), for planning a survey's batches."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.stats import shuffle

#: The `plan --shuffle` options' parameter names (--n and --json are plan's own).
SHUFFLE_OPTIONS = ("shuffle", "epsilon_0", "delta")


def shuffle_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The `plan --shuffle` options."""
    for option in reversed(
        [
            click.option(
                "--shuffle",
                is_flag=True,
                default=None,
                help="The central epsilon of --n reports shuffled by a relay, each "
                "--epsilon-0-LDP (Feldman, McMillan and Talwar's bound).",
            ),
            click.option(
                "--epsilon-0", type=float, default=None, help="--shuffle: each report's epsilon."
            ),
            click.option(
                "--delta",
                type=float,
                default=None,
                help=f"--shuffle: the central delta (default {shuffle.DEFAULT_DELTA:g}).",
            ),
        ]
    ):
        command = option(command)
    return command


def plan_shuffle(
    n: int | None, epsilon_0: float | None, delta: float | None, as_json: bool
) -> None:
    """Print the central epsilon: {"epsilon": ...} with --json, else words ending with it."""
    if n is None or epsilon_0 is None:
        raise click.UsageError(
            "--shuffle needs --n (reports in the smallest batch) and --epsilon-0"
        )
    delta = shuffle.DEFAULT_DELTA if delta is None else delta
    try:
        epsilon = shuffle.central_epsilon(n, epsilon_0, delta)
    except shuffle.ShuffleError as exc:
        click.echo(f"error: {shown(str(exc), lines=True)}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"epsilon": epsilon}))
        return
    click.echo(
        f"{n:,} reports shuffled together, each {epsilon_0:g}-LDP, are ({epsilon:.4g}, "
        f"{delta:g})-DP against an aggregator that sees the batch but not who sent what "
        "(not against a relay and an aggregator that collude)."
    )
    click.echo(f"Central epsilon: {epsilon:.6g}")
