"""analysis.R: an R script that reads answers.csv and fits a formula with rr::rrreg, the
design's p, p0 and p1 filled in (docs/analysis.md, "Exports for R, Stata and SPSS"). The
formula is data: only the characters of R_FORMULA_CHARS, question ids and operators, checked
token by token, and written into an R string literal escaped by `r_string`, so nothing of it can
leave the string."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.aggregator import access, audit
from deniable.aggregator.access import Principal
from deniable.aggregator.ingest import SurveyCache
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.store import Store
from deniable.shared.survey import Question, Survey

#: Characters in an analysis.R formula.
MAX_R_FORMULA = 500
#: The only characters an analysis.R formula may hold: question ids, in backticks when they
#: hold "-", the operators ~ + - * : and parentheses, 0 and 1 for the intercept, spaces.
R_FORMULA_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-`~+*:() ")


def design_of(question: Question) -> dict[str, Fraction]:
    """rr's forced-response p, p1, p0 of a randomized binary question's (p*, q*): answer
    truthfully with p = p* - q*, "yes" with p1 = q*, "no" with p0 = 1 - p*. Every keep-or-flip
    or two-coin design is one (rr's mirrored design with p is p = 2p - 1, p1 = 1 - p)."""
    p_star = Fraction(question.randomizer.p_star)
    q_star = Fraction(question.randomizer.q_star)
    return {"p": p_star - q_star, "p1": q_star, "p0": 1 - p_star}


# -- R ----------------------------------------------------------------------------------------
_R_TOKEN = re.compile(r"\s+|`([a-z0-9][a-z0-9_-]{0,63})`|([a-z0-9_]+)|([~+*:()-])")


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


@dataclass(frozen=True)
class RFormula:
    """A checked analysis.R formula: R's text, its outcome and the covariates it names."""

    text: str
    outcome: str
    covariates: tuple[str, ...]


def _check_shape(tokens: Sequence[tuple[str, str]], refuse: Any) -> None:
    """The covariates' tokens read as R reads a formula's right side: operands (ids, 0, 1,
    parenthesized terms, with an optional leading -) between the operators + - * :."""
    depth, operand = 0, True  # whether an operand comes next
    for kind, text in tokens:
        if operand:
            if text == "(":
                depth += 1
                if depth > 20:
                    raise refuse("parentheses nested over 20 deep")
            elif text == "-":
                continue
            elif kind in ("id", "number"):
                operand = False
            else:
                raise refuse(f"expected a question id, 0, 1 or '(' before {text!r}")
        elif text == ")":
            depth -= 1
            if depth < 0:
                raise refuse("unbalanced parentheses: a ')' without its '('")
        elif text in ("+", "-", "*", ":"):
            operand = True
        else:
            raise refuse(f"expected + - * : or ')' before {text!r}")
    if operand:
        raise refuse("the formula ends with an operator; end it with a question id, 0 or 1")
    if depth:
        raise refuse("unbalanced parentheses: a '(' without its ')'")


def check_r_formula(survey: Survey, formula: str) -> RFormula:
    """The formula if rr::rrreg can fit it on answers.csv: `outcome ~ covariates`, the outcome
    a randomized binary question, the covariates plain questions (ids in backticks when they
    hold '-'), joined by + - * : and parentheses, 0 or 1 for the intercept; else ActionError
    invalid saying what is allowed (docs/analysis.md)."""

    def refuse(why: str) -> ActionError:
        return ActionError("invalid", f"formula: {why}")

    if not isinstance(formula, str) or not formula.strip():
        raise refuse("give one, like smokes ~ age + region")
    if len(formula) > MAX_R_FORMULA:
        raise refuse(f"at most {MAX_R_FORMULA} characters, got {len(formula)}")
    bad = sorted({c for c in formula if c not in R_FORMULA_CHARS})
    if bad:
        raise refuse(
            f"{bad[0]!r} is not allowed; use question ids (in backticks when they hold '-'), "
            "~ + - * : ( ), 0 or 1, and spaces"
        )
    tokens: list[tuple[str, str]] = []  # (kind, text): id, number or op
    at = 0
    while at < len(formula):
        match = _R_TOKEN.match(formula, at)
        if match is None:
            raise refuse(f"cannot read {formula[at : at + 10]!r}; put ids with '-' in backticks")
        if match.group(1) or match.group(2):
            word = match.group(1) or match.group(2)
            tokens.append(("number" if word in ("0", "1") else "id", word))
        elif match.group(3):
            tokens.append(("op", match.group(3)))
        at = match.end()
    tildes = [i for i, (kind, text) in enumerate(tokens) if kind == "op" and text == "~"]
    if len(tildes) != 1 or tildes[0] != 1 or tokens[0][0] != "id" or len(tokens) < 3:
        raise refuse("expected outcome ~ covariates, like smokes ~ age + region")
    _check_shape(tokens[2:], refuse)
    outcome = tokens[0][1]
    question = survey.questions.get(outcome)
    if question is None:
        raise refuse(f"no question {outcome!r} in survey {survey.id!r}")
    if question.plain or question.kind.rows != "yes":
        raise refuse(
            f"the outcome {outcome!r} must be a randomized yes/no question (rr::rrreg fits one)"
        )
    covariates: list[str] = []
    for kind, word in tokens[2:]:
        if kind != "id":
            continue
        covariate = survey.questions.get(word)
        if covariate is None:
            raise refuse(f"no question {word!r} in survey {survey.id!r}")
        if not covariate.plain or covariate.kind.covariate is None:
            raise refuse(
                f"{word!r} cannot be a covariate: use plain yes/no, choice or number questions"
            )
        if word not in covariates:
            covariates.append(word)
    text = "".join(
        _r_name(word) if kind == "id" else (f" {word} " if word in "~+-*" else word)
        for kind, word in tokens
    )
    return RFormula(" ".join(text.split()), outcome, tuple(covariates))


def r_script(survey: Survey, formula: str) -> str:
    """analysis.R for `formula` (checked by check_r_formula): reads answers.csv from the
    working directory, gives the covariates their types and option labels, fits rr::rrreg
    with the outcome's design and prints summary()."""
    checked = check_r_formula(survey, formula)
    outcome = survey.questions[checked.outcome]
    design = design_of(outcome)
    p_star, q_star = outcome.randomizer.p_star, outcome.randomizer.q_star
    outcome_name = r_string(checked.outcome)
    lines = [
        f"# analysis.R for deniable survey {survey.id} (survey hash {survey.hash}).",
        f"# Reads answers.csv (one row per report; GET /api/v1/surveys/{survey.id}/answers.csv or",
        f"# `deniable-aggregator export {survey.id} --format csv answers.csv`) from the working",
        '# directory and fits the formula with rr::rrreg (install.packages("rr")).',
        "library(rr)",
        'answers <- read.csv("answers.csv", check.names = FALSE, colClasses = "character")',
        f"answers[[{outcome_name}]] <- as.integer(answers[[{outcome_name}]])",
    ]
    for qid in checked.covariates:
        question = survey.questions[qid]
        column = f"answers[[{r_string(qid)}]]"
        if question.kind.covariate == "factor" and question.options:
            labels = ", ".join(r_string(label) for label in question.options)
            lines.append(
                f"{column} <- factor(as.integer({column}), levels = 0:{len(question.options) - 1},"
                f" labels = c({labels}))"
            )
        else:
            lines.append(f"{column} <- as.numeric({column})")
    lines += [
        f"formula <- as.formula({r_string(checked.text)})",
        "# A question a report was not asked (skip logic) is missing: those reports are left out.",
        "answers <- answers[complete.cases(answers[all.vars(formula)]), ]",
        f"# {checked.outcome}: mechanism {outcome.mechanism}, P(yes | true yes) = p* = {p_star},",
        f"# P(yes | true no) = q* = {q_star}: rr's forced design with p = p* - q*, p1 = q*,",
        "# p0 = 1 - p*.",
        f"fit <- rrreg(formula, data = answers, p = {design['p']}, p0 = {design['p0']}, "
        f'p1 = {design["p1"]}, design = "forced-known")',
        "print(summary(fit))",
        "",
    ]
    return "\n".join(lines)


def analysis_script(
    store: Store,
    survey_id: str,
    formula: str,
    *,
    who: Principal,
    cache: SurveyCache | None = None,
) -> str:
    """analysis.R for a survey and a formula (ActionError invalid for a formula rr::rrreg
    cannot fit or one outside R_FORMULA_CHARS)."""
    record = access.authorize(store, who, survey_id, "export")
    survey = cache.survey(record) if cache is not None else Survey.from_stored(record.resolved)
    script = r_script(survey, formula)
    audit.record(store, who, survey_id, "analysis.R", {"formula": formula})
    return script
