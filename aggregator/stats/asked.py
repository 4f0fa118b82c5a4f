"""Who was asked each question: the tally slot that counts the reports holding a question.

With skip logic (a question's `relevant` condition, docs/surveys.md) a report holds only the
questions its plain answers made relevant, so such a question's estimates are for the
sub-population that was asked, out of its own n. That n is kept exactly, in the tallies, by one
extra slot after the question's k support counts: slot k counts the reports that hold the
question. No schema change: the slot is one more tally row, created with the survey, raised
in the same transaction as the support counts (ingestion adds index k to the options a gated
answer supports), recounted and purged the same way as any other (`stats.analyze.tally`
counts it too). A question without a condition has no slot and uses the survey's n, so a
survey without conditions keeps exactly its tallies, its results and its ingestion cost.

A split-ballot question (`direct_share`, docs/statistics.md "Split ballot") counts its direct
arm apart, in trailing slots after those: its direct question's k support counts (the plain
encoding's), then the number of reports answered directly. Its first k slots count only the
randomized arm's reports, whose n is the reports that hold it minus the direct ones. This
module is the one place that decides the layout:

    [k support counts, randomized arm] [asked, if gated] [direct k counts] [direct n]
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

from deniable.shared.ballot import DIRECT
from deniable.shared.survey import Question, Survey


def is_gated(question: Question) -> bool:
    """Whether the question carries a `relevant` condition (some reports may skip it)."""
    return bool(getattr(question, "relevant", None))


def condition_of(question: Question) -> str | None:
    """The text of the question's `relevant` condition as the survey writes it (None: none)."""
    found = getattr(question, "relevant", None)
    if not found:
        return None
    return found if isinstance(found, str) else str(getattr(found, "text", found))


def gated(survey: Survey) -> dict[str, int]:
    """Question id -> the index of its "asked" tally slot (its k), for every question with a
    condition; empty for a survey without skip logic."""
    return {qid: q.k for qid, q in survey.questions.items() if is_gated(q)}


def direct_slots(survey: Survey) -> dict[str, int]:
    """Question id -> the first of its direct arm's tally slots, for every split-ballot
    question (its direct counts, then the direct n at that index + the direct k)."""
    return {
        qid: q.k + (1 if is_gated(q) else 0)
        for qid, q in survey.questions.items()
        if q.direct_share is not None
    }


def _direct_size(question: Question) -> int:
    return question.direct_question.k + 1 if question.direct_share is not None else 0


def tally_sizes(survey: Survey) -> dict[str, int]:
    """Question id -> its number of tally slots: k support counts, plus one asked count for a
    question with a condition, plus a split ballot's direct counts and direct n (what
    `Store.create_survey` is given)."""
    return {
        qid: q.k + (1 if is_gated(q) else 0) + _direct_size(q)
        for qid, q in survey.questions.items()
    }


def report_slots(
    survey: Survey,
    support: Mapping[str, Sequence[int]],
    arms: Mapping[str, str],
    slots: Mapping[str, int],
    directs: Mapping[str, int],
) -> dict[str, Sequence[int]]:
    """The tally slots one report adds to, by question: its supported options (a direct
    answer's in its direct slots, with the direct n), and the asked slot of each gated
    question it holds. `slots` is `gated(survey)`, `directs` is `direct_slots(survey)`."""
    if not directs:
        return with_asked(support, slots)
    out: dict[str, Sequence[int]] = {}
    for qid, options in support.items():
        found: tuple[int, ...] = tuple(options)
        if qid in directs and arms.get(qid) == DIRECT:
            first = directs[qid]
            k = survey.questions[qid].direct_question.k
            found = (*(first + v for v in options), first + k)
        if qid in slots:
            found = (*found, slots[qid])
        out[qid] = found
    return out


def with_asked(
    support: Mapping[str, Sequence[int]], slots: Mapping[str, int]
) -> dict[str, Sequence[int]]:
    """A report's supported options with the asked slot of each gated question it holds added
    (`slots`: what `gated` gives); the same mapping when there is none to add."""
    if not slots:
        return dict(support)
    return {
        qid: (*options, slots[qid]) if qid in slots else options for qid, options in support.items()
    }


def split(
    survey: Survey, n: int, support: Mapping[str, Sequence[int]]
) -> tuple[dict[str, int], dict[str, Sequence[int] | None]]:
    """(question id -> the reports that asked it, question id -> its k support counts) from the
    survey's n and its tallies as stored. ValueError when a gated question's tallies lack the
    asked slot or count more askings than reports."""
    asked: dict[str, int] = {}
    counts: dict[str, Sequence[int] | None] = {}
    for qid, question in survey.questions.items():
        raw = support.get(qid)
        if question.direct_share is not None and raw is not None:
            raw = _without_direct(qid, question, raw, n)
        if not is_gated(question):
            asked[qid], counts[qid] = n, raw
            if question.direct_share is not None and raw is not None:
                asked[qid], counts[qid] = n - direct_n(question, support[qid]), raw
            continue
        if raw is None:
            if n:
                raise ValueError(f"{qid}: no tallies given for n = {n}")
            asked[qid], counts[qid] = 0, None
            continue
        if len(raw) != question.k + 1:
            raise ValueError(
                f"{qid}: has a condition, so its tallies hold {question.k} support counts and "
                f"then the number of reports that asked it; got {len(raw)} numbers"
            )
        try:
            times = operator.index(raw[question.k])
        except TypeError:
            times = -1
        if isinstance(raw[question.k], bool) or not 0 <= times <= n:
            raise ValueError(
                f"{qid}: the number of reports that asked it must lie in [0, {n}], "
                f"got {raw[question.k]!r}"
            )
        asked[qid], counts[qid] = times, list(raw[: question.k])
        if question.direct_share is not None:
            asked[qid] = times - direct_n(question, support[qid])
            if asked[qid] < 0:
                raise ValueError(
                    f"{qid}: more reports answered it directly than asked it "
                    f"({direct_n(question, support[qid])} > {times})"
                )
    return asked, counts


def _without_direct(qid: str, question: Question, raw: Sequence[int], n: int) -> Sequence[int]:
    """A split-ballot question's tallies without its direct slots (ValueError if mis-sized or
    counting more direct reports than reports)."""
    size = question.k + (1 if is_gated(question) else 0)
    if len(raw) != size + _direct_size(question):
        raise ValueError(
            f"{qid}: is a split ballot, so its tallies hold {size} counts, then its direct "
            f"arm's {question.direct_question.k} counts and direct n; got {len(raw)} numbers"
        )
    if not 0 <= direct_n(question, raw) <= n:
        raise ValueError(f"{qid}: its direct n must lie in [0, {n}], got {raw[-1]!r}")
    return list(raw[:size])


def direct_n(question: Question, raw: Sequence[int]) -> int:
    """The number of reports that answered a split-ballot question directly (its last slot)."""
    try:
        return operator.index(raw[-1])
    except TypeError:
        return -1


def direct_counts(question: Question, raw: Sequence[int] | None) -> tuple[int, list[int]]:
    """(direct n, the direct arm's support counts) of a split-ballot question's tallies."""
    if raw is None:
        return 0, [0] * question.direct_question.k
    k = question.direct_question.k
    return direct_n(question, raw), list(raw[-k - 1 : -1])


def skipped(answers: Sequence[object]) -> bool:
    """Whether a combination of noisy answers (as the store or the reports give them, None for
    a question the report does not hold) misses any question."""
    return any(answer is None for answer in answers)
