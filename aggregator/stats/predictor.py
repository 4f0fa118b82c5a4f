"""A randomized yes/no answer as a predictor of a plain outcome (the model of R's
`rr::rrreg.predictor`), fitted by maximum likelihood jointly with the model of the answer.

For a respondent with covariates x, a latent true answer z (1 for yes) and a plain outcome y:

    P(z = 1 | x) = logistic(x delta)                        (the predictor model)
    y | x, z     ~ logistic(x beta + gamma z)               (a binary outcome, or an option)
                   or Normal(x beta + gamma z, sigma^2)     (an integer outcome)
    P(report yes | z) = p* if z = 1 else q*                 (the question's design)

and the likelihood of one report is the sum over z in {0, 1} of P(z | x) P(report | z) f(y | x, z).
The fit climbs that likelihood exactly: a few EM steps from the `rrreg` fit of the answer alone,
then Newton steps with the exact Hessian (Levenberg-damped when it is not negative definite,
halved until the likelihood rises) until the gradient's norm over n is below 1e-8. Standard
errors are the observed information's (the inverse of minus the Hessian at the maximum). A fit
that does not get there says so (`converged: false` and a message) with null numbers.
docs/statistics.md, "A randomized answer as a predictor", has the formulas and the comparison
with rr's own numbers on its Nigeria data.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from deniable.aggregator.stats import formula as grammar
from deniable.aggregator.stats.analyze import answer_counts
from deniable.aggregator.stats.asked import skipped
from deniable.aggregator.stats.errors import AnalysisError
from deniable.aggregator.stats.estimate import z_value
from deniable.aggregator.stats.joint import UnknownQuestion, skipped_field
from deniable.aggregator.stats.limits import Limits, check
from deniable.aggregator.stats.results import RegressionResults
from deniable.shared import Survey

#: Gradient norm of the log-likelihood over n at which the fit has converged (as regress's).
TOLERANCE = 1e-8
#: EM steps before Newton (each fits two weighted regressions); they only get near.
EM_STEPS = 50
#: Newton steps at most; each costs cells x parameters^2.
MAX_ITERATIONS = 200
#: A linear predictor beyond this (a probability within 3e-7 of 0 or 1) means that the maximum
#: is at infinity (separation): the likelihood's gradient vanishes there before the estimates do.
SEPARATION = 15.0
#: log sigma below this (sigma under about 1e-6 of y's units): the outcome is fitted exactly.
MIN_LOG_SIGMA = -14.0


# -- the likelihood ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Data:
    """The reports folded into cells: per cell its count, the predictor model's row `x`, the
    outcome model's rows with z = 1 and z = 0, whether the report says yes (`s`), and y."""

    weight: np.ndarray
    x: np.ndarray
    x1: np.ndarray
    x0: np.ndarray
    s: np.ndarray
    y: np.ndarray
    p: float
    q: float
    linear: bool

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(predictor model coefficients, outcome model coefficients, sigma's 0 or 1)."""
        return self.x.shape[1], self.x1.shape[1], int(self.linear)


def _log_sigmoid(a: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -a)


def _sigmoid(a: np.ndarray) -> np.ndarray:
    return np.exp(_log_sigmoid(a))


def _outcome_parts(
    data: Data, eta: np.ndarray, log_sigma: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """log f(y | eta), its first and second derivatives in eta, and (linear) its derivative in
    log sigma."""
    if data.linear:
        inv = math.exp(-2.0 * log_sigma)
        r = data.y - eta
        logf = -0.5 * math.log(2.0 * math.pi) - log_sigma - 0.5 * r * r * inv
        return logf, r * inv, np.full_like(eta, -inv), r * r * inv - 1.0
    logf = np.where(data.y > 0.5, _log_sigmoid(eta), _log_sigmoid(-eta))
    mu = _sigmoid(eta)
    return logf, data.y - mu, -mu * (1.0 - mu), np.zeros_like(eta)


def _split(data: Data, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    kx, kt, _ = data.sizes
    return theta[:kx], theta[kx : kx + kt], float(theta[kx + kt]) if data.linear else 0.0


def log_likelihood(data: Data, theta: np.ndarray) -> float:
    """The log-likelihood of the reports at theta = (delta, beta and gamma, [log sigma])."""
    return _evaluate(data, theta, hessian=False)[0]


def _evaluate(
    data: Data, theta: np.ndarray, *, hessian: bool = True
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """(log-likelihood, gradient, Hessian or an empty array, posterior P(z = 1) per cell).

    The Hessian of a two-component mixture is the posterior mean of the components' Hessians
    plus the posterior variance of their gradients: sum w [omega H1 + (1 - omega) H0 +
    omega (1 - omega) (g1 - g0)(g1 - g0)'], with omega = P(z = 1 | x, report, y)."""
    delta, t, log_sigma = _split(data, theta)
    a = data.x @ delta
    pi = _sigmoid(a)
    eta1, eta0 = data.x1 @ t, data.x0 @ t
    logf1, s1, h1, c1 = _outcome_parts(data, eta1, log_sigma)
    logf0, s0, h0, c0 = _outcome_parts(data, eta0, log_sigma)
    yes = data.s > 0.5
    log_r1 = np.where(yes, math.log(data.p), math.log1p(-data.p))
    log_r0 = np.where(yes, math.log(data.q), math.log1p(-data.q))
    l1 = _log_sigmoid(a) + log_r1 + logf1
    l0 = _log_sigmoid(-a) + log_r0 + logf0
    log_l = np.logaddexp(l1, l0)
    omega = np.exp(l1 - log_l)
    w = data.weight
    loglik = float(w @ log_l)
    grad_t = data.x1.T @ (w * omega * s1) + data.x0.T @ (w * (1.0 - omega) * s0)
    parts = [data.x.T @ (w * (omega - pi)), grad_t]
    if data.linear:
        parts.append(np.array([w @ (omega * c1 + (1.0 - omega) * c0)]))
    gradient = np.concatenate(parts)
    if not hessian:
        return loglik, gradient, np.empty(0), omega
    kx, kt, ks = data.sizes
    size = kx + kt + ks
    h = np.zeros((size, size))
    # The components' own Hessians (no term joins delta and the outcome's parameters).
    h[:kx, :kx] = -(data.x.T * (w * pi * (1.0 - pi))) @ data.x
    h[kx : kx + kt, kx : kx + kt] = (data.x1.T * (w * omega * h1)) @ data.x1 + (
        data.x0.T * (w * (1.0 - omega) * h0)
    ) @ data.x0
    if data.linear:
        # d s / d log sigma = -2 s; d c / d log sigma = -2 (c + 1).
        cross = data.x1.T @ (w * omega * -2.0 * s1) + data.x0.T @ (w * (1.0 - omega) * -2.0 * s0)
        h[kx : kx + kt, -1] = h[-1, kx : kx + kt] = cross
        h[-1, -1] = w @ (omega * -2.0 * (c1 + 1.0) + (1.0 - omega) * -2.0 * (c0 + 1.0))
    # The posterior variance of the components' gradients: g1 - g0 per cell.
    columns = [data.x, data.x1 * s1[:, None] - data.x0 * s0[:, None]]
    if data.linear:
        columns.append((c1 - c0)[:, None])
    diff = np.hstack(columns)
    h += (diff.T * (w * omega * (1.0 - omega))) @ diff
    return loglik, gradient, h, omega


# -- the fit ----------------------------------------------------------------------------------


def _weighted_logistic(x: np.ndarray, ones: np.ndarray, zeros: np.ndarray) -> np.ndarray | None:
    """Maximum likelihood of a logistic regression with fractional counts (an EM M-step), or
    None when it has no finite maximum (separation) or the columns are collinear."""
    from deniable.aggregator.stats.regress import fit

    result = fit(x, ones, zeros, 1.0, 0.0)
    beta: np.ndarray = result["beta"]
    if not result["converged"] and result["message"].startswith(("the covariates", "separation")):
        return None
    return beta


def _start(data: Data) -> tuple[np.ndarray | None, int]:
    """Starting values and the EM steps taken: the randomized answer's own `rrreg` fit for
    delta, then EM steps (each one weighted regression per model, the reports split over z by
    their posterior)."""
    from deniable.aggregator.stats.regress import fit

    kx, kt, ks = data.sizes
    w = data.weight
    rr = fit(data.x, w * data.s, w * (1.0 - data.s), data.p, data.q)
    delta = rr["beta"] if rr["converged"] else np.zeros(kx)
    pi = _sigmoid(data.x @ delta)
    r1 = np.where(data.s > 0.5, data.p, 1.0 - data.p)
    r0 = np.where(data.s > 0.5, data.q, 1.0 - data.q)
    omega = pi * r1 / (pi * r1 + (1.0 - pi) * r0)  # P(z = 1 | x, report), y not yet used
    theta = np.zeros(kx + kt + ks)
    theta[:kx] = delta
    previous = -math.inf
    steps = 0
    for steps in range(1, EM_STEPS + 1):
        stacked = np.vstack([data.x1, data.x0])
        weights = np.concatenate([w * omega, w * (1.0 - omega)])
        ys = np.concatenate([data.y, data.y])
        if data.linear:
            gram = (stacked.T * weights) @ stacked
            try:
                t = np.linalg.solve(gram, stacked.T @ (weights * ys))
            except np.linalg.LinAlgError:
                return None, steps
            residual = ys - stacked @ t
            variance = float(weights @ (residual * residual)) / float(weights.sum())
            theta[-1] = 0.5 * math.log(max(variance, 1e-300))
        else:
            fitted = _weighted_logistic(stacked, weights * ys, weights * (1.0 - ys))
            if fitted is None:
                return None, steps
            t = fitted
        theta[kx : kx + kt] = t
        fitted_delta = _weighted_logistic(data.x, w * omega, w * (1.0 - omega))
        if fitted_delta is None:
            return None, steps
        theta[:kx] = fitted_delta
        loglik, _, _, omega = _evaluate(data, theta, hessian=False)
        if loglik - previous < 1e-6 * max(1.0, abs(loglik)):
            break
        previous = loglik
    return theta, steps


def fit_joint(data: Data) -> dict[str, Any]:
    """Maximum likelihood of the joint model: (theta, covariance, log-likelihood, iterations,
    converged, message); covariance None unless converged."""
    n = float(data.weight.sum())
    theta, iterations = _start(data)
    message = ""
    if theta is None:
        message = (
            "the covariates are collinear (or a category has no reports), or a covariate pattern "
            "predicts the outcome perfectly: drop or merge a term"
        )
        size = sum(data.sizes)
        return _failed(np.zeros(size), log_likelihood(data, np.zeros(size)), iterations, message)
    loglik, gradient, hessian, _ = _evaluate(data, theta)
    converged = False
    newton = 0
    while newton < MAX_ITERATIONS:
        if np.linalg.norm(gradient) / n < TOLERANCE:
            converged = True
            break
        newton += 1
        step = _newton_step(hessian, gradient)
        for _ in range(60):
            trial = theta + step
            new = _evaluate(data, trial)
            if np.isfinite(new[0]) and new[0] >= loglik - 1e-12 * max(1.0, abs(loglik)):
                break
            step = step / 2.0
        else:
            message = "the likelihood stopped rising before the gradient vanished"
            break
        theta = trial
        loglik, gradient, hessian, _ = new
        if _degenerate(data, theta):
            break
    if not converged or _degenerate(data, theta):
        return _failed(theta, loglik, iterations + newton, message or _why(data, theta))
    try:
        covariance = np.linalg.inv(-hessian)
    except np.linalg.LinAlgError:
        covariance = None
    if (
        covariance is None
        or not np.all(np.isfinite(covariance))
        or np.any(np.linalg.eigvalsh(-hessian) <= 0)
    ):
        message = (
            "the information is singular at the fit (not a maximum, or the model is not "
            "identified): drop a term"
        )
        return _failed(theta, loglik, iterations + newton, message)
    return {
        "theta": theta,
        "covariance": covariance,
        "log_likelihood": loglik,
        "iterations": iterations + newton,
        "converged": True,
        "message": "",
    }


def _newton_step(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """The Newton step, Levenberg-Marquardt damped until minus the Hessian is positive
    definite (so the step climbs)."""
    info = -hessian
    scale = np.maximum(np.abs(np.diag(info)), 1e-12)
    damping = 0.0
    for _ in range(60):
        try:
            chol = np.linalg.cholesky(info + damping * np.diag(scale))
        except np.linalg.LinAlgError:
            damping = max(2.0 * damping, 1e-6)
            continue
        return np.linalg.solve(chol.T, np.linalg.solve(chol, gradient))
    return gradient / scale  # not reached in practice: a scaled gradient step


def _degenerate(data: Data, theta: np.ndarray) -> bool:
    delta, t, log_sigma = _split(data, theta)
    if np.max(np.abs(data.x @ delta)) > SEPARATION:
        return True
    if data.linear:
        return log_sigma < MIN_LOG_SIGMA
    return bool(np.max(np.abs(np.concatenate([data.x1 @ t, data.x0 @ t]))) > SEPARATION)


def _why(data: Data, theta: np.ndarray) -> str:
    delta, t, log_sigma = _split(data, theta)
    if np.max(np.abs(data.x @ delta)) > SEPARATION:
        return (
            "the randomized answer's share goes to 0 or 1 for some covariate pattern, so the "
            "predictor model has no finite maximum; merge categories or drop a term"
        )
    if data.linear and log_sigma < MIN_LOG_SIGMA:
        return "the covariates fit the outcome exactly (no residual variance); drop a term"
    if not data.linear and np.max(np.abs(np.concatenate([data.x1 @ t, data.x0 @ t]))) > SEPARATION:
        return (
            "separation: some covariate pattern predicts the outcome (almost) perfectly, so its "
            "coefficients have no finite maximum-likelihood estimate; merge categories or drop "
            "the term"
        )
    return f"no convergence within {MAX_ITERATIONS} Newton iterations"


def _failed(theta: np.ndarray, loglik: float, iterations: int, message: str) -> dict[str, Any]:
    return {
        "theta": theta,
        "covariance": None,
        "log_likelihood": loglik,
        "iterations": iterations,
        "converged": False,
        "message": message,
    }


# -- from a formula and reports ---------------------------------------------------------------


def predictor_of(survey: Survey, parsed: grammar.ParsedFormula) -> str | None:
    """The randomized question on the right of a formula whose outcome is plain (None when the
    formula is not of that kind: regress's own model then applies or refuses)."""
    outcome = survey.questions.get(parsed.outcome)
    if outcome is None or not outcome.plain:
        return None
    randomized = [
        qid for qid in parsed.ids if qid in survey.questions and not survey.questions[qid].plain
    ]
    if not randomized:
        return None
    if len(randomized) > 1:
        raise AnalysisError(
            f"formula: {', '.join(map(repr, randomized))} are randomized; a plain outcome takes "
            "one randomized yes/no question as a predictor"
        )
    return randomized[0]


def _check_predictor(survey: Survey, parsed: grammar.ParsedFormula, qid: str) -> None:
    question = survey.questions[qid]
    if question.kind.outcome_row is None or question.kind.covariate != "number":
        raise AnalysisError(
            f"formula: {qid!r} is randomized and not a yes/no question; a randomized predictor "
            "must be a binary question"
        )
    alone = grammar.Factor("id", qid, (qid,))
    for term in parsed.terms:
        if any(qid in factor.ids for factor in term) and term != frozenset((alone,)):
            raise AnalysisError(
                f"formula: the randomized {qid!r} may only be a term of its own (its true answer "
                f"is unknown, so no interaction, C() or I() of it can be fitted); write '+ {qid}'"
            )
    if frozenset((alone,)) not in parsed.terms:
        raise AnalysisError(f"formula: the randomized {qid!r} must be a term of the model")


def _outcome_of(survey: Survey, parsed: grammar.ParsedFormula) -> tuple[bool, int | None]:
    """(linear, option index) of a plain outcome: a number is linear; a yes/no or a named
    option of a categorical question is logistic."""
    qid, label = parsed.outcome, parsed.option
    question = survey.questions[qid]
    if question.low is not None:  # an integer: its number
        if label is not None:
            raise AnalysisError(f"formula: {qid!r} is a number and has no option {label!r}")
        return True, None
    from deniable.aggregator.stats.regress import outcome_option

    several = f"the outcome {qid!r} is plain and has several options"
    return False, outcome_option(question, qid, label, several)


def regress_predictor(
    survey: Survey,
    reports: Iterable[Any] | str | bytes,
    parsed: grammar.ParsedFormula,
    predictor: str,
    confidence: float,
    *,
    verify: bool,
    limits: Limits,
) -> RegressionResults:
    """Fit `outcome ~ covariates + predictor` with the randomized `predictor` (regress routes a
    formula here when its outcome is plain and one of its terms is a randomized yes/no)."""
    from deniable.aggregator.stats.regress import (
        _check_size,
        _covariates,
        build_model,
        coefficient_rows,
        collinear_terms,
    )

    z = z_value(confidence)
    _check_predictor(survey, parsed, predictor)
    linear, option = _outcome_of(survey, parsed)
    others = dataclasses.replace(parsed, ids=tuple(i for i in parsed.ids if i != predictor))
    covariates = _covariates(survey, others)
    _check_size(survey, parsed, covariates, None, limits)  # before reading a report
    outcome_question = survey.questions[parsed.outcome]
    randomized = survey.questions[predictor]
    yes = randomized.kind.outcome_row
    assert yes is not None
    p, q = (float(v) for v in randomized.randomizer.option_pairs()[yes])
    counts: Counter[tuple[tuple[int, ...], int, float]] = Counter()
    used = (parsed.outcome, predictor, *covariates)
    seen = answer_counts(survey, reports, used, verify=verify)
    left_out = 0
    for (answer, report, *pattern), count in seen.items():
        if answer is None or report is None or skipped(pattern):  # skipped (skip logic)
            left_out += count
            continue
        if linear:
            y = float(answer)
        else:
            y = float(option in outcome_question.supports(answer))
        counts[(tuple(pattern), int(yes in randomized.supports(report)), y)] += count
    n = sum(counts.values())
    patterns = sorted({cell[0] for cell in counts})
    if n < 2 or not patterns:
        also = f" ({left_out} more skipped a question of the model)" if left_out else ""
        raise AnalysisError(f"a regression needs reports; got {n}{also}")

    def joint_cells(columns: int) -> None:
        check(
            len(counts) * 2 * columns,
            limits,
            "max_model_cells",
            f"the joint model has {len(counts):,} cells of reports x {2 * columns:,} parameters",
        )

    # The predictor's column at 0 and at 1; the linear part fits every column but the
    # predictor's, beside the outcome model's.
    model = build_model(
        survey,
        parsed,
        covariates,
        patterns,
        n,
        limits,
        fixed=({predictor: 0.0}, {predictor: 1.0}),
        coefficients=lambda columns: 2 * columns - 1,
        check_columns=joint_cells,
    )
    terms, (x0, x1) = model.terms, model.matrices
    moved = [j for j in range(x0.shape[1]) if not np.array_equal(x0[:, j], x1[:, j])]
    if len(moved) != 1:  # pragma: no cover - _check_predictor admits only a lone term
        raise UnknownQuestion(f"formula: cannot find the column of {predictor!r}")
    column = moved[0]
    keep = [j for j in range(x0.shape[1]) if j != column]
    cells = sorted(counts)  # one order whatever the source: the same sums, the same digits
    index = {pattern: i for i, pattern in enumerate(patterns)}
    rows = np.array([index[cell[0]] for cell in cells], dtype=np.intp)
    data = Data(
        weight=np.array([counts[cell] for cell in cells], dtype=np.float64),
        x=x0[rows][:, keep],
        x1=x1[rows],
        x0=x0[rows],
        s=np.array([cell[1] for cell in cells], dtype=np.float64),
        y=np.array([cell[2] for cell in cells], dtype=np.float64),
        p=p,
        q=q,
        linear=linear,
    )
    # Collinear covariates (or a predictor that is one of them) are named, not fitted.
    problem = collinear_terms(data.x, [terms[j] for j in keep]) or collinear_terms(
        np.vstack([data.x1, data.x0]), terms
    )
    if problem is None:
        result = fit_joint(data)
    else:
        zero = np.zeros(sum(data.sizes))
        result = _failed(zero, log_likelihood(data, zero), 0, problem)
    kx, kt, _ = data.sizes
    errors = None
    if result["converged"]:
        errors = np.sqrt(np.diag(result["covariance"]))
    theta = result["theta"]
    outcome: dict[str, Any] = {
        "question": parsed.outcome,
        "option": None if option is None else outcome_question.options[option],
        "model": "linear" if linear else "logistic",
    }
    if linear and errors is not None:
        sigma = math.exp(float(theta[-1]))
        outcome.update(sigma=sigma, sigma_stderr=sigma * float(errors[-1]))
    doc: dict[str, Any] = {
        "survey": survey.id,
        "survey_hash": survey.hash,
        "formula": parsed.text,
        "outcome": outcome,
        "predictor": predictor,
        "n": n,
        **skipped_field(survey, used, left_out),
        "confidence": confidence,
        "converged": result["converged"],
        "iterations": result["iterations"],
        "log_likelihood": result["log_likelihood"],
        "coefficients": coefficient_rows(
            terms, theta[kx : kx + kt], None if errors is None else errors[kx : kx + kt], z
        ),
        "predictor_model": {
            "coefficients": coefficient_rows(
                [terms[j] for j in keep], theta[:kx], None if errors is None else errors[:kx], z
            )
        },
    }
    if result["message"]:
        doc["message"] = result["message"]
    return RegressionResults(doc)
