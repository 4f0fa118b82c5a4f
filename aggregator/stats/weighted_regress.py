"""Logistic regression of a randomized answer under a survey's design (weighted).

As R's svyglm does for a generalized linear model, the coefficients maximize the weighted
(pseudo) log-likelihood sum_i w_i log P(report_i | x_i) of the randomized-response model
P(report supports the outcome | x) = q* + (p* - q*) logistic(x beta), with the weights scaled
to average 1; their covariance is the sandwich A^-1 B A^-1, A the weighted observed information
and B the design's variance (stats/weighted.py: calibrated to raking margins, between PSUs
within strata) of the totals of w_i times each respondent's score (docs/statistics.md,
"Weights and designs").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from deniable.aggregator.stats import formula as grammar
from deniable.aggregator.stats.asked import skipped
from deniable.aggregator.stats.designed import ROWS_AT_ONCE as DESIGN_ROWS
from deniable.aggregator.stats.designed import (
    Weighting,
    answer_count_chunks,
    design_weights,
    gather,
)
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, Limits
from deniable.aggregator.stats.regress import build_model, fit
from deniable.aggregator.stats.results import RegressionResults
from deniable.aggregator.stats.weighted import Frame, design_variance
from deniable.shared.survey import Survey


def fit_weighted(
    x: np.ndarray,
    pattern: np.ndarray,
    y: np.ndarray,
    frame: Frame,
    weights: np.ndarray,
    domain: np.ndarray,
    p: float,
    q: float,
    *,
    population: Sequence[int] | None = None,
    raked: bool = False,
    terms: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The weighted fit: x [patterns, k] the model matrix, and per frame row its pattern index,
    its report y (1 supports the outcome) and whether it is in the fit (`domain`). The fit of
    regress.fit on weighted counts, then the design's sandwich covariance."""
    used = frame.count * domain
    scale = float(used.sum()) / float(np.sum(used * weights))
    w = weights * scale  # mean weight 1 over the fitted respondents, as svyglm rescales
    cw = used * w
    patterns = x.shape[0]
    ones = np.bincount(pattern, weights=cw * y, minlength=patterns)
    zeros = np.bincount(pattern, weights=cw * (1 - y), minlength=patterns)
    result = fit(x, ones, zeros, p, q, terms)
    if not result["converged"]:
        return result
    beta = result["beta"]
    gap = p - q
    eta = x @ beta
    s = 1.0 / (1.0 + np.exp(-eta))
    pi = np.clip(q + gap * s, 1e-300, 1 - 1e-16)
    # Each respondent's score (for their row's pattern and report), weighted.
    dscore = (y / pi[pattern] - (1 - y) / (1 - pi[pattern])) * gap * (s * (1 - s))[pattern]
    scores = (w * domain * dscore)[:, None] * x[pattern]
    model = result["covariance"]  # the inverse weighted observed information, A^-1
    influence = scores @ model
    variance = design_variance(frame, w, influence, population=population, raked=raked)
    return {**result, "covariance": np.diag(variance), "model_covariance": model}


def weighted_regress(
    survey: Survey,
    reports: Any,
    formula: str,
    parsed: grammar.ParsedFormula,
    outcome: str,
    option: int,
    covariates: list[str],
    weighting: Weighting,
    confidence: float = 0.95,
    *,
    verify: bool = True,
    limits: Limits = DEFAULT_LIMITS,
) -> RegressionResults:
    """regress() under the design: the same document, coefficients from the weighted fit with
    sandwich standard errors, and `weighting` saying how."""
    z = z_value(confidence)
    question = survey.questions[outcome]
    p, q = (float(v) for v in question.randomizer.option_pairs()[option])
    chunks = answer_count_chunks(
        survey, reports, (*weighting.questions, outcome, *covariates), DESIGN_ROWS, verify=verify
    )
    keys, count, answers = gather(survey, weighting, chunks, 1 + len(covariates))
    frame, weights, options = design_weights(survey, weighting, keys, count)
    domain = np.array(
        [0.0 if a[0] is None or skipped(a[1:]) else 1.0 for a in answers], dtype=np.float64
    )
    patterns = sorted({tuple(a[1:]) for a, d in zip(answers, domain, strict=True) if d})
    n = int(round(float(np.sum(frame.count * domain))))
    left_out = int(round(float(frame.count.sum()))) - n
    if n < 2 or not patterns:
        also = f" ({left_out} more skipped a question of the model)" if left_out else ""
        raise AnalysisError(f"a regression needs reports; got {n}{also}")
    model = build_model(survey, parsed, covariates, patterns, n, limits)
    terms, (x,) = model.terms, model.matrices
    where = {pattern: i for i, pattern in enumerate(patterns)}
    pattern = np.array([where.get(tuple(a[1:]), 0) for a in answers], dtype=np.int64)
    y = np.array(
        [0.0 if a[0] is None else float(option in question.supports(a[0])) for a in answers]
    )
    result = fit_weighted(
        x, pattern, y, frame, weights, domain, p, q, terms=terms, **_variance(options)
    )
    coefficients = []
    for i, term in enumerate(terms):
        row: dict[str, Any] = dict.fromkeys(
            ("estimate", "stderr", "z", "p_value", "ci_low", "ci_high")
        )
        row = {"term": term, **row}
        if result["converged"]:
            estimate = float(result["beta"][i])
            stderr = math.sqrt(max(float(result["covariance"][i, i]), 0.0))
            ratio = estimate / stderr if stderr > 0 else math.nan
            row.update(
                estimate=estimate,
                stderr=stderr,
                z=ratio if math.isfinite(ratio) else None,
                p_value=math.erfc(abs(ratio) / math.sqrt(2.0)) if math.isfinite(ratio) else None,
                ci_low=estimate - z * stderr,
                ci_high=estimate + z * stderr,
            )
        coefficients.append(row)
    doc: dict[str, Any] = {
        "survey": survey.id,
        "survey_hash": survey.hash,
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
        "weighting": weighting.to_dict(),
    }
    if result["message"]:
        doc["message"] = result["message"]
    return RegressionResults(doc)


def _variance(options: dict[str, Any]) -> dict[str, Any]:
    return {"population": options["population"], "raked": options["raked"]}
