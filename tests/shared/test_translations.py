"""Survey languages: the default language, translations and their checks, hints and notes, the
words in a language (`Survey.text_in`), and the hash (docs/surveys.md#languages)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from deniable.shared.errors import SurveyError
from deniable.shared.languages import KNOWN_LANGUAGES, MAX_LANGUAGES, canonical_tag
from deniable.shared.survey import Survey

BASE: dict[str, Any] = {
    "id": "smoking",
    "title": "Smoking",
    "description": "Two minutes.",
    "questions": [
        {
            "id": "smokes",
            "text": "Do you smoke?",
            "type": "binary",
            "mechanism": "none",
            "note": "About tobacco only.",
        },
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["Left", "Centre", "Right"],
            "epsilon": 2.0,
            "hint": "The one you would vote for today.",
        },
        {"id": "age", "text": "Age?", "type": "integer", "min": 0, "max": 120, "epsilon": 1.0},
        {"id": "city", "text": "City?", "type": "text", "epsilon": 2.0, "candidates": ["Lagos"]},
    ],
}

FR: dict[str, Any] = {
    "title": "Tabac",
    "description": "Deux minutes.",
    "questions": {
        "smokes": {"text": "Fumez-vous ?", "options": ["non", "oui"], "note": "Le tabac seul."},
        "party": {
            "text": "Quel parti ?",
            "options": ["Gauche", "Centre", "Droite"],
            "hint": "Celui pour lequel vous voteriez aujourd'hui.",
        },
        "age": {"text": "Âge ?"},
        "city": {"text": "Ville ?"},
    },
}

AR: dict[str, Any] = {
    "title": "التدخين",
    "description": "دقيقتان.",
    "questions": {
        "smokes": {"text": "هل تدخن؟", "options": ["لا", "نعم"], "note": "التبغ فقط."},
        "party": {
            "text": "أي حزب؟",
            "options": ["اليسار", "الوسط", "اليمين"],
            "hint": "الذي ستصوت له اليوم.",
        },
        "age": {"text": "العمر؟"},
        "city": {"text": "المدينة؟"},
    },
}


def doc(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    out["translations"] = {"fr": copy.deepcopy(FR), "ar": copy.deepcopy(AR)}
    out.update(changes)
    return out


def refusal(document: dict[str, Any]) -> str:
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict(document)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_language_table_is_babels() -> None:
    # Taken from Babel 2.18 (python -m deniable.shared.languages rewrites it); later releases
    # only add languages, so every tag we know must still be one of Babel's.
    from babel import localedata

    primaries = {tag.split("_")[0] for tag in localedata.locale_identifiers()} - {"root"}
    assert KNOWN_LANGUAGES <= primaries
    assert len(KNOWN_LANGUAGES) >= 300


def test_a_multilingual_survey_resolves_and_keeps_its_hash() -> None:
    survey = Survey.from_dict(doc())
    assert survey.language == "en" and survey.languages == ("en", "ar", "fr")
    resolved = survey.to_dict()
    assert resolved["language"] == "en"
    assert resolved["translations"]["fr"] == FR and resolved["translations"]["ar"] == AR
    assert resolved["questions"][0]["note"] == "About tobacco only."
    assert resolved["questions"][1]["hint"] == "The one you would vote for today."
    assert Survey.from_dict(resolved).hash == survey.hash
    assert Survey.from_dict(json.loads(json.dumps(resolved))).hash == survey.hash


def test_translations_hints_and_notes_are_part_of_the_hash() -> None:
    plain = Survey.from_dict(BASE).hash
    assert Survey.from_dict(doc()).hash != plain
    changed = doc()
    changed["translations"]["fr"]["questions"]["party"]["options"][0] = "La gauche"
    assert Survey.from_dict(changed).hash != Survey.from_dict(doc()).hash
    no_hint = copy.deepcopy(BASE)
    del no_hint["questions"][1]["hint"]
    assert Survey.from_dict(no_hint).hash != plain


def test_a_survey_in_english_without_translations_keeps_its_old_hash() -> None:
    old = copy.deepcopy(BASE)
    for question in old["questions"]:
        question.pop("hint", None)
        question.pop("note", None)
    before = Survey.from_dict(old)
    assert "language" not in before.to_dict() and "translations" not in before.to_dict()
    assert Survey.from_dict({**old, "language": "en"}).hash == before.hash
    assert Survey.from_dict({**old, "language": "fr"}).hash != before.hash


def test_text_in_gives_every_word_in_the_language_and_falls_back_to_the_default() -> None:
    survey = Survey.from_dict(doc())
    french = survey.text_in("fr")
    assert french.language == "fr" and french.title == "Tabac"
    assert french.questions["party"].options == ("Gauche", "Centre", "Droite")
    assert french.questions["smokes"].note == "Le tabac seul."
    assert french.questions["party"].hint.startswith("Celui")
    assert survey.text_in("fr-CA").language == "fr"
    assert survey.text_in("AR").title == "التدخين"
    for missing in ("de", None, "", "not a tag"):
        english = survey.text_in(missing)
        assert english.language == "en" and english.title == "Smoking"
        assert english.questions["smokes"].options == ("no", "yes")
        assert english.questions["city"].options == ()  # candidates are not shown labels
    assert survey.language_for("fr-BE") == "fr" and survey.language_for("de") is None


def test_a_survey_in_another_default_language() -> None:
    french = copy.deepcopy(BASE)
    french["language"] = "fr"
    survey = Survey.from_dict(french)
    assert survey.languages == ("fr",) and survey.to_dict()["language"] == "fr"
    assert survey.text_in("fr").title == "Smoking"


@pytest.mark.parametrize(
    ("tag", "canonical"),
    [("en", "en"), ("pt-br", "pt-BR"), ("ZH-hant-tw", "zh-Hant-TW"), ("es-419", "es-419")],
)
def test_tags_are_written_in_their_canonical_case(tag: str, canonical: str) -> None:
    assert canonical_tag(tag, "language") == canonical


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"language": "english"},
            "language: 'english' is not a BCP 47 language tag; write one like 'en' or 'pt-BR'",
        ),
        ({"language": 3}, "language: 3 is not a BCP 47 language tag"),
        ({"language": "xx"}, "language: unknown language 'xx'"),
        ({"language": "fr"}, "translations.fr: is the survey's default language"),
        ({"translations": []}, "translations: expected an object of language tag to texts"),
        ({"translations": {"xx": FR}}, "translations.xx: unknown language 'xx'"),
        ({"translations": {"français": FR}}, "translations.français: 'français' is not a BCP 47"),
        ({"translations": {"fr": FR, "FR": FR}}, "translations.FR: 'fr' is translated twice"),
        ({"translations": {"fr": "Tabac"}}, "translations.fr: expected an object with title"),
    ],
)
def test_bad_languages_are_refused_naming_where(change: dict[str, Any], message: str) -> None:
    assert refusal(doc(**change)).startswith(message)


def _without(path: list[Any]) -> dict[str, Any]:
    out = doc()
    parent = out["translations"]
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return out


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (["fr", "title"], "translations.fr.title: missing"),
        (["fr", "description"], "translations.fr.description: missing; the default language has"),
        (["fr", "questions"], "translations.fr.questions: missing"),
        (["fr", "questions", "party"], "translations.fr.questions.party: missing"),
        (["fr", "questions", "party", "text"], "translations.fr.questions.party.text: missing"),
        (["ar", "questions", "smokes", "text"], "translations.ar.questions.smokes.text: missing"),
        (
            ["fr", "questions", "party", "options"],
            "translations.fr.questions.party.options: missing; give every option's label in "
            "option order (3: 'Left', 'Centre', 'Right')",
        ),
        (["fr", "questions", "smokes", "options"], "translations.fr.questions.smokes.options: "),
        (["fr", "questions", "party", "hint"], "translations.fr.questions.party.hint: missing"),
        (["ar", "questions", "smokes", "note"], "translations.ar.questions.smokes.note: missing"),
    ],
)
def test_a_missing_translation_is_an_error_naming_it(path: list[Any], message: str) -> None:
    assert refusal(_without(path)).startswith(message)


def test_a_missing_option_label_names_its_place() -> None:
    short = doc()
    short["translations"]["fr"]["questions"]["party"]["options"] = ["Gauche", "Centre"]
    assert refusal(short).startswith(
        "translations.fr.questions.party.options[2]: missing: the label of 'Right'"
    )
    extra = doc()
    extra["translations"]["fr"]["questions"]["party"]["options"].append("Autre")
    assert refusal(extra).startswith(
        "translations.fr.questions.party.options: 4 labels for 3 options"
    )
    same = doc()
    same["translations"]["fr"]["questions"]["party"]["options"] = ["A", "a", "B"]
    assert refusal(same).startswith("translations.fr.questions.party.options: labels must be")
    empty = doc()
    empty["translations"]["fr"]["questions"]["party"]["options"][1] = " "
    assert refusal(empty).startswith("translations.fr.questions.party.options[1]: expected")


@pytest.mark.parametrize(
    ("where", "key", "value", "message"),
    [
        (["fr"], "subtitle", "x", "translations.fr.subtitle: unknown field"),
        (["fr", "questions"], "nobody", {"text": "x"}, "translations.fr.questions.nobody: no such"),
        (["fr", "questions", "age"], "options", ["a"], "translations.fr.questions.age.options: "),
        (["fr", "questions", "city"], "options", ["a"], "translations.fr.questions.city.options: "),
        (
            ["fr", "questions", "age"],
            "hint",
            "x",
            "translations.fr.questions.age.hint: the default",
        ),
        (["fr", "questions", "age"], "label", "x", "translations.fr.questions.age.label: unknown"),
        (["fr", "questions", "age"], "text", "x" * 2001, "translations.fr.questions.age.text: at"),
        (["fr", "questions", "age"], "text", "a\x1bb", "translations.fr.questions.age.text: contr"),
        (["fr"], "title", "", "translations.fr.title: expected a non-empty string"),
    ],
)
def test_texts_the_default_lacks_or_bad_texts_are_refused(
    where: list[str], key: str, value: Any, message: str
) -> None:
    out = doc()
    parent = out["translations"]
    for step in where:
        parent = parent[step]
    parent[key] = value
    assert refusal(out).startswith(message)


def test_a_description_only_in_a_translation_is_refused() -> None:
    out = doc()
    del out["description"]
    assert refusal(out).startswith("translations.fr.description: the default language has no")


def test_at_most_twenty_languages() -> None:
    tags = sorted(KNOWN_LANGUAGES - {"en"})
    fine = doc(translations={tag: copy.deepcopy(FR) for tag in tags[: MAX_LANGUAGES - 1]})
    assert len(Survey.from_dict(fine).languages) == MAX_LANGUAGES
    over = doc(translations={tag: copy.deepcopy(FR) for tag in tags[:MAX_LANGUAGES]})
    assert refusal(over).startswith(
        f"translations: at most {MAX_LANGUAGES} languages in all (the default included)"
    )


@pytest.mark.parametrize("key", ["hint", "note"])
def test_hints_and_notes_are_bounded_texts(key: str) -> None:
    out = copy.deepcopy(BASE)
    out["questions"][2][key] = "x" * 2001
    assert refusal(out).startswith(f"questions[2].{key}: at most 2000 characters")
    out["questions"][2][key] = ""
    assert refusal(out).startswith(f"questions[2].{key}: expected a non-empty string")
