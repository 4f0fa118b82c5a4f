"""The languages of an XLSForm: `label::Name (tag)`, `label::Name`, `label::tag` columns and
`default_language` (docs/xlsform.md#languages).

A column with no language is in the default language. A language is written as pyxform takes
it: `English (en)` (the BCP 47 tag in parentheses is what the survey keeps), a bare tag `en`, or
a name, `English`, `French` or `Français`, whose tag comes from Babel's language names (in
English, then each language's own). Every language is known by its tag from then on, so
`label::English` and `hint::English (en)` are one language. Writing a form back names each
language by its English name when deniable knows it, else by its tag.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from deniable.aggregator.forms.columns import TRANSLATED, Column
from deniable.shared.errors import SurveyError
from deniable.shared.languages import KNOWN_LANGUAGES, canonical_tag

_TAGGED = re.compile(
    r"(?P<name>.*?)\s*\(\s*(?P<tag>[A-Za-z0-9]{1,8}(?:[-_][A-Za-z0-9]{1,8})*)\s*\)"
)
_BARE_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
#: English names written in exported column headers (any other tag is written as itself).
NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fa": "Persian",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "it": "Italian",
    "ja": "Japanese",
    "pt": "Portuguese",
    "ru": "Russian",
    "sw": "Swahili",
    "tr": "Turkish",
    "ur": "Urdu",
    "zh": "Chinese",
}


class LanguageError(ValueError):
    """A language deniable cannot name with a tag; the message says what to write."""


def column_name(base: str, language: str | None) -> str:
    """The header of `base` in `language` (None: the default language's plain column)."""
    return base if language is None else f"{base}::{language}"


def language_title(tag: str) -> str:
    """How an exported form names a language: `French (fr)`."""
    return f"{NAMES.get(tag.split('-')[0].lower(), tag)} ({tag})"


@functools.cache
def _babel() -> tuple[dict[str, str], dict[str, str]]:
    """(Babel's aliases of language codes, its English language names -> tag)."""
    try:
        from babel import Locale
        from babel.core import get_global
    except ImportError:  # pragma: no cover - Babel is a dependency of the aggregator
        raise LanguageError(
            "naming a language by its name needs Babel (pip install Babel), or write its tag: "
            "'label::French (fr)'"
        ) from None
    aliases = {k.lower(): v for k, v in get_global("language_aliases").items()}
    english = {}
    for tag, name in Locale("en").languages.items():
        if "_" not in tag and tag in KNOWN_LANGUAGES:
            english.setdefault(name.casefold(), tag)
    return aliases, english


@functools.cache
def _autonyms() -> dict[str, str]:
    """Each language's name in itself (Français -> fr), from Babel's locale data."""
    from babel import Locale

    found: dict[str, str] = {}
    for tag in sorted(KNOWN_LANGUAGES):
        try:
            name = Locale.parse(tag).languages.get(tag)
        except Exception:  # a locale Babel lists but cannot load names nothing
            continue
        if name:
            found.setdefault(name.casefold(), tag)
    return found


def _canonical(tag: str) -> str:
    tag = tag.replace("_", "-")
    try:
        return canonical_tag(tag, "language")
    except SurveyError:
        pass
    primary, _, rest = tag.partition("-")
    alias = _babel()[0].get(primary.lower())
    if alias is not None and "_" not in alias:
        try:
            return canonical_tag(f"{alias}-{rest}" if rest else alias, "language")
        except SurveyError:
            pass
    raise LanguageError(
        f"{tag!r} is not a language tag deniable knows; write one like 'fr' or 'pt-BR'"
    )


def tag_of(language: str) -> str:
    """The BCP 47 tag of a language as a form writes it: `French (fr)`, `fr` or `French`."""
    text = " ".join(language.split())
    tagged = _TAGGED.fullmatch(text)
    if tagged is not None:
        return _canonical(tagged.group("tag"))
    if _BARE_TAG.fullmatch(text):
        try:
            return _canonical(text)
        except LanguageError:
            pass
    name = text.casefold()
    tag = _babel()[1].get(name) or _autonyms().get(name)
    if tag is None:
        raise LanguageError(
            f"{language!r} is not a language Babel knows by name; write its tag in "
            f"parentheses, e.g. '{language} (xx)' with its BCP 47 tag"
        )
    return tag


@dataclass(frozen=True)
class Languages:
    """The form's languages by tag: `default` (None when the form names no language at all:
    the survey keeps English), `others` the translations' tags in order of appearance, and
    `problems` the columns whose language could not be named (each one line)."""

    default: str | None
    others: tuple[str, ...]
    problems: tuple[str, ...] = ()
    #: The language as written -> its tag (the default's plain columns are under None).
    tags: dict[str | None, str | None] | None = None

    def tag(self, written: str | None) -> str | None:
        """The tag of a column's language as written (None: the default language)."""
        if written is None:
            return self.default
        return (self.tags or {}).get(written)


def find_languages(
    columns: dict[str, list[Column]], default_setting: str | None, settings_row: int = 2
) -> Languages:
    """The languages of the form's translated columns and of its `default_language`."""
    problems: list[str] = []
    tags: dict[str | None, str | None] = {}
    seen: list[str] = []
    plain = False
    for sheet, found in columns.items():
        for column in found:
            if column.key not in TRANSLATED.get(sheet, ()):
                continue
            if column.language is None:
                plain = plain or (sheet == "survey" and column.key == "label")
                continue
            if column.language in tags:
                continue
            try:
                tag = tag_of(column.language)
            except LanguageError as exc:
                problems.append(f"{sheet} sheet, column {column.header!r}: {exc}")
                tags[column.language] = None
                continue
            tags[column.language] = tag
            if tag not in seen:
                seen.append(tag)
    default: str | None = None
    where = f"settings sheet, row {settings_row}, column 'default_language'"
    if default_setting:
        try:
            default = tag_of(default_setting)
        except LanguageError as exc:
            problems.append(f"{where}: {exc}")
            default = seen[0] if seen else None
        else:
            if default in seen and plain:
                problems.append(
                    f"survey sheet, column 'label': both 'label' and a label column in "
                    f"{default_setting!r} are in the default language; keep one"
                )
            elif default not in seen and not plain:
                problems.append(
                    f"{where}: no label column is in {default_setting!r}; add "
                    f"'label::{default_setting}' or name one of the label columns' languages"
                )
    elif not plain:
        labelled = [tags.get(c.language) for c in columns.get("survey", []) if c.key == "label"]
        default = next((tag for tag in labelled if tag), None)
        if default is None and not problems:
            problems.append("survey sheet: no label column; add 'label' (docs/xlsform.md)")
    tags[None] = default
    others = tuple(tag for tag in seen if tag != default)
    return Languages(default, others, tuple(problems), tags)
