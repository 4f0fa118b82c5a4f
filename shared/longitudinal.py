"""Memoized randomization for questions asked again in waves: L-GRR and L-OSUE.

A question repeated across the waves of a series (docs/surveys.md, "Waves") is randomized in
two rounds (Arcolezi et al. 2021, "Improving the utility of locally differentially private
protocols for longitudinal and multidimensional frequency estimates", arXiv:2111.04636):

1. the *permanent* round, once per (series, question, true value) on the device: GRR (L-GRR)
   or optimized unary encoding (L-OSUE) at `epsilon_perm`; the result (the memo) is kept in the
   ledger, never the true value;
2. the *instantaneous* round, at every wave: the memo randomized again with fresh coins, GRR
   (L-GRR) or symmetric unary encoding (L-OSUE), with the parameters that make one report cost
   at most `epsilon_1`.

Every report is a function of the memo, so however many waves a respondent answers, what is
sent about one true value never reveals more than `epsilon_perm`; one report alone reveals at
most `epsilon_1`. The parameters are multi-freq-ldpy's (long_freq_est/L_GRR.py, L_OSUE.py), so
the reports are distributed as its clients'; the probabilities are exact Fractions rounded
towards privacy as shared/mechanisms.py rounds GRR and OUE, and checked against the stated
epsilons. The chained channel is a pure protocol like any mechanism:

    p* = p1 p2 + (1 - p1) q2    P[report supports v | true value v]
    q* = q1 p2 + (1 - q1) q2    P[report supports v | true value u != v]

so one wave is estimated exactly as a survey is (docs/statistics.md, "Waves"). The wire answers
are those of GRR and OUE: an option index (binary: 0 = no, 1 = yes) or a string of k '0'/'1'.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, ClassVar

from deniable.shared.errors import SurveyError
from deniable.shared.i18n import Translate, english
from deniable.shared.mechanisms import (
    HALF,
    MAX_EPSILON,
    MIN_EPSILON,
    PLAIN,
    Encoded,
    Mechanism,
    _BitString,
    _OptionIndex,
    grr_draw,
    unary_draw,
    unary_probability,
)
from deniable.shared.probability import Coin, RandomBytes, percent, round_down, round_up

#: A memo: the permanent response kept in the ledger, in the wire encoding of the question
#: (an option index for L-GRR, a string of k '0'/'1' for L-OSUE). Never the true value.
Memo = int | str

#: The survey document's key of a repeated question and the two epsilons it holds.
LONGITUDINAL = "longitudinal"
EPSILON_KEYS = ("epsilon_perm", "epsilon_1")

#: The step of the rounded probabilities (shared/probability.py rounds to 12 decimals).
_STEP = Fraction(1, 10**12)
#: How many steps a rounded probability may be moved towards privacy before giving up (a float
#: error of an ulp or two needs one step; more would mean a wrong formula).
_MAX_STEPS = 8


def _stated(value: object, field: str) -> float:
    """A stated epsilon: a number in [MIN_EPSILON, MAX_EPSILON] (ValueError naming `field`)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not MIN_EPSILON <= value <= MAX_EPSILON
    ):
        raise ValueError(
            f"{field}: expected a number in [{MIN_EPSILON}, {MAX_EPSILON}], got {value!r}"
        )
    return float(value)


def _epsilons(epsilon_perm: object, epsilon_1: object) -> tuple[float, float]:
    perm = _stated(epsilon_perm, "epsilon_perm")
    one = _stated(epsilon_1, "epsilon_1")
    if not one < perm:
        raise ValueError(
            f"epsilon_1: must be below epsilon_perm ({perm:g}), got {one:g}: one report must "
            "reveal less than every wave together"
        )
    return perm, one


class Longitudinal(Mechanism):
    """What L-GRR and L-OSUE share: two rounds (p1, q1) then (p2, q2), the chained (p*, q*),
    the stated epsilons, the memo and the exact channel."""

    longitudinal: ClassVar[bool] = True
    #: The one-report mechanism a question names to be chained with this protocol, as its
    #: resolved form is read back (None: the one its type chains by default).
    base: ClassVar[str | None] = None

    @classmethod
    def for_series(cls, k: int, epsilon_perm: float, epsilon_1: float) -> Longitudinal:
        """The protocol a series plan asks for over k options at (epsilon_perm, epsilon_1)."""
        return cls(k, epsilon_perm, epsilon_1)  # type: ignore[call-arg]

    epsilon_perm: float
    epsilon_1: float
    p1: Fraction
    q1: Fraction
    p2: Fraction
    q2: Fraction

    # -- the chained channel -------------------------------------------------------------
    @property
    def p_star(self) -> Fraction:
        """P[report supports v | true value v] = p1 p2 + (1 - p1) q2."""
        return self.p1 * self.p2 + (1 - self.p1) * self.q2

    @property
    def q_star(self) -> Fraction:
        """P[report supports v | true value u != v] = q1 p2 + (1 - q1) q2."""
        return self.q1 * self.p2 + (1 - self.q1) * self.q2

    @staticmethod
    def _ratio(p: Fraction, q: Fraction) -> Fraction:
        """e^epsilon of a round or chain with support probabilities (p, q) (GRR-type)."""
        return p / q

    @property
    def epsilon(self) -> float:
        """The permanent round's epsilon from the probabilities used (at most epsilon_perm):
        what every report of one true value, over all waves, can reveal; the ledger's charge
        once per distinct true value."""
        return math.log(self._ratio(self.p1, self.q1))

    @property
    def epsilon_single(self) -> float:
        """One report's epsilon, ln of the chained channel's ratio (at most epsilon_1)."""
        return math.log(self._ratio(self.p_star, self.q_star))

    @property
    def epsilon_round2(self) -> float:
        """The instantaneous round's own epsilon (about the memo, not the true value)."""
        return math.log(self._ratio(self.p2, self.q2))

    def params(self) -> dict[str, Fraction]:
        """Both rounds' exact probabilities, as published in the resolved survey."""
        return {"p1": self.p1, "q1": self.q1, "p2": self.p2, "q2": self.q2}

    def stated(self) -> dict[str, float]:
        """The survey document's `longitudinal` object: the two stated epsilons."""
        return {"epsilon_perm": self.epsilon_perm, "epsilon_1": self.epsilon_1}

    def odds_ratio(self) -> Fraction | float:
        return self._ratio(self.p1, self.q1)

    def _check(self) -> None:
        """Each stated bound holds for the probabilities used (ValueError if not)."""
        if not 0 < self.q1 < self.p1 < 1 or not 0 < self.q2 < self.p2 < 1:
            raise ValueError(
                f"epsilon_1: {self.epsilon_1:g} with epsilon_perm {self.epsilon_perm:g} gives "
                "no usable second round; choose epsilon_1 further below epsilon_perm"
            )
        if self.epsilon > self.epsilon_perm or self.epsilon_single > self.epsilon_1:
            raise ValueError(  # pragma: no cover - the rounding makes this unreachable
                f"the rounded probabilities exceed the stated epsilons ({self!r})"
            )

    # -- on the device ----------------------------------------------------------------------
    def permanent(self, index: int, *, random_bytes: RandomBytes | None = None) -> Memo:
        """The permanent response of true option `index`: drawn once per (series, question,
        true value) and kept in the ledger in place of the true value."""
        return self._permanent(self._index(index), random_bytes)

    def instantaneous(self, memo: Memo, *, random_bytes: RandomBytes | None = None) -> Encoded:
        """This wave's report: the memo randomized again with fresh coins."""
        return self._instantaneous(self.validate_memo(memo), random_bytes)

    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        """One report without a ledger (a simulation, or one wave): both rounds at once."""
        memo = self.permanent(index, random_bytes=random_bytes)
        return self.instantaneous(memo, random_bytes=random_bytes)

    def validate_memo(self, memo: object) -> Memo:
        """Return `memo` if it is a well-formed memo (read back from a ledger), else ValueError."""
        return self.validate(memo)

    def _index(self, index: int) -> int:
        if type(index) is not int or not 0 <= index < self.k:
            raise ValueError(f"expected an option index from 0 to {self.k - 1}, got {index!r}")
        return index

    @abstractmethod
    def _permanent(self, index: int, source: RandomBytes | None) -> Memo:
        """The permanent round's draw for a checked option index."""

    @abstractmethod
    def _instantaneous(self, memo: Memo, source: RandomBytes | None) -> Encoded:
        """The instantaneous round's draw for a checked memo."""

    # -- exact transition probabilities ---------------------------------------------------------
    @abstractmethod
    def memo_probability(self, memo: Memo, index: int) -> Fraction:
        """P[memo | true option index], exactly (the permanent round)."""

    @abstractmethod
    def report_probability(self, encoded: Encoded, memo: Memo) -> Fraction:
        """P[report | memo], exactly (the instantaneous round)."""

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        """P[report = encoded | true option = index]: the sum over memos of both rounds."""
        return sum(
            (
                self.memo_probability(memo, index) * self.report_probability(encoded, memo)
                for memo in self.outputs()
            ),
            Fraction(0),
        )

    def joint_probability(self, reports: tuple[Encoded, ...], index: int) -> Fraction:
        """P[these reports in successive waves | one unchanged true value], exactly: the
        waves share the memo, so they are not independent given the true value."""
        total = Fraction(0)
        for memo in self.outputs():
            prob = self.memo_probability(memo, index)
            for encoded in reports:
                prob *= self.report_probability(encoded, memo)
            total += prob
        return total

    # -- statistics -------------------------------------------------------------------------------
    def wave_covariance(self, f: float, option: int = 1) -> float:
        """Cov of one respondent's support indicators of `option` at two waves, when the true
        value did not change and a share f of respondents hold `option`: the memo's share,
        f Var(P[supports | memo of v]) + (1 - f) Var(P[supports | memo of u != v]).
        Never negative (docs/statistics.md, "Waves")."""
        gap2 = float(self.p2 - self.q2) ** 2
        own = float(self.p1 * (1 - self.p1)) * gap2
        other = float(self.q1 * (1 - self.q1)) * gap2
        return f * own + (1.0 - f) * other

    # -- in plain words ---------------------------------------------------------------------------
    def in_brief(self) -> str:
        return (
            f"asked in waves with a memoized answer: one report reveals at most epsilon "
            f"{self.epsilon_1:g}, every wave together at most {self.epsilon_perm:g} per true "
            f"answer (a report supports the truth with probability {float(self.p_star):.0%})"
        )

    def _costs(self, _: Translate) -> str:
        return _(
            "Privacy cost: at most epsilon {one} for one report, and at most {perm} for every wave "
            "together, however many waves you answer; if your true answer changes, the new answer "
            "costs {perm} again."
        ).format(one=f"{self.epsilon_1:g}", perm=f"{self.epsilon_perm:g}")

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params_text().items())
        return (
            f"{type(self).__name__}(k={self.k}, epsilon_perm={self.epsilon_perm!r}, "
            f"epsilon_1={self.epsilon_1!r}, {params})"
        )


class LGRR(Longitudinal, _OptionIndex):
    """L-GRR: GRR at epsilon_perm memoized, then GRR again each wave. For a binary question
    (k = 2, report 0 = no, 1 = yes) it is memoized Warner randomized response.

        p1 = e^eps_perm / (e^eps_perm + k - 1), q1 = (1 - p1) / (k - 1)
        p2 = (q1 - e^eps_1 p1) / (-p1 e^eps_1 + k q1 e^eps_1 - q1 e^eps_1 - p1 (k - 1) + q1)
        q2 = (1 - p2) / (k - 1)

    p1 and p2 rounded down to 12 decimals (towards privacy)."""

    name = "l-grr"
    binary = False

    @classmethod
    def for_series(cls, k: int, epsilon_perm: float, epsilon_1: float) -> Longitudinal:
        """L-GRR, over a binary question's yes and no when k is 2."""
        return cls(k, epsilon_perm, epsilon_1, binary=k == 2)

    def __init__(
        self, k: int, epsilon_perm: float, epsilon_1: float, *, binary: bool = False
    ) -> None:
        super().__init__(k)
        if binary and k != 2:
            raise ValueError("a binary question has 2 options")
        self.binary = binary  # type: ignore[misc]
        self.epsilon_perm, self.epsilon_1 = _epsilons(epsilon_perm, epsilon_1)
        e_perm, e_1 = math.exp(self.epsilon_perm), math.exp(self.epsilon_1)
        p1 = round_down(e_perm / (e_perm + k - 1))
        for _ in range(_MAX_STEPS):
            if math.log(p1 * (k - 1) / (1 - p1)) <= self.epsilon_perm:
                break
            p1 -= _STEP
        self.p1, self.q1 = p1, (1 - p1) / (k - 1)
        q1f, p1f = float(self.q1), float(p1)
        raw = (q1f - e_1 * p1f) / (-p1f * e_1 + k * q1f * e_1 - q1f * e_1 - p1f * (k - 1) + q1f)
        p2 = round_down(raw) if math.isfinite(raw) else Fraction(0)
        self.p2, self.q2 = p2, (1 - p2) / (k - 1)
        for _ in range(_MAX_STEPS):
            if not 0 < self.q2 < self.p2 < 1 or self.epsilon_single <= self.epsilon_1:
                break
            self.p2 -= _STEP
            self.q2 = (1 - self.p2) / (k - 1)
        self._check()
        self._keep = Coin(self.p2)
        self._first = Coin(self.p1)

    def _permanent(self, index: int, source: RandomBytes | None) -> Memo:
        return grr_draw(self._first, index, self.k, source)

    def _instantaneous(self, memo: Memo, source: RandomBytes | None) -> Encoded:
        return grr_draw(self._keep, int(memo), self.k, source)

    def memo_probability(self, memo: Memo, index: int) -> Fraction:
        return self.p1 if memo == index else self.q1

    def report_probability(self, encoded: Encoded, memo: Memo) -> Fraction:
        return self.p2 if encoded == memo else self.q2

    def describe(self, _: Translate = english) -> str:
        if self.binary:
            sent = _(
                'This question is asked again in later waves. What is sent: "yes" or "no". Once, '
                "your device draws a permanent answer and keeps it (never your true answer): your "
                "true answer with probability {p1}, otherwise the opposite answer. Each wave sends "
                "that permanent answer with probability {p2}, otherwise the opposite."
            ).format(p1=percent(self.p1), p2=percent(self.p2))
        else:
            sent = _(
                "This question is asked again in later waves. What is sent: one of the {k} "
                "options. Once, your device draws a permanent answer and keeps it (never your "
                "true answer): your true answer with probability {p1}, otherwise one of the other "
                "{others} options at random. Each wave sends that permanent answer with "
                "probability {p2}, otherwise another option at random."
            ).format(k=self.k, others=self.k - 1, p1=percent(self.p1), p2=percent(self.p2))
        return f"{sent} {self._costs(_)}"


class LOSUE(Longitudinal, _BitString):
    """L-OSUE: optimized unary encoding at epsilon_perm memoized, then symmetric unary encoding
    each wave (every bit kept with p2, flipped with q2 = 1 - p2). Per bit:

        p1 = 1/2, q1 = 1 / (e^eps_perm + 1)
        p2 = (1 - e^(eps_1 + eps_perm)) / (e^eps_1 - e^eps_perm - e^(eps_1 + eps_perm) + 1)

    q1 rounded up and p2 down to 12 decimals (towards privacy)."""

    name = "l-osue"
    base = "oue"
    binary = False
    one_per_report = False
    bit_string = True

    def __init__(self, k: int, epsilon_perm: float, epsilon_1: float) -> None:
        super().__init__(k)
        self.epsilon_perm, self.epsilon_1 = _epsilons(epsilon_perm, epsilon_1)
        e_perm, e_1 = math.exp(self.epsilon_perm), math.exp(self.epsilon_1)
        self.p1 = HALF
        q1 = round_up(1.0 / (e_perm + 1.0))
        for _ in range(_MAX_STEPS):
            if math.log(self._ratio(HALF, q1)) <= self.epsilon_perm:
                break
            q1 += _STEP
        self.q1 = q1
        raw = (1.0 - e_1 * e_perm) / (e_1 - e_perm - e_1 * e_perm + 1.0)
        self.p2 = round_down(raw) if math.isfinite(raw) else Fraction(0)
        self.q2 = 1 - self.p2
        for _ in range(_MAX_STEPS):
            if not 0 < self.q2 < self.p2 < 1 or self.epsilon_single <= self.epsilon_1:
                break
            self.p2 -= _STEP
            self.q2 = 1 - self.p2
        self._check()
        self._own, self._other = Coin(self.p1), Coin(self.q1)
        self._keep = Coin(self.p2)

    @staticmethod
    def _ratio(p: Fraction, q: Fraction) -> Fraction:
        """e^epsilon of a unary encoding whose bit is 1 with p (own) or q (any other)."""
        return (p * (1 - q)) / ((1 - p) * q)

    def _permanent(self, index: int, source: RandomBytes | None) -> Memo:
        return unary_draw(self._own, self._other, index, self.k, source)

    def _instantaneous(self, memo: Memo, source: RandomBytes | None) -> Encoded:
        kept = self._keep.bit_string(self.k, source)
        return "".join(
            m if c == "1" else ("0" if m == "1" else "1")
            for m, c in zip(str(memo), kept, strict=True)
        )

    def memo_probability(self, memo: Memo, index: int) -> Fraction:
        return unary_probability(memo, index, self.p1, self.q1)

    def report_probability(self, encoded: Encoded, memo: Memo) -> Fraction:
        prob = Fraction(1)
        for r, m in zip(str(encoded), str(memo), strict=True):
            prob *= self.p2 if r == m else self.q2
        return prob

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        # The bits are independent through both rounds: per bit, p* (own) or q* (any other).
        return unary_probability(encoded, index, self.p_star, self.q_star)

    def describe(self, _: Translate = english) -> str:
        sent = _(
            "This question is asked again in later waves. What is sent: a mark (0 or 1) for each "
            "of the {k} options. Once, your device draws a permanent set of marks and keeps it "
            "(never your true answer): your answer marked with probability {p1}, every other "
            "option with probability {q1}. Each wave sends every permanent mark as it is with "
            "probability {p2}, otherwise flipped."
        ).format(k=self.k, p1=percent(self.p1), q1=percent(self.q1), p2=percent(self.p2))
        return f"{sent} {self._costs(_)}"


PROTOCOLS: dict[str, type[Longitudinal]] = {LGRR.name: LGRR, LOSUE.name: LOSUE}


def auto(k: int, epsilon_perm: float, epsilon_1: float) -> Longitudinal:
    """L-GRR or L-OSUE at (eps_perm, eps_1, k): the lower one-wave variance at the uniform
    distribution (as shared/mechanisms.py's `auto` chooses between GRR and OUE)."""
    grr = LGRR(k, epsilon_perm, epsilon_1)
    oue = LOSUE(k, epsilon_perm, epsilon_1)
    f = 1.0 / k
    return grr if grr.variance(1, f, 0) <= oue.variance(1, f, 0) else oue


#: The protocols a series plan is asked for by name, L-GRR (the default) first, and how each
#: is built over k options at (epsilon_perm, epsilon_1).
PLANNED: dict[str, Callable[[int, float, float], Longitudinal]] = {
    LGRR.name: LGRR.for_series,
    LOSUE.name: LOSUE.for_series,
    "auto": auto,
}


def _fail(where: str, message: str) -> SurveyError:
    return SurveyError(f"{where}{LONGITUDINAL}: {message}")


def from_question_doc(doc: Mapping[str, Any], k: int, where: str = "") -> Longitudinal:
    """The protocol of a question document with `"longitudinal": {"epsilon_perm", "epsilon_1"}`.

    A binary question gets L-GRR over 2 options (its mechanism rr, coins or absent); a
    categorical one L-GRR (grr or absent), L-OSUE (oue) or the better of the two (auto).
    Refused, with a SurveyError naming `where` (a prefix like "questions[2]."): another type,
    a plain question (mechanism none), a split ballot (direct_share), explicit coins or
    parameters (the rounds are derived from the epsilons), epsilons out of bounds or
    epsilon_1 not below epsilon_perm.
    """
    raw = doc.get(LONGITUDINAL)
    if not isinstance(raw, Mapping):
        raise _fail(where, f'expected {{"epsilon_perm": …, "epsilon_1": …}}, got {raw!r}')
    unknown = sorted(set(raw) - set(EPSILON_KEYS))
    missing = [key for key in EPSILON_KEYS if key not in raw]
    if unknown or missing:
        reason = f"unknown key {unknown[0]!r}" if unknown else f"missing {missing[0]!r}"
        raise _fail(where, f"{reason}; give exactly epsilon_perm and epsilon_1")
    from deniable.shared.questions import QUESTION_TYPES  # the types declare their chains

    kind = doc.get("type")
    chains = getattr(QUESTION_TYPES.get(kind) if isinstance(kind, str) else None, "chains", {})
    if not chains:
        chained = " and ".join(name for name, t in QUESTION_TYPES.items() if t.chains)
        raise _fail(where, f"only {chained} questions can be asked in waves, not {kind!r}")
    mechanism = doc.get("mechanism")
    if mechanism == PLAIN:
        raise _fail(
            where,
            "a plain question (mechanism none) is sent as answered: there is nothing to "
            "memoize; choose a randomized mechanism or leave out longitudinal",
        )
    if "direct_share" in doc:
        raise _fail(
            where,
            "a split-ballot question (direct_share) cannot be asked in waves: its direct arm "
            "is not randomized; leave out one or the other",
        )
    stray = sorted({"rr", "coins", "grr", "oue"} & set(doc))
    if stray:
        raise _fail(
            where,
            f"parameters of {stray[0]!r} given; a question asked in waves derives both rounds "
            "from epsilon_perm and epsilon_1: leave them out",
        )
    if mechanism is not None and mechanism not in chains:
        allowed = ", ".join(name for name in chains if name is not None)
        raise _fail(
            where,
            f"mechanism {mechanism!r} cannot be asked in waves as a {kind} question; "
            f"allowed: {allowed}",
        )
    try:
        perm, one = _epsilons(raw["epsilon_perm"], raw["epsilon_1"])
        return chains[mechanism](k, perm, one)
    except ValueError as exc:
        raise SurveyError(f"{where}{LONGITUDINAL}.{exc}") from None
