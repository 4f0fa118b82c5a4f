"""Exact probabilities and unpredictable sampling.

Probabilities are held as `fractions.Fraction`; every draw reads a byte source through two
primitives, a uniform integer below n and a coin of exact probability p (docs/randomness.md),
so a sample is exact and the browser draws the same answer from the same bytes. The default
source is `secrets` (the operating system's CSPRNG): unpredictable from earlier draws. Never
`random`, never numpy.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from fractions import Fraction

#: Probabilities derived from an epsilon are rounded to this many decimals, towards more privacy.
DECIMALS = 12
_SCALE = 10**DECIMALS


#: The one grammar of a probability written as text, in surveys, planners and the browser
#: (probability.js): ASCII digits, a decimal ("0.8", ".5", "1") or a fraction ("2/3"), at most
#: 18 digits a part (the denominator stays within 10^18); no sign, exponent, space or other
#: script's digits.
PROBABILITY_TEXT = re.compile(
    r"[0-9]{1,18}(?:\.[0-9]{0,18})?|\.[0-9]{1,18}|[0-9]{1,18}/[0-9]{1,18}"
)
#: What may surround such a text (and is dropped): ASCII white space only, as probability.js
#: says it too (str.strip and String.trim disagree beyond it: U+FEFF, U+0085, U+001C...).
PROBABILITY_SPACE = " \t\n\r\f\v"


def parse_probability(value: object, *, field: str) -> Fraction:
    """A probability from a JSON value or typed text: a decimal number (0.8 is held as 4/5) or
    a string in PROBABILITY_TEXT's grammar ("2/3", "0.8"). Raises ValueError with a reason
    that names `field`."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f'{field}: expected a probability like 0.8 or "2/3", got {value!r}')
    try:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError
            frac = Fraction(repr(value))
        elif isinstance(value, int):
            frac = Fraction(value)
        elif isinstance(value, str):
            text = value.strip(PROBABILITY_SPACE)
            if not PROBABILITY_TEXT.fullmatch(text):
                raise ValueError
            frac = Fraction(text)
        else:
            raise ValueError
    except (ValueError, ZeroDivisionError):
        raise ValueError(
            f'{field}: expected a probability like 0.8 or "2/3", got {value!r}'
        ) from None
    if not 0 <= frac <= 1:
        raise ValueError(f"{field}: a probability must lie in [0, 1], got {value!r}")
    if frac.denominator > 10**18:
        raise ValueError(f"{field}: denominator too large in {value!r} (at most 10^18)")
    return frac


def format_probability(p: Fraction) -> str:
    """The exact text of a probability: a decimal when it has one ("0.8"), else "n/d"."""
    den = p.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"{p.numerator}/{p.denominator}"
    places = max(twos, fives)
    if places == 0:
        return str(p.numerator)
    scaled = p.numerator * 10**places // p.denominator
    sign = "-" if scaled < 0 else ""
    digits = str(abs(scaled)).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def round_down(x: float) -> Fraction:
    """x rounded down to DECIMALS decimals, held exactly."""
    return Fraction(math.floor(x * _SCALE), _SCALE)


def round_up(x: float) -> Fraction:
    """x rounded up to DECIMALS decimals, held exactly."""
    return Fraction(math.ceil(x * _SCALE), _SCALE)


_POOL_BYTES = 4096

#: A byte source: called with n, returns the next n bytes of a stream (docs/randomness.md).
RandomBytes = Callable[[int], bytes]


class _SecurePool(threading.local):
    """Bytes from `secrets.token_bytes`, fetched 4 KiB at a time: one system call serves many
    coins. Per thread, and emptied in a forked child so that no two processes share bytes."""

    def __init__(self) -> None:
        self.buf = b""
        self.pos = 0


_state = _SecurePool()


def _forget_in_child() -> None:
    _state.buf, _state.pos = b"", 0


os.register_at_fork(after_in_child=_forget_in_child)


def random_bytes(n: int) -> bytes:
    """n fresh secure random bytes (each byte is handed out once): the default byte source."""
    state = _state
    if n > _POOL_BYTES // 4:
        return secrets.token_bytes(n)
    if state.pos + n > len(state.buf):
        state.buf, state.pos = secrets.token_bytes(_POOL_BYTES), 0
    start = state.pos
    state.pos = start + n
    return state.buf[start : state.pos]


def _read(source: RandomBytes, n: int) -> bytes:
    """n bytes from `source`, which must give exactly n."""
    got = source(n)
    if len(got) != n:
        raise ValueError(f"the byte source gave {len(got)} bytes where {n} were asked")
    return got


def randbelow(n: int, source: RandomBytes | None = None) -> int:
    """A uniform integer in [0, n) by rejection sampling (docs/randomness.md): the bit length
    k of n - 1, ceil(k / 8) bytes read as a big-endian integer, its low k bits kept, tried
    again with fresh bytes while not below n. n = 1 reads nothing."""
    if n < 1:
        raise ValueError(f"randbelow needs n >= 1, got {n}")
    k = (n - 1).bit_length()
    if k == 0:
        return 0
    source = source or random_bytes
    size, mask = (k + 7) // 8, (1 << k) - 1
    while True:
        value = int.from_bytes(_read(source, size), "big") & mask
        if value < n:
            return value


def bernoulli(p: Fraction, source: RandomBytes | None = None) -> bool:
    """True with probability exactly p: one flip of `Coin(p)`."""
    return Coin(p).flip(source)


class Coin:
    """A biased coin that lands heads with probability exactly `p` (docs/randomness.md).

    A flip compares a uniform random number U in [0, 1), read from the byte source one
    base-256 digit at a time, with p's exact base-256 expansion: heads when U < p. The first
    byte decides 255 times in 256, so a flip costs about one byte, and a row of flips is one
    `bytes.translate`. Exact for any rational p (the digits come from the Fraction; p = 1 has
    the first digit 256, so every byte is below it)."""

    __slots__ = ("_digits", "_first", "_rest", "_table_cache", "p")

    def __init__(self, p: Fraction) -> None:
        if not 0 <= p <= 1:
            raise ValueError(f"a probability must lie in [0, 1], got {p}")
        self.p = p
        self._digits: list[int] = []
        self._rest = Fraction(p)
        self._first = self.digit(0)
        self._table_cache: bytes | None = None

    def digit(self, i: int) -> int:
        """The i-th base-256 digit of p after the point: floor(256 r) of the remainder r so
        far (256 for p = 1, whose first digit every byte is below)."""
        while len(self._digits) <= i:
            scaled = self._rest * 256
            whole = scaled.numerator // scaled.denominator
            self._digits.append(whole)
            self._rest = scaled - whole
        return self._digits[i]

    @property
    def _table(self) -> bytes:
        """byte -> "1" (below p's first digit: heads), "0" (above: tails), "?" (equal)."""
        if self._table_cache is None:
            first = self._first
            self._table_cache = bytes(
                ord("1") if b < first else ord("?") if b == first else ord("0") for b in range(256)
            )
        return self._table_cache

    def _settle(self, source: RandomBytes) -> bool:
        """A flip whose first byte equalled p's first digit: compare the following bytes."""
        i = 1
        while True:
            b = _read(source, 1)[0]
            d = self.digit(i)
            if b != d:
                return b < d
            i += 1

    def flip(self, source: RandomBytes | None = None) -> bool:
        """Heads with probability exactly p, from the byte source (the secure one by default)."""
        b = random_bytes(1)[0] if source is None else _read(source, 1)[0]
        if b == self._first:
            return self._settle(source or random_bytes)
        return b < self._first

    def bit_string(
        self,
        count: int,
        source: RandomBytes | None = None,
        others: Mapping[int, Coin] | None = None,
    ) -> str:
        """A row of `count` flips as '1' (heads) and '0' (tails): flip i is this coin's, or
        `others[i]`'s. One byte per flip first, then each tie settled in order."""
        source = source or random_bytes
        raw = _read(source, count)
        bits = raw.translate(self._table_cache or self._table)
        if others:
            row = bytearray(bits)
            for i, coin in others.items():
                row[i] = (coin._table_cache or coin._table)[raw[i]]
            bits = bytes(row)
        text = bits.decode("ascii")
        if "?" not in text:
            return text
        out = list(text)
        for i, c in enumerate(out):
            if c == "?":
                coin = others.get(i, self) if others else self
                out[i] = "1" if coin._settle(source) else "0"
        return "".join(out)

    def flips(self, count: int, source: RandomBytes | None = None) -> list[bool]:
        """`count` independent flips."""
        return [c == "1" for c in self.bit_string(count, source)]


def percent(p: Fraction | float) -> str:
    """A probability as a percentage with at most one decimal ("73.1%", "50%")."""
    text = f"{float(p) * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"
