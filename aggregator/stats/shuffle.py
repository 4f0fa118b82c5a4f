"""Privacy amplification by shuffling: the central epsilon of n shuffled epsilon_0-LDP reports.

An aggregator that receives a survey's reports through a relay sees each batch in a uniformly
random order and cannot tell who sent which report (docs/anonymity.md). Feldman, McMillan and
Talwar showed that each report then hides among "clones" in the others: "Stronger privacy
amplification by shuffling for Rényi and approximate differential privacy" (SODA 2023,
arXiv:2208.04591), Theorem 3.2. For an epsilon_0-LDP randomizer and n reports, the shuffled
output is (epsilon, delta)-DP whenever the pair

    P = (A + D, C - A + 1 - D)      Q = (A + 1 - D, C - A + D)

is, where C ~ Bin(n - 1, 2 / (e^epsilon_0 + 1)) counts the other reports that are clones of
one of the two neighbouring inputs, A ~ Bin(C, 1/2) those of the first, and D ~
Bern(e^epsilon_0 / (e^epsilon_0 + 1)). (This is also Wang et al.'s variation-ratio bound with
p = e^epsilon_0 and beta = (e^epsilon_0 - 1) / (e^epsilon_0 + 1).) Their numerical method is
written here from the paper, not copied:

- Q is P with its coordinates swapped, and A is symmetric, so the hockey-stick divergence
  D_{e^eps}(P || Q) equals D_{e^eps}(Q || P): one direction is computed.
- The sum of the coordinates, C + 1, is seen by the adversary, so
  delta(eps) = sum over c of Pr[C = c] * delta_c(eps), with delta_c the divergence of the
  first coordinate K given C = c: P(K = k) = a b(k - 1) + (1 - a) b(k) and
  Q(K = k) = (1 - a) b(k - 1) + a b(k), where b is Bin(c, 1/2)'s pmf and a = e^e0/(e^e0+1).
- P(k) / Q(k) grows with k, so the k where P(k) > e^eps Q(k) are a tail k >= k*, found in
  closed form; delta_c is then two binomial tail sums (scipy), the largest of the three tails
  around k* taken so that rounding never lowers it.
- c is summed over C's mean plus or minus WINDOW standard deviations; the mass of C outside
  that window is added to delta whole (each delta_c is at most 1), so delta(eps) is an upper
  bound. delta_c never grows with c (the pair for c + 1 is the pair for c with one more fair
  coin added to its coordinates, a post-processing), so a window wider than BINS values is cut
  into BINS runs of c, each counted at its first c's delta_c: still an upper bound, and the
  work stays the same whatever n.
- The smallest eps with delta(eps) <= delta is found by bisection on [0, epsilon_0] (to
  PRECISION of itself) and the upper end returned: never below the bound, never above epsilon_0.

The reference values of docs/anonymity.md (delta = 1e-6) hold within 5 % (tests/statistics/test_shuffle.py).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

#: Limits on a request, checked before any work (docs/anonymity.md#the-central-epsilon).
MAX_N = 10**10
MAX_EPSILON_0 = 50.0
MIN_DELTA = 1e-15
MAX_DELTA = 0.5
#: The default delta of results and of `plan --shuffle`.
DEFAULT_DELTA = 1e-6
#: C's standard deviations summed on each side of its mean (the rest is added to delta whole).
WINDOW = 12.0
#: Values of c evaluated at most per delta (runs of c beyond that, see above).
BINS = 2000
#: Bisection stops once epsilon is known within this share of itself (or within TINY), from
#: above; at most STEPS steps (then within epsilon_0 / 2**STEPS).
PRECISION = 1e-4
TINY = 1e-9
STEPS = 40


class ShuffleError(ValueError):
    """Parameters outside what the bound takes; the message says which and what is allowed."""


def check_parameters(n: int, epsilon_0: float, delta: float) -> None:
    """ShuffleError naming the first parameter out of its range (the limits above)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_N:
        raise ShuffleError(f"n must be a whole number from 0 to {MAX_N:,}, got {n!r}")
    if not (isinstance(epsilon_0, int | float) and 0 < epsilon_0 <= MAX_EPSILON_0):
        raise ShuffleError(
            f"epsilon_0 must be above 0 and at most {MAX_EPSILON_0:g}, got {epsilon_0!r}"
        )
    if not (isinstance(delta, int | float) and MIN_DELTA <= delta <= MAX_DELTA):
        raise ShuffleError(f"delta must be from {MIN_DELTA:g} to {MAX_DELTA:g}, got {delta!r}")


def hockey_stick(n: int, epsilon_0: float, epsilon: float) -> float:
    """An upper bound on the delta at which n shuffled epsilon_0-LDP reports are epsilon-DP."""
    # Here, not at the top: scipy.stats costs 0.4 s at every start of the aggregator and its CLI.
    from scipy.stats import binom

    if n <= 1 or epsilon >= epsilon_0:
        return 0.0 if epsilon >= epsilon_0 else 1.0
    e0 = math.exp(epsilon_0)
    a = e0 / (e0 + 1)
    clone = 2 / (e0 + 1)
    others = n - 1
    spread = math.sqrt(others * clone * (1 - clone))
    middle = others * clone
    lo = max(0, math.floor(middle - WINDOW * spread) - 1)
    hi = min(others, math.ceil(middle + WINDOW * spread) + 1)
    if hi - lo + 1 <= BINS:
        c = np.arange(lo, hi + 1, dtype=np.float64)
        weight = binom.pmf(c, others, clone)
    else:  # runs of c, each weighted by its mass and counted at its first (largest) delta_c
        edges = np.unique(np.linspace(lo, hi + 1, BINS + 1).astype(np.int64))
        c = edges[:-1].astype(np.float64)
        weight = np.diff(binom.cdf(edges - 1, others, clone))
    outside = (binom.cdf(lo - 1, others, clone) if lo > 0 else 0.0) + binom.sf(hi, others, clone)
    ee = math.exp(epsilon)
    ratio = (ee * a - (1 - a)) / (a - ee * (1 - a))  # P(k) > e^eps Q(k) iff k/(c-k+1) > ratio
    cut = np.ceil(ratio * (c + 1) / (1 + ratio))
    best = np.zeros_like(c)
    for shift in (-1.0, 0.0, 1.0):
        k = cut + shift
        tail_from_k_minus_1 = binom.sf(k - 2, c, 0.5)  # Pr[Bin(c, 1/2) >= k - 1]
        tail_from_k = binom.sf(k - 1, c, 0.5)  # Pr[Bin(c, 1/2) >= k]
        p_tail = a * tail_from_k_minus_1 + (1 - a) * tail_from_k
        q_tail = (1 - a) * tail_from_k_minus_1 + a * tail_from_k
        best = np.maximum(best, p_tail - ee * q_tail)
    return float(min(1.0, np.dot(weight, best) + outside))


@lru_cache(maxsize=4096)
def _central(n: int, epsilon_0: float, delta: float) -> float:
    if n <= 1:
        return epsilon_0
    low, high = 0.0, epsilon_0
    for _ in range(STEPS):
        if high - low <= max(PRECISION * high, TINY):
            break
        middle = (low + high) / 2
        if hockey_stick(n, epsilon_0, middle) <= delta:
            high = middle
        else:
            low = middle
    return high


def central_epsilon(n: int, epsilon_0: float, delta: float = DEFAULT_DELTA) -> float:
    """The central epsilon of n shuffled epsilon_0-LDP reports at `delta` (never above
    epsilon_0; epsilon_0 itself for n of 0 or 1). ShuffleError for parameters out of range."""
    check_parameters(n, epsilon_0, delta)
    return _central(int(n), float(epsilon_0), float(delta))
