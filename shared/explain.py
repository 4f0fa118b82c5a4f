"""Plain-words explanations of a survey: what is sent, how likely the truth is kept, what
epsilon means for the respondent. Shared: `deniable explain` and `deniable answer` print them,
and the aggregator's respondent page shows the same text."""

from __future__ import annotations

import math
from fractions import Fraction

from deniable.shared.survey import Question, Survey, format_timestamp


def percent(p: Fraction | float) -> str:
    """A probability as a percentage with at most one decimal ("73.1%", "50%")."""
    text = f"{float(p) * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


def odds_ratio(question: Question) -> Fraction | float:
    """e^epsilon, exactly where the coins allow: the most an observer's odds can move."""
    mech = question.randomizer
    p, q = mech.p_star, mech.q_star
    if question.type == "multi":
        return (p / q) ** question.k  # each option's rr, composed over the k options
    if question.mechanism == "cms":
        return (p / q) ** 2  # two columns differ between any two answers
    if question.mechanism == "rappor":
        h = mech.params()["h"]
        return ((p * (1 - q)) / (q * (1 - p))) ** h
    if question.mechanism in ("onebit", "hcms"):
        return p / q
    if question.mechanism in ("rr", "coins"):
        return max(p / q, (1 - q) / (1 - p))
    if question.mechanism == "grr":
        return p / q
    if question.mechanism == "oue":
        return (p * (1 - q)) / ((1 - p) * q)
    return math.exp(question.epsilon)


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


#: What every respondent interface says of a plain question before anything is sent.
PLAIN_NOTICE = "Sent exactly as you answer: this question is not randomized."


def what_is_sent(question: Question) -> str:
    """One sentence: what leaves the device for this question, and how likely the truth is kept."""
    mech = question.randomizer
    params = mech.params()
    if question.plain:
        return (
            f"{PLAIN_NOTICE} Your answer itself is sent (it is a plain question, used to "
            "group the randomized answers, e.g. by region), so it is not deniable."
        )
    if question.mechanism == "onebit":
        return (
            f"What is sent: one bit (0 or 1), never your number. At {question.high} it is 1 with "
            f"probability {percent(mech.p_star)}, at {question.low} with "
            f"{percent(mech.q_star)}, and in between in proportion: "
            f"{percent(mech.p_star)} of the time it leans towards your number."
        )
    if question.mechanism == "hcms":
        return (
            "What is sent: your answer is hashed on this device (with one of "
            f"{params['k']} hash functions picked at random) and only one bit of a "
            f"{params['m']}-entry code of that hash leaves it, true with probability "
            f"{percent(mech.p_star)} and flipped otherwise: never your words, and many different "
            "answers give the same bit."
        )
    if question.mechanism == "cms":
        return (
            "What is sent: your answer is hashed on this device into one of "
            f"{params['m']} columns (with one of {params['k']} hash functions), and a row of "
            f"{params['m']} marks is sent: your column marked with probability "
            f"{percent(mech.p_star)}, every other one with {percent(mech.q_star)}, each on its "
            "own coin. Never your words."
        )
    if question.mechanism == "rappor":
        return (
            f"What is sent (RAPPOR): {params['k']} bits of a Bloom filter of your answer, "
            f"hashed on this device; each bit set by your answer reads 1 with probability "
            f"{percent(mech.p_star)}, every other with {percent(mech.q_star)}. Never your words."
        )
    if question.type == "multi":
        keep = params["keep"]
        return (
            f"What is sent: a mark (selected or not) for each of the {question.k} options. "
            f"Each mark is your true choice with probability {percent(keep)} and the opposite "
            f"otherwise ({percent(1 - keep)}), on its own coin; so a report may mark options you "
            "did not choose and leave out ones you did."
        )
    if question.mechanism == "rr":
        keep = params["keep"]
        return (
            f'What is sent: "yes" or "no". Your true answer is kept with probability '
            f"{percent(keep)}; otherwise the opposite answer is sent ({percent(1 - keep)})."
        )
    if question.mechanism == "coins":
        truth, yes = params["truth"], params["yes"]
        return (
            f'What is sent: "yes" or "no", decided by two coins. Your true answer is kept with '
            f"probability {percent(truth)}; otherwise the second coin picks: "
            f'"yes" with probability {percent(yes)}, "no" with {percent(1 - yes)}. '
            f'In all, "yes" is sent with probability {percent(mech.p_star)} if you answered yes '
            f"and {percent(mech.q_star)} if you answered no."
        )
    if question.mechanism == "grr":
        others = question.k - 1
        return (
            f"What is sent: one of the {question.k} options. Your true answer is kept with "
            f"probability {percent(mech.p_star)}; otherwise one of the other {others} options is "
            f"sent, each with probability {percent(mech.q_star)}."
        )
    if question.mechanism == "oue":
        return (
            f"What is sent: a mark (0 or 1) for each of the {question.k} options. Your true "
            f"answer is marked with probability {percent(mech.p_star)}, and every other option "
            f"with probability {percent(mech.q_star)}, each on its own coin; so a report may mark "
            "several options, or none."
        )
    return f"What is sent: a randomized answer ({question.mechanism})."


def what_epsilon_means(question: Question) -> str:
    """One sentence: the question's epsilon as the most an observer can learn."""
    if question.epsilon is None:
        return (
            "Privacy cost: none is counted, and none is protected: whoever sees your report "
            "sees this answer."
        )
    ratio = odds_ratio(question)
    eps = epsilon_text(question.epsilon, ratio)
    if question.type == "binary":
        learned = (
            f"can be at most {times(ratio)} times surer you answered yes than no (or no than yes)"
        )
    elif question.type == "integer":
        learned = f"can be at most {times(ratio)} times surer of any one number than of another"
    elif question.type == "text":
        learned = f"can be at most {times(ratio)} times surer of any one answer than of another"
    elif question.type == "multi":
        learned = (
            f"can be at most {times(ratio)} times surer of any one set of choices than of another"
        )
    else:
        learned = f"can be at most {times(ratio)} times surer of any one answer than of another"
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
        if question.type in ("categorical", "multi"):
            lines.append("   Options: " + ", ".join(question.options))
        if question.type == "multi":
            lines.append("   Select all that apply (or none).")
        if question.type == "integer":
            lines.append(f"   A whole number from {question.low} to {question.high}.")
        if question.type == "text":
            lines.append("   Answer in your own words (a word or a short phrase).")
        lines += [f"   {line}" for line in question_lines(question)]
        lines.append("")
    lines += total_lines(survey, spent=spent, cap=cap)
    return "\n".join(lines)
