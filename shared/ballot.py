"""Split ballots: a randomized question asked directly (plainly) to a random share of devices.

Comparing the two arms tells a researcher whether randomized response made people admit more
(docs/statistics.md, "Split ballot"). The arm is drawn on the device from the secure source with
the exact share, and travels in the report as `"arms": {"<qid>": "direct" | "randomized"}`; a
direct answer is encoded like a plain question's and sent exactly as given, which every
respondent interface says before anything is sent.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from fractions import Fraction

from deniable.shared import i18n
from deniable.shared.probability import (
    RandomBytes,
    bernoulli,
    format_probability,
    parse_probability,
)

DIRECT = "direct"
RANDOMIZED = "randomized"
ARMS = (DIRECT, RANDOMIZED)
#: The report field that carries each split-ballot question's arm.
FIELD = "arms"
#: The question field that makes a question a split ballot.
SHARE_FIELD = "direct_share"
#: `answer_counts` (the aggregator's analyses, and its stores) reads a split-ballot
#: question's arm for the id ARM_PREFIX + its id; no question id can start with it.
ARM_PREFIX = "@"
#: The smallest share a direct arm may have (and 1 minus the largest): each arm needs answers.
MIN_SHARE = Fraction(1, 1000)


def parse_share(value: object, *, field: str) -> Fraction:
    """The share of devices asked directly: a probability strictly inside (0, 1), as a decimal
    (0.25) or a fraction ("1/4"). Raises ValueError naming `field` with what to give."""
    share = parse_probability(value, field=field)
    if not MIN_SHARE <= share <= 1 - MIN_SHARE:
        raise ValueError(
            f"{field}: the share asked directly must lie in [{format_probability(MIN_SHARE)}, "
            f"{format_probability(1 - MIN_SHARE)}] so that both arms get answers, got {value!r}"
        )
    return share


def draw_arm(share: Fraction, *, random_bytes: RandomBytes | None = None) -> str:
    """`direct` with probability exactly `share`, else `randomized`: one coin of the byte
    source (the secure one by default; docs/randomness.md)."""
    return DIRECT if bernoulli(share, random_bytes) else RANDOMIZED


def check_arms(arms: object, split: Collection[str], asked: Collection[str]) -> dict[str, str]:
    """The arms of a report: exactly one valid arm for each split-ballot question it holds.

    `split` are the survey's split-ballot questions, `asked` the questions the report answers.
    Raises ValueError naming the question and what is wrong."""
    expected = [qid for qid in split if qid in asked]
    if arms is None:
        if expected:
            raise ValueError(
                f"{FIELD}.{expected[0]}: missing; a split-ballot question's report says "
                f"which arm it was drawn in ({DIRECT!r} or {RANDOMIZED!r})"
            )
        return {}
    if not isinstance(arms, Mapping):
        raise ValueError(f"{FIELD}: expected an object of question id -> arm, got {arms!r:.60}")
    for qid, arm in arms.items():
        if qid not in expected:
            why = "not a split-ballot question" if qid not in split else "not in this report"
            raise ValueError(f"{FIELD}.{qid!s:.64}: {why}; give arms only for the questions asked")
        if arm not in ARMS:
            raise ValueError(
                f"{FIELD}.{qid}: expected {DIRECT!r} or {RANDOMIZED!r}, got {arm!r:.40}"
            )
    for qid in expected:
        if qid not in arms:
            raise ValueError(
                f"{FIELD}.{qid}: missing; a split-ballot question's report says which arm it was "
                f"drawn in ({DIRECT!r} or {RANDOMIZED!r})"
            )
    return dict(arms)


#: What every respondent interface says beside a question drawn in the direct arm, before
#: anything is sent (a msgid of the product's catalogs, shared/i18n.py).
DIRECT_NOTICE = "This question is asked directly on this device: sent exactly as you answer."
#: What an explanation says of a split-ballot question before the arm is drawn.
SPLIT_EXPLAINED = (
    "{question}: asked directly (sent exactly as you answer, with no privacy cost counted) on "
    "{share} of devices and randomized on the rest; your device draws which when you answer "
    "and says so before anything is sent."
)


def direct_notice(lang: str | None = None) -> str:
    """The direct arm's notice in the respondent's language (English without a catalog)."""
    return i18n.translator(lang)(DIRECT_NOTICE)


def split_lines(shares: Mapping[str, Fraction], lang: str | None = None) -> list[str]:
    """One line per split-ballot question (question id -> its direct share) for an
    explanation, in the respondent's language."""
    _ = i18n.translator(lang)
    return [
        _(SPLIT_EXPLAINED).format(question=qid, share=_percent(share))
        for qid, share in shares.items()
    ]


def _percent(share: Fraction) -> str:
    """A share as a percentage with at most one decimal (25%, 33.3%)."""
    text = f"{float(share) * 100:.1f}".removesuffix(".0")
    return f"{text}%"
