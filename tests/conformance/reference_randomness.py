"""An independent reference for docs/randomness.md: it writes tests/conformance/randomness.json.

It follows the docs page alone and imports nothing of deniable (only the standard library), so
the vectors are not deniable's own output: the Python library and the browser module are both
held to them (tests/shared/test_randomness_vectors.py, tests/browser/test_randomness_vectors_js.py),
and tests/shared/test_randomness_vectors.py checks the file is what this script writes.

Each vector is (survey, question, draw, value, bytes -> answer). The bytes are exactly those the
draw consumes: a crafted prefix (to reach rejection sampling and the coin's equal first digit)
then bytes of a seeded generator, as many as the reference reads.

    .venv/bin/python tests/conformance/reference_randomness.py   # rewrites randomness.json
"""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "randomness.json"

# -- the byte source and the two primitives (docs/randomness.md) ---------------------------------


class Stream:
    """The crafted prefix, then a seeded generator's bytes; records every byte read."""

    def __init__(self, prefix: str, seed: int) -> None:
        self.pending = list(bytes.fromhex(prefix))
        self.rng = random.Random(seed)
        self.read: list[int] = []

    def next_byte(self) -> int:
        b = self.pending.pop(0) if self.pending else self.rng.randrange(256)
        self.read.append(b)
        return b


def uniform(n: int, s: Stream) -> int:
    """docs/randomness.md, "Uniform integer below n"."""
    if n == 1:
        return 0
    k = len(bin(n - 1)) - 2
    size = -(-k // 8)
    while True:
        x = 0
        for _ in range(size):
            x = x * 256 + s.next_byte()
        x %= 2**k
        if x < n:
            return x


def digits(p: Fraction) -> Any:
    """p's base-256 digits after the point, d1, d2, ..."""
    r = p
    while True:
        d = (r * 256).numerator // (r * 256).denominator
        r = r * 256 - d
        yield d


def row(ps: list[Fraction], s: Stream) -> str:
    """docs/randomness.md, "A row of coins": one byte each first, then ties in order."""
    first = [s.next_byte() for _ in ps]
    out = []
    for p, c in zip(ps, first, strict=True):
        ds = digits(p)
        d = next(ds)
        while c == d:
            c, d = s.next_byte(), next(ds)
        out.append("1" if c < d else "0")
    return "".join(out)


def coin(p: Fraction, s: Stream) -> bool:
    """docs/randomness.md, "Coin of exact probability p": a row of one."""
    return row([p], s) == "1"


# -- the surveys the vectors draw for (their resolved form, as the page receives it) ---------

SURVEYS: dict[str, Any] = {
    "mechanisms": {
        "id": "vectors",
        "title": "Randomness vectors",
        "enrollment": "open",
        "epsilon": 15.880948353910656,
        "questions": [
            {
                "id": "rr",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "rr",
                "rr": {"keep": "0.75"},
                "epsilon": 1.0986122886681098,
                "p_star": "0.75",
                "q_star": "0.25",
            },
            {
                "id": "rr_eps",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "rr",
                "rr": {"keep": "0.73105857863"},
                "epsilon": 0.9999999999999751,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
            },
            {
                "id": "coins",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "coins",
                "coins": {"truth": "2/3", "yes": "0.5"},
                "epsilon": 1.6094379124341003,
                "p_star": "5/6",
                "q_star": "1/6",
            },
            {
                "id": "yesno",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "none",
                "epsilon": None,
                "p_star": "1",
                "q_star": "0",
            },
            {
                "id": "grr",
                "text": "?",
                "type": "categorical",
                "options": ["a", "b", "c", "d"],
                "mechanism": "grr",
                "grr": {"keep": "0.5"},
                "epsilon": 1.0986122886681098,
                "p_star": "0.5",
                "q_star": "1/6",
            },
            {
                "id": "grr_eps",
                "text": "?",
                "type": "categorical",
                "options": ["a", "b", "c", "d", "e", "f"],
                "mechanism": "grr",
                "grr": {"keep": "0.352187428351"},
                "epsilon": 0.9999999999967064,
                "p_star": "0.352187428351",
                "q_star": "0.1295625143298",
            },
            {
                "id": "oue",
                "text": "?",
                "type": "categorical",
                "options": ["a", "b", "c", "d", "e"],
                "mechanism": "oue",
                "oue": {"p": "0.5", "q": "0.26894142137"},
                "epsilon": 0.9999999999999751,
                "p_star": "0.5",
                "q_star": "0.26894142137",
            },
            {
                "id": "plain",
                "text": "?",
                "type": "categorical",
                "options": ["a", "b", "c"],
                "mechanism": "none",
                "epsilon": None,
                "p_star": "1",
                "q_star": "0",
            },
            {
                "id": "onebit",
                "text": "?",
                "type": "integer",
                "min": 0,
                "max": 10,
                "mechanism": "onebit",
                "onebit": {"keep": "0.73105857863"},
                "epsilon": 0.9999999999999751,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
            },
            {
                "id": "count",
                "text": "?",
                "type": "integer",
                "min": 1,
                "max": 5,
                "mechanism": "none",
                "epsilon": None,
                "p_star": "1",
                "q_star": "0",
            },
            {
                "id": "multi",
                "text": "?",
                "type": "multi",
                "options": ["a", "b", "c", "d"],
                "mechanism": "rr",
                "rr": {"keep": "0.622459331201"},
                "epsilon": 1.9999999999854545,
                "p_star": "0.622459331201",
                "q_star": "0.377540668799",
            },
            {
                "id": "picks",
                "text": "?",
                "type": "multi",
                "options": ["a", "b", "c"],
                "mechanism": "none",
                "epsilon": None,
                "p_star": "1",
                "q_star": "0",
            },
            {
                "id": "cms",
                "text": "?",
                "type": "text",
                "mechanism": "cms",
                "cms": {"k": 3, "m": 16, "keep": "0.73105857863"},
                "candidates": [],
                "epsilon": 1.9999999999999503,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
            },
            {
                "id": "hcms",
                "text": "?",
                "type": "text",
                "mechanism": "hcms",
                "hcms": {"k": 3, "m": 8, "keep": "0.880797077977"},
                "candidates": [],
                "epsilon": 1.9999999999915952,
                "p_star": "0.880797077977",
                "q_star": "0.119202922023",
            },
            {
                "id": "hcms_wide",
                "text": "?",
                "type": "text",
                "mechanism": "hcms",
                "hcms": {"k": 10, "m": 1024, "keep": "0.73105857863"},
                "candidates": [],
                "epsilon": 0.9999999999999751,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
            },
            {
                "id": "rappor",
                "text": "?",
                "type": "text",
                "mechanism": "rappor",
                "rappor": {"k": 16, "h": 2, "m": 3, "f": "0.5", "p": "0.5", "q": "0.75"},
                "candidates": [],
                "epsilon": 1.074285864166728,
                "p_star": "0.6875",
                "q_star": "0.5625",
            },
        ],
    },
    "waves": {
        "id": "vectors-waves",
        "title": "Randomness vectors, waves",
        "enrollment": "open",
        "epsilon": 7.499999999977198,
        "questions": [
            {
                "id": "smokes",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "l-grr",
                "l-grr": {
                    "p1": "0.880797077977",
                    "q1": "0.119202922023",
                    "p2": "0.803388066759",
                    "q2": "0.196611933241",
                },
                "longitudinal": {"epsilon_perm": 2, "epsilon_1": 1},
                "epsilon": 1.9999999999915952,
                "p_star": "0.731058578629836409333086",
                "q_star": "0.268941421370163590666914",
            },
            {
                "id": "party",
                "text": "?",
                "type": "categorical",
                "options": ["a", "b", "c", "d"],
                "mechanism": "l-grr",
                "l-grr": {
                    "p1": "0.870048506561",
                    "q1": "129951493439/3000000000000",
                    "p2": "0.655363319953",
                    "q2": "0.114878893349",
                },
                "longitudinal": {"epsilon_perm": 3, "epsilon_1": 1.5},
                "epsilon": 2.999999999996393,
                "p_star": "0.585126561535288616948844",
                "q_star": "103718359616177845762789/750000000000000000000000",
            },
            {
                "id": "mood",
                "text": "?",
                "type": "categorical",
                "options": ["low", "fair", "high", "top"],
                "mechanism": "l-osue",
                "l-osue": {
                    "p1": "0.5",
                    "q1": "0.075858180022",
                    "p2": "0.772383631778",
                    "q2": "0.227616368222",
                },
                "longitudinal": {"epsilon_perm": 2.5, "epsilon_1": 1},
                "epsilon": 2.4999999999892095,
                "p_star": "0.5",
                "q_star": "0.268941421370923367878232",
            },
        ],
        "series": "vectors",
        "wave": 1,
    },
    "ballot": {
        "id": "vectors-ballot",
        "title": "Randomness vectors, split ballot",
        "enrollment": "open",
        "epsilon": 3.9999999999965303,
        "questions": [
            {
                "id": "cheated",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "rr",
                "rr": {"keep": "0.73105857863"},
                "epsilon": 0.9999999999999751,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
                "direct_share": "0.25",
            },
            {
                "id": "general",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "rr",
                "rr": {"keep": "0.73105857863"},
                "epsilon": 0.9999999999999751,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
            },
            {
                "id": "drugs",
                "text": "?",
                "type": "binary",
                "options": ["no", "yes"],
                "mechanism": "rr",
                "rr": {"keep": "0.73105857863"},
                "epsilon": 0.9999999999999751,
                "p_star": "0.73105857863",
                "q_star": "0.26894142137",
                "direct_share": "1/3",
            },
            {
                "id": "party",
                "text": "?",
                "type": "categorical",
                "options": ["a", "b", "c"],
                "mechanism": "grr",
                "grr": {"keep": "0.576116884765"},
                "epsilon": 0.9999999999966049,
                "p_star": "0.576116884765",
                "q_star": "0.2119415576175",
                "direct_share": "0.5",
            },
        ],
    },
}


# -- the mechanisms' draws (docs/randomness.md, "The draws of each mechanism") ---------------


def frac(text: str) -> Fraction:
    """An exact probability as the resolved survey writes it ("0.75", "2/3")."""
    return Fraction(text)


def text_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def normalized(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def truth(q: dict[str, Any], value: Any) -> Any:
    """The true answer as the question type reads it (vectors give labels, numbers, lists)."""
    if q["type"] == "integer":
        return value - q["min"]
    if q["type"] == "multi":
        return {q["options"].index(v) for v in value}
    if q["type"] == "text":
        return normalized(value)
    return q["options"].index(value)


def flipped(bit: str) -> str:
    return "0" if bit == "1" else "1"


def grr(keep: Fraction, t: int, k: int, s: Stream) -> int:
    if coin(keep, s):
        return t
    o = uniform(k - 1, s)
    return o if o < t else o + 1


def unary(own: Fraction, other: Fraction, t: int, k: int, s: Stream) -> str:
    return row([own if i == t else other for i in range(k)], s)


def answer(q: dict[str, Any], value: Any, s: Stream) -> Any:
    """One report's answer of question q for the true value."""
    t = truth(q, value)
    name = q["mechanism"]
    raw = q.get(name, {})
    k = len(q.get("options", ()))
    if name == "none":
        if q["type"] == "integer":
            return value
        if q["type"] == "multi":
            return "".join("1" if i in t else "0" for i in range(k))
        return t
    if q["type"] == "multi":  # rr on each option's mark
        kept = row([frac(raw["keep"])] * k, s)
        return "".join(c if i in t else flipped(c) for i, c in enumerate(kept))
    if name == "rr":
        return t if coin(frac(raw["keep"]), s) else 1 - t
    if name == "coins":
        if coin(frac(raw["truth"]), s):
            return t
        return 1 if coin(frac(raw["yes"]), s) else 0
    if name == "grr":
        return grr(frac(raw["keep"]), t, k, s)
    if name == "oue":
        return unary(frac(raw["p"]), frac(raw["q"]), t, k, s)
    if name == "onebit":
        p = frac(raw["keep"])
        one = (1 - p) + (p - (1 - p)) * Fraction(t, q["max"] - q["min"])
        return 1 if coin(one, s) else 0
    if name == "cms":
        keep, m = frac(raw["keep"]), raw["m"]
        j = uniform(raw["k"], s)
        h = text_hash(f"{j}:{t}") % m
        return [j, row([keep if i == h else 1 - keep for i in range(m)], s)]
    if name == "hcms":
        keep, m = frac(raw["keep"]), raw["m"]
        j = uniform(raw["k"], s)
        l_ = uniform(m, s)
        h = text_hash(f"{j}:{t}") % m
        b = 1 - bin(l_ & h).count("1") % 2
        return [j, l_, b if coin(keep, s) else 1 - b]
    if name == "rappor":
        f, p, qq = frac(raw["f"]), frac(raw["p"]), frac(raw["q"])
        one_set = f / 2 * (p + qq) + (1 - f) * qq
        one_unset = f / 2 * (p + qq) + (1 - f) * p
        c = uniform(raw["m"], s)
        bloom = {text_hash(f"{c}:{i}:{t}") % raw["k"] for i in range(raw["h"])}
        ps = [one_set if i in bloom else one_unset for i in range(raw["k"])]
        return [c, row(ps, s)]
    if name in ("l-grr", "l-osue"):
        return wave(q, permanent(q, value, s), s)
    raise ValueError(f"no reference for {name}")


def permanent(q: dict[str, Any], value: Any, s: Stream) -> Any:
    """A longitudinal question's permanent response (the memo) for the true value."""
    t, raw, k = truth(q, value), q[q["mechanism"]], len(q["options"])
    if q["mechanism"] == "l-grr":
        return grr(frac(raw["p1"]), t, k, s)
    return unary(frac(raw["p1"]), frac(raw["q1"]), t, k, s)


def wave(q: dict[str, Any], memo: Any, s: Stream) -> Any:
    """A longitudinal question's report in one wave, from its memo."""
    raw, k = q[q["mechanism"]], len(q["options"])
    if q["mechanism"] == "l-grr":
        return grr(frac(raw["p2"]), memo, k, s)
    kept = row([frac(raw["p2"])] * k, s)
    return "".join(m if c == "1" else flipped(m) for m, c in zip(memo, kept, strict=True))


def arms(survey: dict[str, Any], asked: list[str], s: Stream) -> dict[str, str]:
    """The split-ballot arms of the questions asked, in the survey's order."""
    out = {}
    for q in survey["questions"]:
        if q["id"] in asked and "direct_share" in q:
            out[q["id"]] = "direct" if coin(frac(q["direct_share"]), s) else "randomized"
    return out


DRAWS: dict[str, Callable[..., Any]] = {
    "answer": lambda survey, q, value, s: answer(q, value, s),
    "permanent": lambda survey, q, value, s: permanent(q, value, s),
    "wave": lambda survey, q, value, s: wave(q, value, s),
    "arms": lambda survey, q, value, s: arms(survey, value, s),
    "uniform": lambda survey, q, value, s: uniform(value, s),
    "coin": lambda survey, q, value, s: coin(frac(value), s),
}

#: (survey, question, draw, value, crafted prefix, how many seeded vectors after it). Prefixes:
#: rr keep 3/4 has first digit 0xc0 (192); keep 0.73105857863 0xbb (187); coins' truth 2/3 0xaa
#: and yes 1/2 0x80; grr over 4 options draws uniform(3) (low 2 bits, 3 rejected) and over 6
#: uniform(5) (low 3 bits, 5 to 7 rejected); cms and hcms k = 3 draw j by uniform(3), rappor's
#: cohort uniform(3); hcms_wide's j uniform(10) (4 bits) and its row uniform(1024) (2 bytes).
CASES: list[tuple[str, str | None, str, Any, str, int]] = [
    ("mechanisms", None, "uniform", 1, "", 1),
    ("mechanisms", None, "uniform", 2, "ff", 1),
    ("mechanisms", None, "uniform", 3, "0707070706", 1),
    ("mechanisms", None, "uniform", 3, "", 4),
    ("mechanisms", None, "uniform", 300, "012cfe05", 1),
    ("mechanisms", None, "uniform", 300, "", 4),
    ("mechanisms", None, "uniform", 65536, "ffff", 1),
    ("mechanisms", None, "uniform", 65537, "01ffff", 1),
    ("mechanisms", None, "coin", "3/4", "bf", 1),
    ("mechanisms", None, "coin", "3/4", "c1", 1),
    ("mechanisms", None, "coin", "3/4", "c0000007", 1),
    ("mechanisms", None, "coin", "1/3", "5555555554", 1),
    ("mechanisms", None, "coin", "1/3", "5556", 1),
    ("mechanisms", None, "coin", "1", "ff", 1),
    ("mechanisms", None, "coin", "0", "000001", 1),
    ("mechanisms", None, "coin", "0.73105857863", "", 6),
    ("mechanisms", "rr", "answer", "yes", "bf", 1),
    ("mechanisms", "rr", "answer", "yes", "c1", 1),
    ("mechanisms", "rr", "answer", "no", "c0", 2),
    ("mechanisms", "rr", "answer", "no", "", 3),
    ("mechanisms", "rr_eps", "answer", "yes", "bb", 3),
    ("mechanisms", "rr_eps", "answer", "no", "", 3),
    ("mechanisms", "rr_eps", "answer", "no", "bb10", 1),
    ("mechanisms", "coins", "answer", "yes", "a9", 1),
    ("mechanisms", "coins", "answer", "no", "ab7f", 1),
    ("mechanisms", "coins", "answer", "yes", "ab81", 1),
    ("mechanisms", "coins", "answer", "no", "aaaa", 2),
    ("mechanisms", "coins", "answer", "no", "ab80", 2),
    ("mechanisms", "coins", "answer", "yes", "", 4),
    ("mechanisms", "yesno", "answer", "yes", "", 1),
    ("mechanisms", "grr", "answer", "b", "7f", 1),
    ("mechanisms", "grr", "answer", "b", "8003", 1),
    ("mechanisms", "grr", "answer", "b", "80070b", 1),
    ("mechanisms", "grr", "answer", "c", "80ff0300", 1),
    ("mechanisms", "grr", "answer", "a", "80", 3),
    ("mechanisms", "grr", "answer", "d", "", 4),
    ("mechanisms", "grr_eps", "answer", "c", "ff0506", 1),
    ("mechanisms", "grr_eps", "answer", "f", "ff07", 2),
    ("mechanisms", "grr_eps", "answer", "a", "", 6),
    ("mechanisms", "oue", "answer", "c", "", 6),
    ("mechanisms", "oue", "answer", "a", "80000000ff", 2),
    ("mechanisms", "oue", "answer", "e", "4444444444", 2),
    ("mechanisms", "plain", "answer", "b", "", 1),
    ("mechanisms", "onebit", "answer", 7, "", 6),
    ("mechanisms", "onebit", "answer", 0, "", 3),
    ("mechanisms", "onebit", "answer", 10, "", 3),
    ("mechanisms", "count", "answer", 4, "", 1),
    ("mechanisms", "multi", "answer", ["b", "d"], "", 5),
    ("mechanisms", "multi", "answer", [], "9f9f9f9f", 2),
    ("mechanisms", "multi", "answer", ["a", "b", "c", "d"], "", 2),
    ("mechanisms", "picks", "answer", ["a", "c"], "", 1),
    ("mechanisms", "cms", "answer", "Lagos", "03", 2),
    ("mechanisms", "cms", "answer", "Port  Harcourt", "", 4),
    ("mechanisms", "cms", "answer", "kano", "02bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 2),
    ("mechanisms", "hcms", "answer", "Lagos", "0300", 1),
    ("mechanisms", "hcms", "answer", "Lagos", "0107", 1),
    ("mechanisms", "hcms", "answer", "Lagos", "0205", 1),
    ("mechanisms", "hcms", "answer", "jos", "", 8),
    ("mechanisms", "hcms", "answer", "jos", "0006", 1),
    ("mechanisms", "hcms", "answer", "kano", "0003e1", 2),
    ("mechanisms", "hcms_wide", "answer", "Lagos", "0f0a03ff", 1),
    ("mechanisms", "hcms_wide", "answer", "ibadan", "", 6),
    ("mechanisms", "rappor", "answer", "Lagos", "03", 2),
    ("mechanisms", "rappor", "answer", "kano", "", 4),
    ("mechanisms", "rappor", "answer", "jos", "0290", 2),
    ("waves", "smokes", "answer", "yes", "", 4),
    ("waves", "smokes", "permanent", "yes", "", 3),
    ("waves", "smokes", "permanent", "no", "e1", 2),
    ("waves", "smokes", "wave", 1, "", 3),
    ("waves", "smokes", "wave", 0, "cd", 2),
    ("waves", "party", "answer", "c", "", 4),
    ("waves", "party", "permanent", "b", "ff03", 2),
    ("waves", "party", "permanent", "d", "", 3),
    ("waves", "party", "wave", 2, "", 3),
    ("waves", "party", "wave", 0, "a7", 2),
    ("waves", "mood", "answer", "fair", "", 4),
    ("waves", "mood", "permanent", "high", "", 3),
    ("waves", "mood", "permanent", "low", "8013131313", 2),
    ("waves", "mood", "wave", "0110", "", 3),
    ("waves", "mood", "wave", "1000", "c5c5c5c5", 2),
    ("ballot", None, "arms", ["cheated", "general", "drugs", "party"], "", 6),
    ("ballot", None, "arms", ["cheated", "general", "drugs", "party"], "40555580", 2),
    ("ballot", None, "arms", ["general", "party"], "", 3),
    ("ballot", None, "arms", ["drugs"], "3fff", 2),
]


def vectors() -> dict[str, Any]:
    """The file's content: the surveys, and each vector with the bytes it consumes."""
    out = []
    seed = 0
    for survey_name, qid, draw, value, prefix, count in CASES:
        survey = SURVEYS[survey_name]
        question = next((q for q in survey["questions"] if q["id"] == qid), None)
        for _ in range(count):
            seed += 1
            stream = Stream(prefix, seed)
            got = DRAWS[draw](survey, question, value, stream)
            mechanism = question["mechanism"] if question else draw
            out.append(
                {
                    "mechanism": mechanism,
                    "survey": survey_name,
                    "question": qid,
                    "draw": draw,
                    "value": value,
                    "bytes": bytes(stream.read).hex(),
                    "answer": got,
                }
            )
    return {
        "about": (
            "Randomness from a byte source (docs/randomness.md): each vector's answer is what "
            "its draw returns given exactly these bytes, written by "
            "tests/conformance/reference_randomness.py."
        ),
        "surveys": SURVEYS,
        "vectors": out,
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(vectors(), indent=1, ensure_ascii=False) + "\n", "utf-8")
