"""Plain-words explanations of a survey: what is sent, how likely the truth is kept, what
epsilon means for the respondent. Shared: `deniable explain` and `deniable answer` print them,
and the aggregator's respondent page shows the same text.

Every sentence is a gettext msgid (docs/translations.md): translated whole, with `{named}`
placeholders, and the numbers formatted after translation. Pass `lang=` for the respondent's
language; without it (or for a language with no catalog) the words are English. What is sent
is each mechanism's own sentence (its `describe`, given the translator), so the mechanism
classes stay the one place where a mechanism is defined.
"""

from __future__ import annotations

from fractions import Fraction

from deniable.shared import i18n
from deniable.shared.i18n import N_
from deniable.shared.mechanisms import PLAIN_NOTICE
from deniable.shared.probability import percent
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


def what_is_sent(question: Question, *, lang: str | None = None) -> str:
    """One sentence: what leaves the device for this question, and how likely the truth is
    kept, in the respondent's language (the mechanism's own `describe`)."""
    return question.randomizer.describe(i18n.translator(lang))


# -- what epsilon means, one whole sentence per question type (its `privacy_sentence`) ----------


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
    return question.kind.privacy_sentence(_).format(epsilon=eps, times=times(ratio))


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


def kind_lines(
    question: Question, *, lang: str | None = None, labels: list[str] | None = None
) -> list[str]:
    """The lines under a question's text in `deniable explain`, in `lang`: its type's
    `explain_lines`, with the option `labels` of the survey's language when given."""
    return question.kind.explain_lines(question, i18n.translator(lang), labels)


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
