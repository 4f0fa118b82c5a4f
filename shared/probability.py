"""Exact probabilities and unpredictable sampling.

Probabilities are held as `fractions.Fraction`; coins are drawn from `secrets` by comparing
integers, so a sample is exact and cannot be predicted from earlier ones.
"""

from __future__ import annotations

import math
import secrets
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


def bernoulli(p: Fraction) -> bool:
    """True with probability exactly p, from the operating system's secure random source."""
    return secrets.randbelow(p.denominator) < p.numerator


def uniform_index(k: int) -> int:
    """A uniformly random integer in [0, k) from the secure random source."""
    return secrets.randbelow(k)
