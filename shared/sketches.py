"""The mechanisms for text answers from large domains, with exact probabilities (docs/surveys.md,
"Large domains: text answers").

- `CMS` and `HCMS`: Apple's count-mean sketch and its one-bit Hadamard form ("Learning with
  Privacy at Scale", 2017): k hash functions into m columns; the device picks one j.
- `RAPPOR`: Google's (Erlingsson, Pihur & Korolova, CCS 2014): a Bloom filter of k bits with h
  hashes in one of m cohorts, the permanent (f) then the instantaneous (p, q) response.

Each takes the normalized text and returns the report answer, a JSON array; `probability`
gives its exact probability (for the tests), and `counters` the tally slots a report adds
to, so the aggregator keeps a sketch as sums and never re-reads the reports.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

from deniable.shared.i18n import Translate, english
from deniable.shared.mechanisms import (
    MAX_EPSILON,
    MIN_EPSILON,
    KeepOrFlip,
    Planning,
    ones_at,
    warner_keep,
)
from deniable.shared.probability import (
    Coin,
    RandomBytes,
    format_probability,
    parse_probability,
    percent,
    randbelow,
    round_up,
)
from deniable.shared.text import bloom_bits, sketch_column

#: A sketch report's answer: [j, "bits"] (cms), [j, l, b] (hcms), [cohort, "bits"] (rappor).
SketchAnswer = list[Any]

MAX_HASHES = 1_024
MAX_WIDTH = 4_096
MAX_BITS = 4_096
MAX_COHORTS = 1_024
#: The aggregator keeps a counter per cell (k x m for cms and hcms, cohorts x bits for rappor).
MAX_CELLS = 65_536


def _check_cells(name: str, cells: int, what: str) -> None:
    if cells > MAX_CELLS:
        raise ValueError(
            f"{name}: {what} = {cells:,} cells, more than the {MAX_CELLS:,} the aggregator "
            "keeps a counter for; use fewer (joint decoding covers at small sketches too)"
        )


def _check_epsilon(epsilon: object) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        raise ValueError(f"epsilon: expected a number, got {epsilon!r}")
    if not (math.isfinite(epsilon) and MIN_EPSILON <= epsilon <= MAX_EPSILON):
        raise ValueError(
            f"epsilon: expected a number in [{MIN_EPSILON}, {MAX_EPSILON}], got {epsilon!r}"
        )
    return float(epsilon)


def _whole(raw: Mapping[str, Any], key: str, field: str, low: int, high: int) -> int:
    value = raw.get(key)
    if type(value) is not int or not low <= value <= high:
        raise ValueError(
            f"{field}.{key}: expected a whole number from {low} to {high}, got {value!r}"
        )
    return value


def _bits_answer(encoded: object, first: int, width: int, what: str) -> SketchAnswer:
    """[index, "<width bits>"] with index in [0, first)."""
    if (
        not isinstance(encoded, list)
        or len(encoded) != 2
        or type(encoded[0]) is not int
        or not 0 <= encoded[0] < first
        or type(encoded[1]) is not str
        or len(encoded[1]) != width
        or encoded[1].strip("01") != ""
    ):
        raise ValueError(
            f'expected [{what} 0-{first - 1}, "<{width} characters 0 or 1>"], got {encoded!r}'
        )
    return encoded


class Sketch(ABC):
    """A mechanism for text: randomize normalized text into a JSON-array answer.

    Its tally is `slots` counters (a text question's tally slots) and a report adds one to
    each of its `counters` (`supports`); p* and q* are one bit's chances of 1 when the text's
    own bucket or bit is / is not the one read."""

    name: ClassVar[str]
    #: A report marks several counters (cf. Mechanism.one_per_report).
    one_per_report: ClassVar[bool] = False
    #: Whether its candidates must be told apart for results to be computable (cms, hcms).
    separates_candidates: ClassVar[bool] = True
    #: A report is a JSON array, never a string of '0'/'1' (cf. Mechanism.bit_string).
    bit_string: ClassVar[bool] = False
    binary: ClassVar[bool] = False
    #: A text answer is always randomized (cf. Mechanism.plain).
    plain: ClassVar[bool] = False
    #: What the planners may do with it (cf. Mechanism.planning).
    planning: ClassVar[Planning | None] = None

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> Sketch:
        """The sketch a planner asks for at `epsilon`, of `shape` (its planning's by default);
        ValueError if it does not fit."""
        hashes, columns = shape or cls.planning.shape  # type: ignore[union-attr,misc]
        return cls.from_epsilon(k=hashes, m=columns, epsilon=epsilon)  # type: ignore[attr-defined,no-any-return]

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """The privacy budget of one report, from the exact probabilities used."""

    @abstractmethod
    def params(self) -> dict[str, int | Fraction]:
        """The mechanism's parameters, as the resolved survey states them."""

    def describe(self, _: Translate = english) -> str:
        """One sentence: what leaves the device, and how likely the truth is kept, in the
        language of the translator `_` (English by default)."""
        return _("What is sent: a randomized answer ({name}).").format(name=self.name)

    def odds_ratio(self) -> Fraction | float:
        """e^epsilon, exactly where the coins allow: the most an observer's odds can move."""
        return math.exp(self.epsilon)

    #: What leaves the device, in the dashboard's words (cms and hcms differ only here).
    sent_in_brief: ClassVar[str] = "a row of marks"

    def in_brief(self) -> str:
        """How the mechanism protects an answer, in a researcher's words (the dashboard's)."""
        params = self.params()
        return (
            f"answers are hashed on the device (one of {params['k']} hash functions, "
            f"{params['m']} columns) and only {self.sent_in_brief} leaves it, true with "
            f"probability {float(self.p_star):.0%}; frequencies are decoded for the candidates, "
            "collisions between them accounted for. Type candidate answers below to estimate them"
        )

    def params_text(self) -> dict[str, int | str]:
        """The parameters for JSON: probabilities as exact decimal or fraction strings."""
        return {
            key: format_probability(value) if isinstance(value, Fraction) else value
            for key, value in self.params().items()
        }

    @abstractmethod
    def randomize(self, text: str, *, random_bytes: RandomBytes | None = None) -> SketchAnswer:
        """The report answer for the normalized text, from `random_bytes` (the secure source
        by default; docs/randomness.md says which draws)."""

    @abstractmethod
    def validate(self, encoded: object) -> SketchAnswer:
        """`encoded` if it is a well-formed answer of this mechanism, else ValueError."""

    @abstractmethod
    def probability(self, encoded: SketchAnswer, text: str) -> Fraction:
        """P[answer = encoded | the normalized text], exactly."""

    @property
    @abstractmethod
    def slots(self) -> int:
        """How many counters the aggregator's tally of this sketch holds."""

    @abstractmethod
    def counters(self, encoded: SketchAnswer) -> tuple[int, ...]:
        """The counters a valid answer adds one to."""

    @property
    @abstractmethod
    def p_star(self) -> Fraction:
        """P[a bit reads 1 | it is the text's own]."""

    @property
    @abstractmethod
    def q_star(self) -> Fraction:
        """P[a bit reads 1 | it is not the text's own]."""

    def supports(self, encoded: SketchAnswer) -> tuple[int, ...]:
        """The tally slots a report adds to (its counters)."""
        return self.counters(encoded)


class CMS(KeepOrFlip, Sketch):
    """Apple's count-mean sketch: pick j < k, mark column H(j:text) mod m of m bits, then flip
    every bit with probability 1/(1 + e^(eps/2)). Two bits differ between any two texts, so
    the report is eps-LDP with keep = e^(eps/2)/(1 + e^(eps/2)) rounded down."""

    name = "cms"
    planning = Planning("cms", rows="sketches", shape=(16, 256))

    def __init__(self, *, k: int, m: int, keep: Fraction) -> None:
        if not 1 <= k <= MAX_HASHES or not 2 <= m <= MAX_WIDTH:
            raise ValueError(f"cms: k from 1 to {MAX_HASHES} and m from 2 to {MAX_WIDTH}")
        _check_cells("cms", k * m, "k x m")
        self._take_keep(keep, "cms")
        self.k, self.m = k, m
        self._marked, self._unmarked = Coin(self.keep), Coin(1 - self.keep)

    @classmethod
    def from_epsilon(cls, *, k: int, m: int, epsilon: float) -> CMS:
        half = _check_epsilon(epsilon) / 2
        return cls(k=k, m=m, keep=warner_keep(half))

    @property
    def epsilon(self) -> float:
        return 2 * math.log(self.keep / (1 - self.keep))

    def params(self) -> dict[str, int | Fraction]:
        return {"k": self.k, "m": self.m, "keep": self.keep}

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent: your answer is hashed on this device into one of {m} columns (with one "
            "of {k} hash functions), and a row of {m} marks is sent: your column marked with "
            "probability {p}, every other one with {q}, each on its own coin. Never your words."
        ).format(m=self.m, k=self.k, p=percent(self.p_star), q=percent(self.q_star))

    def odds_ratio(self) -> Fraction | float:
        return (self.p_star / self.q_star) ** 2  # two columns differ between any two answers

    def worst_variance(self, n: int) -> float:
        """The variance bound of one candidate's share by Apple's estimator at n reports (the
        read bit's lambda (1 - lambda) at most 1/4), before collisions."""
        gap = float(self.keep - (1 - self.keep))
        return (self.m / (self.m - 1)) ** 2 * 0.25 / (gap * gap * n)

    def randomize(self, text: str, *, random_bytes: RandomBytes | None = None) -> SketchAnswer:
        j = randbelow(self.k, random_bytes)
        h = sketch_column(j, text, self.m)
        return [j, self._unmarked.bit_string(self.m, random_bytes, {h: self._marked})]

    def validate(self, encoded: object) -> SketchAnswer:
        return _bits_answer(encoded, self.k, self.m, "j")

    def probability(self, encoded: SketchAnswer, text: str) -> Fraction:
        j, bits = encoded
        h = sketch_column(j, text, self.m)
        ones = bits.count("1")
        p, q = self.keep, 1 - self.keep
        marked = p if bits[h] == "1" else 1 - p
        ones_elsewhere = ones - (bits[h] == "1")
        rest = q**ones_elsewhere * (1 - q) ** (self.m - 1 - ones_elsewhere)
        return Fraction(1, self.k) * marked * rest

    @property
    def slots(self) -> int:
        return self.k * self.m + self.k  # the ones per (j, column), then the reports per j

    def counters(self, encoded: SketchAnswer) -> tuple[int, ...]:
        j, bits = encoded
        base = j * self.m
        return (*ones_at(bits, base), self.k * self.m + j)


class HCMS(KeepOrFlip, Sketch):
    """Apple's Hadamard count-mean sketch: pick j < k and l < m (m a power of two); the bit is
    1 when (-1)^popcount(l & H(j:text) mod m) is +1, kept with probability e^eps/(1 + e^eps)
    (rounded down) and flipped otherwise. One bit a report: eps = ln(keep / (1 - keep))."""

    name = "hcms"
    sent_in_brief = "one bit of a Hadamard code"
    planning = Planning("hcms", rows="sketches", shape=(16, 1024))

    def __init__(self, *, k: int, m: int, keep: Fraction) -> None:
        if not 1 <= k <= MAX_HASHES or not 2 <= m <= MAX_WIDTH or m & (m - 1):
            raise ValueError(
                f"hcms: k from 1 to {MAX_HASHES}; m a power of two from 2 to {MAX_WIDTH}, got "
                f"k={k}, m={m}"
            )
        _check_cells("hcms", k * m, "k x m")
        self._take_keep(keep, "hcms")
        self.k, self.m = k, m
        self._keep = Coin(self.keep)

    @classmethod
    def from_epsilon(cls, *, k: int, m: int, epsilon: float) -> HCMS:
        eps = _check_epsilon(epsilon)
        return cls(k=k, m=m, keep=warner_keep(eps))

    @property
    def epsilon(self) -> float:
        return math.log(self.keep / (1 - self.keep))

    def params(self) -> dict[str, int | Fraction]:
        return {"k": self.k, "m": self.m, "keep": self.keep}

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent: your answer is hashed on this device (with one of {k} hash functions "
            "picked at random) and only one bit of a {m}-entry code of that hash leaves it, true "
            "with probability {p} and flipped otherwise: never your words, and many different "
            "answers give the same bit."
        ).format(k=self.k, m=self.m, p=percent(self.p_star))

    def odds_ratio(self) -> Fraction | float:
        return self.p_star / self.q_star

    def worst_variance(self, n: int) -> float:
        """The variance bound of one candidate's share by Apple's estimator at n reports: each
        report's term is +-m/((m - 1)(2 keep - 1)), before collisions."""
        gap = float(2 * self.keep - 1)
        return (self.m / (self.m - 1)) ** 2 / (gap * gap * n)

    @staticmethod
    def entry(row: int, h: int) -> int:
        """The Hadamard matrix's entry (row l, column h) as a bit: 1 for +1, 0 for -1."""
        return 1 - (bin(row & h).count("1") & 1)

    def randomize(self, text: str, *, random_bytes: RandomBytes | None = None) -> SketchAnswer:
        j = randbelow(self.k, random_bytes)
        row = randbelow(self.m, random_bytes)
        bit = self.entry(row, sketch_column(j, text, self.m))
        return [j, row, bit if self._keep.flip(random_bytes) else 1 - bit]

    def validate(self, encoded: object) -> SketchAnswer:
        if (
            not isinstance(encoded, list)
            or len(encoded) != 3
            or any(type(x) is not int for x in encoded)
            or not 0 <= encoded[0] < self.k
            or not 0 <= encoded[1] < self.m
            or encoded[2] not in (0, 1)
        ):
            raise ValueError(
                f"expected [j 0-{self.k - 1}, l 0-{self.m - 1}, bit 0 or 1], got {encoded!r}"
            )
        return encoded

    def probability(self, encoded: SketchAnswer, text: str) -> Fraction:
        j, row, b = encoded
        bit = self.entry(row, sketch_column(j, text, self.m))
        return Fraction(1, self.k * self.m) * (self.keep if b == bit else 1 - self.keep)

    @property
    def slots(self) -> int:
        return 2 * self.k * self.m  # reports of 0 and of 1 per (j, l)

    def counters(self, encoded: SketchAnswer) -> tuple[int, ...]:
        j, row, b = encoded
        return (2 * (j * self.m + row) + b,)


class RAPPOR(Sketch):
    """Google's RAPPOR for one report: in a cohort c < m picked at random, the Bloom filter
    of k bits with h hashes; each bit goes through the permanent response (1 or 0 with
    probability f/2 each, else the true bit), then the instantaneous one (report 1 with
    probability q if that bit is 1, p if 0). Per bit, P[1 | Bloom bit 1] = f/2 (p + q) +
    (1 - f) q (the paper's q*, our p*: `set_one`) and P[1 | 0] = f/2 (p + q) + (1 - f) p (the
    paper's p*, our q*: `unset_one`), so the paper's one-report epsilon is
    h ln(set_one (1 - unset_one) / (unset_one (1 - set_one)))."""

    name = "rappor"
    #: RAPPOR selects among more candidates than its bits resolve, as the paper does.
    separates_candidates = False
    #: Planned from its decoder, with Bloom bits, hashes and cohorts of this shape by default.
    planning = Planning("rappor", rows="decoded", shape=(32, 2, 16))

    @classmethod
    def planned(
        cls, k: int, epsilon: float, width: int = 1, shape: tuple[int, ...] | None = None
    ) -> RAPPOR:
        """RAPPOR with the permanent response only (p = 0, q = 1) at (at most) epsilon:
        epsilon = 2h ln((1 - f/2) / (f/2)), f rounded up."""
        bits, hashes, cohorts = shape or cls.planning.shape  # type: ignore[union-attr,misc]
        f = round_up(2.0 / (1.0 + math.exp(epsilon / (2 * hashes))))
        return cls(k=bits, h=hashes, m=cohorts, f=f, p=Fraction(0), q=Fraction(1))

    def __init__(self, *, k: int, h: int, m: int, f: Fraction, p: Fraction, q: Fraction) -> None:
        if not 1 <= k <= MAX_BITS or not 1 <= h <= k or not 1 <= m <= MAX_COHORTS:
            raise ValueError(
                f"rappor: k from 1 to {MAX_BITS}, h from 1 to k, m from 1 to {MAX_COHORTS}"
            )
        _check_cells("rappor", m * k, "m x k")
        if not 0 <= f < 1:
            raise ValueError(f"rappor.f must lie in [0, 1), got {f}")
        if not 0 <= p < q <= 1:
            raise ValueError(f"rappor: p and q must satisfy 0 <= p < q <= 1, got {p}, {q}")
        self.k, self.h, self.m = k, h, m
        self.f, self.p, self.q = Fraction(f), Fraction(p), Fraction(q)
        noise = self.f / 2 * (self.p + self.q)
        #: P[report bit 1 | Bloom bit 1] and P[1 | 0]: the paper's q* and p*.
        self.set_one = noise + (1 - self.f) * self.q
        self.unset_one = noise + (1 - self.f) * self.p
        if self.set_one == 1 or self.unset_one == 0:
            raise ValueError("rappor: f, p and q give a report that reveals its Bloom bits")
        self._set, self._unset = Coin(self.set_one), Coin(self.unset_one)

    @classmethod
    def from_params(cls, raw: object, *, field: str = "rappor") -> RAPPOR:
        """From the survey's `"rappor": {"k", "h", "m", "f", "p", "q"}`."""
        if not isinstance(raw, dict) or set(raw) != {"k", "h", "m", "f", "p", "q"}:
            raise ValueError(f'{field}: expected {{"k", "h", "m", "f", "p", "q"}}, got {raw!r}')
        return cls(
            k=_whole(raw, "k", field, 1, MAX_BITS),
            h=_whole(raw, "h", field, 1, MAX_BITS),
            m=_whole(raw, "m", field, 1, MAX_COHORTS),
            f=parse_probability(raw["f"], field=f"{field}.f"),
            p=parse_probability(raw["p"], field=f"{field}.p"),
            q=parse_probability(raw["q"], field=f"{field}.q"),
        )

    @property
    def epsilon(self) -> float:
        ps, qs = self.unset_one, self.set_one
        return self.h * math.log(qs * (1 - ps) / (ps * (1 - qs)))

    @property
    def p_star(self) -> Fraction:
        return self.set_one

    @property
    def q_star(self) -> Fraction:
        return self.unset_one

    def params(self) -> dict[str, int | Fraction]:
        return {"k": self.k, "h": self.h, "m": self.m, "f": self.f, "p": self.p, "q": self.q}

    def describe(self, _: Translate = english) -> str:
        return _(
            "What is sent (RAPPOR): {k} bits of a Bloom filter of your answer, hashed on this "
            "device; each bit set by your answer reads 1 with probability {p}, every other with "
            "{q}. Never your words."
        ).format(k=self.k, p=percent(self.p_star), q=percent(self.q_star))

    def odds_ratio(self) -> Fraction | float:
        p, q = self.p_star, self.q_star
        return ((p * (1 - q)) / (q * (1 - p))) ** self.h

    def in_brief(self) -> str:
        p, q = float(self.p_star), float(self.q_star)
        return (
            f"answers are hashed on the device into a {self.k}-bit Bloom filter (one of "
            f"{self.m} cohorts); each of its bits reads 1 with probability {p:.0%}, every "
            f"other with {q:.0%}. Type candidate answers below to estimate them"
        )

    def randomize(self, text: str, *, random_bytes: RandomBytes | None = None) -> SketchAnswer:
        cohort = randbelow(self.m, random_bytes)
        own = dict.fromkeys(bloom_bits(cohort, text, self.h, self.k), self._set)
        return [cohort, self._unset.bit_string(self.k, random_bytes, own)]

    def validate(self, encoded: object) -> SketchAnswer:
        return _bits_answer(encoded, self.m, self.k, "cohort")

    def probability(self, encoded: SketchAnswer, text: str) -> Fraction:
        cohort, bits = encoded
        bloom = bloom_bits(cohort, text, self.h, self.k)
        prob = Fraction(1, self.m)
        for i, c in enumerate(bits):
            one = self.set_one if i in bloom else self.unset_one
            prob *= one if c == "1" else 1 - one
        return prob

    @property
    def slots(self) -> int:
        return self.m * self.k + self.m  # the ones per (cohort, bit), then reports per cohort

    def counters(self, encoded: SketchAnswer) -> tuple[int, ...]:
        cohort, bits = encoded
        base = cohort * self.k
        return (*ones_at(bits, base), self.m * self.k + cohort)
