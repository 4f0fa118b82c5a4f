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
model's columns and cells are counted against the limits before the matrix is built. With
skip logic the fit uses the reports that hold the outcome and every covariate; `n_skipped`
says how many were left out.

Split ballots (docs/statistics.md, "Split ballot"): a split-ballot question as the outcome is
fitted on both arms at once, each report with its own arm's (p*, q*) (the direct arm's are 1
and 0); `<qid>_arm` is a covariate, 1 for a report of `qid`'s direct arm and 0 for its
randomized one ("did asking directly change the answer, holding the rest fixed?").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.aggregator.stats import formula as grammar
from deniable.aggregator.stats.analyze import answer_counts, arm_id, as_survey
from deniable.aggregator.stats.asked import skipped
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.joint import UnknownQuestion, skipped_field
from deniable.aggregator.stats.limits import OFFLINE_LIMITS, Limits, check
from deniable.aggregator.stats.results import RegressionResults
from deniable.shared import Question, Survey
from deniable.shared.ballot import DIRECT

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
            "randomized question, or a plain one with a randomized yes/no question among the terms"
        )
    return qid, outcome_option(question, qid, label, f"{qid!r} has several options")


def outcome_option(question: Question, qid: str, label: str | None, several: str) -> int:
    """The option index of outcome `qid[label]` (its own row when `label` is None); `several`
    says, in the refusal, that an unnamed outcome has several options."""
    if question.kind.not_an_outcome is not None:
        raise AnalysisError(f"formula: the outcome {qid!r} {question.kind.not_an_outcome}")
    if label is None:
        if question.kind.outcome_row is None:
            raise AnalysisError(
                f"formula: {several}; name one as the outcome, e.g. {qid}[{question.options[1]}]"
            )
        return question.kind.outcome_row
    if label not in question.options:
        raise AnalysisError(
            f"formula: {qid!r} has no option {label!r}; its options: {', '.join(question.options)}"
        )
    return question.options.index(label)


def coefficient_rows(
    terms: list[str], estimates: np.ndarray, errors: np.ndarray | None, z: float
) -> list[dict[str, Any]]:
    """A row per term: estimate, standard error, Wald z, two-sided p and interval (None without
    `errors`)."""
    rows = []
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
        if errors is not None:
            estimate, stderr = float(estimates[i]), float(errors[i])
            row.update(
                estimate=estimate,
                stderr=stderr,
                z=estimate / stderr,
                p_value=math.erfc(abs(estimate / stderr) / math.sqrt(2.0)),
                ci_low=estimate - z * stderr,
                ci_high=estimate + z * stderr,
            )
        rows.append(row)
    return rows


#: The suffix of a split-ballot question's arm as a covariate (`cheated_arm`).
ARM_SUFFIX = "_arm"


def arm_covariate(survey: Survey, name: str) -> str | None:
    """The split-ballot question whose arm the covariate `name` is (`<qid>_arm`, unless a
    question has that id), else None."""
    if name in survey.questions or not name.endswith(ARM_SUFFIX):
        return None
    qid = name[: -len(ARM_SUFFIX)]
    return qid if qid in survey.split else None


def _count_id(survey: Survey, name: str) -> str:
    """What answer_counts reads for a covariate: a question's answer, or a split arm."""
    qid = arm_covariate(survey, name)
    return name if qid is None else arm_id(qid)


def _covariates(survey: Survey, parsed: grammar.ParsedFormula) -> list[str]:
    """The plain questions (and split-ballot arms) the right-hand side uses (a randomized
    question is refused)."""
    used = []
    for name in parsed.ids:
        if arm_covariate(survey, name) is not None:
            used.append(name)
            continue
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
        if qid not in survey.questions:  # a split ballot's arm: a 0/1 number
            return 2 if factor.kind == "C" else None
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
        limits,
        "max_model_columns",
        f"the model {parsed.rhs[:60]!r} has {lead}{columns:,} columns",
    )
    if patterns is not None:
        check(
            len(patterns) * columns,
            limits,
            "max_model_cells",
            f"the model has {len(patterns):,} covariate patterns x {columns:,} columns = "
            f"{len(patterns) * columns:,} cells",
        )
    return columns


def _frame(survey: Survey, covariates: list[str], patterns: list[tuple[int, ...]]) -> Any:
    import pandas as pd

    columns: dict[str, Any] = {}
    for i, qid in enumerate(covariates):
        values = [pattern[i] for pattern in patterns]
        if qid not in survey.questions:  # a split ballot's arm: 1 for direct
            columns[qid] = np.array([v == DIRECT for v in values], dtype=np.float64)
            continue
        question = survey.questions[qid]
        if question.kind.covariate == "number":  # 0/1, or the number itself
            columns[qid] = np.array(values, dtype=np.float64)
        else:
            labels = [question.options[v] for v in values]
            columns[qid] = pd.Categorical(labels, categories=question.options)
    return pd.DataFrame(columns, index=range(len(patterns)))


@dataclass(frozen=True)
class Model:
    """A regression's design: its terms (the model matrix's columns) and one matrix per
    setting of the columns held fixed (a single one when none is)."""

    terms: list[str]
    matrices: list[np.ndarray]
    #: The model's columns as counted against the limits.
    columns: int


def build_model(
    survey: Survey,
    parsed: grammar.ParsedFormula,
    covariates: list[str],
    patterns: list[tuple[int, ...]],
    n: int,
    limits: Limits,
    *,
    fixed: Sequence[Mapping[str, float]] = ({},),
    coefficients: Callable[[int], int] = lambda columns: columns,
    check_columns: Callable[[int], None] = lambda columns: None,
) -> Model:
    """The one model-building step of every regression fitter: formula -> frame -> matrix ->
    enough reports. The model is counted against the limits (and `check_columns`) before
    anything is built; then the covariate patterns' frame (with the `fixed` columns set, once
    per setting), its model matrix by the formula, and AnalysisError unless the n reports
    outnumber the `coefficients` it fits (the matrix's columns by default)."""
    columns = _check_size(survey, parsed, covariates, patterns, limits)
    check_columns(columns)
    terms: list[str] = []
    matrices = []
    for setting in fixed:
        frame = _frame(survey, covariates, patterns)
        for name, value in setting.items():
            frame[name] = np.full(len(patterns), value)
        try:
            matrix = grammar.model_matrix(parsed, frame)
        except AnalysisError:
            raise
        except Exception as exc:
            raise AnalysisError(f"formula: cannot build the model: {exc}") from None
        terms = [str(c) for c in matrix.columns]
        matrices.append(np.asarray(matrix, dtype=np.float64))
    wanted = coefficients(matrices[0].shape[1])
    if n <= wanted:
        raise AnalysisError(f"{n} reports cannot fit {wanted} coefficients; collect more")
    return Model(terms, matrices, columns)


#: Entries of a null vector of the model matrix above this (its columns scaled to length 1)
#: name a term in the collinear set.
NULL_ENTRY = 1e-6


QR_BLOCK_ROWS = 4096  # rows factored at once when looking for collinear terms


def collinear_terms(x: np.ndarray, terms: Sequence[str]) -> str | None:
    """Why the model's columns cannot all be fitted on these rows (the covariate patterns of
    the reports fitted), naming the terms; None when they can. A term that is 0 for every
    report fitted is named alone; otherwise the terms of each dependent set (their columns
    scaled to length 1, a null vector of the matrix: the set whose combination vanishes), and
    the last of them as the one to drop (a term the same for every report, like the intercept,
    is a column of a condition that fixes it, say)."""
    if x.size == 0 or x.shape[1] == 0:
        return None
    lengths = np.linalg.norm(x, axis=0)
    empty = [terms[j] for j in range(x.shape[1]) if lengths[j] == 0.0]
    if empty:
        return (
            f"the covariates are collinear: {', '.join(empty)} is 0 for every report fitted (a "
            "category no report chose, or that the reports fitted cannot have); drop or merge "
            f"{'it' if len(empty) == 1 else 'them'}"
        )
    # The singular values and right singular vectors of the scaled columns are those of R in
    # their QR factorization; R is built a block of rows at a time (k x k memory, never a
    # rows x k copy: 150 MB at the largest regression within the limits).
    r = np.zeros((0, x.shape[1]))
    for start in range(0, x.shape[0], QR_BLOCK_ROWS):
        block = x[start : start + QR_BLOCK_ROWS] / lengths
        r = np.linalg.qr(np.vstack((r, block)), mode="r")
    _, values, vt = np.linalg.svd(r)
    tolerance = values.max() * max(x.shape) * np.finfo(np.float64).eps
    rank = int(np.sum(values > tolerance))
    if rank == x.shape[1]:
        return None
    involved: list[str] = []
    for vector in vt[rank:]:
        for j in np.flatnonzero(np.abs(vector) > NULL_ENTRY):
            if terms[j] not in involved:
                involved.append(terms[j])
    named = [terms[j] for j in range(len(terms)) if terms[j] in involved]
    dropped = next((t for t in reversed(named) if t != "Intercept"), named[-1])
    return (
        f"the covariates are collinear among the reports fitted: {', '.join(named)} (one is "
        "the same for every report, or a sum of the others: a condition that fixes it, say); "
        f"drop {dropped}"
    )


def fit(
    x: np.ndarray,
    ones: np.ndarray,
    zeros: np.ndarray,
    p: float | np.ndarray,
    q: float | np.ndarray,
    terms: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Maximum likelihood of P(y = 1 | x) = q + (p - q) logistic(x b) for counts of ones and
    zeros per row of x: (beta, covariance, log-likelihood, iterations, converged, message).
    `p` and `q` may be per row (a split ballot's arms). With `terms` (x's column names) a
    model whose columns are collinear on the rows fitted is not fitted: its message names them."""
    n = float(ones.sum() + zeros.sum())
    gap = p - q
    k = x.shape[1]
    beta = np.zeros(k)
    if terms is not None:
        problem = collinear_terms(x[(ones + zeros) > 0], terms)
        if problem is not None:
            pi = np.clip(q + gap * 0.5, 1e-300, 1 - 1e-16)
            loglik = float(np.sum(ones * np.log(pi) + zeros * np.log1p(-pi)))
            return {
                "beta": beta,
                "covariance": None,
                "log_likelihood": loglik,
                "iterations": 0,
                "converged": False,
                "message": problem,
            }

    def parts(b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        eta = np.clip(x @ b, -700, 700)
        s = 1.0 / (1.0 + np.exp(-eta))
        pi = np.clip(q + gap * s, 1e-300, 1 - 1e-16)
        loglik = float(np.sum(ones * np.log(pi) + zeros * np.log1p(-pi)))
        ds = s * (1.0 - s)
        residual = ones / pi - zeros / (1.0 - pi)
        score = x.T @ (residual * gap * ds)
        info = (ones + zeros) * (gap * ds) ** 2 / (pi * (1.0 - pi))  # expected information
        observed = (ones / pi / pi + zeros / (1.0 - pi) ** 2) * (  # never 0 / 0 at pi 1e-300
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
    limits: Limits = OFFLINE_LIMITS,
    weights: Any = None,
    weighted: bool = True,
) -> RegressionResults:
    """Fit `outcome ~ covariates` on the reports; the coefficients with their standard errors,
    or `converged: false` and a message (separation, collinearity) instead of numbers. The
    formula must fit the grammar of stats/formula.py and the model the `limits`. With a
    design or `weights` (a weights table or its CSV) the fit is weighted unless `weighted` is
    false (stats/weighted_regress.py)."""
    z = z_value(confidence)
    resolved = as_survey(survey)
    parsed = grammar.parse(formula)
    # A plain outcome with a randomized yes/no among the terms: rr's rrreg.predictor model.
    from deniable.aggregator.stats import predictor as joint

    if (randomized := joint.predictor_of(resolved, parsed)) is not None:
        from deniable.aggregator.stats.designed import weighting_of

        if weighting_of(resolved, weights, weighted) is not None:
            raise AnalysisError(
                "formula: a randomized answer among the covariates is fitted unweighted only; "
                "ask with weighted=false (--unweighted) to fit it without the design"
            )
        return joint.regress_predictor(
            resolved, reports, parsed, randomized, confidence, verify=verify, limits=limits
        )
    outcome, option = _outcome(resolved, parsed)
    covariates = _covariates(resolved, parsed)
    _check_size(resolved, parsed, covariates, None, limits)  # before reading a report
    from deniable.aggregator.stats import designed, weighted_regress

    split = outcome in resolved.split or any(c not in resolved.questions for c in covariates)
    if (weighting := designed.weighting_of(resolved, weights, weighted)) is not None:
        if split:
            raise AnalysisError(
                "formula: a split ballot's arms are fitted unweighted only; ask with "
                "weighted=false (--unweighted) to fit it without the design"
            )
        return weighted_regress.weighted_regress(
            resolved,
            reports,
            formula,
            parsed,
            outcome,
            option,
            covariates,
            weighting,
            confidence,
            verify=verify,
            limits=limits,
        )
    question = resolved.questions[outcome]
    p, q = (float(v) for v in question.randomizer.option_pairs()[option])
    counts: Counter[tuple[tuple[Any, ...], int]] = Counter()
    outcome_arm = outcome in resolved.split  # each report fitted with its arm's (p*, q*)
    ids = [outcome, *(_count_id(resolved, c) for c in covariates)]
    seen = answer_counts(
        resolved,
        reports,
        (*ids, *([arm_id(outcome)] if outcome_arm else [])),
        verify=verify,
        direct=True,
    )
    left_out = 0
    for (answer, *pattern), count in seen.items():
        if answer is None or skipped(pattern):  # a question the report skipped
            left_out += count
            continue
        arm = pattern.pop() if outcome_arm else None
        asked = question.arm_question(arm)
        supported = option in asked.supports(answer)
        counts[((*pattern, arm == DIRECT), int(supported))] += count
    n = sum(counts.values())
    keys = sorted({key for key, _ in counts})
    patterns = [key[:-1] for key in keys]
    if n < 2 or not patterns:
        also = f" ({left_out} more skipped a question of the model)" if left_out else ""
        raise AnalysisError(f"a regression needs reports; got {n}{also}")
    model = build_model(resolved, parsed, covariates, patterns, n, limits)
    terms, (x,) = model.terms, model.matrices
    ones = np.array([counts[(key, 1)] for key in keys], dtype=np.float64)
    zeros = np.array([counts[(key, 0)] for key in keys], dtype=np.float64)
    direct = np.array([key[-1] for key in keys], dtype=bool)  # the outcome asked directly
    result = fit(x, ones, zeros, np.where(direct, 1.0, p), np.where(direct, 0.0, q), terms)
    errors = None
    if result["converged"]:
        covariance = result["covariance"]
        errors = np.array([math.sqrt(float(covariance[i, i])) for i in range(len(terms))])
    coefficients = coefficient_rows(terms, result["beta"], errors, z)
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
        **skipped_field(
            resolved,
            (outcome, *(arm_covariate(resolved, c) or c for c in covariates)),
            left_out,
        ),
        "confidence": confidence,
        "converged": result["converged"],
        "iterations": result["iterations"],
        "log_likelihood": result["log_likelihood"],
        "coefficients": coefficients,
    }
    if result["message"]:
        doc["message"] = result["message"]
    return RegressionResults(doc)
