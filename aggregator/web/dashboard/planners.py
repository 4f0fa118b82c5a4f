"""The planner forms of the new-survey page: respondents for a margin, the power of a test and
a series' respondents per wave. Each reads its fields from the query string (a GET changes
nothing) and calls the planner's service function (aggregator/surveys.py), which parses the
values as `deniable-aggregator plan` does; what it refuses is said beside the form."""

from __future__ import annotations

from typing import Any

from flask import request

from deniable.aggregator import surveys as actions
from deniable.aggregator.stats.power import BINARY
from deniable.aggregator.stats.series_planning import SERIES_MECHANISMS
from deniable.aggregator.web.dashboard.base import attempt, confidence

#: The margin planner's fields and their defaults.
PLAN_FIELDS = (
    ("epsilon", "1"),
    ("margin", "0.05"),
    ("options", "2"),
    ("confidence", "0.95"),
    ("mechanism", ""),
    ("range", ""),
)
#: The power form's fields and their defaults (docs/statistics.md, "Power").
POWER_FIELDS = (
    ("power_test", "one-sample"),
    ("share", "0.2"),
    ("control", ""),
    ("null", ""),
    ("alpha", "0.05"),
    ("sided", "two"),
    ("n", ""),
    ("target", "0.8"),
    ("power_mechanism", next(iter(BINARY))),  # the first binary design its class declares
    ("power_epsilon", "1"),
)
#: The series planner's fields and their defaults (docs/researchers.md, "Planning a survey").
SERIES_FIELDS = (
    ("series_epsilon_perm", "2"),
    ("series_epsilon_1", "1"),
    ("series_options", "2"),
    ("series_margin", "0.05"),
    ("series_change_margin", "0.05"),
    ("series_mechanism", SERIES_MECHANISMS[0]),  # the default protocol, declared first
)


def _form(fields: tuple[tuple[str, str], ...], asked_by: str) -> tuple[dict[str, str], bool]:
    """A form's values (its defaults where not given) and whether it was asked."""
    return {
        key: request.args.get(key, default) for key, default in fields
    }, asked_by in request.args


def plan_from_args() -> tuple[dict[str, str], Any, str | None]:
    """The margin planner's values, its plan and any error (None when not asked)."""
    fields, asked = _form(PLAN_FIELDS, "epsilon")
    if not asked:
        return fields, None, None
    plan, error = attempt(
        lambda: actions.margin_plan(
            fields["epsilon"],
            margin=fields["margin"],
            options=fields["options"],
            confidence=fields["confidence"],
            mechanism=fields["mechanism"],
            width=fields["range"],
        )
    )
    return fields, plan, error


def power_from_args() -> tuple[dict[str, str], Any, str | None]:
    """The power form's values, its answer and any error (None when not asked): the power at
    n when n is given, else the smallest n reaching the target power."""
    fields, asked = _form(POWER_FIELDS, "power_test")
    if not asked:
        return fields, None, None
    result, error = attempt(
        lambda: actions.power_plan(
            fields["power_test"],
            fields["share"],
            mechanism=fields["power_mechanism"],
            epsilon=fields["power_epsilon"],
            control=fields["control"],
            null=fields["null"],
            alpha=fields["alpha"],
            one_sided=fields["sided"] == "one",
            n=fields["n"],
            target=fields["target"],
        )
    )
    return fields, result, error


def series_plan_from_args() -> tuple[dict[str, str], Any, str | None]:
    """The series planner's values, its plan and any error (None when not asked): respondents
    per wave for a margin on a wave's share and on a change."""
    fields, asked = _form(SERIES_FIELDS, "series_epsilon_perm")
    if not asked:
        return fields, None, None
    plan, error = attempt(
        lambda: actions.series_plan(
            fields["series_options"],
            fields["series_epsilon_perm"],
            fields["series_epsilon_1"],
            margin=fields["series_margin"],
            change_margin=fields["series_change_margin"],
            confidence=confidence(),
            mechanism=fields["series_mechanism"],
        )
    )
    return fields, plan, error
