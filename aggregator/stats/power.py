"""Power of hypothesis tests on a randomized binary answer, and the sample size for a power.

Pure arithmetic beside the margin planner (stats/planning.py), with the normal approximation of
rr's `power.rr.test` (Blair, Imai and Zhou): every binary design is a pair (p*, q*), the
chances of a "yes" from a respondent whose true answer is yes and no, and the unbiased share
estimate at n reports has the variance

    Var(pi_hat) = lambda (1 - lambda) / (n (p* - q*)^2),   lambda = q* + (p* - q*) pi,

the inverse of the design's Fisher information (rr's `se.f.rr`). A one-sample test of a share
pi against a null pi0 rejects beyond pi0 + z_(1-alpha) sd(pi0) (one-sided; two-sided at
z_(1-alpha/2) on both sides), and its power is the chance of that under N(pi, sd(pi)^2).
A two-sample test compares two groups of n each: the difference's variance is the sum of the
groups' (at their shares under the alternative, at the null share under the null). The sample
size for a power is the smallest n whose power reaches it (rr stops at the first n within 0.01
of the target, which can be below it). See docs/statistics.md, "Power".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from deniable.aggregator.stats.estimate import upper_quantile
from deniable.aggregator.stats.planning import check_epsilon
from deniable.shared.mechanisms import Planning
from deniable.shared.probability import parse_probability as shared_probability
from deniable.shared.questions import PLANNED

#: The most respondents a sample size may come to (per group): larger is refused, not searched.
MAX_N = 10**12
#: The tests: one group's share against a null value, or two groups' shares.
TESTS = ("one-sample", "two-sample")
_NORMAL = NormalDist()


class PowerError(ValueError):
    """Power input that cannot be used; the message says what is allowed."""


@dataclass(frozen=True)
class PowerResult:
    """A power calculation: the test, the design, the n (per group) and the power at it."""

    test: str
    share: float
    control: float | None
    null: float
    alpha: float
    one_sided: bool
    p_star: float
    q_star: float
    n: int
    power: float
    target: float | None = None

    def to_dict(self) -> dict[str, float | int]:
        """The JSON of `plan --test ... --json`: the power and the n (per group)."""
        return {"power": self.power, "n": self.n}


def forced_response(p: float, p1: float, p0: float) -> tuple[float, float]:
    """(p*, q*) of rr's forced-response design: answer truthfully with p, "yes" with p1,
    "no" with p0 (they add up to 1)."""
    for name, value in (("p", p), ("p1", p1), ("p0", p0)):
        _probability(name, value)
    if abs(p + p1 + p0 - 1.0) > 1e-10:
        raise PowerError(f"p + p1 + p0 must add up to 1, got {p + p1 + p0:g}")
    return p + p1, p1


def mirrored(p: float) -> tuple[float, float]:
    """(p*, q*) of rr's mirrored-question design (Warner's): answer the question with p, its
    negation with 1 - p."""
    _probability("p", p)
    return p, 1.0 - p


#: The binary designs a power is computed for, by name (each mechanism class declares whether
#: it is one: its `planning.power`), and how each is built at an epsilon.
BINARY: dict[str, Planning] = {m.planning.name: m.planning for m in PLANNED if m.planning.power}
_BUILT = {m.planning.name: m.planned for m in PLANNED if m.planning.power}


def design_of(mechanism: str, epsilon: float | None) -> tuple[float, float]:
    """(p*, q*) of a binary mechanism by name at an epsilon (none: the plain question)."""
    if mechanism not in BINARY:
        raise PowerError(f"mechanism: expected one of {', '.join(BINARY)}, got {mechanism!r}")
    if BINARY[mechanism].needs_epsilon:
        if epsilon is None:
            raise PowerError(f"epsilon: mechanism {mechanism} needs an epsilon, like 1")
        epsilon = check_epsilon(epsilon)
    built = _BUILT[mechanism](2, epsilon)
    return float(built.p_star), float(built.q_star)


def parse_probability(name: str, text: str) -> float:
    """A probability written as a decimal ("0.2") or a fraction ("5/6"): the survey's grammar
    (deniable.shared.probability.PROBABILITY_TEXT), checked in [0, 1]."""
    try:
        return float(shared_probability(text, field=name))
    except ValueError as exc:
        raise PowerError(str(exc)) from None


def _probability(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0.0 <= float(value) <= 1.0
    ):
        raise PowerError(f"{name}: expected a probability from 0 to 1, got {value!r}")
    return float(value)


def _open(name: str, value: object, example: str) -> float:
    """A probability strictly between 0 and 1 (alpha, a target power)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise PowerError(
            f"{name}: expected a number between 0 and 1, like {example}, got {value!r}"
        )
    return float(value)


def variance(share: float, p_star: float, q_star: float, n: int) -> float:
    """Variance of the unbiased share estimate at n reports, lambda (1 - lambda) / (n c^2)."""
    gap = p_star - q_star
    lam = min(1.0, max(0.0, q_star + gap * share))
    return lam * (1.0 - lam) / (n * gap * gap)


def _above(threshold: float, mean: float, sd: float) -> float:
    """P(X > threshold) for X ~ N(mean, sd^2); a point mass when sd is 0 (as R's pnorm)."""
    if sd <= 0.0:
        return 1.0 if threshold < mean else 0.0
    return _NORMAL.cdf((mean - threshold) / sd)


def _below(threshold: float, mean: float, sd: float) -> float:
    """P(X <= threshold) for X ~ N(mean, sd^2); a point mass when sd is 0 (as R's pnorm)."""
    if sd <= 0.0:
        return 1.0 if threshold >= mean else 0.0
    return _NORMAL.cdf((threshold - mean) / sd)


@dataclass(frozen=True)
class _Test:
    """A checked test: the difference under the alternative and its null, and per-n SDs."""

    effect: float
    null_effect: float
    sd_alt: Callable[[int], float]
    sd_null: Callable[[int], float]
    alpha: float
    one_sided: bool

    def power(self, n: int) -> float:
        alt, null = self.sd_alt(n), self.sd_null(n)
        if self.one_sided:
            z = upper_quantile(self.alpha)  # 1 - alpha would round to 1 for a tiny alpha
            if self.effect >= self.null_effect:
                return _above(self.null_effect + z * null, self.effect, alt)
            return _below(self.null_effect - z * null, self.effect, alt)
        z = upper_quantile(self.alpha / 2.0)
        low = _below(self.null_effect - z * null, self.effect, alt)
        return low + _above(self.null_effect + z * null, self.effect, alt)


def _checked(
    test: str,
    share: float,
    control: float | None,
    null: float | None,
    alpha: float,
    one_sided: bool,
    p_star: float,
    q_star: float,
) -> tuple[_Test, float | None, float]:
    """The test to compute, the control share and the null share, after every check."""
    if test not in TESTS:
        raise PowerError(f"test: expected one of {', '.join(TESTS)}, got {test!r}")
    p_star, q_star = _probability("p_star", p_star), _probability("q_star", q_star)
    if abs(p_star - q_star) < 1e-12:
        raise PowerError("p_star and q_star are equal: the answers say nothing about the truth")
    share = _probability("share", share)
    alpha = _open("alpha", alpha, "0.05")
    if test == "one-sample":
        if control is not None:
            raise PowerError("control: a one-sample test has no control group; drop --control")
        null = 0.0 if null is None else _probability("null", null)

        def sd(value: float) -> Callable[[int], float]:
            return lambda n: math.sqrt(variance(value, p_star, q_star, n))

        return _Test(share, null, sd(share), sd(null), alpha, one_sided), None, null
    if control is None:
        raise PowerError("control: a two-sample test needs the control group's share (--control)")
    control = _probability("control", control)
    null = control if null is None else _probability("null", null)

    def both(first: float, second: float) -> Callable[[int], float]:
        return lambda n: math.sqrt(
            variance(first, p_star, q_star, n) + variance(second, p_star, q_star, n)
        )

    return (
        _Test(share - control, 0.0, both(share, control), both(null, null), alpha, one_sided),
        (control),
        null,
    )


def power(
    test: str,
    share: float,
    *,
    n: int,
    p_star: float,
    q_star: float,
    control: float | None = None,
    null: float | None = None,
    alpha: float = 0.05,
    one_sided: bool = False,
) -> PowerResult:
    """The power of a test at n reports (per group for two samples).

    one-sample: `share` against `null` (default 0, as rr); two-sample: `share` (the treated
    group's) against `control`, the null being both groups at `null` (default the control's
    share). One-sided tests look in the direction of the alternative (rr's upper side when
    the share is above the null)."""
    checked, control, null = _checked(test, share, control, null, alpha, one_sided, p_star, q_star)
    n = _n(n)
    return PowerResult(
        test, share, control, null, alpha, one_sided, p_star, q_star, n, checked.power(n)
    )


def sample_size(
    test: str,
    share: float,
    *,
    target: float,
    p_star: float,
    q_star: float,
    control: float | None = None,
    null: float | None = None,
    alpha: float = 0.05,
    one_sided: bool = False,
) -> PowerResult:
    """The smallest n (per group for two samples) whose power reaches `target`, with that
    power; PowerError if no n up to MAX_N does (a share at its null, say).

    The power grows with n whenever the share differs from its null (docs/statistics.md,
    "Power"), so the search doubles n until it reaches the target, then halves the gap."""
    checked, control, null = _checked(test, share, control, null, alpha, one_sided, p_star, q_star)
    target = _open("power", target, "0.8")
    high = 1
    while checked.power(high) < target:
        if high >= MAX_N:
            raise PowerError(
                f"power: {target:g} is not reached with {MAX_N:,} respondents"
                + (" per group" if test == "two-sample" else "")
                + "; the share must differ from its null (raise the share or alpha, lower the power)"
            )
        high = min(MAX_N, high * 2)
    low = high // 2  # power(low) < target, or low == 0
    while high - low > 1:
        middle = (low + high) // 2
        if checked.power(middle) >= target:
            high = middle
        else:
            low = middle
    return PowerResult(
        test,
        share,
        control,
        null,
        alpha,
        one_sided,
        p_star,
        q_star,
        high,
        checked.power(high),
        target,
    )


def _n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
        raise PowerError(f"n: expected a whole number from 1 to {MAX_N:,}, got {n!r}")
    return n


def format_power(result: PowerResult) -> str:
    """The calculation in words, then the number asked for alone on the last line."""
    side = "one-sided" if result.one_sided else "two-sided"
    if result.test == "one-sample":
        what = f"one-sample test of a share {result.share:g} against {result.null:g}"
        per = ""
    else:
        what = (
            f"two-sample test of shares {result.share:g} and {result.control:g} "
            f"(null: both {result.null:g})"
        )
        per = " per group"
    lines = [
        f"{what}, {side} at alpha {result.alpha:g}, p* {result.p_star:.6g}, q* {result.q_star:.6g}",
    ]
    if result.target is None:
        lines.append(f"power {result.power:.6f} with {result.n:,} respondents{per}")
        lines.append(f"{result.power:.6f}")
    else:
        lines.append(
            f"{result.n:,} respondents{per} reach power {result.target:g} "
            f"(power {result.power:.6f}; the smallest such n)"
        )
        lines.append(str(result.n))
    return "\n".join(lines)
