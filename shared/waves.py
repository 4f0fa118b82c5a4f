"""Waves of a series (docs/surveys.md#waves): a survey's `series` and `wave`, and a repeated
question's `longitudinal` field, validated and resolved to the chained mechanism
(deniable.shared.longitudinal: L-GRR, or L-OSUE for a categorical question asked with oue).

A longitudinal question costs its respondent epsilon_perm once per distinct true value, in the
wave that first memoizes it; `Question.epsilon` is epsilon_perm (the most it can cost in one
wave) and each report alone is epsilon_1-private on the memoized answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deniable.shared.errors import SurveyError
from deniable.shared.probability import format_probability, parse_probability

if TYPE_CHECKING:
    from deniable.shared.longitudinal import Longitudinal
    from deniable.shared.questions import QuestionType
    from deniable.shared.survey import Question, Survey

SERIES_FIELD = "series"
WAVE_FIELD = "wave"
LONGITUDINAL_FIELD = "longitudinal"
#: A series id follows the rules of survey ids.
SERIES_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
#: The highest wave number (a series of monthly waves lasts 800 years).
MAX_WAVE = 10_000
#: How far a stated epsilon may differ from the resolved one (as for mechanisms).
_TOLERANCE = 1e-4


def _fail(where: str, message: str) -> SurveyError:
    return SurveyError(f"{where}: {message}")


def parse_series(doc: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """A survey document's (series, wave): both or neither; SurveyError naming the field."""
    series = doc.get(SERIES_FIELD)
    wave = doc.get(WAVE_FIELD)
    if series is None and wave is None:
        return None, None
    if not isinstance(series, str) or not SERIES_ID.fullmatch(series):
        raise _fail(
            SERIES_FIELD,
            "expected the series id (1-64 of a-z, 0-9 and '-', starting with a letter or digit) "
            f"beside the wave, got {series!r:.80}",
        )
    if isinstance(wave, bool) or not isinstance(wave, int) or not 1 <= wave <= MAX_WAVE:
        raise _fail(
            WAVE_FIELD,
            f"expected the wave's number, a whole number from 1 to {MAX_WAVE}, got {wave!r:.80}",
        )
    return series, wave


def resolve(doc: Mapping[str, Any], kind_type: QuestionType, where: str) -> Longitudinal:
    """The chained mechanism of a question document with `longitudinal`, as written by a
    researcher (deniable.shared.longitudinal.from_question_doc: binary and categorical only,
    randomized, no split ballot, epsilon_1 below epsilon_perm) or in its resolved form (the
    protocol's name, its exact rounds, which must be the ones the epsilons give). A stated
    epsilon must be the permanent round's, stated p_star/q_star the chained channel's."""
    from deniable.shared import longitudinal as lg  # only surveys with waves need it

    kind = kind_type.name
    given = dict(doc)
    named = given.get("mechanism")
    rounds = None
    if isinstance(named, str) and named in lg.PROTOCOLS:  # the resolved form
        rounds = given.pop(named, None)
        given.pop("mechanism")
        base = lg.PROTOCOLS[named].base
        if base is not None:  # l-grr is what either type chains by default
            given["mechanism"] = base
    options = kind_type.options_of(doc, where) if kind_type.chains else ()
    chain = lg.from_question_doc(given, len(options), where)
    if kind_type.chains:
        kind_type.range_of(doc, where)  # neither has min or max
        if "candidates" in doc:
            raise _fail(f"{where}candidates", "only a text question has candidates")
    if rounds is not None or named in lg.PROTOCOLS:
        if chain.name != named:
            raise _fail(
                f"{where}mechanism",
                f"{named!r} does not fit this {kind} question (it resolves to {chain.name!r})",
            )
        exact = chain.params_text()
        if rounds != exact:
            raise _fail(
                f"{where}{named}",
                f"{rounds!r:.120} are not the rounds epsilon_perm and epsilon_1 give: "
                f"{exact}; leave them out",
            )
    stated = doc.get("epsilon")
    if stated is not None and (
        isinstance(stated, bool)
        or not isinstance(stated, int | float)
        or not math.isclose(stated, chain.epsilon, rel_tol=0, abs_tol=_TOLERANCE)
    ):
        raise _fail(
            f"{where}epsilon",
            f"a longitudinal question's epsilon is its permanent round's ({chain.epsilon:.6g}, "
            f"epsilon_perm), got {stated!r:.80}; leave it out",
        )
    for key, exact_p in (("p_star", chain.p_star), ("q_star", chain.q_star)):
        if key not in doc or doc[key] == format_probability(exact_p):
            continue  # the resolved form's exact decimals (finer than parse_probability takes)
        try:
            parsed = parse_probability(doc[key], field=f"{where}{key}")
        except ValueError as exc:
            raise SurveyError(str(exc)) from None
        if parsed != exact_p:
            raise _fail(
                f"{where}{key}",
                f"{doc[key]!r:.80} is not the chained channel's {format_probability(exact_p)}",
            )
    return chain


def longitudinal_doc(question: Question) -> dict[str, Any]:
    """A longitudinal question's `longitudinal` field as resolved: its two stated epsilons."""
    chain = question.longitudinal
    assert chain is not None
    # A whole number as an integer: the page's canonical JSON (canonical.js) writes it so.
    return {k: int(v) if float(v).is_integer() else v for k, v in chain.stated().items()}


def longitudinal_questions(survey: Survey) -> tuple[str, ...]:
    """The survey's longitudinal questions, in order."""
    return tuple(qid for qid, q in survey.questions.items() if q.longitudinal is not None)


def check_survey(survey: Survey) -> None:
    """Survey-level rules: a longitudinal question needs the survey's series (its memo is
    kept per series), and cannot be answered on a shared device (the memo would mix the
    permanent answers of everyone using it)."""
    repeated = longitudinal_questions(survey)
    if not repeated:
        return
    where = f"questions[{list(survey.questions).index(repeated[0])}].{LONGITUDINAL_FIELD}"
    if survey.series is None:
        raise _fail(
            where,
            'a longitudinal question belongs to a series: give the survey "series" and "wave"',
        )
    if survey.device == "shared":
        raise _fail(
            where,
            "a survey answered on a shared device cannot memoize each respondent's permanent "
            'answers; use "device": "personal" or drop longitudinal',
        )
