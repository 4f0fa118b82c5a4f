"""Logistic regression with a randomized answer as the outcome (the model of R's rr `rrreg`).

P(report supports the outcome | x) = q* + (p* - q*) logistic(x beta), fitted by maximum
likelihood: Fisher scoring steps with step halving until the gradient of the average
log-likelihood is below 1e-8, then standard errors from the observed information (the
Hessian) at the maximum, Wald z, two-sided p and interval. Covariates are plain questions
(binary 0/1, categorical as treatment dummies with the first option as reference, integer as
the number), combined
by a Wilkinson formula that our own grammar checks (stats/formula.py: a formula is data, never
Python) before `formulaic` builds the model matrix without `eval`. Reports are streamed and
folded into counts per covariate pattern, so memory does not grow with their number; the
model's columns and cells are counted against the limits before the matrix is built.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from deniable.aggregator.stats import formula as grammar
from deniable.aggregator.stats.analyze import answer_counts, as_survey
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.joint import UnknownQuestion
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, Limits, check
from deniable.aggregator.stats.results import RegressionResults
from deniable.shared import Survey

#: Gradient norm of the average log-likelihood at which the fit has converged.
TOLERANCE = 1e-8
MAX_ITERATIONS = 200
#: A linear predictor this large means a fitted probability of 0 or 1: (quasi-)separation.
SEPARATION = 30.0


def _outcome(survey: Survey, parsed: grammar.ParsedFormula) -> tuple[str, int]:
    """(question id, option index) of the left-hand side: `smokes` (its yes) or `party[B]`."""
    qid, label = parsed.outcome, parsed.option
    if qid not in survey.questions:
        raise UnknownQuestion(
            f"formula: no question {qid!r} in survey {survey.id!r}; its questions: "
            f"{', '.join(survey.questions)}"
        )
    question = survey.questions[qid]
    if question.plain:
        raise AnalysisError(
            f"formula: the outcome {qid!r} is plain (sent as answered); the outcome must be a "
            "randomized question"
        )
    if question.kind.not_an_outcome is not None:
        raise AnalysisError(f"formula: the outcome {qid!r} {question.kind.not_an_outcome}")
    if label is None:
        if question.kind.outcome_row is None:
            raise AnalysisError(
                f"formula: {qid!r} has several options; name one as the outcome, e.g. "
                f"{qid}[{question.options[1]}]"
            )
        return qid, question.kind.outcome_row
    if label not in question.options:
        raise AnalysisError(
            f"formula: {qid!r} has no option {label!r}; its options: {', '.join(question.options)}"
        )
    return qid, question.options.index(label)


def _covariates(survey: Survey, parsed: grammar.ParsedFormula) -> list[str]:
    """The plain questions the right-hand side uses (a randomized one is refused)."""
    used = []
    for name in parsed.ids:
        if name not in survey.questions:
            raise UnknownQuestion(
                f"formula: no question {name!r} in survey {survey.id!r}; its questions: "
                f"{', '.join(survey.questions)} (write an id with '-' in backticks: `age-group`)"
            )
        question = survey.questions[name]
        if not question.plain:
            raise AnalysisError(
                f"formula: {name!r} is randomized, so its true answer is unknown per report; "
                "covariates must be plain questions (mechanism none)"
            )
        if question.kind.covariate is None:
            raise AnalysisError(
                f"formula: {name!r} is a select-all (multi) question; covariates are plain "
                "binary, categorical or integer questions"
            )
        used.append(name)
    return used


def _levels(survey: Survey, covariates: list[str], patterns: list[tuple[int, ...]] | None) -> Any:
    """Levels of a factor for counting columns (None for a number): a categorical question's
    options; C() of a number, its distinct values among the patterns (1 before they are known,
    which makes the count a lower bound)."""

    def levels(factor: grammar.Factor) -> int | None:
        qid = factor.lone if factor.kind == "I" else factor.ids[0]
        if qid is None:
            return None  # I(arithmetic) is a number
        question = survey.questions[qid]
        if question.kind.covariate == "factor":
            return len(question.options)
        if factor.kind != "C":
            return None
        if patterns is None:
            return 1
        column = covariates.index(qid)
        return len({pattern[column] for pattern in patterns})

    return levels


def _check_size(
    survey: Survey,
    parsed: grammar.ParsedFormula,
    covariates: list[str],
    patterns: list[tuple[int, ...]] | None,
    limits: Limits,
) -> int:
    """The model's columns (at least, before the patterns are known), within the limits."""
    columns = grammar.model_columns(
        parsed, _levels(survey, covariates, patterns), limits.max_model_columns
    )
    # Counting stops past the limit, and C() of a number counts one level before the patterns.
    lead = "at least " if patterns is None or columns > limits.max_model_columns else ""
    check(
        columns,
        limits.max_model_columns,
        "max_model_columns",
        f"the model {parsed.rhs[:60]!r} has {lead}{columns:,} columns",
    )
    if patterns is not None:
        check(
            len(patterns) * columns,
            limits.max_model_cells,
            "max_model_cells",
            f"the model has {len(patterns):,} covariate patterns x {columns:,} columns = "
            f"{len(patterns) * columns:,} cells",
        )
    return columns


def _frame(survey: Survey, covariates: list[str], patterns: list[tuple[int, ...]]) -> Any:
    import pandas as pd

    columns: dict[str, Any] = {}
    for i, qid in enumerate(covariates):
        question = survey.questions[qid]
        values = [pattern[i] for pattern in patterns]
        if question.kind.covariate == "number":  # 0/1, or the number itself
            columns[qid] = np.array(values, dtype=np.float64)
        else:
            labels = [question.options[v] for v in values]
            columns[qid] = pd.Categorical(labels, categories=question.options)
    return pd.DataFrame(columns, index=range(len(patterns)))


def fit(x: np.ndarray, ones: np.ndarray, zeros: np.ndarray, p: float, q: float) -> dict[str, Any]:
    """Maximum likelihood of P(y = 1 | x) = q + (p - q) logistic(x b) for counts of ones and
    zeros per row of x: (beta, covariance, log-likelihood, iterations, converged, message)."""
    n = float(ones.sum() + zeros.sum())
    gap = p - q
    k = x.shape[1]
    beta = np.zeros(k)

    def parts(b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        eta = np.clip(x @ b, -700, 700)
        s = 1.0 / (1.0 + np.exp(-eta))
        pi = np.clip(q + gap * s, 1e-300, 1 - 1e-16)
        loglik = float(np.sum(ones * np.log(pi) + zeros * np.log1p(-pi)))
        ds = s * (1.0 - s)
        residual = ones / pi - zeros / (1.0 - pi)
        score = x.T @ (residual * gap * ds)
        info = (ones + zeros) * (gap * ds) ** 2 / (pi * (1.0 - pi))  # expected information
        observed = (ones / pi**2 + zeros / (1.0 - pi) ** 2) * (
            gap * ds
        ) ** 2 - residual * gap * ds * (1.0 - 2.0 * s)
        return loglik, score, info, observed

    loglik, score, info, observed = parts(beta)
    message = ""
    converged = False
    iterations = 0
    while iterations < MAX_ITERATIONS:
        iterations += 1
        fisher = x.T @ (x * info[:, None])
        try:
            step = np.linalg.solve(fisher, score)
        except np.linalg.LinAlgError:
            message = "the covariates are collinear (or a category has no reports): drop a term"
            break
        for _ in range(60):
            trial = beta + step
            new = parts(trial)
            if new[0] >= loglik - 1e-12 * max(1.0, abs(loglik)):
                break
            step = step / 2.0
        beta = trial
        loglik, score, info, observed = new
        if np.linalg.norm(score) / n < TOLERANCE:
            converged = True
            break
        if np.max(np.abs(x @ beta)) > SEPARATION:
            break
    if converged and np.max(np.abs(x @ beta)) > SEPARATION:
        converged = False
    if not converged and not message:
        if np.max(np.abs(x @ beta)) > SEPARATION:
            message = (
                "separation: some covariate pattern predicts the outcome (almost) perfectly, so "
                "its coefficients have no finite maximum-likelihood estimate; merge categories or "
                "drop the term"
            )
        else:
            message = f"no convergence within {MAX_ITERATIONS} iterations"
    covariance = None
    if converged:
        hessian = x.T @ (x * observed[:, None])
        try:
            covariance = np.linalg.inv(hessian)
        except np.linalg.LinAlgError:
            converged = False
            message = "the observed information is singular at the maximum: drop a term"
        else:
            if np.any(np.diag(covariance) <= 0) or not np.all(np.isfinite(covariance)):
                converged = False
                message = "the likelihood is flat in some direction: the model is not identified"
                covariance = None
    return {
        "beta": beta,
        "covariance": covariance,
        "log_likelihood": loglik,
        "iterations": iterations,
        "converged": converged,
        "message": message,
    }


def regress(
    survey: Survey | Mapping[str, Any],
    reports: Iterable[Any] | str | bytes,
    formula: str,
    confidence: float = 0.95,
    *,
    verify: bool = True,
    limits: Limits = DEFAULT_LIMITS,
) -> RegressionResults:
    """Fit `outcome ~ covariates` on the reports; the coefficients with their standard errors,
    or `converged: false` and a message (separation, collinearity) instead of numbers. The
    formula must fit the grammar of stats/formula.py and the model the `limits`."""
    z = z_value(confidence)
    resolved = as_survey(survey)
    parsed = grammar.parse(formula)
    outcome, option = _outcome(resolved, parsed)
    covariates = _covariates(resolved, parsed)
    _check_size(resolved, parsed, covariates, None, limits)  # before reading a report
    question = resolved.questions[outcome]
    p, q = (float(v) for v in question.randomizer.option_pairs()[option])
    counts: Counter[tuple[tuple[int, ...], int]] = Counter()
    seen = answer_counts(resolved, reports, (outcome, *covariates), verify=verify)
    for (answer, *pattern), count in seen.items():
        counts[(tuple(pattern), int(option in question.supports(answer)))] += count
    n = sum(counts.values())
    patterns = sorted({pattern for pattern, _ in counts})
    if n < 2 or not patterns:
        raise AnalysisError(f"a regression needs reports; got {n}")
    _check_size(resolved, parsed, covariates, patterns, limits)
    frame = _frame(resolved, covariates, patterns)
    try:
        matrix = grammar.model_matrix(parsed, frame)
    except AnalysisError:
        raise
    except Exception as exc:
        raise AnalysisError(f"formula: cannot build the model: {exc}") from None
    terms = [str(c) for c in matrix.columns]
    x = np.asarray(matrix, dtype=np.float64)
    if n <= x.shape[1]:
        raise AnalysisError(f"{n} reports cannot fit {x.shape[1]} coefficients; collect more")
    ones = np.array([counts[(pattern, 1)] for pattern in patterns], dtype=np.float64)
    zeros = np.array([counts[(pattern, 0)] for pattern in patterns], dtype=np.float64)
    result = fit(x, ones, zeros, p, q)
    coefficients = []
    for i, term in enumerate(terms):
        row: dict[str, Any] = {
            "term": term,
            "estimate": None,
            "stderr": None,
            "z": None,
            "p_value": None,
            "ci_low": None,
            "ci_high": None,
        }
        if result["converged"]:
            estimate = float(result["beta"][i])
            stderr = math.sqrt(float(result["covariance"][i, i]))
            row.update(
                estimate=estimate,
                stderr=stderr,
                z=estimate / stderr,
                p_value=math.erfc(abs(estimate / stderr) / math.sqrt(2.0)),
                ci_low=estimate - z * stderr,
                ci_high=estimate + z * stderr,
            )
        coefficients.append(row)
    doc: dict[str, Any] = {
        "survey": resolved.id,
        "survey_hash": resolved.hash,
        "formula": formula,
        "outcome": {
            "question": outcome,
            "option": question.options[option],
            "p_star": p,
            "q_star": q,
        },
        "n": n,
        "confidence": confidence,
        "converged": result["converged"],
        "iterations": result["iterations"],
        "log_likelihood": result["log_likelihood"],
        "coefficients": coefficients,
    }
    if result["message"]:
        doc["message"] = result["message"]
    return RegressionResults(doc)
