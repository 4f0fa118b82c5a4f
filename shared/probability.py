"""Exact probabilities and unpredictable sampling.

Probabilities are held as `fractions.Fraction`; coins are drawn from `secrets` (the operating
system's CSPRNG) by comparing integers, so a sample is exact and cannot be predicted from
earlier ones. Never `random`, never numpy.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
from fractions import Fraction

#: Probabilities derived from an epsilon are rounded to this many decimals, towards more privacy.
DECIMALS = 12
_SCALE = 10**DECIMALS


def parse_probability(value: object, *, field: str) -> Fraction:
    """A probability from a JSON value: a decimal number (0.8 is held as 4/5) or a string
    "2/3" or "0.8". Raises ValueError with a reason that names `field`."""
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
            text = value.strip()
            if not text or len(text) > 64 or any(c in text for c in "eE_ "):
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
    """n fresh secure random bytes (each byte is handed out once)."""
    state = _state
    if n > _POOL_BYTES // 4:
        return secrets.token_bytes(n)
    if state.pos + n > len(state.buf):
        state.buf, state.pos = secrets.token_bytes(_POOL_BYTES), 0
    start = state.pos
    state.pos = start + n
    return state.buf[start : state.pos]


def random_bits(k: int) -> int:
    """k fresh uniformly random bits from the secure source."""
    nbytes = (k + 7) // 8
    return int.from_bytes(random_bytes(nbytes), "little") >> (nbytes * 8 - k)


def randbelow(n: int) -> int:
    """A uniform integer in [0, n), by rejection sampling of secure bits (exact, like secrets)."""
    k = n.bit_length()
    value = random_bits(k)
    while value >= n:
        value = random_bits(k)
    return value


def bernoulli(p: Fraction) -> bool:
    """True with probability exactly p: an integer comparison on secure random bits."""
    return randbelow(p.denominator) < p.numerator


class Coin:
    """A biased coin that lands heads with probability exactly `p`.

    A flip compares a uniform random number U in [0, 1), read from secure random bytes one
    base-256 digit at a time, with p's exact base-256 expansion: heads when U < p. The first
    byte decides 255 times in 256, so a flip costs about one random byte, and a string of
    flips is one `bytes.translate`. Exact for any rational p (digits come from the Fraction).
    """

    __slots__ = ("_digits", "_rest", "_table", "p")

    def __init__(self, p: Fraction) -> None:
        if not 0 <= p <= 1:
            raise ValueError(f"a probability must lie in [0, 1], got {p}")
        self.p = p
        self._digits: list[int] = []
        self._rest = Fraction(p)
        first = self.digit(0)
        # byte -> "1" (below p's first digit: heads), "0" (above: tails), "?" (equal: undecided)
        self._table = bytes(
            ord("1") if b < first else ord("?") if b == first else ord("0") for b in range(256)
        )

    def digit(self, i: int) -> int:
        """The i-th base-256 digit of p after the point (p = 1 has every digit 255... + carry,
        handled as a coin that is always heads)."""
        while len(self._digits) <= i:
            if self._rest >= 1:
                self._digits.append(256)  # p == 1: every byte is below
                continue
            scaled = self._rest * 256
            whole = scaled.numerator // scaled.denominator
            self._digits.append(whole)
            self._rest = scaled - whole
        return self._digits[i]

    def _settle(self) -> bool:
        """A flip whose first byte equalled p's first digit: compare the following bytes."""
        i = 1
        while True:
            b = random_bytes(1)[0]
            d = self.digit(i)
            if b != d:
                return b < d
            i += 1

    def flip(self) -> bool:
        """Heads with probability exactly p, from secure random bytes."""
        outcome = self._table[random_bytes(1)[0]]
        if outcome == 63:  # "?"
            return self._settle()
        return outcome == 49  # "1"

    def bit_string(self, count: int) -> str:
        """`count` independent flips as a string of '1' (heads) and '0' (tails)."""
        bits = random_bytes(count).translate(self._table).decode("ascii")
        if "?" not in bits:
            return bits
        return "".join(c if c != "?" else ("1" if self._settle() else "0") for c in bits)

    def flips(self, count: int) -> list[bool]:
        """`count` independent flips."""
        return [c == "1" for c in self.bit_string(count)]


def uniform_index(k: int) -> int:
    """A uniformly random integer in [0, k) from the secure random source."""
    return randbelow(k)


def percent(p: Fraction | float) -> str:
    """A probability as a percentage with at most one decimal ("73.1%", "50%")."""
    text = f"{float(p) * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"
