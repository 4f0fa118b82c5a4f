"""Plain-words explanations of a survey, for `deniable explain` and `deniable answer`.

The text builders live in `deniable.shared.explain` (the aggregator's respondent page shows the
same words); this module re-exports them, so `deniable.client.explain` keeps working. Each
takes `lang=` for the respondent's language (the product's words through
`deniable.shared.i18n`)."""

from deniable.shared.explain import (
    PLAIN_NOTICE,
    epsilon_text,
    explain_survey,
    odds_ratio,
    percent,
    plain_notice,
    question_lines,
    survey_ratio,
    times,
    total_lines,
    what_epsilon_means,
    what_is_sent,
)

__all__ = [
    "PLAIN_NOTICE",
    "epsilon_text",
    "explain_survey",
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
