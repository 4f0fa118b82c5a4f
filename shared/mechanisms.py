"""The randomized-response mechanisms: one class each, with their exact probabilities.

Every mechanism is a pure LDP protocol: a report *supports* a set of options, and

    P[report supports v | true answer is v]     = p*
    P[report supports v | true answer is not v] = q*

so an aggregator needs only n and a support count per option. Each class knows its p*, q*,
epsilon (computed from the probabilities actually used), how to randomize on the device (exact
coins from `secrets`), which options an encoded report supports, and the variance of the
unbiased estimate at n. The aggregator, planner, simulator and tests all use these.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import compress, product
from typing import ClassVar

from deniable.shared.i18n import Translate, english
from deniable.shared.probability import (
    Coin,
    RandomBytes,
    bernoulli,
    format_probability,
    parse_probability,
    percent,
    randbelow,
    round_down,
    round_up,
)

#: Per-question epsilon bounds. Below the minimum the rounded coins would be fair (no signal);
#: above the maximum randomized response protects nothing worth the name.
MIN_EPSILON = 0.001
MAX_EPSILON = 10.0

#: Encoded noisy answer: an option index (rr, coins, grr), a bit (onebit), an integer (a plain
#: integer question) or a bit string (oue, multi).
Encoded = int | str

#: What a mechanism randomizes: an option index, an integer's offset from its minimum
#: (integer questions) or the set of selected option indices (multi questions).
Truth = int | frozenset[int]

HALF = Fraction(1, 2)


def _check_epsilon(epsilon: float, field: str) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        raise ValueError(
            f"{field}: expected a number in [{MIN_EPSILON}, {MAX_EPSILON}], got {epsilon!r}"
        )
    if not (math.isfinite(epsilon) and MIN_EPSILON <= epsilon <= MAX_EPSILON):
        raise ValueError(
            f"{field}: expected a number in [{MIN_EPSILON}, {MAX_EPSILON}], got {epsilon!r}"
        )
    return float(epsilon)


@dataclass(frozen=True)
class Planning:
    """What the planners may do with a mechanism (docs/researchers.md#planning-a-survey): the name
    they take it by (`deniable-aggregator plan --mechanism`) and the plan it gets. The class
    builds it at an epsilon (`planned`)."""

    #: The name the planners take it by.
    name: str
    #: The plan's rows: "options" (beside the mechanisms compared for its count of options),
    #: "alone", "sketches" (beside the other sketches) or "decoded" (from its decoder).
    rows: str = "options"
    #: Whether it answers binary questions only (options 2).
    binary_only: bool = False
    #: Whether it plans a mean over a range (--range), not shares.
    ranged: bool = False
    #: Whether its row names the mechanism it picked, like "auto (grr)".
    picks: bool = False
    #: What is planned, when not options or a range ("{k}": the options).
    what: str | None = None
    #: Whether a plan shows it beside the others of its kind (binary ones for 2 options, the
    #: others for more).
    compared: bool = False
    #: Whether it is the planner's default for its kind (binary or not).
    default: bool = False
    #: Whether the margin planner takes it.
    margin: bool = True
    #: Whether a power calculation takes it (a binary design: p*, q*).
    power: bool = False
    #: Whether it needs an epsilon (a plain question has none).
    needs_epsilon: bool = True
    #: A sketch's shape when none is given (hash functions, columns or bits, hashes, cohorts).
    shape: tuple[int, ...] | None = None


class Mechanism(ABC):
    """A pure LDP protocol over `k` options with support probabilities p* and q*."""

    name: ClassVar[str]
    #: Whether the mechanism answers binary questions (report 0 = "no", 1 = "yes").
    binary: ClassVar[bool]
    #: Whether every report supports exactly one slot (so a question's counts add up to n);
    #: oue and a multi question's marks support any number.
    one_per_report: ClassVar[bool] = True
    #: Whether a report is a string of '0'/'1' (oue, multi), not an option's index.
    bit_string: ClassVar[bool] = False
    #: Whether it sends the answer as given (the `none` mechanisms): no epsilon, nothing to
    #: randomize, nothing to memoize.
    plain: ClassVar[bool] = False
    #: What the planners may do with it (None: they do not take it).
    planning: ClassVar[Planning | None] = None

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        """The mechanism a planner asks for at `epsilon` over k options (a range `width`
        wide for a mean); ValueError if it does not fit."""
        raise ValueError(f"{cls.name} is not planned")

    def __init__(self, k: int) -> None:
        if k < 2:
            raise ValueError("a question needs at least 2 options")
        self.k = k

    # -- exact description -------------------------------------------------------------
    @property
    @abstractmethod
    def p_star(self) -> Fraction:
        """P[report supports v | truth is v] (for binary questions: of option yes)."""

    @property
    @abstractmethod
    def q_star(self) -> Fraction:
        """P[report supports v | truth is not v] (for binary questions: of option yes)."""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """The privacy loss: ln of the largest ratio between two rows of the transition matrix."""

    @abstractmethod
    def params(self) -> dict[str, Fraction]:
        """The exact parameters that define the coins, as published in the resolved survey."""

    def params_text(self) -> dict[str, str]:
        """`params()` as exact text ("0.8", "2/3") for JSON."""
        return {key: format_probability(value) for key, value in self.params().items()}

    def option_pairs(self) -> list[tuple[Fraction, Fraction]]:
        """(p*, q*) of each option in order. For binary, `no` has the complementary pair."""
        p, q = self.p_star, self.q_star
        if self.binary:
            return [(1 - q, 1 - p), (p, q)]
        return [(p, q)] * self.k

    # -- on the device ---------------------------------------------------------------------
    @abstractmethod
    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        """The noisy encoded report of true option `index`, drawn with exact coins from
        `random_bytes` (the secure source by default; docs/randomness.md says which draws)."""

    # -- on the aggregator -------------------------------------------------------------------
    @abstractmethod
    def validate(self, encoded: object) -> Encoded:
        """Return `encoded` if it is a well-formed report of this mechanism, else ValueError."""

    @abstractmethod
    def supports(self, encoded: Encoded) -> tuple[int, ...]:
        """The option indices a (valid) encoded report supports."""

    # -- exact transition probabilities (for tests and documentation) ----------------------
    @abstractmethod
    def outputs(self) -> Iterator[Encoded]:
        """Every possible encoded report (2^k of them for oue: keep k small)."""

    @abstractmethod
    def probability(self, encoded: Encoded, index: int) -> Fraction:
        """P[report = encoded | true option = index], exactly."""

    # -- statistics -------------------------------------------------------------------------
    def support_rate(self, f: float, option: int = 1) -> float:
        """lambda: the expected share of reports supporting `option` when its true share is f."""
        p, q = self.option_pairs()[option]
        return float(q) + f * float(p - q)

    def variance(self, n: int, f: float, option: int = 1) -> float:
        """Variance of the unbiased estimate of an option's share f from n sampled respondents.

        lambda (1 - lambda) / (n (p* - q*)^2): the sampling term included (docs/statistics.md).
        """
        lam = self.support_rate(f, option)
        gap = float(self.p_star - self.q_star)
        return lam * (1.0 - lam) / (n * gap * gap)

    def worst_variance(self, n: int) -> float:
        """The largest variance of any option's estimate over every true distribution."""
        gap = float(self.p_star - self.q_star)
        worst = 0.0
        for p, q in self.option_pairs():
            lo, hi = float(min(p, q)), float(max(p, q))
            lam = min(max(0.5, lo), hi)
            worst = max(worst, lam * (1 - lam))
        return worst / (n * gap * gap)

    # -- in plain words (docs/respondents.md) -------------------------------------------------
    def describe(self, _: Translate = english) -> str:
        """One sentence: what leaves the device, and how likely the truth is kept, in the
        language of the translator `_` (English by default; docs/translations.md)."""
        return _("What is sent: a randomized answer ({name}).").format(name=self.name)

    def odds_ratio(self) -> Fraction | float:
        """e^epsilon, exactly where the coins allow: the most an observer's odds can move."""
        return math.exp(self.epsilon)

    def in_brief(self) -> str:
        """How the mechanism protects an answer, in a researcher's words (the dashboard's)."""
        return f"answers are randomized ({self.name}) before they are sent"

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params_text().items())
        return f"{type(self).__name__}(k={self.k}, {params}, epsilon={self.epsilon:.6g})"


class _BinaryMechanism(Mechanism):
    binary = True

    def __init__(self) -> None:
        super().__init__(2)

    def validate(self, encoded: object) -> Encoded:
        if type(encoded) is not int or encoded not in (0, 1):
            raise ValueError(f"expected 0 or 1, got {encoded!r}")
        return encoded

    def supports(self, encoded: Encoded) -> tuple[int, ...]:
        return (int(encoded),)

    def outputs(self) -> Iterator[Encoded]:
        yield from (0, 1)

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        p_yes = self.p_star if index == 1 else self.q_star
        return p_yes if encoded == 1 else 1 - p_yes

    @property
    def epsilon(self) -> float:
        p, q = self.p_star, self.q_star
        return math.log(max(p / q, (1 - q) / (1 - p)))


def warner_keep(epsilon: float) -> Fraction:
    """Warner's keep at epsilon, e^eps / (1 + e^eps), rounded down (towards privacy)."""
    return round_down(1.0 / (1.0 + math.exp(-epsilon)))


class KeepOrFlip:
    """What rr, onebit, multi's per-option rr, cms and hcms share: a bit that is the truth's
    with probability `keep` (p*) and flipped otherwise (q* = 1 - keep), keep above 1/2."""

    keep: Fraction

    def _take_keep(self, keep: Fraction, name: str) -> None:
        if not HALF < keep < 1:
            raise ValueError(f"{name}.keep must lie strictly between 1/2 and 1, got {keep}")
        self.keep = Fraction(keep)

    @property
    def p_star(self) -> Fraction:
        return self.keep

    @property
    def q_star(self) -> Fraction:
        return 1 - self.keep


class RR(KeepOrFlip, _BinaryMechanism):
    """Warner's randomized response: keep the true answer with probability `keep`, else flip it.

    From epsilon, keep = e^eps / (1 + e^eps), rounded down (towards more privacy) to 12 decimals.
    """

    name = "rr"
    planning = Planning("rr", binary_only=True, compared=True, default=True, power=True)

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return cls.from_epsilon(epsilon=epsilon)

    def __init__(self, *, keep: Fraction) -> None:
        super().__init__()
        self._take_keep(keep, "rr")
        self._keep = Coin(self.keep)

    @classmethod
    def from_epsilon(cls, *, epsilon: float) -> RR:
        """The rr mechanism at (at most) `epsilon`."""
        _check_epsilon(epsilon, "epsilon")
        return cls(keep=warner_keep(epsilon))

    def params(self) -> dict[str, Fraction]:
        return {"keep": self.keep}

    def describe(self, _: Translate = english) -> str:
        return _(
            'What is sent: "yes" or "no". Your true answer is kept with probability {keep}; '
            "otherwise the opposite answer is sent ({flip})."
        ).format(keep=percent(self.keep), flip=percent(1 - self.keep))

    def odds_ratio(self) -> Fraction | float:
        p, q = self.p_star, self.q_star
        return max(p / q, (1 - q) / (1 - p))

    def in_brief(self) -> str:
        p = float(self.p_star)
        return f"each answer is kept truthfully with probability {p:.0%}, otherwise flipped"

    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        return index if self._keep.flip(random_bytes) else 1 - index


class Coins(_BinaryMechanism):
    """The two-coin design: with probability `truth` answer truthfully, else say yes with
    probability `yes`. p* = truth + (1-truth) yes, q* = (1-truth) yes."""

    name = "coins"
    planning = Planning("coins", binary_only=True, compared=True, power=True)

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        """The two-coin design with a fair second coin (yes = 1/2) at (at most) epsilon."""
        _check_epsilon(epsilon, "epsilon")
        e = math.exp(epsilon)
        return cls(truth=round_down((e - 1.0) / (e + 1.0)), yes=HALF)

    def __init__(self, *, truth: Fraction, yes: Fraction) -> None:
        super().__init__()
        if not 0 < truth < 1:
            raise ValueError(f"coins.truth must lie strictly between 0 and 1, got {truth}")
        if not 0 < yes < 1:
            raise ValueError(f"coins.yes must lie strictly between 0 and 1, got {yes}")
        self.truth = Fraction(truth)
        self.yes = Fraction(yes)
        self._truth, self._yes = Coin(self.truth), Coin(self.yes)

    @property
    def p_star(self) -> Fraction:
        return self.truth + (1 - self.truth) * self.yes

    @property
    def q_star(self) -> Fraction:
        return (1 - self.truth) * self.yes

    def params(self) -> dict[str, Fraction]:
        return {"truth": self.truth, "yes": self.yes}

    def describe(self, _: Translate = english) -> str:
        return _(
            'What is sent: "yes" or "no", decided by two coins. Your true answer is kept with '
            'probability {truth}; otherwise the second coin picks: "yes" with probability {yes}, '
            '"no" with {no}. In all, "yes" is sent with probability {p} if you answered yes and '
            "{q} if you answered no."
        ).format(
            truth=percent(self.truth),
            yes=percent(self.yes),
            no=percent(1 - self.yes),
            p=percent(self.p_star),
            q=percent(self.q_star),
        )

    def odds_ratio(self) -> Fraction | float:
        p, q = self.p_star, self.q_star
        return max(p / q, (1 - q) / (1 - p))

    def in_brief(self) -> str:
        p, q = float(self.p_star), float(self.q_star)
        return (
            f"with probability {float(self.truth):.0%} the true answer is sent; otherwise a coin "
            f"says yes with probability {float(self.yes):.0%} (a yes report comes from a true yes "
            f"with probability {p:.0%}, from a true no with probability {q:.0%})"
        )

    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        if self._truth.flip(random_bytes):
            return index
        return 1 if self._yes.flip(random_bytes) else 0


def grr_draw(keep: Coin, index: int, k: int, source: RandomBytes | None = None) -> int:
    """GRR's draw: `index` if the `keep` coin comes up, else one of the k - 1 others uniformly."""
    if keep.flip(source):
        return index
    other = randbelow(k - 1, source)
    return other if other < index else other + 1


class _OptionIndex(Mechanism):
    """An answer that is one option's index, 0 to k - 1 (grr, none, l-grr)."""

    def validate(self, encoded: object) -> Encoded:
        if type(encoded) is not int or not 0 <= encoded < self.k:
            shown = "0 or 1" if self.binary else f"an option index from 0 to {self.k - 1}"
            raise ValueError(f"expected {shown}, got {encoded!r}")
        return encoded

    def supports(self, encoded: Encoded) -> tuple[int, ...]:
        return (int(encoded),)

    def outputs(self) -> Iterator[Encoded]:
        yield from range(self.k)


class GRR(_OptionIndex):
    """Generalized randomized response: keep the true option with probability `keep`, else
    report a uniformly chosen *other* option. From epsilon, keep = e^eps / (e^eps + k - 1)."""

    name = "grr"
    binary = False
    planning = Planning("grr", compared=True)

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return cls.from_epsilon(k, epsilon=epsilon)

    def __init__(self, k: int, *, keep: Fraction) -> None:
        super().__init__(k)
        if not Fraction(1, k) < keep < 1:
            raise ValueError(f"grr.keep must lie strictly between 1/{k} and 1, got {keep}")
        self.keep = Fraction(keep)
        self._keep = Coin(self.keep)

    @classmethod
    def from_epsilon(cls, k: int, *, epsilon: float) -> GRR:
        """The grr mechanism over k options at (at most) `epsilon`."""
        _check_epsilon(epsilon, "epsilon")
        e = math.exp(epsilon)
        return cls(k, keep=round_down(e / (e + k - 1)))

    @property
    def p_star(self) -> Fraction:
        return self.keep

    @property
    def q_star(self) -> Fraction:
        return (1 - self.keep) / (self.k - 1)

    @property
    def epsilon(self) -> float:
        return math.log(self.p_star / self.q_star)

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent: one of the {k} options. Your true answer is kept with probability "
            "{keep}; otherwise one of the other {others} options is sent, each with probability "
            "{each}."
        ).format(k=self.k, keep=percent(self.p_star), others=self.k - 1, each=percent(self.q_star))

    def in_brief(self) -> str:
        return (
            f"each answer is kept truthfully with probability {float(self.p_star):.0%}, "
            f"otherwise replaced by one of the other {self.k - 1} options at random"
        )

    def odds_ratio(self) -> Fraction | float:
        return self.p_star / self.q_star

    def params(self) -> dict[str, Fraction]:
        return {"keep": self.keep}

    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        return grr_draw(self._keep, index, self.k, random_bytes)

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        return self.p_star if encoded == index else self.q_star


#: '0' -> 0 and '1' -> 1, for bit strings read as selectors.
_BIT_BYTES = bytes.maketrans(b"01", b"\x00\x01")


def ones_at(bits: str, base: int = 0) -> tuple[int, ...]:
    """base + i for each i where a validated '0'/'1' string has a '1', counted in C (a sketch
    answer holds thousands of bits, and the aggregator reads each report's)."""
    return tuple(
        compress(range(base, base + len(bits)), bits.encode("ascii").translate(_BIT_BYTES))
    )


def unary_draw(
    own: Coin, other: Coin, index: int, k: int, source: RandomBytes | None = None
) -> str:
    """Unary encoding's draw: one row of k flips, bit `index` from the `own` coin and every
    other from the `other` one."""
    return other.bit_string(k, source, {index: own})


def unary_probability(encoded: Encoded, index: int, p: Fraction, q: Fraction) -> Fraction:
    """P[bit string `encoded` | option `index`] when bit `index` is 1 with p, any other with q."""
    prob = Fraction(1)
    for i, c in enumerate(str(encoded)):
        one = p if i == index else q
        prob *= one if c == "1" else 1 - one
    return prob


class _BitString(Mechanism):
    """An answer that is a string of k '0'/'1', character i for option i (oue, multi)."""

    bit_string = True

    def validate(self, encoded: object) -> Encoded:
        if type(encoded) is not str or len(encoded) != self.k or encoded.strip("01") != "":
            raise ValueError(
                f"expected a string of {self.k} characters '0' or '1', got {encoded!r}"
            )
        return encoded

    def supports(self, encoded: Encoded) -> tuple[int, ...]:
        return ones_at(str(encoded))

    def outputs(self) -> Iterator[Encoded]:
        for bits in product("01", repeat=self.k):
            yield "".join(bits)


class OUE(_BitString):
    """(Optimized) unary encoding: one bit per option; the true option's bit is 1 with
    probability p (1/2 when optimized), every other bit with probability q = 1/(e^eps + 1).
    The report is a string of k characters '0'/'1', character i for option i."""

    name = "oue"
    binary = False
    one_per_report = False
    planning = Planning("oue", compared=True)

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return cls.from_epsilon(k, epsilon=epsilon)

    def __init__(self, k: int, *, q: Fraction, p: Fraction = HALF) -> None:
        super().__init__(k)
        if not 0 < q < p < 1:
            raise ValueError(f"oue needs 0 < q < p < 1, got p={p}, q={q}")
        self.p = Fraction(p)
        self.q = Fraction(q)
        self._p, self._q = Coin(self.p), Coin(self.q)

    @classmethod
    def from_epsilon(cls, k: int, *, epsilon: float) -> OUE:
        """Optimized unary encoding over k options at (at most) `epsilon`."""
        _check_epsilon(epsilon, "epsilon")
        return cls(k, q=round_up(1.0 / (math.exp(epsilon) + 1.0)))

    @property
    def p_star(self) -> Fraction:
        return self.p

    @property
    def q_star(self) -> Fraction:
        return self.q

    @property
    def epsilon(self) -> float:
        p, q = self.p, self.q
        return math.log((p * (1 - q)) / ((1 - p) * q))

    def params(self) -> dict[str, Fraction]:
        return {"p": self.p, "q": self.q}

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent: a mark (0 or 1) for each of the {k} options. Your true answer is "
            "marked with probability {p}, and every other option with probability {q}, each on "
            "its own coin; so a report may mark several options, or none."
        ).format(k=self.k, p=percent(self.p_star), q=percent(self.q_star))

    def odds_ratio(self) -> Fraction | float:
        p, q = self.p_star, self.q_star
        return (p * (1 - q)) / ((1 - p) * q)

    def in_brief(self) -> str:
        p, q = float(self.p_star), float(self.q_star)
        return (
            f"one bit per option: the true option's bit is set with probability {p:.0%}, every "
            f"other option's bit with probability {q:.0%}"
        )

    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        return unary_draw(self._p, self._q, index, self.k, random_bytes)

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        return unary_probability(encoded, index, self.p, self.q)


#: What every respondent interface says of a plain question before anything is sent.
PLAIN_NOTICE = "Sent exactly as you answer: this question is not randomized."


class _SentAsAnswered:
    """What every plain (`none`) mechanism shares: nothing is randomized, so p* = 1, q* = 0,
    no epsilon (it protects nothing and adds nothing to a survey's) and no parameters."""

    name = "none"
    plain = True

    @property
    def p_star(self) -> Fraction:
        return Fraction(1)

    @property
    def q_star(self) -> Fraction:
        return Fraction(0)

    @property
    def epsilon(self) -> float | None:  # type: ignore[override]
        return None

    def params(self) -> dict[str, Fraction]:
        return {}

    def describe(self, _: Translate = english) -> str:
        # One sentence with PLAIN_NOTICE at its head, translated whole.
        return _(
            "Sent exactly as you answer: this question is not randomized. Your answer itself is "
            "sent (it is a plain question, used to group the randomized answers, e.g. by region), "
            "so it is not deniable."
        )

    def in_brief(self) -> str:
        return "a plain question: answers are sent exactly as given, not randomized"


class Plain(_SentAsAnswered, _OptionIndex):
    """`none`: a plain question, sent exactly as answered (a covariate such as an age group).

    Nothing is randomized, so p* = 1, q* = 0 and the question has no epsilon: it protects
    nothing and adds nothing to a survey's (docs/surveys.md: no epsilon). Respondents are told
    so before anything is sent."""

    #: A power calculation takes a plain yes/no (p* = 1, q* = 0) as its baseline.
    planning = Planning("none", binary_only=True, margin=False, power=True, needs_epsilon=False)

    @classmethod
    def planned(
        cls, k: int, epsilon: float | None, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return cls(2, binary=True)

    def __init__(self, k: int, *, binary: bool = False) -> None:
        super().__init__(k)
        self.binary = binary  # type: ignore[misc]

    def randomize(self, index: int, *, random_bytes: RandomBytes | None = None) -> Encoded:
        return index

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        return Fraction(int(encoded == index))

    def __repr__(self) -> str:
        return f"Plain(k={self.k}, sent as answered)"


class OneBit(KeepOrFlip, _BinaryMechanism):
    """Microsoft's 1BitMean (Ding, Kulkarni & Yekhanin 2017) for a number in [min, max]: send
    one bit, 1 with probability q* + (p* - q*) (x - min) / (max - min), an exact fraction.

    p* = keep and q* = 1 - keep, keep = e^eps / (1 + e^eps) rounded down like rr; the mean
    min + (max - min) (lambda - q*) / (p* - q*) is unbiased. The truth given to `randomize` is
    the offset x - min. Its tally slots are the reports 0 and 1, as a binary question's."""

    name = "onebit"
    planning = Planning("onebit", rows="alone", ranged=True)

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return cls.from_epsilon(low=0, high=width, epsilon=epsilon)

    def __init__(self, *, low: int, high: int, keep: Fraction) -> None:
        super().__init__()
        self._take_keep(keep, "onebit")
        self.low, self.high = low, high

    @classmethod
    def from_epsilon(cls, *, low: int, high: int, epsilon: float) -> OneBit:
        """The onebit mechanism over [low, high] at (at most) `epsilon`."""
        _check_epsilon(epsilon, "epsilon")
        return cls(low=low, high=high, keep=warner_keep(epsilon))

    @property
    def epsilon(self) -> float:
        return math.log(self.keep / (1 - self.keep))

    def params(self) -> dict[str, Fraction]:
        return {"keep": self.keep}

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent: one bit (0 or 1), never your number. At {high} it is 1 with "
            "probability {p}, at {low} with {q}, and in between in proportion: {p} of the time it "
            "leans towards your number."
        ).format(high=self.high, low=self.low, p=percent(self.p_star), q=percent(self.q_star))

    def odds_ratio(self) -> Fraction | float:
        return self.p_star / self.q_star

    def in_brief(self) -> str:
        p, q = float(self.p_star), float(self.q_star)
        return (
            f"one bit per answer, never the number: 1 with probability {q:.0%} at "
            f"{self.low}, rising in proportion to {p:.0%} at {self.high}"
        )

    def one_probability(self, offset: int) -> Fraction:
        """P[report 1 | the number is min + offset], exactly."""
        q = self.q_star
        return q + (self.p_star - q) * Fraction(offset, self.high - self.low)

    def randomize(self, index: Truth, *, random_bytes: RandomBytes | None = None) -> Encoded:
        one = self.one_probability(int(index))  # type: ignore[arg-type]
        return 1 if bernoulli(one, random_bytes) else 0

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        one = self.one_probability(index)
        return one if encoded == 1 else 1 - one


class PlainInteger(_SentAsAnswered, Mechanism):
    """`none` for an integer question: the number is sent as given. Tallied as a histogram (one
    slot per value from min to max), which gives the sample mean and its standard error."""

    binary = False

    def __init__(self, *, low: int, high: int) -> None:
        super().__init__(high - low + 1)
        self.low, self.high = low, high

    def randomize(self, index: Truth, *, random_bytes: RandomBytes | None = None) -> Encoded:
        return self.low + int(index)  # type: ignore[arg-type]

    def validate(self, encoded: object) -> Encoded:
        if type(encoded) is not int or not self.low <= encoded <= self.high:
            raise ValueError(
                f"expected a whole number from {self.low} to {self.high}, got {encoded!r}"
            )
        return encoded

    def supports(self, encoded: Encoded) -> tuple[int, ...]:
        return (int(encoded) - self.low,)

    def outputs(self) -> Iterator[Encoded]:
        yield from range(self.low, self.high + 1)

    def probability(self, encoded: Encoded, index: int) -> Fraction:
        return Fraction(int(encoded == self.low + index))

    def __repr__(self) -> str:
        return f"PlainInteger({self.low}..{self.high}, sent as answered)"


class _Selection(_BitString):
    """A "select all that apply" answer: a string of k '0'/'1', character i for option i."""

    binary = False
    one_per_report = False

    def probability(self, encoded: Encoded, index: Truth) -> Fraction:  # type: ignore[override]
        """P[report = encoded | the selected set is `index`] (a set of option indices)."""
        chosen = index if isinstance(index, frozenset) else frozenset({index})
        p, q = self.p_star, self.q_star
        prob = Fraction(1)
        for i, c in enumerate(str(encoded)):
            one = p if i in chosen else q
            prob *= one if c == "1" else 1 - one
        return prob


class MultiRR(KeepOrFlip, _Selection):
    """`rr` for a multi question: each option's "selected?" is Warner's randomized response at
    eps/k, independently, so any change of the selected set costs at most eps in total."""

    name = "rr"
    planning = Planning(
        "multi", rows="alone", what="{k} options, each selected or not at epsilon / {k}"
    )

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return cls.from_epsilon(k, epsilon=epsilon)

    def __init__(self, k: int, *, keep: Fraction) -> None:
        super().__init__(k)
        self._take_keep(keep, "rr")
        self._keep = Coin(self.keep)

    @classmethod
    def from_epsilon(cls, k: int, *, epsilon: float) -> MultiRR:
        """Per-option rr at epsilon / k, so the question's epsilon is (at most) `epsilon`."""
        _check_epsilon(epsilon, "epsilon")
        if epsilon / k < MIN_EPSILON:
            raise ValueError(
                f"epsilon: {epsilon!r} over {k} options leaves {epsilon / k:.2g} per option, "
                f"below {MIN_EPSILON}; give at least {MIN_EPSILON * k:g}"
            )
        return cls(k, keep=warner_keep(epsilon / k))

    @property
    def epsilon(self) -> float:
        return self.k * math.log(self.keep / (1 - self.keep))

    def params(self) -> dict[str, Fraction]:
        return {"keep": self.keep}

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent: a mark (selected or not) for each of the {k} options. Each mark is "
            "your true choice with probability {keep} and the opposite otherwise ({flip}), on its "
            "own coin; so a report may mark options you did not choose and leave out ones you did."
        ).format(k=self.k, keep=percent(self.keep), flip=percent(1 - self.keep))

    def odds_ratio(self) -> Fraction | float:
        return (self.p_star / self.q_star) ** self.k  # each option's rr, composed over k

    def in_brief(self) -> str:
        return (
            f"one mark per option: each says truthfully whether it was selected with "
            f"probability {float(self.p_star):.0%}, otherwise the opposite "
            f"(epsilon / {self.k} per option)"
        )

    def randomize(self, index: Truth, *, random_bytes: RandomBytes | None = None) -> Encoded:
        chosen = index if isinstance(index, frozenset) else frozenset({index})
        kept = self._keep.bit_string(self.k, random_bytes)
        return "".join(c if i in chosen else ("0" if c == "1" else "1") for i, c in enumerate(kept))


class PlainSelection(_SentAsAnswered, _Selection):
    """`none` for a multi question: the selected options are sent as given."""

    def randomize(self, index: Truth, *, random_bytes: RandomBytes | None = None) -> Encoded:
        chosen = index if isinstance(index, frozenset) else frozenset({index})
        return "".join("1" if i in chosen else "0" for i in range(self.k))

    def __repr__(self) -> str:
        return f"PlainSelection(k={self.k}, sent as answered)"


MECHANISMS: dict[str, type[Mechanism]] = {m.name: m for m in (RR, Coins, GRR, OUE, Plain, OneBit)}
#: The plain (not randomized) mechanism's name.
PLAIN = Plain.name


def names_plain(name: object) -> bool:
    """Whether a document's `mechanism` names the plain one (sent as answered, `none`)."""
    return name == PLAIN


#: The parameter names of each mechanism, as written in a survey under the mechanism's name.
PARAMETERS: dict[str, tuple[str, ...]] = {
    "none": (),
    "rr": ("keep",),
    "coins": ("truth", "yes"),
    "grr": ("keep",),
    "oue": ("p", "q"),
    "onebit": ("keep",),
}


def auto(k: int, *, epsilon: float) -> Mechanism:
    """grr or oue at (eps, k), whichever has the lower variance at the uniform distribution."""
    grr = GRR.from_epsilon(k, epsilon=epsilon)
    oue = OUE.from_epsilon(k, epsilon=epsilon)
    f = 1.0 / k
    return grr if grr.variance(1, f, 0) <= oue.variance(1, f, 0) else oue


class Auto:
    """`auto`, a name a categorical question may give: grr or oue, whichever is more accurate
    (`auto()`); never a mechanism of its own, so it has only its name and its planning."""

    name = "auto"
    plain = False
    planning = Planning("auto", picks=True, default=True)

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Mechanism:
        return auto(k, epsilon=epsilon)


def from_epsilon(name: str, k: int, *, epsilon: float) -> Mechanism:
    """The mechanism `name` ("rr", "grr", "oue" or "auto") over k options at epsilon."""
    if name == "rr":
        return RR.from_epsilon(epsilon=epsilon)
    if name == "grr":
        return GRR.from_epsilon(k, epsilon=epsilon)
    if name == "oue":
        return OUE.from_epsilon(k, epsilon=epsilon)
    if name == "auto":
        return auto(k, epsilon=epsilon)
    raise ValueError(f"mechanism {name!r} cannot be built from an epsilon alone")


def from_params(name: str, k: int, raw: object, *, field: str) -> Mechanism:
    """The mechanism `name` from its explicit parameters (e.g. {"truth": 0.5, "yes": "1/2"})."""
    allowed = PARAMETERS[name]
    if not isinstance(raw, dict):
        raise ValueError(f"{field}: expected an object with {', '.join(allowed)}, got {raw!r}")
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ValueError(
            f"{field}: unknown parameter {unknown[0]!r}; allowed: {', '.join(allowed)}"
        )
    values = {key: parse_probability(raw[key], field=f"{field}.{key}") for key in raw}
    try:
        if name == "rr":
            return RR(keep=values["keep"])
        if name == "coins":
            return Coins(truth=values["truth"], yes=values["yes"])
        if name == "grr":
            return GRR(k, keep=values["keep"])
        return OUE(k, q=values["q"], p=values.get("p", HALF))
    except KeyError as exc:
        raise ValueError(f"{field}: missing parameter {exc.args[0]!r}") from None
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None
