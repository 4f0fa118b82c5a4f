"""The product's own words in the respondent's language: gettext catalogs made with Babel.

Catalogs live in `deniable/shared/locale/<lang>/LC_MESSAGES/deniable.mo` (compiled from the
`.po` beside them by `make i18n-compile`; docs/translations.md says how to add a language). A
language without a catalog falls back to English, the language the source is written in: its
texts are the msgids. Write a fixed text as one whole sentence with `{named}` placeholders and
format the numbers after translating it: `_("Kept with probability {keep}.").format(keep=...)`.
"""

from __future__ import annotations

import gettext
import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path

DOMAIN = "deniable"
LOCALE_DIR = Path(__file__).with_name("locale")
#: The source language: its words are the msgids, so it needs no catalog.
SOURCE_LANGUAGE = "en"
#: Primary language subtags written right to left.
RTL_LANGUAGES = frozenset({"ar", "he", "fa", "ur"})
_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")


def primary(tag: str) -> str:
    """The primary language subtag of a BCP 47 tag, lower case ("pt-BR" -> "pt")."""
    return tag.replace("_", "-").split("-", 1)[0].lower()


def direction(tag: str) -> str:
    """ "rtl" for Arabic, Hebrew, Persian and Urdu, else "ltr" (the page's `dir`)."""
    return "rtl" if primary(tag) in RTL_LANGUAGES else "ltr"


@cache
def catalog_languages() -> tuple[str, ...]:
    """The languages the product's words are translated into, English first."""
    found = sorted(
        path.parent.parent.name for path in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo")
    )
    return (SOURCE_LANGUAGE, *(lang for lang in found if lang != SOURCE_LANGUAGE))


def catalog_for(tag: str | None) -> str:
    """The catalog language serving `tag`: its own, its primary subtag's, else English."""
    if not tag or not _TAG.fullmatch(tag):
        return SOURCE_LANGUAGE
    available = catalog_languages()
    for candidate in (tag, tag.replace("-", "_"), primary(tag)):
        if candidate in available:
            return candidate
    return SOURCE_LANGUAGE


def has_catalog(tag: str) -> bool:
    """Whether the product's words exist in `tag`'s language (else they are shown in English)."""
    return primary(catalog_for(tag)) == primary(tag)


@lru_cache(maxsize=16)
def _translations(lang: str) -> gettext.NullTranslations:
    if lang == SOURCE_LANGUAGE:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)


def translator(tag: str | None) -> Callable[[str], str]:
    """`gettext` for the language `tag` (English when it has no catalog)."""
    return _translations(catalog_for(tag)).gettext


def plural_translator(tag: str | None) -> Callable[[str, str, int], str]:
    """`ngettext` for the language `tag`: the form of a text for a count (Arabic has six)."""
    return _translations(catalog_for(tag)).ngettext


#: The numbers whose plural form the page carries: every form shows below it (CLDR's rules
#: look at n % 100 and below); respond.js gives a larger number the form of the first of these
#: in its CLDR plural category (the browser's Intl.PluralRules).
PLURAL_TABLE = 110


@cache
def plural_index(tag: str | None) -> str:
    """The plural form of each number from 0 to PLURAL_TABLE - 1 in `tag`'s catalog, one digit
    each: gettext's Plural-Forms of the catalog's header (Babel writes it from CLDR), English's
    (1 is singular) where there is no catalog."""
    translations = _translations(catalog_for(tag))
    rule = getattr(translations, "plural", lambda n: int(n != 1))
    return "".join(str(rule(n)) for n in range(PLURAL_TABLE))


def plural_messages(tag: str | None) -> dict[str, list[str]]:
    """Every translated plural text of `tag`'s catalog: singular msgid -> its forms in order."""
    catalog = getattr(_translations(catalog_for(tag)), "_catalog", {})
    forms: dict[str, dict[int, str]] = {}
    for key, value in catalog.items():
        if isinstance(key, tuple) and isinstance(value, str):
            forms.setdefault(key[0], {})[key[1]] = value
    return {msgid: [found[i] for i in sorted(found)] for msgid, found in forms.items()}


#: A translator: a msgid -> its words in one language (what `translator(tag)` returns).
Translate = Callable[[str], str]


def english(msgid: str) -> str:
    """A msgid's English: itself (the source is written in English); the translator a
    sentence takes when no language is asked for."""
    return msgid


def N_(msgid: str) -> str:
    """Mark a text for extraction without translating it yet (it is translated where used)."""
    return msgid


def messages(tag: str | None) -> dict[str, str]:
    """Every translated message of `tag`'s catalog (msgid -> text), for the web page."""
    translations = _translations(catalog_for(tag))
    catalog = getattr(translations, "_catalog", {})
    return {key: value for key, value in catalog.items() if isinstance(key, str) and key}
