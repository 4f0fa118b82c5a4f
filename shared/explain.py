"""Plain-words explanations of a survey: what is sent, how likely the truth is kept, what
epsilon means for the respondent. Shared: `deniable explain` and `deniable answer` print them,
and the aggregator's respondent page shows the same text."""

from __future__ import annotations

from fractions import Fraction

from deniable.shared.mechanisms import PLAIN_NOTICE
from deniable.shared.probability import percent
from deniable.shared.survey import Question, Survey, format_timestamp

__all__ = [
    "PLAIN_NOTICE",
    "epsilon_text",
    "explain_survey",
    "odds_ratio",
    "percent",
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


def what_is_sent(question: Question) -> str:
    """One sentence: what leaves the device for this question, and how likely the truth is kept."""
    return question.randomizer.describe()


def what_epsilon_means(question: Question) -> str:
    """One sentence: the question's epsilon as the most an observer can learn."""
    if question.epsilon is None:
        return (
            "Privacy cost: none is counted, and none is protected: whoever sees your report "
            "sees this answer."
        )
    ratio = odds_ratio(question)
    eps = epsilon_text(question.epsilon, ratio)
    learned = f"can be at most {times(ratio)} times surer {question.kind.surer_of}"
    return f"Privacy cost: epsilon = {eps}. Whatever is sent, an observer {learned}."


def question_lines(question: Question) -> list[str]:
    """The explanation of one question, one sentence per line."""
    lines = [what_is_sent(question), what_epsilon_means(question)]
    return lines


def survey_ratio(survey: Survey) -> Fraction | float:
    """e^(total epsilon): the product of the questions' ratios."""
    ratio: Fraction | float = Fraction(1)
    for question in survey.questions.values():
        if not question.plain:
            ratio = ratio * odds_ratio(question)
    return ratio


def total_lines(
    survey: Survey, *, spent: float | None = None, cap: float | None = None
) -> list[str]:
    """The survey's total privacy cost in plain words, and the respondent's budget."""
    n = sum(1 for q in survey.questions.values() if not q.plain)
    plain = len(survey.questions) - n
    ratio = survey_ratio(survey)
    lines = [
        f"Total privacy cost: epsilon = {survey.epsilon:.4g} (the sum over its {n} randomized "
        f"question{'s' if n != 1 else ''}). Taken together, an observer who sees your report can "
        f"be at most {times(ratio)} times surer of any one set of randomized answers than of "
        "another.",
    ]
    if plain:
        lines.append(
            f"{plain} plain question{'s are' if plain != 1 else ' is'} sent exactly as you "
            "answer, outside that protection."
        )
    if spent is not None and cap is not None:
        after = spent + survey.epsilon
        lines.append(
            f"Epsilon adds up over every survey you answer: you have spent {spent:.4g} of your cap "
            f"of {cap:.4g}; answering this survey would bring it to {after:.4g}."
        )
    return lines


def explain_survey(survey: Survey, *, spent: float | None = None, cap: float | None = None) -> str:
    """The whole survey explained in plain words (the text `deniable explain` prints)."""
    lines = [f"{survey.title} ({survey.id})"]
    if survey.description:
        lines.append(survey.description)
    if survey.closes_at is not None:
        lines.append(f"Closes at {format_timestamp(survey.closes_at)}.")
    if survey.enrollment == "invite":
        lines.append("By invitation only: answering needs an invitation code.")
    lines += [
        "",
        "Your device randomizes every answer before anything leaves it: the server only ever "
        "sees the noisy answers, so no single report proves what you answered.",
        "",
    ]
    for number, question in enumerate(survey.questions.values(), start=1):
        lines.append(f"{number}. {question.text} [{question.id}]")
        lines += question.kind.explain_lines(question)
        lines += [f"   {line}" for line in question_lines(question)]
        lines.append("")
    lines += total_lines(survey, spent=spent, cap=cap)
    return "\n".join(lines)
