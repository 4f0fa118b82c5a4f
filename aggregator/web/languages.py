"""The survey's own texts in one of its languages, for the dashboard's survey page.

A survey is written in its default `language` and may carry `translations` (docs/surveys.md,
"Languages"); the dashboard shows the default and, with `?lang=<tag>`, another of them: the
title, the description, each question's text and its option labels (`Survey.text_in`, the
accessor the page and the CLI use too). Only the words change: results, charts and downloads
keep the options in wire order, whatever the language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deniable.aggregator.params import ParamError
from deniable.shared import i18n
from deniable.shared.languages import SurveyText
from deniable.shared.survey import Survey


@dataclass(frozen=True)
class SurveyTexts:
    """A survey's words in one language, with the survey's languages to switch to."""

    lang: str
    languages: tuple[str, ...]
    words: SurveyText

    @property
    def default(self) -> bool:
        """Whether these are the survey's own words (its default language)."""
        return self.lang == self.languages[0]

    @property
    def title(self) -> str:
        return self.words.title

    @property
    def description(self) -> str | None:
        return self.words.description

    @property
    def direction(self) -> str:
        """ "rtl" or "ltr": how the language is written (the elements' `dir`)."""
        return i18n.direction(self.lang)

    def text(self, qid: str, fallback: str) -> str:
        """The question's text in this language."""
        found = self.words.questions.get(qid)
        return found.text if found is not None and found.text else fallback

    def labels(self, qid: str, options: Sequence[str]) -> list[str]:
        """The question's option labels in this language, in option (wire) order; the wire
        labels where the language gives none (or not one per option)."""
        found = self.words.questions.get(qid)
        if found is not None and len(found.options) == len(options):
            return list(found.options)
        return list(options)


def texts_in(survey: Survey, lang: str | None) -> SurveyTexts:
    """The survey's words in `lang` (None or empty: its default language); ParamError naming
    the survey's languages when it has none that serves `lang` (the same tag, else the same
    primary language)."""
    languages = tuple(survey.languages)
    chosen = survey.language_for(lang) if lang else survey.language
    if chosen is None:
        raise ParamError(
            f"lang: the survey {survey.id!r} has no {str(lang)[:40]!r} text; its languages: "
            f"{', '.join(languages)}"
        )
    return SurveyTexts(chosen, languages, survey.text_in(chosen))
