"""The languages of an XLSForm: `label::Name (tag)` columns and `default_language`.

A column with no `::language` is in the default language. A language is named in XLSForm's
way, `Name (tag)` with a BCP 47 tag in the parentheses; the tag is what the survey keeps
(docs/xlsform.md#languages). Writing a form back names each language by its English name when
deniable knows it, else by its tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deniable.aggregator.forms.workbook import Book, XLSFormError
from deniable.shared.errors import SurveyError
from deniable.shared.languages import canonical_tag

_TAGGED = re.compile(r"(?P<name>.*?)\s*\(\s*(?P<tag>[A-Za-z0-9]{1,8}(?:-[A-Za-z0-9]{1,8})*)\s*\)")
_BARE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
#: Columns that may carry a `::language` suffix, per sheet.
TRANSLATABLE = {
    "survey": ("label", "hint"),
    "choices": ("label",),
    "settings": ("form_title", "deniable::description"),
}
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


def split_column(header: str) -> tuple[str, str | None]:
    """(the column's base name, its language or None): `label::French (fr)` ->
    ("label", "French (fr)"), `deniable::description::French (fr)` -> ("deniable::description",
    "French (fr)"), `deniable::epsilon` -> ("deniable::epsilon", None)."""
    parts = header.split("::")
    if parts[0].strip().lower() == "deniable":
        base = "::".join(p.strip() for p in parts[:2])
        return base, ("::".join(parts[2:]).strip() or None) if len(parts) > 2 else None
    if len(parts) == 1:
        return header.strip(), None
    return parts[0].strip(), "::".join(parts[1:]).strip()


def column_name(base: str, language: str | None) -> str:
    """The header of `base` in `language` (None: the default language's plain column)."""
    return base if language is None else f"{base}::{language}"


def language_title(tag: str) -> str:
    """How an exported form names a language: `French (fr)`."""
    return f"{NAMES.get(tag.split('-')[0].lower(), tag)} ({tag})"


@dataclass(frozen=True)
class Languages:
    """The form's languages: `default` is the key of the default language's columns (None for
    plain `label`), `tag` maps each key to its BCP 47 tag (None: the form says no language, so
    the survey keeps the default, English), `others` are the translations' keys in order."""

    default: str | None
    tag: dict[str | None, str | None]
    others: tuple[str, ...]


def _tag_of(language: str, where: str) -> str:
    match = _TAGGED.fullmatch(language)
    if match is None:
        raise XLSFormError(
            f"{where}: name the language's tag in parentheses, e.g. 'label::French (fr)' "
            "(docs/xlsform.md#languages)"
        )
    try:
        return canonical_tag(match.group("tag"), where)
    except SurveyError as exc:
        raise XLSFormError(str(exc)) from None


def find_languages(book: Book, default_setting: str | None) -> Languages:
    """The languages of the form's translatable columns and its `default_language` setting."""
    seen: dict[str, str] = {}  # language key -> where first seen
    plain = False
    for sheet_name, bases in TRANSLATABLE.items():
        for header in book.sheet(sheet_name).headers:
            base, language = split_column(header)
            if base.lower() not in bases:
                continue
            if language is None:
                if sheet_name != "settings":
                    plain = plain or base.lower() == "label"
                continue
            seen.setdefault(language, f"{sheet_name} sheet, column {header!r}")
    tags: dict[str | None, str | None] = {}
    by_tag: dict[str, str] = {}
    for language, where in seen.items():
        tag = _tag_of(language, where)
        if tag.lower() in by_tag and by_tag[tag.lower()] != language:
            raise XLSFormError(
                f"{where}: the tag {tag!r} also names {by_tag[tag.lower()]!r}; give each "
                "language one name"
            )
        by_tag[tag.lower()] = language
        tags[language] = tag
    default: str | None
    if default_setting:
        where = "settings sheet, column 'default_language'"
        setting = default_setting.strip()
        if setting in tags:
            default = setting
        else:
            bare = _TAGGED.fullmatch(setting)
            tag = bare.group("tag") if bare else setting
            if bare is None and not _BARE_TAG.fullmatch(setting):
                raise XLSFormError(
                    f"{where}: {setting!r} is not a language; write it as its label columns "
                    "name it, e.g. 'English (en)'"
                )
            if tag.lower() in by_tag:
                default = by_tag[tag.lower()]
            elif plain:
                default = None
                tags[None] = _tag_of(f"({tag})", where)
            else:
                raise XLSFormError(
                    f"{where}: no label column is in {setting!r}; add 'label::{setting}' or "
                    "name one of the label columns' languages"
                )
        if default is not None and plain:
            raise XLSFormError(
                f"survey sheet, column 'label': both 'label' and 'label::{default}' are in the "
                "default language; keep one"
            )
    elif plain:
        default = None
        tags[None] = None
    else:
        labelled = [
            split_column(h)[1]
            for h in book.sheet("survey").headers
            if split_column(h)[0].lower() == "label"
        ]
        default = next((language for language in labelled if language), None)
        if default is None:
            raise XLSFormError("survey sheet: no label column; add 'label' (docs/xlsform.md)")
    if default is not None and default not in tags:
        tags[default] = _tag_of(default, "settings sheet, column 'default_language'")
    others = tuple(language for language in seen if language != default)
    return Languages(default, tags, others)
