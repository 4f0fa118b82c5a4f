"""Text answers: docs/surveys.md's normalization and hash, and the three sketch mechanisms' exact
probabilities, privacy, sampler frequencies and answer checks."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from fractions import Fraction as F
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from deniable.shared import Survey, SurveyError
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.text import bloom_bits, normalize_text, sketch_column, text_hash

DRAWS = 100_000
SE_BOUND = 5
ALPHA = 1e-6


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("  Lagos   CITY ", "lagos city"),
        ("Ｌａｇｏｓ", "lagos"),  # full-width letters: NFKC
        ("ﬁsh\u00a0and\u2003chips", "fish and chips"),  # ligature, no-break and em spaces
        ("a\tb\nc\x1fd\x85e", "a b c d e"),  # every white space Python's split knows
        ("ΟΔΟΣ", "οδος"),  # final sigma
        ("", ""),
    ],
)
def test_normalization_is_designs(raw: str, normal: str) -> None:
    assert normalize_text(raw) == normal


def test_the_hash_is_the_first_8_bytes_of_sha256_big_endian() -> None:
    assert text_hash("") == 0xE3B0C44298FC1C14 == 16406829232824261652
    expected = int.from_bytes(hashlib.sha256(b"3:lagos").digest()[:8], "big")
    assert sketch_column(3, "lagos", 1024) == expected % 1024
    assert bloom_bits(2, "kano", 2, 32) == {text_hash(f"2:{i}:kano") % 32 for i in range(2)}


def test_cms_keeps_e_to_half_epsilon_rounded_down() -> None:
    m = CMS.from_epsilon(k=16, m=1024, epsilon=4.0)
    assert m.keep == F(880797077977, 10**12)  # e^2 / (1 + e^2) = 0.88079707797788...
    assert 4.0 - 1e-9 < m.epsilon <= 4.0


def test_hcms_keeps_e_to_epsilon_rounded_down() -> None:
    m = HCMS.from_epsilon(k=16, m=1024, epsilon=4.0)
    assert m.keep == F(982013790037, 10**12)  # e^4 / (1 + e^4) = 0.98201379003790...
    assert 4.0 - 1e-9 < m.epsilon <= 4.0


def test_rappors_one_report_epsilon_is_the_papers() -> None:
    # f = 1/2, p = 1/2, q = 3/4, h = 2 (the paper's example): q* = 11/16, p* = 9/16,
    # eps_1 = 2 ln((11/16)(7/16) / ((9/16)(5/16))) = 2 ln(77/45) = 1.0743.
    m = RAPPOR(k=32, h=2, m=8, f=F(1, 2), p=F(1, 2), q=F(3, 4))
    assert (m.set_one, m.unset_one) == (F(11, 16), F(9, 16)) == (m.p_star, m.q_star)
    assert m.epsilon == pytest.approx(2 * math.log(77 / 45), abs=1e-12)
    assert m.params_text() == {"k": 32, "h": 2, "m": 8, "f": "0.5", "p": "0.5", "q": "0.75"}


TINY: list[Sketch] = [
    CMS.from_epsilon(k=2, m=3, epsilon=1.0),
    HCMS.from_epsilon(k=2, m=4, epsilon=1.0),
    RAPPOR(k=3, h=2, m=2, f=F(1, 2), p=F(1, 2), q=F(3, 4)),
]


def outputs(m: Sketch) -> list[list]:
    if isinstance(m, HCMS):
        return [[j, row, b] for j in range(m.k) for row in range(m.m) for b in (0, 1)]
    first, width = (m.k, m.m) if isinstance(m, CMS) else (m.m, m.k)
    return [[i, "".join(bits)] for i in range(first) for bits in product("01", repeat=width)]


@pytest.mark.parametrize("m", TINY, ids=lambda m: m.name)
def test_probabilities_are_distributions_within_e_to_the_epsilon(m: Sketch) -> None:
    texts = ["lagos", "kano", "abuja", "ibadan", "jos"]
    worst = 1.0
    for text in texts:
        assert sum(m.probability(o, text) for o in outputs(m)) == 1
    for o in outputs(m):
        probs = [m.probability(o, t) for t in texts]
        worst = max(worst, float(max(probs) / min(probs)))
    assert math.log(worst) <= m.epsilon + 1e-12


@pytest.mark.parametrize("m", TINY, ids=lambda m: m.name)
def test_every_answer_validates_and_adds_to_its_own_counters(m: Sketch) -> None:
    for o in outputs(m):
        assert m.validate(o) == o
        counters = m.counters(o)
        assert all(0 <= c < m.slots for c in counters) and len(set(counters)) == len(counters)


@pytest.mark.parametrize(
    ("m", "bad"),
    [
        (TINY[0], [2, "010"]),
        (TINY[0], [0, "01"]),
        (TINY[0], [0, "012"]),
        (TINY[0], ["0", "010"]),
        (TINY[1], [0, 4, 1]),
        (TINY[1], [0, 0, 2]),
        (TINY[1], [0, 0, True]),
        (TINY[1], [0, 0]),
        (TINY[2], [2, "101"]),
        (TINY[2], {"cohort": 0}),
    ],
)
def test_malformed_answers_are_refused(m: Sketch, bad: object) -> None:
    with pytest.raises(ValueError, match="expected"):
        m.validate(bad)


@pytest.mark.parametrize(
    "build",
    [
        lambda: CMS(k=0, m=8, keep=F(3, 4)),
        lambda: CMS(k=4, m=1, keep=F(3, 4)),
        lambda: CMS(k=4, m=8, keep=F(1, 2)),
        lambda: HCMS(k=4, m=12, keep=F(3, 4)),
        lambda: RAPPOR(k=8, h=9, m=2, f=F(1, 2), p=F(1, 2), q=F(3, 4)),
        lambda: RAPPOR(k=8, h=2, m=2, f=F(1), p=F(1, 2), q=F(3, 4)),
        lambda: RAPPOR(k=8, h=2, m=2, f=F(1, 2), p=F(3, 4), q=F(1, 2)),
        lambda: RAPPOR.from_params({"k": 8, "h": 2, "m": 2, "f": "1/2", "p": "1/2"}),
        lambda: RAPPOR.from_params({"k": 8.0, "h": 2, "m": 2, "f": 0.5, "p": 0.5, "q": 0.75}),
        lambda: CMS.from_epsilon(k=4, m=8, epsilon=20.0),
        lambda: HCMS(k=128, m=1024, keep=F(3, 4)),  # 131,072 cells: over the counters kept
        lambda: RAPPOR(k=4096, h=2, m=32, f=F(1, 2), p=F(1, 2), q=F(3, 4)),
    ],
)
def test_bad_parameters_are_refused_with_the_field(build) -> None:
    with pytest.raises(ValueError, match=r"cms|hcms|rappor|epsilon"):
        build()


def _within(count: int, n: int, p: F) -> bool:
    return abs(count - n * float(p)) <= SE_BOUND * math.sqrt(n * float(p) * (1 - float(p)))


def _uniform(counts: Counter, cells: int, n: int) -> bool:
    stat = sum((counts[c] - n / cells) ** 2 / (n / cells) for c in range(cells))
    return chi2.sf(stat, cells - 1) > ALPHA


def test_cms_sampler_marks_its_column_with_keep_and_others_with_one_minus_keep() -> None:
    m = CMS.from_epsilon(k=8, m=32, epsilon=2.0)
    answers = [m.randomize("lagos") for _ in range(DRAWS)]
    assert _uniform(Counter(j for j, _ in answers), 8, DRAWS)
    marked = sum(bits[sketch_column(j, "lagos", 32)] == "1" for j, bits in answers)
    assert _within(marked, DRAWS, m.keep)
    other = sum(bits[(sketch_column(j, "lagos", 32) + 1) % 32] == "1" for j, bits in answers)
    assert _within(other, DRAWS, 1 - m.keep)


def test_hcms_sampler_reports_the_hadamard_entry_with_keep() -> None:
    m = HCMS.from_epsilon(k=8, m=64, epsilon=1.0)
    answers = [m.randomize("kano") for _ in range(DRAWS)]
    assert _uniform(Counter(j for j, _, _ in answers), 8, DRAWS)
    assert _uniform(Counter(row for _, row, _ in answers), 64, DRAWS)
    kept = sum(b == HCMS.entry(row, sketch_column(j, "kano", 64)) for j, row, b in answers)
    assert _within(kept, DRAWS, m.keep)


def test_rappor_sampler_sets_bloom_bits_with_set_one_and_others_with_unset_one() -> None:
    m = RAPPOR(k=16, h=2, m=4, f=F(1, 2), p=F(1, 2), q=F(3, 4))
    answers = [m.randomize("abuja") for _ in range(DRAWS)]
    assert _uniform(Counter(c for c, _ in answers), 4, DRAWS)
    set_ones = set_total = other_ones = other_total = 0
    for cohort, bits in answers:
        bloom = bloom_bits(cohort, "abuja", 2, 16)
        set_ones += sum(bits[i] == "1" for i in bloom)
        set_total += len(bloom)
        other_ones += sum(c == "1" for i, c in enumerate(bits) if i not in bloom)
        other_total += 16 - len(bloom)
    assert _within(set_ones, set_total, m.set_one)
    # Bits within a report are independent given the Bloom filter, so the count is binomial.
    assert _within(other_ones, other_total, m.unset_one)


def test_the_checks_catch_a_keep_off_by_0_02() -> None:
    # 0.02 is 14 standard errors at 100,000 draws: caught every time, not 99.5% of the time.
    m = HCMS.from_epsilon(k=8, m=64, epsilon=1.0)
    wrong = HCMS(k=8, m=64, keep=m.keep + F(2, 100))
    kept = sum(
        b == HCMS.entry(row, sketch_column(j, "kano", 64))
        for j, row, b in (wrong.randomize("kano") for _ in range(DRAWS))
    )
    assert not _within(kept, DRAWS, m.keep)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=8,
)
FIELDS = st.sampled_from(["hcms", "cms", "rappor", "candidates", "epsilon", "p_star", "q_star"])
SMALL = st.integers(0, 70) | st.sampled_from(["1/2", "0.75", "3/4", "+1.", " 2 "])
PARAMS = st.dictionaries(st.sampled_from(["k", "m", "h", "f", "p", "q", "keep", "x"]), SMALL)


@settings(max_examples=300, deadline=None)
@given(
    mechanism=st.sampled_from(["hcms", "cms", "rappor", "grr", None]),
    fields=st.dictionaries(FIELDS, JSON | PARAMS, max_size=4),
)
def test_any_text_question_document_is_a_survey_or_a_survey_error(mechanism, fields) -> None:
    question = {"id": "q", "text": "Q?", "type": "text", **fields}
    if mechanism is not None:
        question["mechanism"] = mechanism
    try:
        survey = Survey.from_dict({"id": "s", "title": "S", "questions": [question]})
    except SurveyError:
        return
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash
