"""Survey languages: BCP 47 tags and the translations a survey document carries.

A survey is written in its default language (`"language"`, "en" when absent) and may carry
`"translations"`: per language, the title, the description, and each question's text, option
labels, hint and note (docs/surveys.md#languages). Wire answers never change with the
language, and the translations are part of the survey's hash. `KNOWN_LANGUAGES` is the table
of primary language subtags Babel's locale data knows, committed here so a respondent's device
needs no Babel (tests/shared/test_translations.py checks it still matches; regenerate it with
`python -m deniable.shared.languages`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from deniable.shared.canonical import is_unicode
from deniable.shared.questions import fail, has_control

if TYPE_CHECKING:
    from deniable.shared.survey import Question

#: The most languages a survey may have, its default language included.
MAX_LANGUAGES = 20
#: The default language of a survey that names none.
DEFAULT_LANGUAGE = "en"
#: language[-script][-region](-variant)* of BCP 47 (RFC 5646), without extensions.
_TAG = re.compile(
    r"(?P<language>[A-Za-z]{2,3})(?:-(?P<script>[A-Za-z]{4}))?"
    r"(?:-(?P<region>[A-Za-z]{2}|[0-9]{3}))?(?P<variants>(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*)"
)
_TRANSLATION_FIELDS = ("title", "description", "questions")
_QUESTION_TEXT_FIELDS = ("text", "options", "hint", "note")

#: Primary language subtags of Babel's locale data (Babel 2.18; root excluded).
KNOWN_LANGUAGES = frozenset(
    {
        "aa",
        "ab",
        "af",
        "agq",
        "ak",
        "am",
        "an",
        "ann",
        "apc",
        "ar",
        "arn",
        "as",
        "asa",
        "ast",
        "az",
        "ba",
        "bal",
        "bas",
        "be",
        "bem",
        "bew",
        "bez",
        "bg",
        "bgc",
        "bgn",
        "bho",
        "blo",
        "blt",
        "bm",
        "bn",
        "bo",
        "br",
        "brx",
        "bs",
        "bss",
        "byn",
        "ca",
        "cad",
        "cch",
        "ccp",
        "ce",
        "ceb",
        "cgg",
        "cho",
        "chr",
        "cic",
        "ckb",
        "co",
        "cop",
        "cs",
        "csw",
        "cu",
        "cv",
        "cy",
        "da",
        "dav",
        "de",
        "dje",
        "doi",
        "dsb",
        "dua",
        "dv",
        "dyo",
        "dz",
        "ebu",
        "ee",
        "el",
        "en",
        "eo",
        "es",
        "et",
        "eu",
        "ewo",
        "fa",
        "ff",
        "fi",
        "fil",
        "fo",
        "fr",
        "frr",
        "fur",
        "fy",
        "ga",
        "gaa",
        "gd",
        "gez",
        "gl",
        "gn",
        "gsw",
        "gu",
        "guz",
        "gv",
        "ha",
        "haw",
        "he",
        "hi",
        "hnj",
        "hr",
        "hsb",
        "ht",
        "hu",
        "hy",
        "ia",
        "id",
        "ie",
        "ig",
        "ii",
        "io",
        "is",
        "it",
        "iu",
        "ja",
        "jbo",
        "jgo",
        "jmc",
        "jv",
        "ka",
        "kaa",
        "kab",
        "kaj",
        "kam",
        "kcg",
        "kde",
        "kea",
        "ken",
        "kgp",
        "khq",
        "ki",
        "kk",
        "kkj",
        "kl",
        "kln",
        "km",
        "kn",
        "ko",
        "kok",
        "kpe",
        "ks",
        "ksb",
        "ksf",
        "ksh",
        "ku",
        "kw",
        "kxv",
        "ky",
        "la",
        "lag",
        "lb",
        "lg",
        "lij",
        "lkt",
        "lld",
        "lmo",
        "ln",
        "lo",
        "lrc",
        "lt",
        "ltg",
        "lu",
        "luo",
        "luy",
        "lv",
        "mai",
        "mas",
        "mdf",
        "mer",
        "mfe",
        "mg",
        "mgh",
        "mgo",
        "mhn",
        "mi",
        "mic",
        "mk",
        "ml",
        "mn",
        "mni",
        "moh",
        "mr",
        "ms",
        "mt",
        "mua",
        "mus",
        "my",
        "myv",
        "mzn",
        "naq",
        "nb",
        "nd",
        "nds",
        "ne",
        "nl",
        "nmg",
        "nn",
        "nnh",
        "no",
        "nqo",
        "nr",
        "nso",
        "nus",
        "nv",
        "ny",
        "nyn",
        "oc",
        "om",
        "or",
        "os",
        "osa",
        "pa",
        "pap",
        "pcm",
        "pis",
        "pl",
        "prg",
        "ps",
        "pt",
        "qu",
        "quc",
        "raj",
        "rhg",
        "rif",
        "rm",
        "rn",
        "ro",
        "rof",
        "ru",
        "rw",
        "rwk",
        "sa",
        "sah",
        "saq",
        "sat",
        "sbp",
        "sc",
        "scn",
        "sd",
        "sdh",
        "se",
        "seh",
        "ses",
        "sg",
        "shi",
        "shn",
        "si",
        "sid",
        "sk",
        "skr",
        "sl",
        "sma",
        "smj",
        "smn",
        "sms",
        "sn",
        "so",
        "sq",
        "sr",
        "ss",
        "ssy",
        "st",
        "su",
        "sv",
        "sw",
        "syr",
        "szl",
        "ta",
        "te",
        "teo",
        "tg",
        "th",
        "ti",
        "tig",
        "tk",
        "tn",
        "to",
        "tok",
        "tpi",
        "tr",
        "trv",
        "trw",
        "ts",
        "tt",
        "twq",
        "tyv",
        "tzm",
        "ug",
        "uk",
        "ur",
        "uz",
        "vai",
        "ve",
        "vec",
        "vi",
        "vmw",
        "vo",
        "vun",
        "wa",
        "wae",
        "wal",
        "wbp",
        "wo",
        "xh",
        "xnr",
        "xog",
        "yav",
        "yi",
        "yo",
        "yrl",
        "yue",
        "za",
        "zgh",
        "zh",
        "zu",
    }
)


def canonical_tag(value: object, where: str) -> str:
    """A BCP 47 language tag in its canonical case ("pt-br" -> "pt-BR"), else SurveyError
    naming `where`: malformed, or a language Babel does not know."""
    match = _TAG.fullmatch(value) if isinstance(value, str) and value.isascii() else None
    if match is None:
        raise fail(
            where, f"{value!r:.60} is not a BCP 47 language tag; write one like 'en' or 'pt-BR'"
        )
    language = match["language"].lower()
    if language not in KNOWN_LANGUAGES:
        raise fail(where, f"unknown language {language!r}; write a BCP 47 tag like 'fr' or 'ar'")
    parts = [language]
    if match["script"]:
        parts.append(match["script"].title())
    if match["region"]:
        parts.append(match["region"].upper())
    parts += [v.lower() for v in match["variants"].split("-") if v]
    return "-".join(parts)


def primary(tag: str) -> str:
    """The primary language subtag of a tag ("pt-BR" -> "pt")."""
    return tag.split("-", 1)[0].lower()


def best_language(available: Sequence[str], requested: str | None) -> str | None:
    """The language of `available` serving `requested`: the same tag (any case), else the
    first with the same primary language ("fr-CA" -> "fr"); None when none fits."""
    if not requested or not isinstance(requested, str):
        return None
    wanted = requested.strip().replace("_", "-").lower()
    for tag in available:
        if tag.lower() == wanted:
            return tag
    for tag in available:
        if primary(tag) == primary(wanted):
            return tag
    return None


@dataclass(frozen=True)
class QuestionText:
    """One question's words in one language: its text, option labels (in option order), hint
    and note."""

    text: str
    options: tuple[str, ...] = ()
    hint: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The translation document of the question (options, hint, note when it has them)."""
        doc: dict[str, Any] = {"text": self.text}
        if self.options:
            doc["options"] = list(self.options)
        if self.hint is not None:
            doc["hint"] = self.hint
        if self.note is not None:
            doc["note"] = self.note
        return doc


@dataclass(frozen=True)
class Translation:
    """A survey's words in one more language."""

    title: str
    description: str | None
    questions: Mapping[str, QuestionText]

    def to_dict(self) -> dict[str, Any]:
        """The translation as the survey document holds it."""
        doc: dict[str, Any] = {"title": self.title}
        if self.description is not None:
            doc["description"] = self.description
        doc["questions"] = {qid: text.to_dict() for qid, text in self.questions.items()}
        return doc


@dataclass(frozen=True)
class SurveyText:
    """Everything a respondent reads of a survey, in one language (`Survey.text_in`)."""

    language: str
    title: str
    description: str | None
    questions: Mapping[str, QuestionText]


def check_text(value: object, where: str, max_text: int) -> str:
    """A non-empty text of at most `max_text` characters with no control character."""
    if value is None:
        raise fail(where, "missing")
    if not isinstance(value, str) or not value.strip():
        raise fail(where, f"expected a non-empty string, got {value!r:.80}")
    if len(value) > max_text:
        raise fail(where, f"at most {max_text} characters, got {len(value)}")
    if not is_unicode(value):
        raise fail(where, "not valid Unicode (an unpaired surrogate); send UTF-8 text")
    if has_control(value):
        raise fail(where, f"control characters are not text, got {value[:80]!r}")
    return value


def _optional(
    doc: Mapping[str, Any], key: str, default: str | None, where: str, max_text: int
) -> str | None:
    """A translated description, hint or note: required when the default language has one,
    refused when it has none."""
    if default is None:
        if key in doc:
            raise fail(
                f"{where}.{key}",
                f"the default language has no {key} to translate; leave it out or add one there",
            )
        return None
    if key not in doc:
        raise fail(f"{where}.{key}", "missing; the default language has one, translate it")
    return check_text(doc[key], f"{where}.{key}", max_text)


def _labels(raw: object, question: Question, where: str) -> tuple[str, ...]:
    shown = ", ".join(repr(o) for o in question.options)
    wanted = f"give every option's label in option order ({len(question.options)}: {shown})"
    if raw is None:
        raise fail(where, f"missing; {wanted}")
    if not isinstance(raw, list):
        raise fail(where, f"expected a list of labels; {wanted}")
    if len(raw) > len(question.options):
        raise fail(where, f"{len(raw)} labels for {len(question.options)} options; {wanted}")
    for i in range(len(question.options)):
        if i >= len(raw):
            raise fail(f"{where}[{i}]", f"missing: the label of {question.options[i]!r}; {wanted}")
        label = raw[i]
        if (
            not isinstance(label, str)
            or not label.strip()
            or len(label) > 200
            or not is_unicode(label)
            or has_control(label)
        ):
            raise fail(
                f"{where}[{i}]",
                f"expected a non-empty label of at most 200 characters, got {label!r:.80}",
            )
    if len({label.casefold() for label in raw}) != len(raw):
        raise fail(where, f"labels must be distinct, got {raw!r:.200}")
    return tuple(raw)


def _question_text(raw: object, question: Question, where: str, max_text: int) -> QuestionText:
    if raw is None:
        raise fail(where, "missing; translate every question")
    if not isinstance(raw, dict):
        raise fail(
            where, f"expected an object with text (and options, hint, note), got {raw!r:.60}"
        )
    unknown = sorted(set(raw) - set(_QUESTION_TEXT_FIELDS))
    if unknown:
        raise fail(
            f"{where}.{str(unknown[0])[:40]}",
            f"unknown field; allowed: {', '.join(_QUESTION_TEXT_FIELDS)}",
        )
    text = check_text(raw.get("text"), f"{where}.text", max_text)
    if question.kind.labelled:
        options = _labels(raw.get("options"), question, f"{where}.options")
    elif "options" in raw:
        raise fail(f"{where}.options", "this question has no option labels to translate")
    else:
        options = ()
    hint = _optional(raw, "hint", question.hint, where, max_text)
    note = _optional(raw, "note", question.note, where, max_text)
    return QuestionText(text, options, hint, note)


def parse_translations(
    raw: object,
    *,
    language: str,
    description: str | None,
    questions: Sequence[Question],
    max_text: int,
) -> Mapping[str, Translation]:
    """Validate a survey document's `translations` (SurveyError naming where): known language
    tags other than the default, at most MAX_LANGUAGES languages, and every text the default
    language has, translated."""
    if not isinstance(raw, dict):
        raise fail("translations", f"expected an object of language tag to texts, got {raw!r:.60}")
    if len(raw) + 1 > MAX_LANGUAGES:
        raise fail(
            "translations",
            f"at most {MAX_LANGUAGES} languages in all (the default included), got {len(raw) + 1}",
        )
    found: dict[str, Translation] = {}
    for tag, doc in raw.items():
        where = f"translations.{str(tag)[:40]}"
        canonical = canonical_tag(tag, where)
        if canonical == language:
            raise fail(
                where,
                f"is the survey's default language (language: {language!r}); its texts are the "
                "survey's own",
            )
        if canonical in found:
            raise fail(where, f"{canonical!r} is translated twice")
        if not isinstance(doc, dict):
            raise fail(where, f"expected an object with title and questions, got {doc!r:.60}")
        unknown = sorted(set(doc) - set(_TRANSLATION_FIELDS))
        if unknown:
            raise fail(
                f"{where}.{str(unknown[0])[:40]}",
                f"unknown field; allowed: {', '.join(_TRANSLATION_FIELDS)}",
            )
        title = check_text(doc.get("title"), f"{where}.title", max_text)
        translated_description = _optional(doc, "description", description, where, max_text)
        raw_questions = doc.get("questions")
        if not isinstance(raw_questions, dict):
            raise fail(
                f"{where}.questions",
                "missing; give an object of question id to its text"
                if raw_questions is None
                else f"expected an object of question id to its text, got {raw_questions!r:.60}",
            )
        ids = {q.id for q in questions}
        stray = [qid for qid in raw_questions if qid not in ids]
        if stray:
            raise fail(f"{where}.questions.{str(stray[0])[:64]}", "no such question in the survey")
        texts = {
            q.id: _question_text(raw_questions.get(q.id), q, f"{where}.questions.{q.id}", max_text)
            for q in questions
        }
        found[canonical] = Translation(title, translated_description, MappingProxyType(texts))
    # In tag order, as the canonical JSON a client fetches has them: the same on every side.
    return MappingProxyType(dict(sorted(found.items())))


def _babel_primaries() -> list[str]:  # pragma: no cover - a maintainer's tool
    from babel import localedata  # Babel is a development dependency only

    return sorted({i.split("_")[0] for i in localedata.locale_identifiers()} - {"root"})


if __name__ == "__main__":  # pragma: no cover - prints the table to paste above
    print(",\n".join(f'"{tag}"' for tag in _babel_primaries()))


__all__ = [
    "DEFAULT_LANGUAGE",
    "KNOWN_LANGUAGES",
    "MAX_LANGUAGES",
    "QuestionText",
    "SurveyText",
    "Translation",
    "best_language",
    "canonical_tag",
    "parse_translations",
]
