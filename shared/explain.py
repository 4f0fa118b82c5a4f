"""Plain-words explanations of a survey: what is sent, how likely the truth is kept, what
epsilon means for the respondent. Shared: `deniable explain` and `deniable answer` print them,
and the aggregator's respondent page shows the same text.

Every sentence is a gettext msgid (docs/translations.md): translated whole, with `{named}`
placeholders, and the numbers formatted after translation. Pass `lang=` for the respondent's
language; without it (or for a language with no catalog) the words are English. The English
of each mechanism's sentence is its own `describe()` (tests/shared/test_i18n.py holds them
equal), so the mechanism classes stay the one place where a mechanism is defined.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from deniable.shared import i18n
from deniable.shared.i18n import N_
from deniable.shared.longitudinal import LGRR, LOSUE
from deniable.shared.mechanisms import (
    GRR,
    OUE,
    PLAIN_NOTICE,
    RR,
    Coins,
    Mechanism,
    MultiRR,
    OneBit,
)
from deniable.shared.probability import percent
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.survey import Question, Survey, format_timestamp

__all__ = [
    "PLAIN_NOTICE",
    "epsilon_text",
    "explain_survey",
    "kind_lines",
    "odds_ratio",
    "percent",
    "plain_notice",
    "question_lines",
    "survey_ratio",
    "times",
    "total_lines",
    "what_epsilon_means",
    "what_is_sent",
]

Translate = Callable[[str], str]


def odds_ratio(question: Question) -> Fraction | float:
    """e^epsilon, exactly where the coins allow: the most an observer's odds can move."""
    return question.randomizer.odds_ratio()


def times(ratio: Fraction | float) -> str:
    """A ratio for "N times surer": exact when whole, else three significant digits."""
    if isinstance(ratio, Fraction) and ratio.denominator == 1:
        return str(ratio.numerator)
    value = float(ratio)
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def epsilon_text(epsilon: float, ratio: Fraction | float) -> str:
    """ "1.099 (= ln 3)" when e^epsilon is whole, else "1" or "0.693"."""
    if isinstance(ratio, Fraction) and ratio.denominator == 1:
        return f"{epsilon:.4g} (= ln {ratio.numerator})"
    return f"{epsilon:.4g}"


def plain_notice(lang: str | None = None) -> str:
    """What every respondent interface says of a plain question before anything is sent."""
    return i18n.translator(lang)(PLAIN_NOTICE)


N_("Sent exactly as you answer: this question is not randomized.")  # PLAIN_NOTICE's msgid

# -- what is sent, one sentence per mechanism ---------------------------------------------------
# Each takes the mechanism and the translator; the English msgid is the mechanism's describe().


def _rr(m: Any, _: Translate) -> str:
    return _(
        'What is sent: "yes" or "no". Your true answer is kept with probability {keep}; '
        "otherwise the opposite answer is sent ({flip})."
    ).format(keep=percent(m.keep), flip=percent(1 - m.keep))


def _coins(m: Any, _: Translate) -> str:
    return _(
        'What is sent: "yes" or "no", decided by two coins. Your true answer is kept with '
        'probability {truth}; otherwise the second coin picks: "yes" with probability {yes}, '
        '"no" with {no}. In all, "yes" is sent with probability {p} if you answered yes and '
        "{q} if you answered no."
    ).format(
        truth=percent(m.truth),
        yes=percent(m.yes),
        no=percent(1 - m.yes),
        p=percent(m.p_star),
        q=percent(m.q_star),
    )


def _grr(m: Any, _: Translate) -> str:
    return _(
        "What is sent: one of the {k} options. Your true answer is kept with probability "
        "{keep}; otherwise one of the other {others} options is sent, each with probability "
        "{each}."
    ).format(k=m.k, keep=percent(m.p_star), others=m.k - 1, each=percent(m.q_star))


def _oue(m: Any, _: Translate) -> str:
    return _(
        "What is sent: a mark (0 or 1) for each of the {k} options. Your true answer is "
        "marked with probability {p}, and every other option with probability {q}, each on "
        "its own coin; so a report may mark several options, or none."
    ).format(k=m.k, p=percent(m.p_star), q=percent(m.q_star))


def _onebit(m: Any, _: Translate) -> str:
    return _(
        "What is sent: one bit (0 or 1), never your number. At {high} it is 1 with "
        "probability {p}, at {low} with {q}, and in between in proportion: {p} of the time it "
        "leans towards your number."
    ).format(high=m.high, low=m.low, p=percent(m.p_star), q=percent(m.q_star))


def _multi(m: Any, _: Translate) -> str:
    return _(
        "What is sent: a mark (selected or not) for each of the {k} options. Each mark is "
        "your true choice with probability {keep} and the opposite otherwise ({flip}), on its "
        "own coin; so a report may mark options you did not choose and leave out ones you did."
    ).format(k=m.k, keep=percent(m.keep), flip=percent(1 - m.keep))


def _cms(m: Any, _: Translate) -> str:
    return _(
        "What is sent: your answer is hashed on this device into one of {m} columns (with one "
        "of {k} hash functions), and a row of {m} marks is sent: your column marked with "
        "probability {p}, every other one with {q}, each on its own coin. Never your words."
    ).format(m=m.m, k=m.k, p=percent(m.p_star), q=percent(m.q_star))


def _hcms(m: Any, _: Translate) -> str:
    return _(
        "What is sent: your answer is hashed on this device (with one of {k} hash functions "
        "picked at random) and only one bit of a {m}-entry code of that hash leaves it, true "
        "with probability {p} and flipped otherwise: never your words, and many different "
        "answers give the same bit."
    ).format(k=m.k, m=m.m, p=percent(m.p_star))


def _rappor(m: Any, _: Translate) -> str:
    return _(
        "What is sent (RAPPOR): {k} bits of a Bloom filter of your answer, hashed on this "
        "device; each bit set by your answer reads 1 with probability {p}, every other with "
        "{q}. Never your words."
    ).format(k=m.k, p=percent(m.p_star), q=percent(m.q_star))


def _plain(m: Any, _: Translate) -> str:
    return _(
        "Sent exactly as you answer: this question is not randomized. Your answer itself is "
        "sent (it is a plain question, used to group the randomized answers, e.g. by region), "
        "so it is not deniable."
    )


def _waves_cost(m: Any, _: Translate) -> str:
    return _(
        "Privacy cost: at most epsilon {one} for one report, and at most {perm} for every wave "
        "together, however many waves you answer; if your true answer changes, the new answer "
        "costs {perm} again."
    ).format(one=f"{m.epsilon_1:g}", perm=f"{m.epsilon_perm:g}")


def _lgrr(m: Any, _: Translate) -> str:
    if m.binary:
        sent = _(
            'This question is asked again in later waves. What is sent: "yes" or "no". Once, '
            "your device draws a permanent answer and keeps it (never your true answer): your "
            "true answer with probability {p1}, otherwise the opposite answer. Each wave sends "
            "that permanent answer with probability {p2}, otherwise the opposite."
        ).format(p1=percent(m.p1), p2=percent(m.p2))
    else:
        sent = _(
            "This question is asked again in later waves. What is sent: one of the {k} options. "
            "Once, your device draws a permanent answer and keeps it (never your true answer): "
            "your true answer with probability {p1}, otherwise one of the other {others} options "
            "at random. Each wave sends that permanent answer with probability {p2}, otherwise "
            "another option at random."
        ).format(k=m.k, others=m.k - 1, p1=percent(m.p1), p2=percent(m.p2))
    return f"{sent} {_waves_cost(m, _)}"


def _losue(m: Any, _: Translate) -> str:
    sent = _(
        "This question is asked again in later waves. What is sent: a mark (0 or 1) for each of "
        "the {k} options. Once, your device draws a permanent set of marks and keeps it (never "
        "your true answer): your answer marked with probability {p1}, every other option with "
        "probability {q1}. Each wave sends every permanent mark as it is with probability {p2}, "
        "otherwise flipped."
    ).format(k=m.k, p1=percent(m.p1), q1=percent(m.q1), p2=percent(m.p2))
    return f"{sent} {_waves_cost(m, _)}"


def _randomized(m: Any, _: Translate) -> str:
    return _("What is sent: a randomized answer ({name}).").format(name=m.name)


#: The sentence of each mechanism class (looked up along the class's MRO, so a subclass
#: inherits its parent's words until it has its own). Plain mechanisms are found by their
#: p* = 1 (nothing randomized), whatever their class.
_SENT: dict[type, Callable[[Any, Translate], str]] = {
    RR: _rr,
    Coins: _coins,
    GRR: _grr,
    OUE: _oue,
    OneBit: _onebit,
    MultiRR: _multi,
    CMS: _cms,
    HCMS: _hcms,
    RAPPOR: _rappor,
    LGRR: _lgrr,
    LOSUE: _losue,
    Mechanism: _randomized,
    Sketch: _randomized,
}


def sentence_for(randomizer: object) -> Callable[[Any, Translate], str] | None:
    """The translatable sentence of a mechanism, or None for one this module does not know."""
    if getattr(randomizer, "epsilon", 0) is None:
        return _plain
    for cls in type(randomizer).__mro__:
        if cls in _SENT:
            return _SENT[cls]
    return None


def what_is_sent(question: Question, *, lang: str | None = None) -> str:
    """One sentence: what leaves the device for this question, and how likely the truth is kept."""
    sentence = sentence_for(question.randomizer)
    if sentence is None:  # a mechanism with no translated words yet: its own English
        return question.randomizer.describe()
    return sentence(question.randomizer, i18n.translator(lang))


# -- what epsilon means, one whole sentence per question type ------------------------------------
#: Each question type's `surer_of` -> the whole sentence it ends (translated as one).
SURER: dict[str, str] = {
    "you answered yes than no (or no than yes)": N_(
        "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
        "{times} times surer you answered yes than no (or no than yes)."
    ),
    "of any one answer than of another": N_(
        "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
        "{times} times surer of any one answer than of another."
    ),
    "of any one number than of another": N_(
        "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
        "{times} times surer of any one number than of another."
    ),
    "of any one set of choices than of another": N_(
        "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
        "{times} times surer of any one set of choices than of another."
    ),
}


def what_epsilon_means(question: Question, *, lang: str | None = None) -> str:
    """One sentence: the question's epsilon as the most an observer can learn."""
    _ = i18n.translator(lang)
    if question.epsilon is None:
        return _(
            "Privacy cost: none is counted, and none is protected: whoever sees your report "
            "sees this answer."
        )
    ratio = odds_ratio(question)
    eps = epsilon_text(question.epsilon, ratio)
    surer_of = question.kind.surer_of
    if surer_of in SURER:
        return _(SURER[surer_of]).format(epsilon=eps, times=times(ratio))
    learned = f"can be at most {times(ratio)} times surer {surer_of}"  # a new type's English
    return f"Privacy cost: epsilon = {eps}. Whatever is sent, an observer {learned}."


def question_lines(question: Question, *, lang: str | None = None) -> list[str]:
    """The explanation of one question, one sentence per line."""
    return [what_is_sent(question, lang=lang), what_epsilon_means(question, lang=lang)]


def survey_ratio(survey: Survey) -> Fraction | float:
    """e^(total epsilon): the product of the questions' ratios."""
    ratio: Fraction | float = Fraction(1)
    for question in survey.questions.values():
        if not question.plain:
            ratio = ratio * odds_ratio(question)
    return ratio


def total_lines(
    survey: Survey,
    *,
    spent: float | None = None,
    cap: float | None = None,
    lang: str | None = None,
) -> list[str]:
    """The survey's total privacy cost in plain words, and the respondent's budget."""
    _ = i18n.translator(lang)
    ngettext = i18n.plural_translator(lang)
    n = sum(1 for q in survey.questions.values() if not q.plain)
    plain = len(survey.questions) - n
    ratio = survey_ratio(survey)
    lines = [
        ngettext(
            "Total privacy cost: epsilon = {epsilon} (the sum over its {count} randomized "
            "question). Taken together, an observer who sees your report can be at most {times} "
            "times surer of any one set of randomized answers than of another.",
            "Total privacy cost: epsilon = {epsilon} (the sum over its {count} randomized "
            "questions). Taken together, an observer who sees your report can be at most "
            "{times} times surer of any one set of randomized answers than of another.",
            n,
        ).format(epsilon=f"{survey.epsilon:.4g}", count=n, times=times(ratio)),
    ]
    if plain:
        lines.append(
            ngettext(
                "{count} plain question is sent exactly as you answer, outside that protection.",
                "{count} plain questions are sent exactly as you answer, outside that protection.",
                plain,
            ).format(count=plain)
        )
    if spent is not None and cap is not None:
        after = spent + survey.epsilon
        lines.append(
            _(
                "Epsilon adds up over every survey you answer: you have spent {spent} of your cap "
                "of {cap}; answering this survey would bring it to {after}."
            ).format(spent=f"{spent:.4g}", cap=f"{cap:.4g}", after=f"{after:.4g}")
        )
    return lines


#: The lines a question type puts under its question (`QuestionType.explain_lines`), as
#: msgids: its option list, then fixed sentences; a line not listed stays in English.
_OPTIONS = N_("Options: {options}")
_WHOLE_NUMBER = N_("A whole number from {low} to {high}.")
_FIXED = {
    text: text
    for text in (
        N_("Select all that apply (or none)."),
        N_("Answer in your own words (a word or a short phrase)."),
    )
}


def kind_lines(
    question: Question, *, lang: str | None = None, labels: list[str] | None = None
) -> list[str]:
    """The lines under a question's text in `deniable explain`, in `lang`: its type's
    `explain_lines`, with the option `labels` of the survey's language when given."""
    _ = i18n.translator(lang)
    out = []
    for line in question.kind.explain_lines(question):
        indent = line[: len(line) - len(line.lstrip())]
        text = line.strip()
        if text.startswith("Options: "):
            shown = labels if labels else list(question.options)
            text = _(_OPTIONS).format(options=", ".join(shown))
        elif text == f"A whole number from {question.low} to {question.high}.":
            text = _(_WHOLE_NUMBER).format(low=question.low, high=question.high)
        elif text in _FIXED:
            text = _(_FIXED[text])
        out.append(indent + text)
    return out


def explain_survey(
    survey: Survey,
    *,
    spent: float | None = None,
    cap: float | None = None,
    lang: str | None = None,
) -> str:
    """The whole survey explained in plain words (the text `deniable explain` prints), in the
    survey's language nearest to `lang` and the product's words in `lang`."""
    _ = i18n.translator(lang)
    words = survey.text_in(lang)  # the survey's own texts in its language nearest to `lang`
    lines = [f"{words.title} ({survey.id})"]
    if words.description:
        lines.append(words.description)
    if survey.closes_at is not None:
        lines.append(_("Closes at {time}.").format(time=format_timestamp(survey.closes_at)))
    if survey.enrollment == "invite":
        lines.append(_("By invitation only: answering needs an invitation code."))
    lines += [
        "",
        _(
            "Your device randomizes every answer before anything leaves it: the server only "
            "ever sees the noisy answers, so no single report proves what you answered."
        ),
        "",
    ]
    for number, question in enumerate(survey.questions.values(), start=1):
        lines.append(f"{number}. {words.questions[question.id].text} [{question.id}]")
        labels = list(words.questions[question.id].options) or None
        lines += kind_lines(question, lang=lang, labels=labels)
        lines += [f"   {line}" for line in question_lines(question, lang=lang)]
        lines.append("")
    lines += total_lines(survey, spent=spent, cap=cap, lang=lang)
    return "\n".join(lines)
