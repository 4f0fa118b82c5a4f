"""The analysis page: breakdowns by a plain question, cross-tabs and regression, each from its
own form, by the service functions the API and the CLI call (aggregator/surveys.py)."""

from __future__ import annotations

from typing import Any

from flask import current_app, render_template, request

from deniable.aggregator import surveys as actions
from deniable.aggregator.params import parse_cuts
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.results import shown_row
from deniable.aggregator.web.charts import question_chart
from deniable.aggregator.web.dashboard.base import (
    attempt,
    bp,
    confidence,
    principal,
    survey_nav,
    survey_or_404,
)
from deniable.aggregator.web.db import get_store, survey_cache
from deniable.shared import conditions


@bp.route("/surveys/<survey_id>/analysis", methods=["GET", "POST"])
def analysis(survey_id: str) -> str:
    """Breakdowns by a plain question, cross-tabs and regression, from the stored reports.
    Breakdowns and cross-tabs are bounded reads of a GET; a regression runs only from the
    form's POST (with its CSRF token), so no link can run a formula: a GET's ?formula= only
    fills the form's field. Each form's refusal (a bad cut, say) is said beside it."""
    record, resolved = survey_or_404(survey_id, "analyze")
    who = principal()
    level = confidence()
    args = request.args
    posted = request.form if request.method == "POST" else {}
    formula = posted.get("formula") or args.get("formula") or ""
    # Text questions are estimated per candidate on the survey's page, not in these analyses.
    randomized = [
        q for q in resolved.questions.values() if not q.plain and q.kind.rows != "candidates"
    ]
    plain = [q for q in resolved.questions.values() if q.plain]
    # Group by a plain choice question, or a plain number in bands (its cuts typed in).
    groups = [q for q in plain if q.kind.groups or q.low is not None]
    found: dict[str, Any] = {}
    errors: dict[str, str] = {}
    store, cache = get_store(), survey_cache()
    runs = {  # the service functions the API and the CLI call (aggregator/surveys.py)
        "breakdown": lambda: actions.breakdown(
            store,
            survey_id,
            args["question"],
            args["by"],
            confidence=level,
            cache=cache,
            who=who,
            cuts=parse_cuts(args.get("cuts")),
        ),
        "crosstab": lambda: actions.crosstab(
            store,
            survey_id,
            args["first"],
            args["second"],
            confidence=level,
            cache=cache,
            who=who,
        ),
        "regression": lambda: actions.regression(
            store,
            survey_id,
            posted["formula"],  # data, never Python: stats/formula.py checks the grammar
            confidence=level,
            limits=Limits.from_config(current_app.config),
            cache=cache,
            who=who,
        ),
    }
    needs = {
        "breakdown": (args, ("question", "by")),
        "crosstab": (args, ("first", "second")),
        "regression": (posted, ("formula",)),
    }
    for name, run in runs.items():
        source, keys = needs[name]
        if all(source.get(key) for key in keys):
            result, error = attempt(run)
            if error is None:
                found[name] = result
            else:
                errors[name] = error
    charts = []
    if "breakdown" in found:
        doc = found["breakdown"]
        target = resolved.questions[doc.question]
        for group, entry in zip(doc["groups"], doc.groups.values(), strict=True):
            title = f"{target.text}: {doc.by} = {group['group']}"
            charts.append(
                {"group": group, "entry": entry, "chart": question_chart(entry, level, title)}
            )
    if "crosstab" in found:
        doc = found["crosstab"]
        found["crosstab_rows"] = [
            {"label": a, "cells": [shown_row(doc.cell(a, b), doc.n) for b in doc.column_labels]}
            for a in doc.row_labels
        ]
        found["crosstab_columns"] = doc.column_labels
    return render_template(
        "analysis.html",
        record=record,
        survey=resolved,
        randomized=randomized,
        plain=groups,
        questions=[q for q in resolved.questions.values() if q.kind.crosses],
        found=found,
        errors=errors,
        charts=charts,
        args=args,
        formula=formula,
        confidence=level,
        example=_example_formula(randomized, plain),
        **survey_nav(survey_id),
    )


def _named_by(question: Any) -> set[str]:
    """The questions a question's skip-logic condition names (none without one)."""
    return set(conditions.parse(question.relevant).questions) if question.relevant else set()


def _example_formula(randomized: list[Any], plain: list[Any]) -> str:
    """A formula the regression form suggests, one that fits its survey: a randomized yes/no
    outcome (or a categorical's option) on up to two plain covariates, none of them named by
    the condition of the outcome or of another term (a condition fixes what it names among the
    reports that hold the question, so such a covariate would be collinear with the
    intercept: `hit_child ~ has_children` when hit_child is asked only if has_children is yes)."""
    target = next((q for q in randomized if q.kind.outcome_row is not None), None)
    outcome = None if target is None else target.id
    if target is None:
        choice = [q for q in randomized if q.kind.not_an_outcome is None]
        if not choice:
            return ""
        target = choice[0]
        outcome = f"{target.id}[{target.options[target.kind.example_option]}]"
    chosen: list[Any] = []
    fixed = _named_by(target)
    for question in plain:
        if len(chosen) == 2:
            break
        if question.kind.covariate is None or question.id in fixed:
            continue
        if _named_by(question) & {q.id for q in chosen}:
            continue  # asked only given a chosen covariate's answer: it would fix that one
        chosen.append(question)
        fixed |= _named_by(question)
    covariates = " + ".join(f"`{q.id}`" if "-" in q.id else q.id for q in chosen) or "1"
    return f"{outcome} ~ {covariates}"
