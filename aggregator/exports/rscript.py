"""analysis.R: an R script that reads answers.csv and fits, with R's rr, any formula `regress`
accepts (docs/analysis.md, "Exports for R, Stata and SPSS"): rr::rrreg for a randomized yes/no
outcome (or one option of a randomized question), rr::rrreg.predictor for a plain outcome with
a randomized yes/no among the terms, each with the design's p, p0 and p1 filled in; without a
formula, each randomized yes/no question's share with rr::rrreg(q ~ 1).

The formula is data: it is read by regress's own grammar (stats/formula.py: question ids,
numbers, `+ - * / ** :`, parentheses, `C(id)`, `I(arithmetic)`, `-1`/`+0`) and checked against
the survey as regress checks it, then written out again from its syntax tree in R's words
(`C(id)` as `factor(id)`, `**` as `^`) inside an R string literal escaped by `r_string`, so
nothing of what was sent reaches the script but ids, numbers and operators.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator import access, audit
from deniable.aggregator.access import Principal
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.stats import formula as grammar
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.store import Store
from deniable.aggregator.store.survey_cache import SurveyCache
from deniable.shared.survey import Question, Survey

#: The derived 0/1 outcome of `id[option]` (a name no question id can have: ids hold no dot).
OUTCOME_COLUMN = "deniable.outcome"
#: rrreg starts its EM from random values (rnorm): the script fixes R's seed so that a run
#: gives the same numbers every time.
SEED = 20260101


def design_of(question: Question, option: int | None = None) -> dict[str, Fraction]:
    """rr's forced-response p, p1, p0 of a randomized yes/no answer's (p*, q*) (of `option`'s
    pair for one option of another question): answer truthfully with p = p* - q*, "yes" with
    p1 = q*, "no" with p0 = 1 - p*. Every keep-or-flip or two-coin design is one (rr's mirrored
    design with p is p = 2p - 1, p1 = 1 - p)."""
    if option is None:
        p_star = Fraction(question.randomizer.p_star)
        q_star = Fraction(question.randomizer.q_star)
    else:
        p_star, q_star = (Fraction(v) for v in question.randomizer.option_pairs()[option])
    return {"p": p_star - q_star, "p1": q_star, "p0": 1 - p_star}


# -- R ----------------------------------------------------------------------------------------
#: R's reserved words that a question id may spell (they need backticks in a formula).
_R_RESERVED = frozenset("if else repeat while function for next break in inf nan na".split())


def _r_name(qid: str) -> str:
    """A question id as an R formula names it: bare when R reads it as a name, else in
    backticks (an id with '-', a leading digit or '_', a reserved word)."""
    bare = re.fullmatch(r"[a-z][a-z0-9_]*", qid) and qid not in _R_RESERVED
    return qid if bare else f"`{qid}`"


def r_string(text: str) -> str:
    """An R string literal holding exactly `text`: backslash, quotes and every character
    outside printable ASCII escaped, so nothing in it ends the string."""
    out = []
    for char in text:
        code = ord(char)
        if char in '\\"':
            out.append("\\" + char)
        elif 32 <= code < 127:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


#: How tightly each Wilkinson operator binds (R's and regress's grammar alike).
_BINDS = {"+": 0, "-": 0, "*": 1, "/": 1, ":": 2}


def r_terms(node: grammar.Node | None, within: int = -1) -> str:
    """The right-hand side of a formula, read by regress's grammar, in R's words: the same
    Wilkinson operators, `C(id)` as `factor(id)`, `**` as `^` (a power of terms, and a power
    inside I()); a group of terms in parentheses where it sits inside operators that bind as
    tightly or more (`within`: the enclosing operators' binding)."""
    if node is None:
        return "1"
    kind = node.kind
    if kind == "id":
        return _r_name(node.text)
    if kind == "num":
        return node.text
    if kind == "C":
        return f"factor({_r_name(node.text)})"
    if kind == "I":
        return f"I({_r_arithmetic(node.children[0], top=True)})"
    if kind in ("neg", "pos"):
        return ("-" if kind == "neg" else "+") + r_terms(node.children[0], 3)
    if kind == "**":
        return f"({r_terms(node.children[0])})^{node.text}"
    binds = _BINDS[node.text[0]]
    parts = [r_terms(node.children[0], binds)]
    for op, child in zip(node.text, node.children[1:], strict=True):
        parts.append(f" {op} " if op in "+-*/" else op)
        parts.append(r_terms(child, binds))
    text = "".join(parts)
    return f"({text})" if binds <= within else text


def _r_arithmetic(node: grammar.Node, top: bool = False) -> str:
    """Arithmetic inside I(...) in R: the same operators, `**` as `^`, each operation inside
    another in parentheses."""
    if node.kind == "id":
        return _r_name(node.text)
    if node.kind == "num":
        return node.text
    if node.kind == "neg":
        return f"(-{_r_arithmetic(node.children[0])})"
    left, right = (_r_arithmetic(child) for child in node.children)
    op = "^" if node.kind == "**" else node.kind
    return f"{left} {op} {right}" if top else f"({left} {op} {right})"


@dataclass(frozen=True)
class RModel:
    """A formula as analysis.R fits it: R's formula text, the outcome (its question, the option
    it is, or a plain number's linear model), the covariates it reads and the randomized
    predictor (rrreg.predictor's model) if any."""

    text: str
    outcome: str
    option: int | None
    covariates: tuple[str, ...]
    predictor: str | None = None
    linear: bool = False


def r_model(survey: Survey, formula: str) -> RModel:
    """The model analysis.R fits for `formula`: every formula regress accepts on this survey
    (ActionError invalid with regress's own words otherwise), but a split ballot's arms."""
    from deniable.aggregator.stats.predictor import _check_predictor, _outcome_of, predictor_of
    from deniable.aggregator.stats.regress import _covariates, _outcome, arm_covariate

    try:
        parsed = grammar.parse(formula)
        tree = grammar.terms_tree(parsed.rhs)
        predictor = predictor_of(survey, parsed)
        if predictor is not None:
            _check_predictor(survey, parsed, predictor)
            linear, option = _outcome_of(survey, parsed)
            others = tuple(qid for qid in parsed.ids if qid != predictor)
            covariates = _covariates(survey, dataclasses.replace(parsed, ids=others))
        else:
            _, option = _outcome(survey, parsed)
            linear = False
            covariates = _covariates(survey, parsed)
    except AnalysisError as exc:
        raise ActionError("invalid", str(exc)) from None
    if parsed.outcome in survey.split or any(arm_covariate(survey, c) for c in covariates):
        raise ActionError(
            "invalid",
            "formula: a split ballot's arms are fitted by regress only (rr's rrreg takes one "
            "design for every report); fit it with the API or deniable-aggregator regress",
        )
    question = survey.questions[parsed.outcome]
    derived = option is not None and option != question.kind.outcome_row  # `id[option]`
    outcome = OUTCOME_COLUMN if derived else _r_name(parsed.outcome)
    return RModel(
        f"{outcome} ~ {r_terms(tree)}",
        parsed.outcome,
        None if linear else option,
        tuple(covariates),
        predictor,
        linear,
    )


_HEADER = """\
# analysis.R for deniable survey {survey} (survey hash {hash}).
# Reads answers.csv (one row per report; GET /api/v1/surveys/{survey}/answers.csv or
# `deniable-aggregator export {survey} --format csv answers.csv`) from the working
# directory and fits with R's rr (install.packages("rr")). The answers of randomized questions
# are noisy: never tabulate them as they are; rr's models debias them.
library(rr)
set.seed({seed})  # rrreg starts from random values: the same numbers on every run
answers <- read.csv("answers.csv", check.names = FALSE, colClasses = "character")"""


def _header(survey: Survey) -> list[str]:
    lines = _HEADER.format(survey=survey.id, hash=survey.hash, seed=SEED).splitlines()
    if survey.design is not None:
        lines.append(
            "# The survey has a design (strata, clusters, raking): rr fits without its weights,"
        )
        lines.append("# as deniable's regress does with weighted=false (--unweighted).")
    return lines


def _column(qid: str) -> str:
    return f"answers[[{r_string(qid)}]]"


def _marked(question: Question, option: int) -> str:
    """R's 0/1 of whether each report's answer to `question` supports `option`."""
    column = _column(question.id)
    if question.randomizer.bit_string:  # a mark per option: character option + 1
        return f'as.integer(substr({column}, {option + 1}, {option + 1}) == "1")'
    return f"as.integer(as.integer({column}) == {option})"


def _covariate_lines(survey: Survey, covariates: tuple[str, ...]) -> list[str]:
    """Each covariate with its type: a choice as a factor of its option labels (the first the
    reference, as regress codes it), a yes/no or a number as a number."""
    lines = []
    for qid in covariates:
        question = survey.questions[qid]
        column = _column(qid)
        if question.kind.covariate == "factor" and question.options:
            labels = ", ".join(r_string(label) for label in question.options)
            lines.append(
                f"{column} <- factor(as.integer({column}), levels = 0:{len(question.options) - 1},"
                f" labels = c({labels}))"
            )
        else:
            lines.append(f"{column} <- as.numeric({column})")
    return lines


def _design_words(question: Question, design: dict[str, Fraction], what: str) -> list[str]:
    p_star, q_star = design["p"] + design["p1"], design["p1"]
    return [
        f"# {what}: mechanism {question.mechanism}, P(report says yes | true yes) = p* = {p_star},",
        f"# P(report says yes | true no) = q* = {q_star}: rr's forced design with p = p* - q*, "
        "p1 = q*, p0 = 1 - p*.",
    ]


def r_script(survey: Survey, formula: str | None = None) -> str:
    """analysis.R for `formula` (any formula regress accepts but a split ballot's arms), or,
    without one, each randomized yes/no question's share with rr::rrreg(q ~ 1): reads
    answers.csv from the working directory, gives the covariates their types and option
    labels, fits with the design filled in and prints summary()."""
    if formula is None or not formula.strip():
        return _shares_script(survey)
    model = r_model(survey, formula)
    lines = _header(survey)
    lines += _covariate_lines(survey, model.covariates)
    question = survey.questions[model.outcome]
    outcome = _column(model.outcome)
    if model.text.startswith(OUTCOME_COLUMN):
        assert model.option is not None
        lines.append(
            f"# {OUTCOME_COLUMN}: 1 when the report's answer to {model.outcome} supports "
            f"{question.options[model.option]!r} (the formula's outcome)"
        )
        lines.append(f"answers[[{r_string(OUTCOME_COLUMN)}]] <- {_marked(question, model.option)}")
    elif model.linear:
        lines.append(f"{outcome} <- as.numeric({outcome})")
    else:
        lines.append(f"{outcome} <- as.integer({outcome})")
    lines += [
        f"formula <- as.formula({r_string(model.text)})",
        "# A question a report was not asked (skip logic) is missing: those reports are left out.",
        "answers <- answers[complete.cases(answers[all.vars(formula)]), ]",
    ]
    if model.predictor is None:
        design = design_of(question, model.option)
        lines += _design_words(question, design, model.outcome)
        lines.append(
            f"fit <- rrreg(formula, data = answers, p = {design['p']}, p0 = {design['p0']}, "
            f'p1 = {design["p1"]}, design = "forced-known")'
        )
    else:
        randomized = survey.questions[model.predictor]
        design = design_of(randomized)
        lines.append(f"{_column(model.predictor)} <- as.integer({_column(model.predictor)})")
        lines += _design_words(randomized, design, model.predictor)
        lines.append(
            f"fit <- rrreg.predictor(formula, p = {design['p']}, p0 = {design['p0']}, "
            f'p1 = {design["p1"]}, design = "forced-known", data = answers, '
            f"rr.item = {r_string(_r_name(model.predictor))}, "
            f'model.outcome = "{"linear" if model.linear else "logistic"}")'
        )
    lines += ["print(summary(fit))", ""]
    return "\n".join(lines)


def _shares_script(survey: Survey) -> str:
    """Each randomized yes/no question's share: rrreg(q ~ 1), whose intercept is the share's
    logit, printed with its 95% interval."""
    shares = [
        q
        for q in survey.questions.values()
        if not q.plain and q.kind.outcome_row is not None and q.id not in survey.split
    ]
    if not shares:
        raise ActionError(
            "invalid",
            "formula: this survey has no randomized yes/no question to estimate; give a formula "
            "(outcome ~ covariates), like party[B] ~ 1",
        )
    lines = _header(survey)
    lines.append("shares <- list()")
    for question in shares:
        column = _column(question.id)
        design = design_of(question)
        lines += [
            "",
            *_design_words(question, design, question.id),
            f"{column} <- as.integer({column})",
            f"asked <- answers[!is.na({column}), , drop = FALSE]",
            f"fit <- rrreg({_r_name(question.id)} ~ 1, data = asked, p = {design['p']}, "
            f'p0 = {design["p0"]}, p1 = {design["p1"]}, design = "forced-known")',
            "print(summary(fit))",
            "logit <- coef(fit)[[1]]",
            "se <- sqrt(vcov(fit)[1, 1])",
            f"shares[[{r_string(question.id)}]] <- c(share = plogis(logit), "
            "ci_low = plogis(logit - qnorm(0.975) * se), ci_high = plogis(logit + qnorm(0.975) * se))",
        ]
    lines += [
        "",
        "# The share of yes of each randomized yes/no question, with its 95% interval.",
        "print(do.call(rbind, shares))",
        "",
    ]
    return "\n".join(lines)


def analysis_script(
    store: Store,
    survey_id: str,
    formula: str | None,
    *,
    who: Principal,
    cache: SurveyCache | None = None,
) -> str:
    """analysis.R for a survey and a formula (ActionError invalid for a formula regress would
    refuse), or without one, its randomized yes/no questions' shares."""
    record = access.authorize(store, who, survey_id, "export")
    survey = cache.survey(record) if cache is not None else Survey.from_dict(record.resolved)
    script = r_script(survey, formula)
    params: dict[str, Any] = {"formula": formula} if formula else {}
    audit.record(store, who, survey_id, "analysis.R", params)
    return script
